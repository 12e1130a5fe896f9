// Why a publish is refused, whatever its protocol: the stream runtime decides once, and each
// ingest edge says it in its own terms (an RTMP onStatus code, a WHIP HTTP status), so the
// sessions build no RTMP or HTTP answers and every protocol refuses alike.

/**
 * - `unknown`: no stream has that key (or it was deleted): the encoder's settings are wrong.
 * - `suspended`: the stream's owner suspended it.
 * - `elsewhere`: the stream is live on another node, which holds its session.
 * - `unavailable`: this server cannot take it now (shutting down, no ffmpeg, storage, a cap,
 *   another publisher starting, replaced by a newer one, an internal error): try again later.
 */
export type PublishRefusalKind = "unknown" | "suspended" | "elsewhere" | "unavailable";

export interface PublishRefusal {
  kind: PublishRefusalKind;
  /** What the publisher is told, and the log says: never a path, a query or a secret. */
  reason: string;
}

export const refusePublish = (kind: PublishRefusalKind, reason: string): PublishRefusal => ({ kind, reason });
