// Shared shapes: the data every layer speaks of (profiles, renditions, counters). Below every
// other folder: it imports nothing of src/, so the API, events, recordings, sessions and media
// can all use it.

export { expected } from "./messages";
export { profile, type Profile } from "./profile";
export type { Rendition } from "./rendition";
export type { SegmentCounters } from "./counters";
