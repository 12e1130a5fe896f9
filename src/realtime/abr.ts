// Which rendition a WebRTC viewer gets, from the bandwidth its player estimates (REMB). A pure
// function: the viewer applies its answer at the next keyframe of the rendition it names.

export interface Rung {
  index: number;
  /** The rendition's video bit rate (bits per second). */
  bitrate: number;
}

/** Staying on (or going down to) a rendition needs its bit rate and this much more. */
export const KEEP_HEADROOM = 1.15;
/**
 * Going up needs more: a browser's receive-side estimate climbs in steps of about 8% a second
 * past what it receives, so an up-switch made on the first step would soon come back down.
 */
export const UP_HEADROOM = 1.5;

/**
 * The highest rendition the estimate carries (less what the audio takes), with more headroom
 * to go up than to stay; the lowest when none fits. `current` is the rendition index now played.
 */
export function chooseRung(rungs: Rung[], estimate: number, audioBitrate: number, current: number | undefined): number {
  if (rungs.length === 0) throw new Error("no renditions to choose from");
  const budget = estimate - audioBitrate;
  const now = rungs.find((r) => r.index === current);
  const byRate = [...rungs].sort((a, b) => b.bitrate - a.bitrate);
  const fits = byRate.find((r) => r.bitrate * (now && r.bitrate > now.bitrate ? UP_HEADROOM : KEEP_HEADROOM) <= budget);
  return (fits ?? byRate[byRate.length - 1]!).index;
}
