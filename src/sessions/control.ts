import type { LiveHealth, LiveRates } from "../shapes";

/** What the API may ask of live sessions; it never touches ingest or ffmpeg itself. */
export interface LiveControl {
  /** Ends the stream's live session at once, if it has one (suspend, delete). */
  interrupt(streamId: string, reason: "suspended" | "deleted" | "terminated"): void;
  /** The stream's settings changed (e.g. multistream targets), possibly while it is live. */
  streamChanged(streamId: string): void;
  /** Live rates of a stream, its child stream or its session (by id) while it is live. */
  rates(id: string): LiveRates | undefined;
  /** Health of a stream (or its session) while it has an open session, live or reconnecting. */
  health(id: string): LiveHealth | undefined;
}
