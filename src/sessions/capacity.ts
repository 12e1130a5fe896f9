import type { Profile } from "../shapes";

// Admission by capacity: each live stream's ladder costs the pixels per second it encodes, and
// the node has a budget (TRANSCODE_BUDGET, megapixels per second). A publish whose ladder does
// not fit is refused rather than admitted to slow every other stream below real time.

/** Output megapixels per second of a ladder; a passthrough stream (no profiles) costs nothing to encode. */
export function ladderCost(profiles: Pick<Profile, "width" | "height" | "fps">[]): number {
  let pixels = 0;
  for (const p of profiles) pixels += p.width * p.height * (p.fps || 30);
  return pixels / 1e6;
}

/**
 * The default budget: what bench:live measured on a 2-core development machine, 2 ladders of
 * 720p30 + 480p30 + 360p30 (46.8 Mpx/s each) at real time with room for the rest of the
 * server, i.e. about 50 Mpx/s per core.
 */
export const BUDGET_PER_CORE = 50;

export function defaultTranscodeBudget(cores: number): number {
  return BUDGET_PER_CORE * Math.max(1, cores);
}

/** Why a ladder costing `cost` does not fit beside `used` in `budget`; undefined when it fits. */
export function refuseForCapacity(cost: number, used: number, budget: number): string | undefined {
  if (cost === 0 || used + cost <= budget) return undefined;
  return `server at capacity: this stream's ladder needs ${cost.toFixed(1)} Mpx/s of transcoding and ${Math.max(0, budget - used).toFixed(1)} of ${budget} are free (TRANSCODE_BUDGET); try later, or use fewer or smaller profiles`;
}
