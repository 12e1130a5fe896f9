// Spec section 6: the eight events onair raises (and the two of clips, asset.ready and asset.failed), what each carries in `payload`, and the body
// a webhook receives.

import type { StreamJson } from "./stream";

export const EVENT_NAMES = [
  "stream.started",
  "stream.idle",
  "recording.ready",
  "recording.started",
  "recording.waiting",
  "multistream.connected",
  "multistream.error",
  "multistream.disconnected",
  "asset.ready",
  "asset.failed",
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

/** A multistream target as events name it: never its url (it holds the destination's key). */
export interface EventTarget {
  id: string;
  name: string;
  profile: string;
}

export interface EventPayloads {
  "stream.started": { sessionId: string };
  "stream.idle": { sessionId: string };
  "recording.started": { sessionId: string };
  "recording.waiting": { sessionId: string };
  "recording.ready": { sessionId: string; recordingUrl: string; mp4Url: string; session: unknown };
  "multistream.connected": { sessionId: string; target: EventTarget };
  "multistream.error": { sessionId: string; target: EventTarget; error: string };
  "multistream.disconnected": { sessionId: string; target: EventTarget };
  /** A clip (POST /clip) is ready: `asset` is the API's asset object, with its URLs. */
  "asset.ready": { sessionId: string; assetId: string; asset: unknown };
  /** A clip failed for good: `error` says why (also the asset's status.errorMessage). */
  "asset.failed": { sessionId: string; assetId: string; asset: unknown; error: string };
}

/**
 * The stream in a delivery: the API's stream object as it was when the event was raised,
 * without `streamKey` (whoever reads a webhook must not be able to publish to the stream).
 */
export type EventStream = Omit<StreamJson, "streamKey">;

/** The JSON body POSTed to a webhook (docs/architecture.md#webhook-delivery). */
export interface DeliveryBody<N extends EventName = EventName> {
  /** The event's id: the same on every retry and resend, so receivers can deduplicate. */
  id: string;
  webhookId: string;
  /** When the event happened (ms). */
  createdAt: number;
  /** When this attempt was made (ms); the signature's `t`. */
  timestamp: number;
  event: N;
  stream: EventStream;
  payload: EventPayloads[N];
}

/** A raised event as stored: what every delivery of it is built from. */
export interface RaisedEvent<N extends EventName = EventName> {
  id: string;
  name: N;
  createdAt: number;
  stream: EventStream;
  payload: EventPayloads[N];
}

export function buildDeliveryBody<N extends EventName>(event: RaisedEvent<N>, webhookId: string, timestamp: number): DeliveryBody<N> {
  return {
    id: event.id,
    webhookId,
    createdAt: event.createdAt,
    timestamp,
    event: event.name,
    stream: event.stream,
    payload: event.payload,
  };
}
