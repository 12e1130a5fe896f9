// Which rendition a WebRTC viewer gets, from the bandwidth its player estimates (REMB) and the
// loss its receiver reports show. Pure functions: the viewer applies the answer at the next
// keyframe of the rendition it names.

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

/** Past this fraction lost, the sender's own estimate comes down (GCC's loss-based controller). */
export const LOSS_HIGH = 0.1;
/** Under this fraction lost, it may climb again. */
export const LOSS_LOW = 0.02;
/** How far it climbs per loss-free step: +5 %. */
const LOSS_FREE_GROWTH = 1.05;
/**
 * The rule runs at most this often, down and up (ms), as Chrome's own loss controller does: a
 * player sends a receiver report with every NACK, PLI and REMB (compound RTCP), each over a short,
 * noisy interval, so applying every report would cut and climb several times a second.
 */
export const LOSS_DOWN_EVERY_MS = 300;
export const LOSS_UP_EVERY_MS = 1000;

/**
 * The sender's loss-based estimate after one receiver report (draft-ietf-rmcat-gcc-02 §6):
 * down by half the fraction lost past 10 %, up 5 % under 2 %, unchanged between. `sent` is
 * what the viewer is being sent now (the cut starts there, not from an estimate far above it);
 * `previous` is Infinity while no loss has limited it. A player whose REMB stays high on a
 * lossy path (a congested last mile its estimate misses) still steps down. Never below `floor`
 * (the lowest rung's rate): there is nothing lower to send, and a limit compounded far under
 * it by a long loss would take minutes to climb back.
 */
export function lossEstimate(previous: number, sent: number, fractionLost: number, floor = 0): number {
  if (fractionLost > LOSS_HIGH) return Math.max(floor, Math.min(previous, sent) * (1 - 0.5 * fractionLost));
  if (fractionLost < LOSS_LOW) return previous * LOSS_FREE_GROWTH;
  return previous;
}

/**
 * A loss-free stretch this long lifts the loss-based limit altogether (ms), so the player's own
 * estimate governs again. Climbing 5 % a step from the lowest rung to the top of a ladder takes
 * about a minute; a burst of loss (a queue overflowing once on a busy host) would otherwise hold a
 * viewer low long after the path has recovered. A path that is still lossy limits it again within
 * one LOSS_DOWN_EVERY_MS.
 */
export const LOSS_LIFT_AFTER_MS = 5000;

/** Whether a report of this loss, `sinceLossMs` after the last report with loss, lifts the limit. */
export function lossLimitLifts(fractionLost: number, sinceLossMs: number): boolean {
  return fractionLost < LOSS_LOW && sinceLossMs >= LOSS_LIFT_AFTER_MS;
}

/** Whether a report of this loss may move the estimate `sinceLastMs` after its last move. */
export function lossStepDue(fractionLost: number, sinceLastMs: number): boolean {
  if (fractionLost > LOSS_HIGH) return sinceLastMs >= LOSS_DOWN_EVERY_MS;
  if (fractionLost < LOSS_LOW) return sinceLastMs >= LOSS_UP_EVERY_MS;
  return false;
}
