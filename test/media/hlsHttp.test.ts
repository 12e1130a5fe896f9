import * as HLS from "hls-parser";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";

// HLS over real HTTP from a real RTMP push: a live session's LL-HLS answered from memory
// (blocking reload, preload hints, parts), then the files an ended session leaves on disk.

HLS.setOptions({ strictMode: true, silent: true });

let t: TestServer;
let api: Api;
let base: string;

beforeAll(async () => {
  t = await startTestServer();
  api = apiClient(t.apiUrl, t.key);
  base = `http://127.0.0.1:${t.server.port}`;
});
afterAll(() => t.stop());

type Stream = { id: string; playbackId: string; streamKey: string };
const PROFILES = [{ name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 }];

async function goLive(name: string, seconds: number, extra: object = {}): Promise<{ stream: Stream; push: Push }> {
  const stream = (await api("POST", "/stream", { name, profiles: PROFILES, ...extra })).body as Stream;
  const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${stream.streamKey}`, { seconds });
  await waitFor("isActive", async () => (await api("GET", `/stream/${stream.id}`)).body.isActive);
  return { stream, push };
}

const media = (text: string) => HLS.parse(text) as HLS.types.MediaPlaylist;
/** The part the playlist's preload hint names, and where it sits: the next part to come. */
function nextPart(pl: HLS.types.MediaPlaylist): { msn: number; part: number; uri: string } {
  const last = pl.segments[pl.segments.length - 1]!;
  const hint = last.parts.find((p) => p.hint)!;
  const done = last.parts.filter((p) => !p.hint).length;
  // The hint belongs to the open segment (no URI yet), or starts the next one.
  return last.uri ? { msn: last.mediaSequenceNumber + 1, part: 0, uri: hint.uri } : { msn: last.mediaSequenceNumber, part: done, uri: hint.uri };
}

describe("live LL-HLS from memory", () => {
  let live: { stream: Stream; push: Push };
  beforeAll(async () => {
    live = await goLive("ll", 30);
  });
  afterAll(async () => {
    live.push.child.kill("SIGKILL");
    await live.push.exited;
    await waitFor("the session to end", () => t.server.sessions.runtimes().length === 0, 10_000);
  });
  const url = (file: string) => `${base}/hls/${live.stream.playbackId}/${file}`;

  it("the master and the playlist: strict-parser clean, parts, hint, gzip, no caching of the live edge", async () => {
    const master = await fetch(url("index.m3u8"), { headers: { origin: "https://player.example.com" } });
    expect(master.status).toBe(200);
    expect(master.headers.get("content-type")).toBe("application/vnd.apple.mpegurl");
    // Written for one viewer (its session token in the variant URIs): never shared by a cache.
    expect(master.headers.get("cache-control")).toBe("private, no-cache");
    expect(master.headers.get("access-control-allow-origin")).toBe("*");
    const variant = (HLS.parse(await master.text()) as HLS.types.MasterPlaylist).variants[0]!;
    expect(variant.codecs).toMatch(/^avc1\.[0-9a-f]{6},mp4a\.40\.2$/);
    expect(variant.uri).toMatch(/^0\/index\.m3u8\?s=[\w-]{16}\.\d+\.[\w-]{22}$/);

    const res = await fetch(url("0/index.m3u8"), { headers: { "accept-encoding": "gzip" } });
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const pl = media(await res.text());
    expect(pl.partTargetDuration).toBe(0.2);
    expect(pl.lowLatencyCompatibility).toMatchObject({ canBlockReload: true, partHoldBack: 0.6 });
    expect(pl.targetDuration).toBe(1);
    expect(pl.segments.some((s) => s.parts.some((p) => !p.hint && p.independent))).toBe(true);
    expect(nextPart(pl).uri).toMatch(/_p\d+\.m4s$/);
  });

  it("a blocking reload returns as soon as the asked part exists, and holds it", async () => {
    const pl = media(await (await fetch(url("0/index.m3u8"))).text());
    const want = nextPart(pl);
    const started = Date.now();
    const res = await fetch(url(`0/index.m3u8?_HLS_msn=${want.msn}&_HLS_part=${want.part}`));
    const waited = Date.now() - started;
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    const after = media(await res.text());
    const seg = after.segments.find((s) => s.mediaSequenceNumber === want.msn)!;
    expect(seg.parts.filter((p) => !p.hint).length).toBeGreaterThan(want.part);
    // A part every 0.2 s: the wait is about one part, more when a busy machine's encoder delivers
    // in bursts; under the 3 s after which the server gives up on the part (503).
    expect(waited).toBeLessThan(2500);
  });

  it("the hinted part is awaited, then served as fMP4; parts, segments and init are immutable", async () => {
    const pl = media(await (await fetch(url("0/index.m3u8"))).text());
    const hinted = await fetch(url(`0/${nextPart(pl).uri}`));
    expect(hinted.status).toBe(200);
    expect(hinted.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await hinted.arrayBuffer()).subarray(4, 8).toString("latin1")).toBe("moof");
    const segment = pl.segments.find((s) => s.uri)!;
    for (const file of [segment.uri, segment.map.uri]) {
      const res = await fetch(url(`0/${file}`));
      expect([file, res.status]).toEqual([file, 200]);
      expect(res.headers.get("cache-control")).toBe("public, max-age=86400, immutable");
    }
  });

  it("refuses delivery directives it cannot honour with 400 and a reason", async () => {
    const pl = media(await (await fetch(url("0/index.m3u8"))).text());
    for (const q of [`_HLS_part=1`, `_HLS_msn=${pl.mediaSequenceBase! + pl.segments.length + 5}`, `_HLS_msn=abc`]) {
      const res = await fetch(url(`0/index.m3u8?${q}`));
      expect([q, res.status]).toEqual([q, 400]);
      expect(((await res.json()) as { errors: string[] }).errors[0]).toMatch(/_HLS_/);
    }
  });
});

describe("a playlist that stops growing", () => {
  it("a blocking reload that cannot be served in three target durations is a 503", async () => {
    // The publisher dies; the session waits for it (reconnect window), its playlist open and still.
    const { stream, push } = await goLive("stalls", 30, { reconnectWindow: 60 });
    push.child.kill("SIGKILL");
    await push.exited;
    await waitFor("idle", async () => !(await api("GET", `/stream/${stream.id}`)).body.isActive);
    const url = `${base}/hls/${stream.playbackId}/0/index.m3u8`;
    await waitFor("the last run's segments", async () => {
      const a = await (await fetch(url)).text();
      await new Promise((r) => setTimeout(r, 300));
      return a === (await (await fetch(url)).text());
    });
    const want = nextPart(media(await (await fetch(url)).text()));
    const started = Date.now();
    const res = await fetch(`${url}?_HLS_msn=${want.msn}&_HLS_part=${want.part}`);
    expect(res.status).toBe(503);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    expect(((await res.json()) as { errors: string[] }).errors[0]).toMatch(/did not arrive in 3 s/);
    expect((await api("DELETE", `/stream/${stream.id}/terminate`)).status).toBe(204);
    await waitFor("the session to end", () => t.server.sessions.runtimes().length === 0, 10_000);
  });
});

describe("an ended session's HLS, from disk", () => {
  let stream: Stream;
  beforeAll(async () => {
    const live = await goLive("ended", 3);
    stream = live.stream;
    await live.push.exited;
    await waitFor("the session to end", () => t.server.sessions.runtimes().length === 0, 10_000);
  });

  it("the playlist has ended; segments are served with ranges, caching and CORS", async () => {
    const text = await (await fetch(`${base}/hls/${stream.playbackId}/0/index.m3u8`)).text();
    const pl = media(text);
    expect(pl.endlist).toBe(true);
    const segment = pl.segments[0]!.uri;
    const res = await fetch(`${base}/hls/${stream.playbackId}/0/${segment}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("video/mp4");
    expect(res.headers.get("cache-control")).toMatch(/max-age=\d{4,}/);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(Buffer.from(await res.arrayBuffer()).subarray(4, 8).toString("latin1")).toBe("moof");
    const ranged = await fetch(`${base}/hls/${stream.playbackId}/0/${segment}`, { headers: { range: "bytes=0-187" } });
    expect(ranged.status).toBe(206);
    expect((await ranged.arrayBuffer()).byteLength).toBe(188);
  });

  it("404s unknown playback ids and files, and never leaves the HLS folder", async () => {
    const paths = [
      "/hls/zzzzzzzzzzzzzzzz/index.m3u8",
      `/hls/${stream.playbackId}/7/index.m3u8`,
      `/hls/${stream.playbackId}/0/nope.m4s`,
      `/hls/${stream.playbackId}/..%2f..%2fonair.db`,
      `/hls/${stream.playbackId}/0/..%2f..%2f..%2fonair.db`,
      `/hls/..%2f..%2fonair.db/index.m3u8`,
      `/hls/${stream.playbackId}/%2e%2e/index.m3u8`,
      `/hls/${stream.playbackId}/0/.hidden.m4s`,
      "/hls/../onair.db",
    ];
    for (const p of paths) {
      const res = await fetch(base + p);
      expect([p, res.status]).toEqual([p, 404]);
      expect(await res.text()).not.toContain("SQLite");
    }
  });
});

