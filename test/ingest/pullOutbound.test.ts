import { spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { FFMPEG, waitFor } from "../helpers/media";
import { tempDir, useTestServer } from "../helpers/server";

// An HLS pull's ffmpeg would follow redirects and open what the playlist lists on whatever host
// it names; the outbound policy checked only the source url's host. ffmpeg now reads only the
// source gateway, which follows redirects and fetches what playlists name itself, each checked. Real parts on loopback only: the test server allows 127.0.0.1
// (DESTINATION_ALLOW_HOSTS=127.0.0.1,localhost), and 127.0.0.2 stands for an address it must
// not reach (cloud metadata, an admin port), served here by a server that counts its visitors.

const fx = useTestServer({ HLS_SEGMENT_SECONDS: "1" });

interface Served {
  port: number;
  requests: string[];
  close(): Promise<void>;
}

/** An HTTP server on `host` answering with `answer`; every request (or CONNECT) is counted. */
async function serve(host: string, answer: (url: string, res: http.ServerResponse) => void): Promise<Served> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? "");
    answer(req.url ?? "", res);
  });
  server.on("connect", (req: http.IncomingMessage, socket: import("node:net").Socket) => {
    requests.push(`CONNECT ${req.url}`);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe("pull ingest and the outbound policy beyond the source url", () => {
  const dir = tempDir("onair-pull-outbound-");
  let inside: Served;

  beforeAll(async () => {
    const made = spawnSync(FFMPEG, [
      "-hide_banner", "-nostdin", "-loglevel", "error",
      "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "2",
      "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p",
      "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_playlist_type", "vod", path.join(dir, "live.m3u8"),
    ]);
    expect(made.status).toBe(0);
    // What must stay out of reach: it would serve the segments (and so a stream) if asked.
    inside = await serve("127.0.0.2", (url, res) => {
      const file = path.join(dir, path.basename(url.split("?")[0]!));
      if (fs.existsSync(file)) res.writeHead(200).end(fs.readFileSync(file));
      else res.writeHead(404).end();
    });
  });
  afterAll(async () => {
    await inside.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The pull of a new stream with `source`: its status once an attempt failed, with the stream's row. */
  async function pullFails(source: string) {
    const { api, t } = fx;
    const s = (await api("POST", "/stream", { name: "pulled", pull: { source, headers: { Authorization: "Bearer pull-token" } } })).body;
    expect(s.id).toBeDefined();
    const problem = await waitFor("the pull's attempt failed", () => t.server.pulls?.status(s.id)?.lastProblem, 20_000);
    const stream = (await api("GET", `/stream/${s.id}`)).body;
    expect((await api("DELETE", `/stream/${s.id}`)).status).toBe(204);
    await waitFor("the pull stopped", () => t.server.pulls?.status(s.id) === undefined && t.server.processes.size === 0, 10_000);
    return { problem, stream };
  }

  it("does not fetch segments a playlist lists on a host the policy refuses, and says which host", async () => {
    const playlist = fs.readFileSync(path.join(dir, "live.m3u8"), "utf8").replace(/^live/gm, `http://127.0.0.2:${inside.port}/live`);
    const source = await serve("127.0.0.1", (_url, res) => res.writeHead(200, { "content-type": "application/vnd.apple.mpegurl" }).end(playlist));
    try {
      const before = fx.t.server.pulls?.gatewayStats?.refused ?? 0;
      const { problem, stream } = await pullFails(`http://127.0.0.1:${source.port}/live.m3u8?token=abc`);
      expect(problem).toMatch(/^pull failed: the source led to 127\.0\.0\.2, refused by the outbound policy/);
      expect(stream.isActive).toBe(false);
      expect(source.requests).toContain("/live.m3u8?token=abc");
      expect(inside.requests).toEqual([]);
      expect(fx.t.server.pulls!.gatewayStats!.refused).toBeGreaterThan(before);
    } finally {
      await source.close();
    }
  });

  it("does not follow a redirect to a host the policy refuses", async () => {
    const source = await serve("127.0.0.1", (_url, res) => res.writeHead(302, { location: `http://127.0.0.2:${inside.port}/live.m3u8` }).end());
    try {
      const { problem, stream } = await pullFails(`http://127.0.0.1:${source.port}/live.m3u8`);
      expect(problem).toMatch(/the source led to 127\.0\.0\.2, refused by the outbound policy/);
      expect(stream.isActive).toBe(false);
      expect(source.requests).toEqual(["/live.m3u8"]);
      expect(inside.requests).toEqual([]);
    } finally {
      await source.close();
    }
  });

  it("refuses a playlist's httpproxy: url (ffmpeg would open that connection itself): ffmpeg never sees it", async () => {
    const playlist = fs.readFileSync(path.join(dir, "live.m3u8"), "utf8").replace(/^live/gm, `httpproxy://127.0.0.2:${inside.port}/live`);
    const source = await serve("127.0.0.1", (_url, res) => res.writeHead(200).end(playlist));
    try {
      const { problem, stream } = await pullFails(`http://127.0.0.1:${source.port}/live.m3u8`);
      expect(problem).toMatch(/the source led to an httpproxy: url, refused by the outbound policy/);
      expect(stream.isActive).toBe(false);
      // Nothing reached it, not even a CONNECT line.
      expect(inside.requests).toEqual([]);
    } finally {
      await source.close();
    }
  });
});
