import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import path from "node:path";
import * as HLS from "hls-parser";
import { GST_LAUNCH, GST_PACKAGES, gstPublishArgs, gstreamerMissing, haveGstreamer, SELF_SIGNED_OK } from "../helpers/gstreamer";
import { probe, waitFor } from "../helpers/media";
import { startTestServer, tempDir, type TestServer } from "../helpers/server";

// Another stack's publisher: GStreamer's rtmp2sink sends legacy FLV (x264enc's H.264,
// avenc_aac's AAC) to onair's own RTMP server, over plain RTMP and over RTMPS, and the stream
// plays; its session ends when GStreamer unpublishes. The server has a self-signed
// certificate (TLS_CERT): its RTMPS port opens, and its HTTP port speaks HTTPS.
//
// Without GStreamer these tests are skipped with a warning, except on CI (CI set), where they
// run and fail saying what is missing.

const onCi = !!process.env.CI && process.env.CI !== "false";
if (!haveGstreamer && !onCi) console.warn(`GStreamer tests skipped: ${gstreamerMissing} (apt-get install ${GST_PACKAGES}; .ci/run installs them)`);
const withGstreamer = haveGstreamer || onCi ? it : it.skip;

HLS.setOptions({ strictMode: true, silent: true });

let t: TestServer;
let ca: Buffer;
let dir: string;

beforeAll(async () => {
  dir = tempDir("onair-gst-");
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert], { stdio: "ignore" });
  ca = fs.readFileSync(cert);
  t = await startTestServer({ TLS_CERT: cert, TLS_KEY: key });
});
afterAll(async () => {
  await t?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** One HTTPS request to the server (its certificate trusted); JSON bodies out, the raw body back. */
function request(method: string, url: string, body?: unknown): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${t.key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) };
    const req = https.request(new URL(url, `https://127.0.0.1:${t.server.port}`), { method, ca, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

async function api(method: string, urlPath: string, body?: unknown): Promise<any> {
  const res = await request(method, `/api${urlPath}`, body);
  if (res.status >= 300) throw new Error(`${method} ${urlPath}: ${res.status} ${res.body.toString()}`);
  return JSON.parse(res.body.toString());
}

async function get(url: string): Promise<Buffer> {
  const res = await request("GET", url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${res.body.toString()}`);
  return res.body;
}

interface Gst {
  /** Its exit, once it has come (code, signal and what it printed). */
  readonly ended: { code: number | null; signal: NodeJS.Signals | null; stderr: string } | undefined;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** Ends this gst-launch-1.0 (by its own handle) if it still runs, and waits for it. */
  stop(): Promise<void>;
}

function publishWithGstreamer(url: string, opts: Parameters<typeof gstPublishArgs>[1]): Gst {
  if (!haveGstreamer) throw new Error(`GStreamer tests need GStreamer, and ${gstreamerMissing}: apt-get install ${GST_PACKAGES}`);
  const child = spawn(GST_LAUNCH, gstPublishArgs(url, opts), { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  let ended: Gst["ended"];
  const exited = new Promise<NonNullable<Gst["ended"]>>((resolve) => child.once("close", (code, signal) => resolve((ended = { code, signal, stderr }))));
  return {
    get ended() {
      return ended;
    },
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

const SECONDS = 8;
const RUNG = { name: "144p", width: 256, height: 144, fps: 30, bitrate: 200_000 };

/** The first complete segment of a variant, with its init section: one file ffprobe can read. */
async function firstSegment(masterUrl: string, variant: HLS.types.Variant): Promise<string> {
  const playlistUrl = new URL(variant.uri, masterUrl).href;
  const { pl, segment } = await waitFor("a complete segment", async () => {
    const pl = HLS.parse((await get(playlistUrl)).toString()) as HLS.types.MediaPlaylist;
    const segment = pl.segments.find((s) => s.uri && s.map);
    return segment ? { pl, segment } : undefined;
  }, 20_000, 200);
  expect(pl.endlist).toBe(false);
  const init = await get(new URL(segment.map!.uri, playlistUrl).href);
  const media = await get(new URL(segment.uri, playlistUrl).href);
  const file = path.join(dir, `${variant.uri.split("/")[0]}-${Date.now()}.mp4`);
  fs.writeFileSync(file, Buffer.concat([init, media]));
  return file;
}

describe.each([
  { scheme: "rtmp", name: "passthrough (no profiles)", profiles: [] as (typeof RUNG)[] },
  { scheme: "rtmps", name: "transcoded to one rung", profiles: [RUNG] },
])("GStreamer (rtmp2sink) publishing H.264 and AAC over $scheme", ({ scheme, name, profiles }) => {
  withGstreamer(`goes live, plays ${name}, and ends when GStreamer stops`, async () => {
    const stream = await api("POST", "/stream", { name: `gstreamer over ${scheme}`, profiles });
    const port = scheme === "rtmps" ? t.server.rtmpsPort : t.server.rtmpPort;
    expect(port).toBeGreaterThan(0);
    const gst = publishWithGstreamer(`${scheme}://127.0.0.1:${port}/live/${stream.streamKey}`, {
      seconds: SECONDS,
      ...(scheme === "rtmps" ? { tlsValidationFlags: SELF_SIGNED_OK } : {}),
    });
    try {
      await waitFor("the stream live", async () => {
        if (gst.ended) throw new Error(`gst-launch-1.0 ended before the stream went live: ${JSON.stringify(gst.ended)}`);
        return (await api("GET", `/stream/${stream.id}`)).isActive === true;
      }, 20_000);

      const masterUrl = `https://127.0.0.1:${t.server.port}/hls/${stream.playbackId}/index.m3u8`;
      const master = HLS.parse((await get(masterUrl)).toString()) as HLS.types.MasterPlaylist;
      expect(master.variants).toHaveLength(1);
      const variant = master.variants[0]!;
      expect(variant.codecs).toMatch(/^avc1\.[0-9a-f]{6},mp4a\.40\.2$/);
      const size = profiles[0] ?? { width: 320, height: 180 };
      expect(variant.resolution).toEqual({ width: size.width, height: size.height });

      // A media segment as a player gets it decodes as H.264 at the rendition's size, with AAC.
      const { streams } = await probe(await firstSegment(masterUrl, variant));
      expect(streams.find((s) => s.codec_type === "video")).toMatchObject({ codec_name: "h264", width: size.width, height: size.height });
      expect(streams.find((s) => s.codec_type === "audio")).toMatchObject({ codec_name: "aac" });

      // GStreamer sends its EOS (-e) at the end of its buffers, unpublishes and hangs up: the session ends.
      const end = await gst.exited;
      // (A loaded host may make GStreamer warn that it runs late; an error fails the publish.)
      expect(end).toEqual({ code: 0, signal: null, stderr: expect.not.stringMatching(/ERROR/) });
      await waitFor("the stream idle", async () => (await api("GET", `/stream/${stream.id}`)).isActive === false, 10_000);
      const sessions = await waitFor("the session closed", async () => {
        const list = (await api("GET", `/stream/${stream.id}/sessions`)) as { isActive: boolean; sourceSegmentsDuration: number }[];
        return list[0]?.isActive === false ? list : undefined;
      }, 10_000);
      expect(sessions).toHaveLength(1);
      expect(sessions[0]).toMatchObject({ protocol: "rtmp", isActive: false, endReason: "publisher left" });
      expect(sessions[0]!.sourceSegmentsDuration).toBeGreaterThan(SECONDS - 3);
    } finally {
      await gst.stop();
    }
  });
});
