import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Livepeer } from "livepeer";
import { FFMPEG, probe, waitFor } from "../helpers/media";
import { apiClient, startTestServer, tempDir, useTestServer } from "../helpers/server";
import { useWatchedServer } from "../helpers/watched";

// Pull ingest against real parts: ffmpeg serving testsrc2 + sine over RTMP on loopback (as an
// RTMP server or camera would), the official SDK creating the pulled stream, a real webhook
// receiver, the server's own ffmpeg reading the source.

const fx = useWatchedServer({ HLS_SEGMENT_SECONDS: "1" }, ["stream.started", "stream.idle"]);
// The default outbound policy: loopback sources refused.
const strict = useTestServer({ DESTINATION_ALLOW_HOSTS: "" });

const sdk = () => new Livepeer({ apiKey: fx.t.key, serverURL: fx.t.apiUrl });
const freePort = () => 24000 + Math.floor(Math.random() * 8000);

interface Source {
  url: string;
  exited: Promise<{ code: number | null; afterMs: number }>;
  stop(): void;
}

/**
 * An RTMP source served by ffmpeg (`-listen 1`: it waits for one reader, sends it `seconds` of
 * H.264 + AAC in real time, and exits).
 */
function serveRtmp(port: number, seconds: number): Source {
  const url = `rtmp://127.0.0.1:${port}/live/cam`;
  const started = Date.now();
  const child = spawn(FFMPEG, [
    "-hide_banner", "-nostdin", "-loglevel", "error", "-re",
    "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-pix_fmt", "yuv420p", "-b:v", "400k",
    "-c:a", "aac", "-b:a", "64k", "-f", "flv", "-listen", "1", url,
  ], { stdio: ["ignore", "ignore", "ignore"] });
  const exited = new Promise<{ code: number | null; afterMs: number }>((resolve) => child.once("close", (code) => resolve({ code, afterMs: Date.now() - started })));
  return { url, exited, stop: () => child.kill("SIGKILL") };
}

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`);

/** A few seconds of HLS (H.264 + MP2 audio, which FLV cannot carry) served over HTTP; each request's path and headers. */
async function serveHls(seconds: number): Promise<{ url: string; requests: { path: string; headers: http.IncomingHttpHeaders }[]; close(): Promise<void> }> {
  const dir = tempDir("onair-pull-hls-");
  const made = spawnSync(FFMPEG, [
    "-hide_banner", "-nostdin", "-loglevel", "error",
    "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "mp2",
    "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_playlist_type", "vod", path.join(dir, "live.m3u8"),
  ]);
  expect(made.status).toBe(0);
  const requests: { path: string; headers: http.IncomingHttpHeaders }[] = [];
  const server = http.createServer((req, res) => {
    requests.push({ path: req.url ?? "", headers: req.headers });
    const file = path.join(dir, path.basename(req.url ?? ""));
    if (!fs.existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200).end(fs.readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/live.m3u8`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe("pull ingest", () => {
  const sources: Source[] = [];
  afterAll(() => sources.forEach((s) => s.stop()));

  it("pulls an RTMP source into a live session (protocol pull), ends it cleanly when the source stops, starts again on start-pull, and stops on suspend", async () => {
    const { api, t } = fx;
    const port = freePort();
    const first = serveRtmp(port, 5);
    sources.push(first);

    const created = await sdk().stream.create({ name: "camera", pull: { source: first.url }, profiles: [{ name: "180p", width: 320, height: 180, fps: 30, bitrate: 300_000 }] });
    expect(created.statusCode).toBe(201);
    const s = created.stream!;
    expect(s.pull).toEqual({ source: first.url });

    await waitFor("isActive", async () => (await sdk().stream.get(s.id!)).stream!.isActive, 20_000);
    const probed = await probe(`http://127.0.0.1:${t.server.port}/hls/${s.playbackId}/0/index.m3u8`);
    expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264", width: 320, height: 180 });
    expect(probed.streams.find((x) => x.codec_type === "audio")).toMatchObject({ codec_name: "aac" });
    await waitFor("stream.started delivered", () => fx.eventsOf(s.id!).includes("stream.started"), 10_000);
    // The webhook's stream carries no pull source (its url may hold credentials).
    const started = fx.received().find((e) => e.stream.id === s.id && e.event === "stream.started")!;
    expect(started.stream).not.toHaveProperty("pull");
    expect(JSON.stringify(started)).not.toContain(`:${port}/`);

    // The source ends: the session ends once (the test server's reconnect window is 0).
    expect((await first.exited).code).toBe(0);
    await waitFor("isActive false", async () => !(await sdk().stream.get(s.id!)).stream!.isActive, 15_000);
    await waitFor("stream.idle delivered", () => fx.eventsOf(s.id!).includes("stream.idle"), 10_000);
    expect(fx.eventsOf(s.id!)).toEqual(["stream.started", "stream.idle"]);
    // The session closes right after (its reconnect window is 0 here), its publisher gone.
    const session = await waitFor("the session closed", async () => {
      const [x] = (await api("GET", `/stream/${s.id}/sessions`)).body;
      return x?.isActive === false ? x : undefined;
    }, 10_000);
    expect(session).toMatchObject({ protocol: "pull", isActive: false, endReason: "publisher left" });

    // The source is back; start-pull tries at once rather than at the next back-off.
    const second = serveRtmp(port, 60);
    sources.push(second);
    const startPull = await sdk().stream.startPull(s.id!);
    expect(startPull.statusCode).toBe(204);
    await waitFor("live again", async () => (await sdk().stream.get(s.id!)).stream!.isActive, 20_000);
    const pulling = t.server.processes.pids();
    expect(pulling.length).toBeGreaterThanOrEqual(2); // the pull and the live pipeline

    // Suspended: the session ends and the pull stops; its source loses its reader and exits.
    await sdk().stream.update({ suspended: true }, s.id!);
    await waitFor("no ffmpeg of the server left", () => t.server.processes.size === 0, 10_000);
    expect(pulling.filter(alive)).toEqual([]);
    const gone = await second.exited;
    expect(gone.afterMs).toBeLessThan(60_000);
    expect(t.server.processes.size).toBe(0);
    await waitFor("the second stream.idle", () => fx.eventsOf(s.id!).length === 4, 10_000);
    expect(fx.eventsOf(s.id!)).toEqual(["stream.started", "stream.idle", "stream.started", "stream.idle"]);
    const sessions = (await api("GET", `/stream/${s.id}/sessions`)).body as { protocol: string; isActive: boolean }[];
    expect(sessions.map((x) => [x.protocol, x.isActive])).toEqual([["pull", false], ["pull", false]]);

    // A suspended stream's pull does not start.
    expect((await api("POST", `/stream/${s.id}/start-pull`)).status).toBe(400);
  });

  it("pulls HLS over HTTP with the stream's headers on every request, and makes audio FLV cannot carry AAC", async () => {
    const { api, t } = fx;
    const hls = await serveHls(4);
    const proxiedBefore = t.server.pulls?.gatewayStats?.allowed ?? 0;
    try {
      const s = (await api("POST", "/stream", { name: "hls camera", pull: { source: hls.url, headers: { Authorization: "Bearer pull-token", "X-Camera": "lobby" } } })).body;
      await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 25_000);
      const probed = await probe(`http://127.0.0.1:${t.server.port}/hls/${s.playbackId}/index.m3u8`);
      expect(probed.streams.find((x) => x.codec_type === "audio")).toMatchObject({ codec_name: "aac" });
      expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264" });
      // Playlist and segments alike carried the headers.
      expect(hls.requests.some((r) => r.path.endsWith(".ts"))).toBe(true);
      for (const r of hls.requests) expect(r.headers).toMatchObject({ authorization: "Bearer pull-token", "x-camera": "lobby" });
      // Each of them through the source gateway, which the outbound policy allowed (one check per request).
      expect(t.server.pulls!.gatewayStats!.allowed - proxiedBefore).toBeGreaterThanOrEqual(hls.requests.length);
      // Deleted: the pull stops (it would read the playlist again after each end).
      expect((await api("DELETE", `/stream/${s.id}`)).status).toBe(204);
      await waitFor("no ffmpeg of the server left", () => t.server.processes.size === 0 && t.server.pulls?.status(s.id) === undefined, 10_000);
    } finally {
      await hls.close();
    }
  });

  it("checks the source against the outbound policy again before connecting (a source stored before the policy changed)", async () => {
    const { t } = strict;
    const connections: net.Socket[] = [];
    const source = net.createServer((socket) => connections.push(socket));
    await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve));
    try {
      const s = (await strict.api("POST", "/stream", { name: "stored earlier" })).body;
      // As if written while loopback was allowed: straight into the store, then heard as a change.
      await t.server.store.streams.update(s.id, { pull: { source: `rtmp://127.0.0.1:${(source.address() as AddressInfo).port}/live/x` } });
      await t.server.sessions.heard({ streamId: s.id, change: "changed" });
      const status = await waitFor("the pull refused", () => t.server.pulls?.status(s.id)?.lastProblem, 10_000);
      expect(status).toMatch(/pull not started: destination refused by the outbound policy: 127\.0\.0\.1 is not a public address/);
      expect(t.server.pulls!.status(s.id)).toMatchObject({ running: false, failures: 1 });
      expect(connections).toHaveLength(0);
      expect(t.server.processes.size).toBe(0);
    } finally {
      connections.forEach((c) => c.destroy());
      await new Promise((resolve) => source.close(resolve));
    }
  });

  it("leaves nothing running when the server stops (what SIGTERM does) mid-pull", async () => {
    const t = await startTestServer({ HLS_SEGMENT_SECONDS: "1" });
    const source = serveRtmp(freePort(), 60);
    sources.push(source);
    let pids: number[] = [];
    try {
      const api = apiClient(t.apiUrl, t.key);
      // A profile: the live run is an ffmpeg beside the pull's (a copied source would run none).
      const profiles = [{ name: "180p", width: 320, height: 180, fps: 30, bitrate: 300_000 }];
      const s = (await api("POST", "/stream", { name: "camera", pull: { source: source.url }, profiles })).body;
      await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 20_000);
      pids = t.server.processes.pids();
      expect(t.server.pulls!.status(s.id)).toMatchObject({ running: true });
    } finally {
      await t.stop();
    }
    expect(pids.length).toBeGreaterThanOrEqual(2);
    expect(pids.filter(alive)).toEqual([]);
    // Its reader gone, the source ends too.
    expect((await source.exited).afterMs).toBeLessThan(60_000);
  });

  it("start-pull: 400 without a pull source, 404 for another user's stream", async () => {
    const { api, t } = fx;
    const pushed = (await api("POST", "/stream", { name: "pushed" })).body;
    await expect(sdk().stream.startPull(pushed.id)).rejects.toMatchObject({ statusCode: 400 });
    const bob = apiClient(t.apiUrl, await t.keyFor("bob"));
    const theirs = (await bob("POST", "/stream", { name: "bob's", pull: { source: "rtmp://127.0.0.1:1/live/x" } })).body;
    expect((await api("POST", `/stream/${theirs.id}/start-pull`)).status).toBe(404);
    expect((await bob("DELETE", `/stream/${theirs.id}`)).status).toBe(204);
  });

  it("validates the pull source: schemes, SRT options, headers only for HTTP", async () => {
    const { api } = fx;
    for (const [source, error] of [
      ["file:///etc/passwd", /pull\.source.*must be a rtmp, rtmps, rtsp, srt, http, https url/],
      ["ftp://cam.example/x", /must be a rtmp/],
      ["srt://cam.example:9000?mode=listener", /only mode=caller/],
      ["rtmp://cam.example", /needs an application/],
    ] as const) {
      const res = await api("POST", "/stream", { name: "bad", pull: { source } });
      expect(res.status).toBe(422);
      expect(res.body.errors.join(" ")).toMatch(error);
    }
    const headers = await api("POST", "/stream", { name: "bad", pull: { source: "rtsp://cam.example/x", headers: { Authorization: "x" } } });
    expect(headers.status).toBe(422);
    expect(headers.body.errors.join(" ")).toMatch(/only http\(s\) sources take headers/);

    // Headers on HTTP(S) are kept and shown to the owner; PATCH changes the source, null removes it.
    const hls = await api("POST", "/stream", { name: "hls", pull: { source: "https://127.0.0.1:9/live.m3u8", headers: { Authorization: "Bearer abc" } } });
    expect(hls.status).toBe(201);
    expect(hls.body.pull).toEqual({ source: "https://127.0.0.1:9/live.m3u8", headers: { Authorization: "Bearer abc" } });
    expect((await api("PATCH", `/stream/${hls.body.id}`, { pull: { source: "ftp://x/y" } })).status).toBe(422);
    expect((await api("PATCH", `/stream/${hls.body.id}`, { pull: null })).status).toBe(204);
    expect((await api("GET", `/stream/${hls.body.id}`)).body).not.toHaveProperty("pull");
    expect((await api("DELETE", `/stream/${hls.body.id}`)).status).toBe(204);
  });

  it("refuses a loopback or private source under the default outbound policy", async () => {
    for (const source of ["rtmp://127.0.0.1:1935/live/x", "rtsp://10.1.2.3/stream", "http://[::1]:8080/x.m3u8"]) {
      const res = await strict.api("POST", "/stream", { name: "inside", pull: { source } });
      expect(res.status).toBe(422);
      expect(res.body.errors.join(" ")).toMatch(/pull\.source: destination refused by the outbound policy: .* is not a public address/);
    }
    const s = (await strict.api("POST", "/stream", { name: "outside" })).body;
    const patched = await strict.api("PATCH", `/stream/${s.id}`, { pull: { source: "rtmp://localhost/live/x" } });
    expect(patched.status).toBe(422);
    expect(patched.body.errors.join(" ")).toMatch(/destination refused by the outbound policy/);
  });
});
