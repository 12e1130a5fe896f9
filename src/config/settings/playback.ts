import { area, integer } from "../declare";

export const playback = area("playback", {
  // A gated stream's media URLs carry tokens that expire this long after the playlist naming
  // them was served: a segment URL copied out of a player stops working (players reload far sooner).
  PLAYBACK_TOKEN_SECONDS: integer({
    default: 30,
    min: 5,
    max: 3600,
    unit: "seconds",
    doc: "A protected stream's media tokens (`?m=`) stay the same for this long and are valid for one to two times it.",
  }).at("playbackTokenSeconds"),
  // A viewer's session token (`?s=`, in the variant URIs of its master playlist) names it for
  // counting and, on a webhook stream, as a viewer already let in. Past this it is honoured only
  // while its player keeps reloading (src/playback/gate.ts): a watcher is never cut off.
  PLAYBACK_SESSION_SECONDS: integer({
    default: 4 * 3600,
    min: 5,
    max: 7 * 24 * 3600,
    unit: "seconds",
    doc: "A viewer's session token (`?s=`) is honoured this long after its master playlist, and past that only while its player keeps reloading within `VIEWER_WINDOW_SECONDS`; an expired one names nobody.",
  }).at("playbackSessionSeconds"),
  // A viewer (a player session) counts as watching while it asked for a playlist this recently.
  VIEWER_WINDOW_SECONDS: integer({
    default: 30,
    min: 1,
    max: 600,
    unit: "seconds",
    doc: "A viewer counts while its player asked for a playlist within this long.",
  }).at("viewerWindowMs", (s) => s * 1000),
  // The longest clip POST /clip makes (src/assets): a copy, so length costs disk, not CPU.
  MAX_CLIP_SECONDS: integer({
    default: 600,
    min: 1,
    max: 24 * 3600,
    unit: "seconds",
    doc: "The longest clip `POST /clip` makes.",
  }).at("maxClipSeconds"),
  // How far back clips reach into a live session (its source segments kept on disk that long).
  CLIP_WINDOW_SECONDS: integer({
    default: 300,
    min: 0,
    max: 24 * 3600,
    unit: "seconds",
    doc: "How far back clips reach into a live session: its source segments are kept (hard-linked) this long beyond the live playlist (`0`: the live playlist's window only).",
  }).at("clipWindowSeconds"),
});
