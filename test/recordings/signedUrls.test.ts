import { openTestStore, TEST_DATABASE_URL } from "../helpers/database";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { openStore } from "../../src/db";
import { RECORDING_SECRET_FILE, RecordingUrlSigner, signPlaylistUris } from "../../src/recordings";
import { probe, waitFor } from "../helpers/media";
import { endedRecordedSession, makeClip, writeRecording } from "../helpers/recordingFiles";
import { apiClient, startTestServer, tempDir, type TestServer } from "../helpers/server";

// A session id travels in webhooks, logs and API answers; it once downloaded the recording on
// its own (GET /recordings/<sessionId>/output.mp4). Recording URLs now carry a signature made
// with a secret of the data directory, and the server answers only requests that carry it: the
// URLs the API and recording.ready hand out, and what the player page embeds.

describe("the signature", () => {
  const signer = new RecordingUrlSigner(crypto.randomBytes(32));
  const a = "0b6f8f8e-6c1a-4c36-9d1b-5a3e1b8f0c11";
  const b = "7d2c4e9a-1f3b-4a8e-8c6d-2b9e0f1a3c55";

  it("opens its own session's recording and no other's", () => {
    const sig = signer.sign(a);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signer.verify(a, sig)).toBe(true);
    expect(signer.verify(b, sig)).toBe(false);
    expect(new RecordingUrlSigner(crypto.randomBytes(32)).verify(a, sig)).toBe(false);
    for (const wrong of [undefined, "", sig.slice(1), sig + "A", sig.replace(/^./, (c) => (c === "A" ? "B" : "A")), [sig, sig], { sig }]) {
      expect(signer.verify(a, wrong)).toBe(false);
    }
  });

  it("is added to every URI of a playlist, and nothing else", () => {
    const master = '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000,NAME="720p"\n0/index.m3u8\n\n#EXT-X-STREAM-INF:BANDWIDTH=500\r\n1/index.m3u8\r\n';
    expect(signPlaylistUris(master, "S")).toBe('#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000,NAME="720p"\n0/index.m3u8?sig=S\n\n#EXT-X-STREAM-INF:BANDWIDTH=500\r\n1/index.m3u8?sig=S\n');
    const media = "#EXTM3U\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2.000000,\ns_00000.ts\n#EXT-X-DISCONTINUITY\n#EXTINF:2.000000,\nr1_00000.ts?x=1\n#EXT-X-ENDLIST\n";
    expect(signPlaylistUris(media, "S")).toBe('#EXTM3U\n#EXT-X-MAP:URI="init.mp4?sig=S"\n#EXTINF:2.000000,\ns_00000.ts?sig=S\n#EXT-X-DISCONTINUITY\n#EXTINF:2.000000,\nr1_00000.ts?x=1&sig=S\n#EXT-X-ENDLIST\n');
  });
});

