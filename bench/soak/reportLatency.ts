// Report section 2: API and HLS latency, idle vs under load, from this bench and from the
// server's own histogram, and the server's event loop delay.

import { fixed, formatTable, median } from "../lib";
import { API_KINDS, API_MAX_IN_FLIGHT, type ApiKind, type ApiSample } from "./apiLoad";
import { serverBuckets, serverP99 } from "./metrics";
import { apiAfterWarmUp, baselineApi, type SoakResult } from "./result";
import type { LoopDelay } from "./server";
import { SAMPLE_MS } from "./settings";
import { latencyP, within } from "./stats";

/** The route label the server's onair_http_request_duration_seconds gives each kind of request. */
const ROUTES: Record<ApiKind, { method: string; route: string }> = {
  "GET /api/stream/{id}": { method: "GET", route: "/api/stream/:id" },
  "GET /api/stream": { method: "GET", route: "/api/stream" },
  "GET /api/session": { method: "GET", route: "/api/session" },
  "PATCH /api/stream/{id}": { method: "PATCH", route: "/api/stream/:id" },
};
const routeIs = (method: string, route: string) => (labels: string) => labels.includes(`method="${method}"`) && labels.includes(`route="${route}"`);
const anyApiRoute = (labels: string) => API_KINDS.some((k) => routeIs(ROUTES[k].method, ROUTES[k].route)(labels));
const hlsRoute = (labels: string) => /route="\/hls\//.test(labels);

export function latencySection(r: SoakResult): string[] {
  const base = baselineApi(r);
  const under = apiAfterWarmUp(r);
  const serverIdle = (pick: (l: string) => boolean) => serverP99(serverBuckets(r.baseline.metricsFrom, r.baseline.metricsTo, pick));
  const serverLoad = (pick: (l: string) => boolean) => (r.metrics.warm && r.metrics.end ? serverP99(serverBuckets(r.metrics.warm, r.metrics.end, pick)) : "-");
  const row = (label: string, idle: ApiSample[] | undefined, load: { ms: number; ok?: boolean }[], pick: (l: string) => boolean) => {
    const i99 = idle ? latencyP(idle, 99) : undefined;
    const l99 = latencyP(load, 99);
    return [
      label,
      idle ? String(idle.length) : "-",
      idle ? fixed(latencyP(idle, 50), 1) : "-",
      idle ? fixed(i99, 1) : "-",
      idle ? serverIdle(pick) : "-",
      String(load.length),
      fixed(latencyP(load, 50), 1),
      fixed(l99, 1),
      fixed(Math.max(0, ...load.map((x) => x.ms)), 0),
      serverLoad(pick),
      String(load.filter((x) => x.ok === false).length + (idle?.filter((x) => !x.ok).length ?? 0)),
      i99 !== undefined && l99 !== undefined ? fixed(l99 / i99, 2) : "-",
    ];
  };
  const errors = [...r.baseline.load.errors, ...r.load.errors];
  const notSent = r.baseline.load.notSent + r.load.notSent;
  // Readings cover the SAMPLE_MS before they arrive.
  const loopIdle = r.o.loopDelays.filter((x) => x.at > r.baseline.from + SAMPLE_MS && x.at <= r.baseline.end.at + 1000);
  const loopLoad = within(r.o.loopDelays, r.warmEnd + SAMPLE_MS, r.runEnd + 1000);
  const loopRow = (label: string, xs: LoopDelay[]) => [
    label,
    String(xs.length),
    fixed(median(xs.map((x) => x.p50)), 1),
    fixed(median(xs.map((x) => x.p99)), 1),
    fixed(Math.max(...xs.map((x) => x.p99)), 1),
    fixed(Math.max(...xs.map((x) => x.max)), 1),
  ];
  return [
    "",
    "2. latency, ms: idle server (baseline, no media) vs under the soak load after the warm-up",
    "   p50/p99/max: from this bench, request sent to last byte read; server p99: the server's own onair_http_request_duration_seconds",
    "   over the same window (middleware to response finished; a bucket bound, so \"<=25\" means between the bucket below and 25 ms)",
    "",
    formatTable(
      ["request", "idle n", "idle p50", "idle p99", "idle server p99", "load n", "load p50", "load p99", "load max", "load server p99", "errors", "p99 × idle"],
      [
        ...API_KINDS.map((k) => row(k, base.filter((x) => x.kind === k), under.filter((x) => x.kind === k), routeIs(ROUTES[k].method, ROUTES[k].route))),
        row("all API", base, under, anyApiRoute),
        row("HLS media playlist", undefined, within(r.readerLog.playlistLatencies, r.warmEnd, r.runEnd), hlsRoute),
        row("HLS segment", undefined, within(r.readerLog.segmentLatencies, r.warmEnd, r.runEnd), hlsRoute),
      ],
    ),
    "",
    `   the server's event loop delay, ms (monitorEventLoopDelay preloaded into the server: how late its 10 ms timer fired; one reading per ${SAMPLE_MS / 1000} s)`,
    "",
    formatTable(["", "readings", "p50 (median)", "p99 (median)", "p99 (worst)", "max"], [loopRow("idle (baseline)", loopIdle), loopRow("soak (after warm-up)", loopLoad)]),
    ...(notSent > 0 ? [`   ${notSent} API requests not sent (over ${API_MAX_IN_FLIGHT} unanswered, or the bench fell > 1 s behind)`] : []),
    ...(errors.length ? ["   API errors (first ones):", ...errors.slice(0, 10).map((e) => `     ${e}`)] : []),
  ];
}