describe("HLS_LOW_LATENCY=false", () => {
  it("plain fMP4 HLS: 2 s segments, no parts or hints, still playable (ffprobe)", async () => {
    const plain = await startTestServer({ HLS_LOW_LATENCY: "false" });
    try {
      const plainApi = apiClient(plain.apiUrl, plain.key);
      const stream = (await plainApi("POST", "/stream", { name: "plain", profiles: PROFILES })).body as Stream;
      const push = pushTestStream(`rtmp://127.0.0.1:${plain.server.rtmpPort}/live/${stream.streamKey}`, { seconds: 8 });
      await waitFor("isActive", async () => (await plainApi("GET", `/stream/${stream.id}`)).body.isActive);
      const url = `http://127.0.0.1:${plain.server.port}/hls/${stream.playbackId}/0/index.m3u8`;
      const text = await (await fetch(url)).text();
      const pl = media(text);
      expect(pl.targetDuration).toBe(2);
      expect(pl.partTargetDuration).toBeUndefined();
      expect(text).not.toMatch(/#EXT-X-PART|PRELOAD-HINT/);
      expect(pl.segments[0]!.duration).toBeCloseTo(2, 1);
      const probed = await probe(url);
      expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264", width: 320, height: 180 });
      push.child.kill("SIGKILL");
      await push.exited;
    } finally {
      await plain.stop();
    }
  });
});
