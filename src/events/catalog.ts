// Spec section 6: the eight events onair raises, and what each carries in `payload`.

export const EVENT_NAMES = [
  "stream.started",
  "stream.idle",
  "recording.ready",
  "recording.started",
  "recording.waiting",
  "multistream.connected",
  "multistream.error",
  "multistream.disconnected",
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
}

/** Where domain events go: the one way the rest of onair reports what happened to a stream. */
export interface EventSink {
  /**
   * Records that `name` happened to the parent stream `streamId` now. Durable once it
   * returns: each webhook registered for it will receive it, across restarts.
   */
  raise<N extends EventName>(name: N, streamId: string, payload: EventPayloads[N]): void;
}
