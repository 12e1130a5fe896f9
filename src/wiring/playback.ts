import type { Store } from "../db";
import { hlsRouter } from "../http";
import { remoteLiveNode } from "../cluster";
import { PlaybackGate, playbackSubjects, startViewerCountFlush, ViewerCounter, webhookQuestion } from "../playback";
import type { RecordingUrlSigner } from "../recordings";
import { WebhookSender } from "../webhooks";
import type { Wiring } from "./context";
import type { EventsArea } from "./events";
import type { SessionsArea } from "./sessions";
import type express from "express";

/** A `webhook` playback policy's webhook answers within this long, or the viewer is refused. */
const POLICY_WEBHOOK_TIMEOUT_MS = 5000;

export interface PlaybackArea {
  /** Concurrent viewers of the streams this node packages (fed by the HLS routes; written to viewer_counts every heartbeat). */
  viewers: ViewerCounter;
  /** The HLS routes: live from this node's packagers, else from the node that packages the stream, else recorded. */
  hls: express.Router;
}

/** Who may watch (playback policies) and who does (viewers, counted from the players' tokens); the HLS routes. */
export function wirePlayback({ config, log, stops }: Wiring, store: Store, { outbound }: EventsArea, { liveHls, hlsDir }: SessionsArea, signer: RecordingUrlSigner): PlaybackArea {
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
  });
  // Live HLS of a stream another node packages is passed to that node (several nodes only).
  const remote = store.db.dialect === "postgres" ? remoteLiveNode(store, config.nodeId) : undefined;
  const hls = hlsRouter(store, hlsDir, liveHls, { gate, subject: playbackSubjects(store) }, remote);
  return { viewers, hls };
}
