import http from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { checkReadiness, healthRouter, judgeReadiness, judgeFreeSpace } from "../../src/health";
import { createMetrics, RateWindow, rateBetween, routeLabel } from "../../src/metrics";
import { sampleValue } from "./prometheusText";

describe("rates over a trailing window", () => {
  it.each([
    { samples: [], rate: undefined },
    { samples: [{ at: 0, value: 0 }], rate: undefined },
    { samples: [{ at: 1000, value: 5 }, { at: 1000, value: 9 }], rate: undefined },
    { samples: [{ at: 0, value: 0 }, { at: 2000, value: 250_000 }], rate: 125_000 },
    { samples: [{ at: 0, value: 0 }, { at: 1000, value: 1 }, { at: 4000, value: 4 }], rate: 1 },
  ])("rateBetween %j", ({ samples, rate }) => {
    expect(rateBetween(samples)).toBe(rate);
  });

  it("keeps one reading older than the window as its base, so close readings do not jump", () => {
    const w = new RateWindow(10_000);
    w.add(0, 0);
    w.add(12_000, 12); // base stays at 0: nothing newer is old enough yet
    expect(w.perSecond()).toBe(1);
    w.add(12_100, 14); // a second scraper right after: still spans 12.1 s
    expect(w.perSecond()).toBeCloseTo(14 / 12.1, 6);
    w.add(30_000, 32); // 0 and 12_000 fall out; 12_100 is the newest reading before 20_000
    expect(w.perSecond()).toBeCloseTo((32 - 14) / 17.9, 6);
  });
});

describe("free space", () => {
  it("is enough above the minimum, and says how much is left below it", () => {
    expect(judgeFreeSpace(200 * 1024 * 1024)).toBeUndefined();
    expect(judgeFreeSpace(10 * 1024 * 1024)).toBe("only 10 MiB free on the data directory (at least 64 MiB needed)");
  });
});