describe("the secret", () => {
  let dir: string;
  beforeEach(() => (dir = tempDir("onair-secret-")));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("is made at the first start, readable by its owner only, and kept", () => {
    const first = RecordingUrlSigner.open(dir);
    const file = path.join(dir, RECORDING_SECRET_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    expect(RecordingUrlSigner.open(dir).sign("x")).toBe(first.sign("x"));
    expect(fs.readdirSync(dir)).toEqual([RECORDING_SECRET_FILE]);
  });

  it("is refused, saying what to do, when the file holds anything else", () => {
    fs.writeFileSync(path.join(dir, RECORDING_SECRET_FILE), "hunter2\n");
    expect(() => RecordingUrlSigner.open(dir)).toThrow(/recording-url-secret is not a secret onair wrote .* delete it to have a new one made/);
  });
});

describe("recordings over HTTP", () => {
  let work: string;
  let dataDir: string;
  let t: TestServer;
  let api: ReturnType<typeof apiClient>;
  let sessionId: string;
  let other: string;
  let playbackId: string;
  let seconds: number;
  /** The session as the API shows it. */
  let session: { recordingUrl: string; mp4Url: string; mp4URL: string };

  beforeAll(async () => {
    work = tempDir("onair-signed-");
    dataDir = path.join(work, "data");
    fs.mkdirSync(dataDir);
    const clip = path.join(work, "clip.ts");
    await makeClip(clip);
    // Two ended recordings the start finalizes: one to read, one whose signature must not open it.
    const store = await openTestStore(dataDir);
    const a = await endedRecordedSession(store);
    const b = await endedRecordedSession(store);
    playbackId = (await store.streams.get(a.streamId))!.playbackId!;
    await store.close();
    ({ sessionId } = a);
    other = b.sessionId;
    seconds = (await writeRecording(path.join(dataDir, "recordings", sessionId), clip, 1)).seconds;
    await writeRecording(path.join(dataDir, "recordings", other), clip, 1);
    t = await startTestServer({}, { dataDir });
    api = apiClient(t.apiUrl, await t.keyFor("rec"));
    for (const id of [sessionId, other]) {
      await waitFor("ready", async () => (await t.server.store.sessions.get(id))?.recordingStatus === "ready", 30_000);
    }
    session = (await api("GET", `/session/${sessionId}`)).body;
  });
  afterAll(async () => {
    await t?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const base = () => `http://127.0.0.1:${t.server.port}/recordings/${sessionId}`;
  const sigOf = (url: string) => new URL(url).searchParams.get("sig")!;

  it("the API hands out the recording paths (docs/architecture.md#public-urls) with a signature", () => {
    const sig = sigOf(session.recordingUrl);
    expect(session.recordingUrl).toBe(`${t.server.publicUrl}/recordings/${sessionId}/index.m3u8?sig=${sig}`);
    expect(session.mp4Url).toBe(`${t.server.publicUrl}/recordings/${sessionId}/output.mp4?sig=${sig}`);
    expect(session.mp4URL).toBe(session.mp4Url);
  });

  it("the URLs handed out play: the MP4 with ranges, the HLS through its signed variants and segments", async () => {
    const mp4 = await probe(session.mp4Url);
    expect(Math.abs(mp4.duration - seconds)).toBeLessThan(0.5);
    const hls = await probe(session.recordingUrl);
    expect(Math.abs(hls.duration - seconds)).toBeLessThan(0.5);
    const range = await fetch(session.mp4Url, { headers: { range: "bytes=0-99" } });
    expect(range.status).toBe(206);
    expect((await range.arrayBuffer()).byteLength).toBe(100);

    const sig = sigOf(session.recordingUrl);
    const master = await fetch(`${base()}/index.m3u8?sig=${sig}`);
    expect(master.headers.get("content-type")).toBe("application/vnd.apple.mpegurl");
    const variants = (await master.text()).split("\n").filter((l) => l && !l.startsWith("#"));
    expect(variants).toEqual([`0/index.m3u8?sig=${sig}`]);
    const segments = (await (await fetch(`${base()}/${variants[0]}`)).text()).split("\n").filter((l) => l && !l.startsWith("#"));
    expect(segments.length).toBeGreaterThan(1);
    for (const s of segments) expect(s).toMatch(new RegExp(`^s_\\d{5}\\.ts\\?sig=${sig}$`));
    const segment = await fetch(`${base()}/0/${segments[0]}`);
    expect(segment.status).toBe(200);
    expect(segment.headers.get("content-type")).toBe("video/mp2t");
  });

  it("without the signature, or with another's, nothing is served: the 404 of no recording at all", async () => {
    const nothing = await fetch(`http://127.0.0.1:${t.server.port}/recordings/${crypto.randomUUID()}/output.mp4`);
    expect(nothing.status).toBe(404);
    const noRecording = await nothing.text();
    const sig = sigOf(session.recordingUrl);
    const otherSig = sigOf((await api("GET", `/session/${other}`)).body.mp4Url);
    const segment = (await (await fetch(`${base()}/0/index.m3u8?sig=${sig}`)).text()).split("\n").find((l) => /^s_\d+\.ts/.test(l))!.split("?")[0];
    for (const file of ["output.mp4", "index.m3u8", "0/index.m3u8", `0/${segment}`]) {
      for (const query of ["", "?sig=", `?sig=${otherSig}`, `?sig=${sig.slice(0, -1)}`, `?sig=${sig}&sig=${sig}`, `?SIG=${sig}`]) {
        const res = await fetch(`${base()}/${file}${query}`);
        expect([file, query, res.status]).toEqual([file, query, 404]);
        expect(await res.text()).toBe(noRecording);
      }
      expect((await fetch(`${base()}/${file}?sig=${sig}`)).status).toBe(200);
    }
  });

  it("the player page of a recording embeds the signed playlist, and needs the stream's playback id", async () => {
    const page = await (await fetch(`http://127.0.0.1:${t.server.port}/play/${playbackId}?session=${sessionId}`)).text();
    const src = /data-src="([^"]+)"/.exec(page)![1]!.replace(/&amp;/g, "&");
    expect(src).toBe(`/recordings/${sessionId}/index.m3u8?sig=${sigOf(session.recordingUrl)}`);
    expect((await fetch(`http://127.0.0.1:${t.server.port}${src}`)).status).toBe(200);
    // The other session is of another stream: this playback id opens none of it.
    expect((await fetch(`http://127.0.0.1:${t.server.port}/play/${playbackId}?session=${other}`)).status).toBe(404);
  });

  it("a restart keeps the secret: URLs handed out before still play", async () => {
    await t.stop();
    t = await startTestServer({}, { dataDir });
    expect((await fetch(session.mp4Url.replace(/^http:\/\/localhost:\d+/, `http://127.0.0.1:${t.server.port}`))).status).toBe(200);
    // Kept where only the operator reads it: a 0600 file, or, among several nodes, the database they share.
    if (TEST_DATABASE_URL) expect(await t.server.store.db.get("SELECT name FROM settings WHERE name = ?", [RECORDING_SECRET_FILE])).toEqual({ name: RECORDING_SECRET_FILE });
    else expect(fs.statSync(path.join(dataDir, RECORDING_SECRET_FILE)).mode & 0o777).toBe(0o600);
  });
});
