import { READ_ONLY_PROBE, setReadOnly } from "../helpers/database";
import path from "node:path";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";
import { labelValues, sampleValue } from "./prometheusText";

// /metrics, /healthz and /readyz of a real server, scraped while real RTMP is pushed.

let t: TestServer;
let api: Api;
let base: string;
/** The operator's listener: /metrics and /readyz. */
let admin: string;
let receiver: http.Server;
let received = 0;

beforeAll(async () => {
  t = await startTestServer({ HLS_SEGMENT_SECONDS: "1" });
  api = apiClient(t.apiUrl, t.key);
  base = `http://127.0.0.1:${t.server.port}`;
  admin = t.server.adminUrl;
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  await t.stop();
  await new Promise((resolve) => receiver.close(resolve));
});

const scrape = async () => {
  const res = await fetch(`${admin}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
};

describe("health", () => {
  it("/healthz answers ok and /readyz is ready", async () => {
    const live = await fetch(`${base}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${admin}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ok", checks: { database: "ok", storage: "ok", ffmpeg: "ok", rtmp: "ok" } });
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
  });

  it("/metrics and /readyz are not on the public port: a 404 that says where they are", async () => {
    for (const p of ["/metrics", "/readyz"]) {
      const res = await fetch(`${base}${p}`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { errors: string[] }).errors[0]).toBe(`${p} is served on the operator's listener (${admin.replace("http://", "")}, ADMIN_PORT), or here with METRICS_TOKEN as a bearer token`);
    }
    expect(t.server.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe("GET /metrics during a live push", () => {
  it("counts the live session, its ffmpeg, its rates, webhooks and HTTP requests by route; then returns to 0", async () => {
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    expect((await api("POST", "/webhook", { name: "ops", url: receiverUrl, events: ["stream.started"] })).status).toBe(200);
    const s = (await api("POST", "/stream", { name: "metrics", profiles: [{ name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 }] })).body;
    const before = await scrape();
    expect(sampleValue(before, "onair_live_sessions")).toBe(0);

    const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 8 });
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
    // The speed needs two completed segments; by then the ingest has a few seconds of history.
    const during = await waitFor("a transcode speed", async () => {
      const text = await scrape();
      return sampleValue(text, "onair_transcode_speed", { stream_id: s.id }) !== undefined ? text : undefined;
    });
    expect(sampleValue(during, "onair_live_sessions")).toBe(1);
    expect(sampleValue(during, "onair_ffmpeg_processes")).toBeGreaterThanOrEqual(1);
    // testsrc2 320x180 in x264 plus 64 kb/s audio: tens of kb/s at least, far below 10 Mb/s.
    const bitrate = sampleValue(during, "onair_ingest_bitrate_bits_per_second", { stream_id: s.id })!;
    expect(bitrate).toBeGreaterThan(64_000);
    expect(bitrate).toBeLessThan(10_000_000);
    // Pulled from a live RTMP stream: about real time, never many times faster.
    const speed = sampleValue(during, "onair_transcode_speed", { stream_id: s.id })!;
    expect(speed).toBeGreaterThan(0.3);
    expect(speed).toBeLessThan(3);
    expect(sampleValue(during, "onair_queue_depth", { queue: "webhook-delivery" })).toBeGreaterThanOrEqual(0);
    // The API's rates (bytes per second) agree with the metric: the same socket, the same window.
    const live = (await api("GET", `/stream/${s.id}`)).body;
    expect(live.ingestRate).toBeGreaterThan((bitrate / 8) * 0.5);
    expect(live.ingestRate).toBeLessThan((bitrate / 8) * 2);
    // One 180p rendition at 300 kb/s plus audio goes out: some, and not more than a few times that.
    expect(live.outgoingRate).toBeGreaterThan(0);
    expect(live.outgoingRate).toBeLessThan(300_000);
    const [liveSession] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(liveSession.ingestRate).toBeGreaterThan(0);
    expect(liveSession.outgoingRate).toBeGreaterThan(0);
    expect(sampleValue(during, "onair_http_requests_total", { method: "POST", route: "/api/stream", status: "201" })).toBe(1);
    expect(sampleValue(during, "onair_http_requests_total", { method: "GET", route: "/api/stream/:id", status: "200" })).toBeGreaterThanOrEqual(1);
    // Route patterns only: no label carries an object's id.
    const routes = labelValues(during, "onair_http_requests_total", "route");
    expect(routes).toContain("/api/stream/:id");
    expect(routes.filter((r) => r.includes(s.id))).toEqual([]);

    // stream.started reached the receiver and was counted as delivered.
    await waitFor("the webhook delivery", () => received >= 1);
    await waitFor("the delivery counted", async () => (sampleValue(await scrape(), "onair_webhook_deliveries_total", { outcome: "delivered" }) ?? 0) >= 1);

    expect((await push.exited).code).toBe(0);
    await waitFor("isActive false", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive);
    await waitFor("the pipeline's ffmpeg to exit", () => t.server.processes.size === 0, 5000);
    const after = await scrape();
    expect(sampleValue(after, "onair_live_sessions")).toBe(0);
    expect(sampleValue(after, "onair_ffmpeg_processes")).toBe(0);
    expect(sampleValue(after, "onair_ingest_bitrate_bits_per_second", { stream_id: s.id })).toBeUndefined();
    expect(sampleValue(after, "onair_transcode_speed", { stream_id: s.id })).toBeUndefined();
    expect(sampleValue(after, "onair_pipeline_failures_total")).toBe(0);
    const ended = (await api("GET", `/stream/${s.id}`)).body;
    expect([ended.ingestRate, ended.outgoingRate]).toEqual([0, 0]);
  });

  it("labels a request no route matched as other, never by its path", async () => {
    expect((await fetch(`${base}/no/such/thing-abc123`)).status).toBe(404);
    const text = await scrape();
    expect(sampleValue(text, "onair_http_requests_total", { method: "GET", route: "other", status: "404" })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain("thing-abc123");
  });
});

describe("readiness when the media folder cannot be written", () => {
  it("/readyz is 503 naming storage while DATA_DIR/hls cannot take a file", async () => {
    const hls = path.join(t.dataDir, "hls");
    fs.rmSync(hls, { recursive: true, force: true });
    fs.writeFileSync(hls, "not a folder"); // what a broken mount looks like to a writer
    try {
      // The storage watch probes every 2 s, and readiness is reused for 1.5 s.
      const ready = await waitFor("/readyz 503", async () => {
        const res = await fetch(`${admin}/readyz`);
        return res.status === 503 ? res : undefined;
      }, 8000);
      const body = (await ready.json()) as { checks: Record<string, string> };
      expect(body.checks.storage).toMatch(/^cannot write to .*hls: E(NOTDIR|EXIST)/);
      expect(body.checks.database).toBe("ok");
    } finally {
      fs.rmSync(hls, { force: true });
    }
    await waitFor("/readyz 200", async () => (await fetch(`${admin}/readyz`)).status === 200, 8000);
  });
});

describe("readiness when the database refuses writes", () => {
  // Last in this file: the server's own queue cannot write meanwhile either.
  it("/readyz is 503 naming the database, and ready again once it takes writes", async () => {
    const { store } = t.server;
    // What the database answers on a read-only volume (or server): every write is refused.
    await setReadOnly(store, true);
    try {
      const ready = await waitFor("/readyz 503", async () => {
        const res = await fetch(`${admin}/readyz`);
        return res.status === 503 ? res : undefined;
      }, 5000);
      expect(await ready.json()).toEqual({
        status: "unavailable",
        checks: { database: expect.stringMatching(READ_ONLY_PROBE), storage: "ok", ffmpeg: "ok", rtmp: "ok" },
      });
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      await setReadOnly(store, false);
    }
    await waitFor("/readyz 200", async () => (await fetch(`${admin}/readyz`)).status === 200, 5000);
    // The probe gave the SQLite connection its usual lock wait back.
    if (store.db.sqlite) expect(store.db.sqlite.pragma("busy_timeout", { simple: true })).toBe(5000);
  });
});
