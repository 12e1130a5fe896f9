// Statistics of the samples a soak collects: plain functions.

export function percentile(values: number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** The `q` percentile of request latencies, ms. */
export const latencyP = (xs: { ms: number }[], q: number) => percentile(xs.map((x) => x.ms), q);

/** The samples taken from `from` to `to` (ms, inclusive). */
export const within = <T extends { at: number }>(xs: T[], from: number, to: number) => xs.filter((x) => x.at >= from && x.at <= to);

/** Least-squares slope of y over x. */
export function slope(points: { x: number; y: number }[]): number | undefined {
  if (points.length < 2) return undefined;
  const mx = points.reduce((s, p) => s + p.x, 0) / points.length;
  const my = points.reduce((s, p) => s + p.y, 0) / points.length;
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return den > 0 ? points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / den : undefined;
}
