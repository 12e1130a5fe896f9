import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as HLS from "hls-parser";
import { encodeAudioTag, encodeVideoTag, FlvReader, readAudioTag, readVideoTag, RtmpPublisher, type AudioTag, type FlvTag, type VideoTag } from "../../src/rtmp";
import { codecString } from "../../src/mp4";
import { probe, waitFor } from "../helpers/media";
import { enhancedFrames, multitrackLadder, publishPaced, type EnhancedStream } from "../helpers/enhancedFrames";
import { enhancedSequenceStartTag, RtmpPublisher as StatusClient } from "../helpers/rtmpClient";
import { useTestServer } from "../helpers/server";

// Enhanced RTMP (E-RTMP v2) as OBS 30+ sends it: H.264 and AAC behind FourCC headers (OBS's
// enhanced output, and every track of its multitrack ladder). The publisher here is written from
// the spec: ffmpeg encodes real frames into legacy FLV, and each tag is rewritten into the
// enhanced form (or a multitrack message) before onair's RTMP client publishes it.

const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
HLS.setOptions({ strictMode: true, silent: true });

/** A live media playlist as a strict LL-HLS client reads it: parts within PART-TARGET, segments within TARGETDURATION. */
function checkStrict(text: string): void {
  const pl = HLS.parse(text) as HLS.types.MediaPlaylist;
  expect(pl.partTargetDuration).toBeGreaterThan(0);
  for (const s of pl.segments) {
    if (s.uri) expect(Math.round(s.duration)).toBeLessThanOrEqual(pl.targetDuration);
    for (const p of s.parts.filter((x) => !x.hint)) expect(p.duration).toBeLessThanOrEqual(pl.partTargetDuration! + 1e-9);
  }
}
const fx = useTestServer();
const { api } = fx;
const ONE_RUNG = [{ name: "180p", width: 320, height: 180, fps: 30, bitrate: 300_000 }];

/** A legacy tag's packet in the enhanced form (the same samples, a FourCC header). */
function enhanced<T extends VideoTag | AudioTag>(tag: T): T {
  if (!("legacy" in tag) || !tag.legacy) return tag;
  const { legacy: _legacy, ...packet } = tag;
  return packet as T;
}

type Rewrite = (tag: FlvTag) => FlvTag | FlvTag[] | undefined;

/** Video and audio in the enhanced form, one track each. */
const singleTrack = (tag: FlvTag): FlvTag => {
  if (tag.type === 9) return { ...tag, data: encodeVideoTag(enhanced(readVideoTag(tag.data))) };
  if (tag.type === 8) return { ...tag, data: encodeAudioTag(enhanced(readAudioTag(tag.data))) };
  return tag;
};

/**
 * A multitrack ladder as OBS sends it: track 0 (its top rendition) as plain enhanced packets,
 * each other track as one-track multitrack messages of its own id. Track 1 here is HEVC, which
 * onair would refuse as the source: it must be neither checked nor relayed.
 */
const obsMultitrack: Rewrite = (tag) => {
  if (tag.type !== 9) return singleTrack(tag);
  const packet = enhanced(readVideoTag(tag.data));
  if (packet.kind !== "config" && packet.kind !== "frame") return singleTrack(tag);
  const other = { ...packet, codec: "hvc1" as const };
  const track1 = encodeVideoTag({ kind: "multitrack", layout: "oneTrack", tracks: [{ trackId: 1, packet: other }] });
  return [singleTrack(tag), { ...tag, data: track1 }];
};

