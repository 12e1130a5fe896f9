import type { Store } from "../db";
import { hlsRouter, storyboardRouter, whepRouter } from "../http";
import { WhepPlayback, type RealtimeFeeds } from "../realtime";
import { iceServerLinks, peerConfig, StunResponder } from "../webrtc";
import { BlockingWaits } from "../hls";
import { remoteLiveNode } from "../cluster";
import { PlaybackGate, playbackSubjects, QuestionBudget, startViewerCountFlush, ViewerCounter, webhookQuestion } from "../playback";
import type { RecordingUrlSigner } from "../recordings";
import { WebhookSender } from "../webhooks";
import type { Wiring } from "./context";
import type { EventsArea } from "./events";
import type { SessionsArea } from "./sessions";
import express from "express";

/** The bandwidth a WebRTC viewer is assumed to have until its player says: most broadband and 4G. */
const WHEP_START_BITRATE = 2_500_000;

/** A `webhook` playback policy's webhook answers within this long, or the viewer is refused. */
const POLICY_WEBHOOK_TIMEOUT_MS = 5000;

export interface PlaybackArea {
  /** Concurrent viewers of the streams this node packages (fed by the HLS routes; written to viewer_counts every heartbeat). */
  viewers: ViewerCounter;
  /** The HLS routes: live from this node's packagers, else from the node that packages the stream, else recorded. */
  hls: express.Router;
  /** WHEP: WebRTC viewers of the streams this node packages. */
  whep: express.Router;
}

/** Who may watch (playback policies) and who does (viewers, counted from the players' tokens); the HLS routes. */
export function wirePlayback({ config, log, stops }: Wiring, store: Store, { outbound }: EventsArea, { liveHls, hlsDir, realtime, storyboard }: SessionsArea, signer: RecordingUrlSigner): PlaybackArea {
  const viewers = new ViewerCounter({ windowMs: config.viewerWindowMs });
  // Each node writes the counts of the streams it packages; the API sums the nodes' fresh rows.
  const flush = startViewerCountFlush({ counter: viewers, store, log, nodeId: config.nodeId, intervalMs: config.heartbeatMs, keep: (id) => liveHls.get(id) !== undefined });
  stops.register("release", "viewer count flush", () => flush.stop());
  const policySender = new WebhookSender({ timeoutMs: POLICY_WEBHOOK_TIMEOUT_MS, policy: outbound });
  stops.register("stores", "playback policy webhook sender", () => policySender.close());
  const gate = new PlaybackGate({
    key: signer.deriveKey("playback tokens"),
    findKey: (userId, pub) => store.signingKeys.enabledForUser(userId, pub),
    askWebhook: webhookQuestion(store, policySender, log),
    viewers,
    // Throttled by the gate's verdict cache: one write per key per few seconds at most.
    keyUsed: (keyId) => void store.signingKeys.markSeen(keyId, Date.now()).catch((err: unknown) => log.warn({ err, keyId }, "could not note a signing key's use")),
    tokenSeconds: config.playbackTokenSeconds,
    sessionSeconds: config.playbackSessionSeconds,
    questions: new QuestionBudget({
      perPlaybackRate: config.limits.webhookQuestionRate,
      perPlaybackInFlight: config.limits.webhookQuestionsInFlight,
      nodeRate: config.limits.nodeWebhookQuestionRate,
      nodeInFlight: config.limits.nodeWebhookQuestionsInFlight,
    }),
  });
  // Live HLS of a stream another node packages is passed to that node (several nodes only).
  // Passed requests carry a mark derived from the secret every node shares: a player cannot forge it.
  const remote = store.db.dialect === "postgres" ? { find: remoteLiveNode(store, config.nodeId), mark: signer.deriveKey("node proxy mark").toString("base64url") } : undefined;
  const waits = new BlockingWaits({ perPlayback: config.limits.blockingWaitsPerPlayback, perClient: config.limits.blockingWaitsPerClient, perNode: config.limits.blockingWaitsPerNode });
  const subject = playbackSubjects(store);
  // The storyboard's two paths first: the HLS routes' own would answer them 404.
  const hls = express.Router().use(storyboardRouter(storyboard, { gate, subject }, remote), hlsRouter(store, hlsDir, liveHls, { gate, subject }, remote, waits));
  const whep = realtime && whepPlayback(config, log, realtime, viewers);
  if (whep) stops.register("intake", "WebRTC viewers", () => whep.close());
  // Not on a port the WebRTC peers gather on: the responder would take it from them.
  const stunClash = config.webrtc.udpPorts !== undefined && config.webrtc.stunPort >= config.webrtc.udpPorts.first && config.webrtc.stunPort <= config.webrtc.udpPorts.last;
  if (stunClash) log.warn({ stunPort: config.webrtc.stunPort }, "STUN: WEBRTC_STUN_PORT is inside WEBRTC_UDP_PORTS; no STUN responder (set another port, or 0)");
  if (whep && config.webrtc.stunPort > 0 && !stunClash) {
    const stun = StunResponder.listen(config.webrtc.stunPort, config.webrtc.bindAddress, log.child({ playback: "stun" }));
    stops.register("intake", "STUN responder", async () => (await stun)?.close());
  }
  const iceLinks = iceServerLinks(config.webrtc.iceServers, config.webrtc.iceUsername, config.webrtc.iceCredential);
  return { viewers, hls, whep: whepRouter({ whep, gate, subject, iceLinks, publicIceLinks: iceServerLinks(config.webrtc.iceServers), ...(remote ? { remote } : {}) }) };
}

/** WebRTC viewers on this node's WebRTC ports, counted with the HLS ones. */
function whepPlayback(config: Wiring["config"], log: Wiring["log"], feeds: RealtimeFeeds, viewers: ViewerCounter): WhepPlayback {
  const { webrtc } = config;
  return new WhepPlayback({
    feeds,
    settings: {
      rtc: peerConfig(webrtc),
      publicIp: webrtc.publicIp,
      startBitrate: WHEP_START_BITRATE,
    },
    maxViewers: webrtc.maxViewers,
    maxViewersPerStream: webrtc.maxViewersPerStream,
    pendingPerClient: webrtc.pendingPerClient,
    seen: (playbackId, viewerId) => viewers.seen(playbackId, viewerId),
    log: log.child({ playback: "webrtc" }),
  });
}
