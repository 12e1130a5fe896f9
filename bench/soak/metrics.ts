// Reading the server's /metrics text (prom-client's exposition format): plain functions.

const SAMPLE_LINE = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/;

/** The sum of a metric's samples (every label set) in prom-client's text, or undefined if absent. */
export function metricSum(text: string, name: string, pick: (labels: string) => boolean = () => true): number | undefined {
  let sum: number | undefined;
  for (const line of text.split("\n")) {
    const m = SAMPLE_LINE.exec(line);
    if (!m || m[1] !== name || !pick(m[2] ?? "")) continue;
    sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

/** The smallest of a gauge's samples. */
export function metricMin(text: string, name: string): number | undefined {
  const values = text
    .split("\n")
    .map((line) => SAMPLE_LINE.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && m[1] === name)
    .map((m) => Number(m[3]));
  return values.length ? Math.min(...values) : undefined;
}

/** Request counts by histogram bucket (upper bound in s) of the routes `pick` keeps, `to` minus `from`. */
export function serverBuckets(from: string, to: string, pick: (labels: string) => boolean): Map<number, number> {
  const read = (text: string) => {
    const buckets = new Map<number, number>();
    for (const line of text.split("\n")) {
      const m = /^onair_http_request_duration_seconds_bucket\{([^}]*)\}\s+(\S+)/.exec(line);
      if (!m || !pick(m[1]!)) continue;
      const le = /le="([^"]+)"/.exec(m[1]!)?.[1];
      const bound = le === "+Inf" ? Infinity : Number(le);
      buckets.set(bound, (buckets.get(bound) ?? 0) + Number(m[2]));
    }
    return buckets;
  };
  const a = read(from);
  const b = read(to);
  return new Map([...b.entries()].map(([le, n]) => [le, n - (a.get(le) ?? 0)]));
}

/** "≤ 25": the smallest bucket bound (ms) holding 99 % of the requests; ">10000" past the last. */
export function serverP99(buckets: Map<number, number>): string {
  const total = buckets.get(Infinity) ?? 0;
  if (total <= 0) return "-";
  for (const [le, n] of [...buckets.entries()].sort((x, y) => x[0] - y[0])) {
    if (n >= 0.99 * total) return Number.isFinite(le) ? `<=${le * 1000}` : `>${Math.max(...[...buckets.keys()].filter(Number.isFinite)) * 1000}`;
  }
  return "-";
}