/** ffmpeg's FLV of a test picture and tone, paced in real time, rewritten and published by onair's RTMP client. */
async function publishRewritten(streamKey: string, seconds: number, rewrite: Rewrite): Promise<void> {
  const ffmpeg = spawn(
    FFMPEG,
    ["-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", String(seconds)]
      .concat(["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", "flv", "pipe:1"]),
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = fx.t.server.rtmpPort;
  const publisher = await RtmpPublisher.publish({ address: "127.0.0.1", port, app: "live", streamName: streamKey, tcUrl: `rtmp://127.0.0.1:${port}/live` });
  const reader = new FlvReader();
  try {
    for await (const chunk of ffmpeg.stdout as AsyncIterable<Buffer>) {
      const tags = reader.push(chunk).flatMap((t) => rewrite(t) ?? []);
      if (!publisher.sendTags(tags)) await publisher.drained();
    }
    await publisher.finish();
  } finally {
    publisher.close();
    ffmpeg.kill("SIGKILL");
  }
}

/** What ffprobe reads from a stream's live HLS: the codec of each stream. */
async function probeCodecs(playbackId: string): Promise<string[]> {
  const { streams } = await probe(`http://127.0.0.1:${fx.t.server.port}/hls/${playbackId}/index.m3u8`);
  return streams.map((s) => s.codec_name).sort();
}

/**
 * The stream's thumbnail, taken when asked for by a run that decodes nothing: a JPEG of the
 * source's size (at most 640 wide), and the short process that took it gone afterwards.
 */
async function liveThumbnail(playbackId: string, width: number): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${fx.t.server.port}/hls/${playbackId}/thumbnail.jpg`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("image/jpeg");
  const jpeg = Buffer.from(await res.arrayBuffer());
  expect(jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
  const probed = await probeFile(jpeg);
  expect(probed.width).toBe(Math.min(width, 640));
  await waitFor("the still's process gone", () => fx.t.server.processes.size === 0, 10_000);
}

async function probeFile(bytes: Buffer): Promise<{ width: number }> {
  const file = path.join(os.tmpdir(), `onair-still-${process.pid}-${Date.now()}.jpg`);
  fs.writeFileSync(file, bytes);
  try {
    const { streams } = await probe(file);
    return { width: streams[0]!.width! };
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/** The master playlist's variant lines (#EXT-X-STREAM-INF), in order. */
async function variantLines(playbackId: string): Promise<string[]> {
  const master = await (await fetch(`http://127.0.0.1:${fx.t.server.port}/hls/${playbackId}/index.m3u8`)).text();
  return master.split("\n").filter((l) => l.startsWith("#EXT-X-STREAM-INF:"));
}

/** The sizes of the 3-track ladder the multitrack tests publish, top first. */
const LADDER_SIZES = [
  { width: 640, height: 360 },
  { width: 480, height: 270 },
  { width: 320, height: 180 },
];

/** `seconds` of that ladder as OBS's enhanced broadcasting sends it (track 0 the top one). */
async function threeTrackLadder(seconds: number): Promise<EnhancedStream> {
  const [top, ...others] = await Promise.all(LADDER_SIZES.map((size) => enhancedFrames("avc1", seconds, { size })));
  return multitrackLadder(top!, others);
}

async function livePlayback(stream: { id: string; playbackId: string }): Promise<void> {
  await waitFor("the stream live", async () => (await api("GET", `/stream/${stream.id}`)).body.isActive, 30_000);
  await waitFor("the master playlist", async () => (await fetch(`http://127.0.0.1:${fx.t.server.port}/hls/${stream.playbackId}/index.m3u8`)).status === 200, 30_000);
}

/**
 * Publishes `encoded` under `streamKey` with the client written from the spec, paced in real
 * time; `meanwhile` runs as it plays. Resolves once all is sent, the client closed either way.
 */
