import { peerConfig } from "../webrtc";
import path from "node:path";
import type { Store } from "../db";
import { PullIngest, RtmpIngest, SrtIngest, WhipIngest } from "../ingest";
import { AUDIO_BITRATE } from "../media";
import type { Metrics } from "../metrics";
import type { OutboundPolicy } from "../outbound";
import type { Wiring } from "./context";
import type { EventsArea } from "./events";
import type { MediaArea } from "./media";
import type { SessionsArea } from "./sessions";

export interface IngestArea {
  whip: WhipIngest | undefined;
  /** The pulls of streams with a pull source (an ingest node). */
  pulls: PullIngest | undefined;
}

type Bridging = { media: MediaArea; live: SessionsArea };

/**
 * The ways in, on an ingest node: RTMP (stream keys loaded first), and the WebRTC, SRT and pull
 * bridges that publish to it. At the stop the bridges close first (their publishes end), the
 * RTMP server once the sessions have ended.
 */
export async function wireIngest(w: Wiring, store: Store, { outbound }: EventsArea, media: MediaArea, live: SessionsArea, metrics: Metrics): Promise<IngestArea> {
  const { config, log, stops } = w;
  if (!w.has("ingest")) return { whip: undefined, pulls: undefined };
  // Admission reads keys from memory: loaded before the RTMP port opens.
  await live.keys.start();
  stops.register("drain", "stream keys", () => live.keys.stop());
  const rtmp = new RtmpIngest(live.sessions, log, {
    mediaTimeoutMs: config.publishMediaTimeoutMs,
    onReaderCut: () => metrics.readerCut(),
    onPublisherStalled: () => metrics.publisherStalled(),
    bridges: live.bridges,
  });
  try {
    live.rtmp.port = await rtmp.listen(config.rtmpPort, config.host);
  } catch (err) {
    throw new Error(`cannot listen for RTMP on ${config.host}:${config.rtmpPort}: ${(err as Error).message}`);
  }
  if (config.tls) {
    try {
      live.rtmp.tlsPort = await rtmp.listenTls(config.rtmpsPort, config.host, config.tls);
      log.info({ port: live.rtmp.tlsPort }, "RTMPS ingest listening");
    } catch (err) {
      throw new Error(`cannot listen for RTMPS on ${config.host}:${config.rtmpsPort}: ${(err as Error).message}`);
    }
  }
  live.rtmp.server = rtmp;
  stops.register("intake", "RTMP listeners (E-RTMP publishers asked to reconnect)", () => rtmp.drain());
  stops.register("release", "RTMP server", () => rtmp.close());
  const bridging = { media, live };
  const whip = whipIngest(w, bridging);
  if (config.srt) srtIngest(w, store, bridging, config.srt, metrics);
  const pulls = pullIngest(w, store, bridging, outbound, metrics);
  return { whip, pulls };
}

function whipIngest({ config, log, stops }: Wiring, { media, live }: Bridging): WhipIngest {
  const { webrtc } = config;
  const whip = new WhipIngest({
    check: (key, holder) => live.sessions.checkPublish(key, holder),
    release: (holder) => live.sessions.releaseHold(holder),
    tickets: live.bridges,
    registry: media.processes,
    ffmpegPath: media.ffmpeg?.path,
    workDir: path.join(config.dataDir, "webrtc"),
    rtmpUrl: (name) => live.rtmp.url(name),
    log: log.child({ ingest: "webrtc" }),
    settings: {
      rtc: peerConfig(webrtc),
      publicIp: webrtc.publicIp,
      mediaTimeoutMs: webrtc.mediaTimeoutMs,
    },
  });
  // WebRTC peers closed: their bridges' publishes end.
  stops.register("intake", "WHIP ingest", () => whip.close());
  return whip;
}

function srtIngest({ config, log, stops }: Wiring, store: Store, { media, live }: Bridging, srt: NonNullable<Wiring["config"]["srt"]>, metrics: Metrics): void {
  // Ports are given by the API when an owner asks for a stream's srtUrl (api/routes/streamSrt.ts);
  // the ingest arms the listeners of the ports asked for or used lately.
  const ingest = new SrtIngest({
    streams: () => live.keys.all(),
    used: (streamId, at) => store.streams.touchSrt(streamId, at),
    tickets: live.bridges,
    registry: media.processes,
    ffmpegPath: media.ffmpeg?.path,
    inputScripts: media.inputScripts,
    bindHost: config.host,
    latencyMs: srt.latencyMs,
    idleMs: srt.idleMs,
    rtmpUrl: (name) => live.rtmp.url(name),
    log: log.child({ ingest: "srt" }),
    metrics: metrics.restarts,
  });
  ingest.start();
  stops.register("intake", "SRT ingest", () => ingest.close());
}

/** Streams with a pull source: ffmpeg reads the source and publishes it here under a ticket. Every ingest node reconciles them; the stream's lease lets one node run the session. */
function pullIngest({ config, log, stops }: Wiring, store: Store, { media, live }: Bridging, outbound: OutboundPolicy, metrics: Metrics): PullIngest {
  const pulls = new PullIngest({
    streams: () => live.keys.all(),
    tickets: live.bridges,
    registry: media.processes,
    ffmpegPath: media.ffmpeg?.path,
    rtmpUrl: (name) => live.rtmp.url(name),
    checkHost: (host) => outbound.check(host),
    liveElsewhere: async (streamId) => {
      const holder = await store.nodes.holder(streamId);
      return holder !== undefined && holder !== config.nodeId ? holder : undefined;
    },
    inputScripts: media.inputScripts,
    // Counted before ffmpeg starts: with the user's live streams (the session manager's count), and per node.
    caps: {
      maxLivePerUser: config.limits.maxLiveStreamsPerUser,
      maxPullsPerNode: config.limits.maxPullsPerNode,
      liveStreamsOf: (userId) => live.sessions.liveStreamsOf(userId),
    },
    metrics: metrics.restarts,
    audioBitrate: AUDIO_BITRATE,
    log: log.child({ ingest: "pull" }),
  });
  pulls.start();
  stops.register("intake", "pull ingest", () => pulls.close());
  return pulls;
}