describe("readiness", () => {
  it("is ready only when every check passes, and names what fails", () => {
    expect(judgeReadiness({ database: undefined, storage: undefined, ffmpeg: undefined, rtmp: undefined })).toEqual({
      status: 200,
      body: { status: "ok", checks: { database: "ok", storage: "ok", ffmpeg: "ok", rtmp: "ok" } },
    });
    expect(judgeReadiness({ database: undefined, storage: undefined, ffmpeg: "not found", rtmp: undefined })).toEqual({
      status: 503,
      body: { status: "unavailable", checks: { database: "ok", storage: "ok", ffmpeg: "not found", rtmp: "ok" } },
    });
  });

  it("takes a probe that throws as failed with its message", async () => {
    const r = await checkReadiness({
      database: () => {
        throw new Error("disk I/O error");
      },
      storage: () => undefined,
      ffmpeg: () => undefined,
      rtmp: () => "the RTMP server is not listening",
    });
    expect(r.status).toBe(503);
    expect(r.body.checks).toEqual({ database: "disk I/O error", storage: "ok", ffmpeg: "ok", rtmp: "the RTMP server is not listening" });
  });

  it("answers /readyz 503 and /healthz 200 over HTTP when a check fails", async () => {
    const app = express().use(healthRouter({ database: () => undefined, storage: () => undefined, ffmpeg: () => undefined, rtmp: () => "the RTMP server is not listening" }));
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get("cache-control")).toBe("no-store");
      expect(await ready.json()).toEqual({ status: "unavailable", checks: { database: "ok", storage: "ok", ffmpeg: "ok", rtmp: "the RTMP server is not listening" } });
      const live = await fetch(`${base}/healthz`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: "ok" });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("metrics of one server", () => {
  it("counts a live session from playable to its end, and a failed pipeline", async () => {
    let clock = 0;
    let bytes = 0;
    const m = createMetrics({ ffmpegProcesses: () => 2, queueDepths: () => ({ "webhook-delivery": 3 }), publisherBytes: () => bytes, now: () => clock });
    const s = m.liveSessionStarted({ streamId: "st1", sessionId: "se1", publisher: () => "p1" });
    let text = (await m.scrape()).body;
    expect(sampleValue(text, "onair_live_sessions")).toBe(0); // not playable yet
    s.playable();
    clock = 2000;
    s.progress(1);
    clock = 4000;
    bytes = 500_000;
    s.progress(2);
    text = (await m.scrape()).body;
    expect(sampleValue(text, "onair_live_sessions")).toBe(1);
    expect(sampleValue(text, "onair_ingest_bitrate_bits_per_second", { stream_id: "st1" })).toBe(1_000_000);
    expect(sampleValue(text, "onair_transcode_speed", { stream_id: "st1" })).toBe(1);
    // The standard process series, and no session ids in any label.
    for (const name of ["process_cpu_seconds_total", "process_resident_memory_bytes", "nodejs_eventloop_lag_seconds", "process_open_fds"]) expect(text).toContain(`\n${name} `);
    expect(text).not.toContain("session_id");
    expect(sampleValue(text, "onair_ffmpeg_processes")).toBe(2);
    expect(sampleValue(text, "onair_queue_depth", { queue: "webhook-delivery" })).toBe(3);
    expect(sampleValue(text, "onair_pipeline_failures_total")).toBe(0);

    s.ended("pipeline failed");
    s.ended("pipeline failed"); // once only
    text = (await m.scrape()).body;
    expect(sampleValue(text, "onair_live_sessions")).toBe(0);
    expect(sampleValue(text, "onair_pipeline_failures_total")).toBe(1);
    expect(sampleValue(text, "onair_ingest_bitrate_bits_per_second", { stream_id: "st1" })).toBeUndefined();
    expect(sampleValue(text, "onair_transcode_speed", { stream_id: "st1" })).toBeUndefined();
  });

  it("counts webhook outcomes and HTTP requests by route pattern; servers do not share counts", async () => {
    const sources = { ffmpegProcesses: () => 0, queueDepths: () => ({}), publisherBytes: () => undefined };
    const a = createMetrics(sources);
    const b = createMetrics(sources);
    a.webhookDelivery("retry");
    a.webhookDelivery("delivered");
    a.webhookDelivery("retry");
    a.httpRequest("GET", routeLabel("/api", "/stream/:id"), 404, 0.002);
    const text = (await a.scrape()).body;
    expect(sampleValue(text, "onair_webhook_deliveries_total", { outcome: "retry" })).toBe(2);
    expect(sampleValue(text, "onair_webhook_deliveries_total", { outcome: "failed" })).toBe(0);
    expect(sampleValue(text, "onair_http_requests_total", { method: "GET", route: "/api/stream/:id", status: "404" })).toBe(1);
    expect(sampleValue(text, "onair_http_request_duration_seconds_count", { route: "/api/stream/:id" })).toBe(1);
    expect(sampleValue((await b.scrape()).body, "onair_webhook_deliveries_total", { outcome: "retry" })).toBe(0);
  });

  it("leaves the queue gauge out, and still answers, when the depth cannot be read", async () => {
    const m = createMetrics({
      ffmpegProcesses: () => 1,
      queueDepths: () => Promise.reject(new Error("redis is away")),
      publisherBytes: () => undefined,
    });
    const text = (await m.scrape()).body;
    expect(sampleValue(text, "onair_queue_depth", {})).toBeUndefined();
    expect(sampleValue(text, "onair_ffmpeg_processes")).toBe(1);
  });

  it.each([
    ["/api", "/stream/:id", "/api/stream/:id"],
    ["", "/hls/:playbackId/index.m3u8", "/hls/:playbackId/index.m3u8"],
    ["", undefined, "other"],
  ])("route label of %s + %s is %s", (base, path, label) => {
    expect(routeLabel(base, path)).toBe(label);
  });
});
