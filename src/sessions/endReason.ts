import { refusePublish, type PublishRefusal } from "../shapes";
import type { ProcessEnd } from "../media";

// Why a live session ended, as the session's endReason, the log and its publisher hear it.

export type EndReason =
  | "publisher left"
  | "suspended"
  | "deleted"
  | "terminated"
  | "pipeline failed"
  | "pipeline too slow"
  | "storage unavailable"
  | "media refused"
  | "internal error"
  | "shutdown"
  /** Another node took the stream's lease: this node stops without writing. */
  | "lease lost";

/** Ends an operator has to look into (logged as errors). */
export const FAILED_ENDS: EndReason[] = ["pipeline failed", "pipeline too slow", "storage unavailable", "internal error"];

/** An end reason with what an operator needs to act on it (kept as the session's endReason). */
export function describeEnd(reason: EndReason, detail?: string): string {
  return detail ? `${reason}: ${detail}` : reason;
}

/** What a publisher disconnected by the session's end is told. */
export function refusalFor(reason: EndReason, detail: string | undefined, streamId: string): PublishRefusal | undefined {
  if (reason === "suspended") return refusePublish("suspended", `stream ${streamId} is suspended`);
  if (reason === "deleted") return refusePublish("unknown", `stream ${streamId} was deleted`);
  if (reason === "publisher left" || reason === "media refused") return undefined;
  // What went wrong inside the server (paths, SQL) stays in endReason and the log.
  if (reason === "internal error" || reason === "storage unavailable") return refusePublish("unavailable", `${reason} on the server: reconnect later`);
  return refusePublish("unavailable", describeEnd(reason, detail));
}

/** ffmpeg's exit, for an end reason: no stderr, which would carry the source url and its key. */
export function describeExit(end: ProcessEnd, restarts: number): string {
  const how =
    end.code === 0
      ? "ffmpeg's input ended under a live publisher (it fell too far behind and was cut off)"
      : end.code !== null
        ? `ffmpeg exited with code ${end.code}`
        : `ffmpeg was killed by ${end.signal}`;
  return restarts > 0 ? `${how} after ${restarts} restart${restarts === 1 ? "" : "s"}` : how;
}
