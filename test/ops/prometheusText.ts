/** The value of one sample in Prometheus text: `name{labels}` with every given label matching. */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** Every value of one label across a metric's samples. */
export function labelValues(text: string, name: string, label: string): string[] {
  const out: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{")) continue;
    const m = new RegExp(`[{,]${label}="([^"]*)"`).exec(line);
    if (m) out.push(m[1]!);
  }
  return out;
}
