import { pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";

let t: TestServer;
let api: Api;
let base: string;
let stream: { id: string; playbackId: string; streamKey: string };

beforeAll(async () => {
  t = await startTestServer({ HLS_SEGMENT_SECONDS: "1" });
  api = apiClient(t.apiUrl, t.key);
  base = `http://127.0.0.1:${t.server.port}`;
  stream = (await api("POST", "/stream", { name: "http" })).body;
  const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${stream.streamKey}`, { seconds: 3 });
  await waitFor("isActive", async () => (await api("GET", `/stream/${stream.id}`)).body.isActive);
  await push.exited;
});
afterAll(() => t.stop());

describe("HLS over HTTP", () => {
  it("serves playlists and segments with their content types, caching and CORS", async () => {
    const master = await fetch(`${base}/hls/${stream.playbackId}/index.m3u8`, { headers: { origin: "https://player.example.com" } });
    expect(master.status).toBe(200);
    expect(master.headers.get("content-type")).toBe("application/vnd.apple.mpegurl");
    expect(master.headers.get("cache-control")).toBe("no-cache");
    expect(master.headers.get("access-control-allow-origin")).toBe("*");

    const variant = await (await fetch(`${base}/hls/${stream.playbackId}/0/index.m3u8`)).text();
    const segment = variant.split("\n").find((l) => l.endsWith(".ts"))!;
    const res = await fetch(`${base}/hls/${stream.playbackId}/0/${segment}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("video/mp2t");
    expect(res.headers.get("cache-control")).toMatch(/max-age=\d{4,}/);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes[0]).toBe(0x47); // MPEG-TS sync byte

    const ranged = await fetch(`${base}/hls/${stream.playbackId}/0/${segment}`, { headers: { range: "bytes=0-187" } });
    expect(ranged.status).toBe(206);
    expect((await ranged.arrayBuffer()).byteLength).toBe(188);
  });

  it("404s unknown playback ids and files, and never leaves the HLS folder", async () => {
    const paths = [
      "/hls/zzzzzzzzzzzzzzzz/index.m3u8",
      `/hls/${stream.playbackId}/7/index.m3u8`,
      `/hls/${stream.playbackId}/0/nope.ts`,
      `/hls/${stream.playbackId}/..%2f..%2fonair.db`,
      `/hls/${stream.playbackId}/0/..%2f..%2f..%2fonair.db`,
      `/hls/..%2f..%2fonair.db/index.m3u8`,
      `/hls/${stream.playbackId}/%2e%2e/index.m3u8`,
      `/hls/${stream.playbackId}/0/.hidden.ts`,
      "/hls/../onair.db",
    ];
    for (const p of paths) {
      const res = await fetch(base + p);
      expect([p, res.status]).toEqual([p, 404]);
      expect(await res.text()).not.toContain("SQLite");
    }
  });
});
