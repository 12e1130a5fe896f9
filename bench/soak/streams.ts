// The soak's streams: created through the API, each with an RTMP publisher that reconnects as
// OBS does when the server drops it, and a record of when it was connected.

import { Child } from "../lib";
import { apiJson, type Onair } from "./server";
import { now, sleep, soakState } from "./runState";

const RECONNECT_DELAY_MS = 1000;
/** Spec: a stream that is not live 20 s after its publisher started has failed; a margin for a busy box. */
const LIVE_TIMEOUT_MS = 30_000;

export interface SoakStream {
  index: number;
  id: string;
  streamKey: string;
  playbackId: string;
  publisher: Child | undefined;
  /** When the first pusher started (ms). */
  firstConnect: number | undefined;
  /** When a pusher exited on its own (ms), with why: publisher disconnects. */
  disconnects: { at: number; why: string }[];
  /** Segment arrivals as the readers together saw them, by session (segment name prefix). */
  epochs: Map<string, Epoch>;
  /** Segments that no reader ever saw listed (the playlist jumped past them). */
  neverListed: number;
}

export interface Epoch {
  maxSeq: number;
  /** When each new segment was first seen listed by any reader; the first entry is the first look. */
  arrivals: { seq: number; at: number; duration: number }[];
}

/** `count` streams named "soak 1", "soak 2", … with these rendition profiles, none publishing yet. */
export async function createStreams(o: Onair, count: number, profiles: unknown[]): Promise<SoakStream[]> {
  const streams: SoakStream[] = [];
  for (let k = 0; k < count; k++) {
    const s = await apiJson<{ id: string; streamKey: string; playbackId: string }>(o, "POST", "/stream", 201, { name: `soak ${k + 1}`, profiles });
    streams.push({ index: k, id: s.id, streamKey: s.streamKey, playbackId: s.playbackId, publisher: undefined, firstConnect: undefined, disconnects: [], epochs: new Map(), neverListed: 0 });
  }
  return streams;
}

export function startPublisher(o: Onair, s: SoakStream, clip: string): void {
  const child = new Child(`pusher ${s.index + 1}`, o.ffmpeg, [
    "-hide_banner", "-nostdin", "-loglevel", "warning",
    "-re", "-stream_loop", "-1", "-i", clip,
    "-c", "copy", "-f", "flv", `${o.rtmpUrl}/${s.streamKey}`,
  ]);
  s.publisher = child;
  s.firstConnect ??= child.startedAt;
  void child.exited.then(() => {
    if (soakState.stopping || s.publisher !== child) return;
    // The server (or the connection) dropped the publisher: note it and reconnect, as OBS does.
    s.disconnects.push({ at: now(), why: child.describeExit() });
    setTimeout(() => {
      if (!soakState.stopping) startPublisher(o, s, clip);
    }, RECONNECT_DELAY_MS);
  });
}

/**
 * The stream's publisher was connected from `from` to `to`: it had connected by then and no
 * disconnect falls in between (nor just before, while it reconnects).
 */
export function publisherUpThroughout(s: SoakStream, from: number, to: number): boolean {
  return s.firstConnect !== undefined && s.firstConnect <= from && !s.disconnects.some((d) => d.at >= from - RECONNECT_DELAY_MS && d.at <= to);
}

/** Seconds until every stream is live (isActive); throws when one cannot go live. */
export async function waitAllLive(o: Onair, streams: SoakStream[]): Promise<number> {
  const started = now();
  for (;;) {
    const states = await Promise.all(streams.map((s) => apiJson<{ isActive: boolean }>(o, "GET", `/stream/${s.id}`, 200)));
    if (states.every((x) => x.isActive)) return (now() - started) / 1000;
    const dead = streams.find((s) => s.publisher && !s.publisher.isRunning);
    if (dead && dead.disconnects.length > 2) throw new Error(`stream ${dead.index + 1} cannot go live: ${dead.publisher!.describeExit()}`);
    if (!o.child.isRunning) throw new Error(o.child.describeExit());
    if (now() - started > LIVE_TIMEOUT_MS) {
      throw new Error(`not every stream went live within ${LIVE_TIMEOUT_MS / 1000} s: ${states.map((x, i) => `${i + 1}: ${x.isActive ? "live" : "not live"}`).join(", ")}`);
    }
    await sleep(250);
  }
}