async function publishWhile(streamKey: string, encoded: EnhancedStream, meanwhile: () => Promise<void>): Promise<void> {
  const client = await StatusClient.connect(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${streamKey}`);
  try {
    expect(await client.publish()).toMatchObject({ code: "NetStream.Publish.Start" });
    const sending = publishPaced(client, encoded);
    await meanwhile();
    await sending;
  } finally {
    client.close();
  }
}

describe("Enhanced RTMP publishers", () => {
  it.each([
    ["H.264 and AAC behind FourCC headers (OBS's enhanced output): transcoded and played like the legacy form", singleTrack],
    ["a multitrack ladder as OBS sends it: the default track (id 0) is the source, the other tracks are neither checked nor mixed in", obsMultitrack],
  ] as const)("%s", async (name, rewrite) => {
    const stream = (await api("POST", "/stream", { name: name.slice(0, 40), profiles: ONE_RUNG })).body;
    const publishing = publishRewritten(stream.streamKey, 8, rewrite);
    try {
      await livePlayback(stream);
      expect(await probeCodecs(stream.playbackId)).toEqual(["aac", "h264"]);
    } finally {
      await publishing;
    }
    // One publish, one session: the enhanced form started no second one.
    const sessions = (await api("GET", `/stream/${stream.id}/sessions`)).body as unknown[];
    expect(sessions).toHaveLength(1);
  });

  it.each([
    ["HEVC", "hvc1"],
    ["AV1", "av01"],
  ] as const)("%s over E-RTMP to a stream with profiles: transcoded to the H.264 ladder and played", async (_name, codec) => {
    const encoded = await enhancedFrames(codec, 8);
    const stream = (await api("POST", "/stream", { name: `erTMP ${codec}`, profiles: ONE_RUNG })).body;
    await publishWhile(stream.streamKey, encoded, async () => {
      await livePlayback(stream);
      expect(await probeCodecs(stream.playbackId)).toEqual(["aac", "h264"]);
      const master = await (await fetch(`http://127.0.0.1:${fx.t.server.port}/hls/${stream.playbackId}/index.m3u8`)).text();
      expect(master).toMatch(/CODECS="avc1\.[0-9a-f]{6},mp4a\.40\.2"/);
      expect(master).toContain("RESOLUTION=320x180");
    });
  }, 60_000);

  it.each([
    ["HEVC", "hvc1", "hevc"],
    ["AV1", "av01", "av1"],
  ] as const)("%s over E-RTMP to a stream without profiles: packaged as sent, with no ffmpeg, CODECS from the source's record", async (name, codec, probed) => {
    const encoded = await enhancedFrames(codec, 8);
    const stream = (await api("POST", "/stream", { name: `erTMP ${codec} passthrough`, profiles: [] })).body;
    await publishWhile(stream.streamKey, encoded, async () => {
      await livePlayback(stream);
      // Live, and not one process of the server's own: the ingest writes the packager's parts.
      expect(fx.t.server.processes.size).toBe(0);
      expect(await probeCodecs(stream.playbackId)).toEqual(["aac", probed]);
      const base = `http://127.0.0.1:${fx.t.server.port}/hls/${stream.playbackId}`;
      const master = await (await fetch(`${base}/index.m3u8`)).text();
      expect(master).toContain(`CODECS="${codecString({ codec, config: encoded.videoConfig })},mp4a.40.2"`);
      expect(master).toContain("RESOLUTION=320x180");
      const media = await (await fetch(`${base}/0/index.m3u8`)).text();
      checkStrict(media);
      expect(media).toMatch(/#EXT-X-PART:DURATION=0\.\d+,URI="[^"]+",INDEPENDENT=YES/);
      // WebRTC playback carries the server's H.264: a viewer is told why not, and plays HLS.
      const whep = await fetch(`http://127.0.0.1:${fx.t.server.port}/whep/${stream.playbackId}`, { method: "POST", headers: { "content-type": "application/sdp" }, body: "v=0\r\n" });
      expect(whep.status).toBe(404);
      expect(((await whep.json()) as { errors: string[] }).errors[0]).toContain(`plays its ${name} video as sent, over HLS only`);
      await liveThumbnail(stream.playbackId, 320);
    });
  }, 60_000);

  it("an HEVC publisher whose decoder configuration changes mid-publish goes on in the same session, after a discontinuity, with no failure counted", async () => {
    const [first, second] = await Promise.all([enhancedFrames("hvc1", 5), enhancedFrames("hvc1", 5, { size: { width: 480, height: 270 } })]);
    // The second encode's configuration and frames follow the first's, its clock running on.
    const shift = Math.max(...first.messages.map((m) => m.timestamp)) + 33;
    const changed = { ...first, messages: [...first.messages, ...second.messages.map((m) => ({ ...m, timestamp: m.timestamp + shift }))] };
    const restarts = async () => Number(/^onair_pipeline_restarts_total (\d+)/m.exec(await (await fetch(`${fx.t.server.adminUrl}/metrics`)).text())?.[1] ?? NaN);
    const before = await restarts();
    const stream = (await api("POST", "/stream", { name: "erTMP configuration change", profiles: [] })).body;
    const base = `http://127.0.0.1:${fx.t.server.port}/hls/${stream.playbackId}`;
    await publishWhile(stream.streamKey, changed, async () => {
      await livePlayback(stream);
      await waitFor("the new configuration's segments", async () => (await (await fetch(`${base}/0/index.m3u8`)).text()).includes("#EXT-X-DISCONTINUITY"), 20_000);
      checkStrict(await (await fetch(`${base}/0/index.m3u8`)).text());
      expect((await api("GET", `/stream/${stream.id}`)).body.isActive).toBe(true);
    });
    expect((await api("GET", `/stream/${stream.id}/sessions`)).body).toHaveLength(1);
    expect(await restarts()).toBe(before);
  }, 60_000);

  it("a 3-track multitrack ladder to a stream without profiles: three renditions as sent, no ffmpeg, each its own size", async () => {
    const sizes = LADDER_SIZES;
    const encoded = await threeTrackLadder(8);
    const stream = (await api("POST", "/stream", { name: "erTMP multitrack ladder", profiles: [] })).body;
    await publishWhile(stream.streamKey, encoded, async () => {
      await livePlayback(stream);
      expect(fx.t.server.processes.size).toBe(0);
      const base = `http://127.0.0.1:${fx.t.server.port}/hls/${stream.playbackId}`;
      const variants = await variantLines(stream.playbackId);
      expect(variants).toHaveLength(3);
      sizes.forEach((size, i) => expect(variants[i]).toMatch(new RegExp(`RESOLUTION=${size.width}x${size.height}.*CODECS="avc1\\.[0-9a-f]{6},mp4a\\.40\\.2"`)));
      // Each rendition is its own track's pictures: a decoder finds that track's size in it.
      for (const [i, size] of sizes.entries()) {
        const { streams } = await probe(`${base}/${i}/index.m3u8`);
        expect(streams.find((s) => s.codec_name === "h264")).toMatchObject({ width: size.width, height: size.height });
        checkStrict(await (await fetch(`${base}/${i}/index.m3u8`)).text());
      }
      await liveThumbnail(stream.playbackId, 640);
      // The tracks' keyframes are at the same instants (one GOP length): nothing to report.
      expect((await api("GET", `/stream/${stream.id}`)).body.issues ?? []).not.toContainEqual(expect.stringContaining("keyframes at different instants"));
    });
  }, 90_000);

  it("a 3-track ladder to a stream with profiles: the rungs the encoder sent are copied, only the missing one is encoded", async () => {
    const profiles = [
      { name: "360p", width: 640, height: 360, fps: 30, bitrate: 900_000 },
      { name: "270p", width: 480, height: 270, fps: 30, bitrate: 500_000 },
      { name: "144p", width: 256, height: 144, fps: 30, bitrate: 150_000 },
    ];
    const stream = (await api("POST", "/stream", { name: "erTMP ladder with profiles", profiles })).body;
    await publishWhile(stream.streamKey, await threeTrackLadder(12), async () => {
      await livePlayback(stream);
      // One ffmpeg, one encode: the 144p rung; 360p and 270p are the encoder's own tracks.
      const pids = fx.t.server.processes.pids();
      expect(pids).toHaveLength(1);
      const argv = fs.readFileSync(`/proc/${pids[0]}/cmdline`, "utf8").split("\0");
      expect(argv.filter((a) => a === "libx264")).toHaveLength(1);
      expect(argv).toContain("-copyts");
      const base = `http://127.0.0.1:${fx.t.server.port}/hls/${stream.playbackId}`;
      const variants = await variantLines(stream.playbackId);
      expect(variants).toHaveLength(3);
      const expected = [...LADDER_SIZES.slice(0, 2), { width: 256, height: 144 }];
      expected.forEach((size, i) => expect(variants[i]).toContain(`RESOLUTION=${size.width}x${size.height}`));
      for (const [i, size] of expected.entries()) {
        const { streams } = await probe(`${base}/${i}/index.m3u8`);
        expect(streams.find((x) => x.codec_name === "h264")).toMatchObject({ width: size.width, height: size.height });
        expect(streams.map((x) => x.codec_name)).toContain("aac");
        checkStrict(await (await fetch(`${base}/${i}/index.m3u8`)).text());
      }
      // The encoded rung takes its keyframes where the encoder's tracks have theirs.
      await waitFor("segments in every rung", async () => (await (await fetch(`${base}/2/index.m3u8`)).text()).split("#EXTINF").length > 3, 20_000);
      // Segment by segment, the same media times in every rung: one timeline, keyframes at the same instants.
      const lists = await Promise.all([0, 1, 2].map(async (i) => HLS.parse(await (await fetch(`${base}/${i}/index.m3u8`)).text()) as HLS.types.MediaPlaylist));
      const durations = lists.map((l) => new Map(l.segments.filter((seg) => seg.uri).map((seg) => [seg.mediaSequenceNumber, seg.duration])));
      const common = [...durations[2]!.keys()].filter((msn) => durations.every((d) => d.has(msn)));
      expect(common.length).toBeGreaterThan(1);
      for (const msn of common) for (const d of durations) expect(Math.abs(d.get(msn)! - durations[0]!.get(msn)!)).toBeLessThan(0.05);
      // And in step: no rung comes in bursts behind the others (its last segment is the top one's, or one behind).
      const top0 = lists[0]!;
      const topLast = top0.segments.filter((seg) => seg.uri).at(-1)!.mediaSequenceNumber;
      for (const report of top0.renditionReports) expect(Math.abs(report.lastMSN! - topLast)).toBeLessThanOrEqual(1);
      expect((await api("GET", `/stream/${stream.id}`)).body.issues ?? []).not.toContainEqual(expect.stringContaining("keyframes at different instants"));
      // This run's ffmpeg makes no thumbnail (liveArgs.ts): one is taken when asked for.
      const res = await fetch(`${base}/thumbnail.jpg`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    });
  }, 90_000);

  it("a multitrack ladder whose tracks have keyframes at different instants plays, and the stream's health says so", async () => {
    const [top, other] = await Promise.all([enhancedFrames("avc1", 10, { size: { width: 640, height: 360 }, gop: 30 }), enhancedFrames("avc1", 10, { gop: 45 })]);
    const stream = (await api("POST", "/stream", { name: "erTMP unaligned ladder", profiles: [] })).body;
    await publishWhile(stream.streamKey, multitrackLadder(top!, [other!]), async () => {
      await livePlayback(stream);
      await waitFor("the health issue", async () => JSON.stringify((await api("GET", `/stream/${stream.id}`)).body.issues ?? []).includes("keyframes at different instants (source track 1 against the top one)"), 15_000);
      expect((await api("GET", `/stream/${stream.id}`)).body.isHealthy).toBe(false);
    });
  }, 90_000);

  it("a multitrack ladder one of whose tracks announces itself and never sends a frame goes live with the tracks that do", async () => {
    const [top, other] = await Promise.all([enhancedFrames("avc1", 12, { size: { width: 640, height: 360 } }), enhancedFrames("avc1", 12)]);
    const ladder = multitrackLadder(top!, [other!]);
    // Track 1's configuration goes out; none of its frames do.
    const silent = ladder.messages.filter((m) => {
      if (m.type !== 9) return true;
      const tag = readVideoTag(m.body);
      return tag.kind !== "multitrack" || tag.tracks.every((t) => t.packet.kind === "config");
    });
    const stream = (await api("POST", "/stream", { name: "erTMP silent track", profiles: [] })).body;
    await publishWhile(stream.streamKey, { ...ladder, messages: silent }, async () => {
      await livePlayback(stream);
      const base = `http://127.0.0.1:${fx.t.server.port}/hls/${stream.playbackId}`;
      expect(await variantLines(stream.playbackId)).toEqual([expect.stringContaining("RESOLUTION=640x360")]);
      checkStrict(await (await fetch(`${base}/0/index.m3u8`)).text());
      expect((await fetch(`${base}/1/index.m3u8`)).status).toBe(404);
      expect((await api("GET", `/stream/${stream.id}`)).body.issues).toContainEqual(expect.stringContaining("announced renditions that send no frames (source track 1)"));
    });
  }, 90_000);

  it("a publisher that comes back inside the reconnect window with another ladder gets a new session, with renditions of its own", async () => {
    const [top, other, single] = await Promise.all([enhancedFrames("avc1", 4, { size: { width: 640, height: 360 } }), enhancedFrames("avc1", 4), enhancedFrames("avc1", 6)]);
    const stream = (await api("POST", "/stream", { name: "erTMP ladder change", profiles: [], reconnectWindow: 30 })).body;
    const variants = async () => (await variantLines(stream.playbackId)).length;
    await publishWhile(stream.streamKey, multitrackLadder(top!, [other!]), async () => {
      await livePlayback(stream);
      expect(await variants()).toBe(2);
    });
    await waitFor("the stream idle", async () => !(await api("GET", `/stream/${stream.id}`)).body.isActive, 15_000);
    await publishWhile(stream.streamKey, single!, async () => {
      await waitFor("a second session", async () => ((await api("GET", `/stream/${stream.id}/sessions`)).body as unknown[]).length === 2, 15_000);
      await livePlayback(stream);
      expect(await variants()).toBe(1);
    });
  }, 90_000);

  it("VP9 over E-RTMP is refused on its first video tag with NetStream.Publish.Rejected naming the codec", async () => {
    const stream = (await api("POST", "/stream", { name: "erTMP vp9" })).body;
    const client = await StatusClient.connect(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${stream.streamKey}`);
    try {
      expect(await client.publish()).toMatchObject({ code: "NetStream.Publish.Start" });
      client.sendVideo(enhancedSequenceStartTag("vp09"), 0);
      expect(await client.nextStatus()).toMatchObject({ level: "error", code: "NetStream.Publish.Rejected", description: expect.stringMatching(/^video codec VP9 is not supported/) });
      await client.closed;
    } finally {
      client.close();
    }
    expect((await api("GET", `/stream/${stream.id}/sessions`)).body).toEqual([]);
  });
});
