import { renditionLadder } from "../../../src/media/ladder";
import { diffPushes, planPushes, pushKey, type PushPlan } from "../../../src/multistream/plan";
import { buildPushArgs, destinationMuxer, progressShowsMedia, relayedByOnair } from "../../../src/multistream/pushArgs";
import { parseTargetUrl } from "../../../src/multistream/targetUrl";
import type { TargetRecord } from "../../../src/db";

// The published stream, fed to a source push's stdin when it runs: the plan and the argv only name it.
const SOURCE = { kind: "source" as const, name: "abcd-efgh-ijkl-mnop", feed: () => () => undefined };
const PLAYLIST = "/data/hls/pb/1/index.m3u8";

describe("buildPushArgs", () => {
  it.each([
    ["the source, relayed: FLV from its stdin into onair's socket, no destination anywhere", SOURCE, false, `-f flv -i pipe:0 -map 0:v:0 -map 0:a:0? -c copy -f flv -flvflags no_duration_filesize unix:/tmp/onair-push-x/flv.sock`],
    ["a rendition, video only, relayed", { kind: "rendition" as const, playlist: PLAYLIST }, true, `-re -live_start_index -1 -analyzeduration 500000 -i ${PLAYLIST} -map 0:v:0 -an -c copy -f flv -flvflags no_duration_filesize unix:/tmp/onair-push-x/flv.sock`],
  ])("%s", (_case, input, videoOnly, expected) => {
    const args = buildPushArgs({ input, output: { kind: "relay", socketPath: "/tmp/onair-push-x/flv.sock" }, videoOnly });
    // No -progress: onair knows itself when media goes out.
    expect(args.slice(0, 5)).toEqual(["-hide_banner", "-nostdin", "-nostats", "-loglevel", "warning"]);
    expect(args.slice(5).join(" ")).toBe(expected);
  });

  it.each([
    // [case, input, destination, videoOnly, expected arguments after the common prefix]
    [
      "source to RTMP: copied from its stdin (the ingest writes it), audio if any",
      SOURCE,
      "rtmp://a.example.com/live2/KEY123456",
      false,
      `-f flv -i pipe:0 -map 0:v:0 -map 0:a:0? -c copy -f flv -flvflags no_duration_filesize -rw_timeout 10000000 rtmp://a.example.com/live2/KEY123456`,
    ],
    [
      "source to RTMPS, video only",
      SOURCE,
      "rtmps://b.example.com:443/app/KEY",
      true,
      // ffmpeg does not verify rtmps certificates unless told to.
      `-f flv -i pipe:0 -map 0:v:0 -an -c copy -f flv -flvflags no_duration_filesize -tls_verify 1 -rw_timeout 10000000 rtmps://b.example.com:443/app/KEY`,
    ],
    [
      "a rendition to SRT: its live HLS from the newest segment, paced, as MPEG-TS",
      { kind: "rendition" as const, playlist: PLAYLIST },
      "srt://c.example.com:9000?streamid=KEY",
      false,
      `-re -live_start_index -1 -analyzeduration 500000 -i ${PLAYLIST} -map 0:v:0 -map 0:a:0? -c copy -f mpegts -rw_timeout 10000000 srt://c.example.com:9000?streamid=KEY`,
    ],
    [
      "a rendition, video only, upper-case scheme and host: the canonical url",
      { kind: "rendition" as const, playlist: PLAYLIST },
      "RTMP://D.Example.com/app/KEY",
      true,
      `-re -live_start_index -1 -analyzeduration 500000 -i ${PLAYLIST} -map 0:v:0 -an -c copy -f flv -flvflags no_duration_filesize -rw_timeout 10000000 rtmp://d.example.com/app/KEY`,
    ],
  ])("%s", (_case, input, destination, videoOnly, expected) => {
    const args = buildPushArgs({ input, output: { kind: "direct", destination }, videoOnly });
    expect(args.slice(0, 7)).toEqual(["-hide_banner", "-nostdin", "-nostats", "-loglevel", "warning", "-progress", "pipe:1"]);
    expect(args.slice(7).join(" ")).toBe(expected);
    // Copy only: a push never encodes.
    expect(args).not.toContain("libx264");
    expect(args).not.toContain("-filter_complex");
    expect(args[args.length - 1]).toBe(expected.split(" ").pop());
  });

  it("refuses a destination it cannot mux for, or one that is not a clean url", () => {
    for (const destination of ["http://x/y", "\trtmp://x.example.com/app/k", "rtmp://x.example.com/app/k\n-f", "srt://0.0.0.0:40007?mode=listener"]) {
      expect(() => buildPushArgs({ input: SOURCE, output: { kind: "direct", destination }, videoOnly: false })).toThrow(/multistream destination must be a valid rtmp/);
    }
  });

  it("a Facebook rtmps url: the query stays in the stream name, one argument, last; the certificate verified against the CA file", () => {
    const url = "rtmps://live-api-s.facebook.com:443/rtmp/FB-1234567890-0-AbCdEf?s_bl=1&s_sw=0";
    const args = buildPushArgs({ input: SOURCE, output: { kind: "direct", destination: url, caFile: "/etc/ssl/certs/ca-certificates.crt" }, videoOnly: false });
    expect(args.slice(-9, -1)).toEqual(["-flvflags", "no_duration_filesize", "-tls_verify", "1", "-ca_file", "/etc/ssl/certs/ca-certificates.crt", "-rw_timeout", "10000000"]);
    expect(args[args.length - 1]).toBe(url);
    // Nothing of the query became an argument of its own.
    expect(args.filter((a) => a.includes("s_bl"))).toEqual([url]);
    expect(args).not.toContain("-s_bl");
  });

  it("tlsVerify: false leaves ffmpeg's default (no verification); other schemes never get TLS options", () => {
    const rtmps = buildPushArgs({ input: SOURCE, output: { kind: "direct", destination: "rtmps://b.example.com/app/KEY", tlsVerify: false, caFile: "/ca.crt" }, videoOnly: false });
    expect(rtmps).not.toContain("-tls_verify");
    expect(rtmps).not.toContain("-ca_file");
    const rtmp = buildPushArgs({ input: SOURCE, output: { kind: "direct", destination: "rtmp://b.example.com/app/KEY", caFile: "/ca.crt" }, videoOnly: false });
    expect(rtmp).not.toContain("-tls_verify");
  });

  it.each([
    ["rtmp://h/a/k", "flv"],
    ["rtmps://h/a/k", "flv"],
    ["srt://h:1?streamid=k", "mpegts"],
    ["udp://h:1", undefined],
    ["nonsense", undefined],
  ])("destinationMuxer(%s) = %s", (url, muxer) => {
    expect(destinationMuxer(url)).toBe(muxer);
  });
});

describe("relayedByOnair: onair publishes rtmp(s) itself; ffmpeg keeps srt and rtmp with credentials", () => {
  it.each([
    ["rtmp://a.example.com/live2/KEY", true],
    ["rtmps://b.example.com:443/app/KEY?s_bl=1", true],
    ["rtmp://user:pass@c.example.com/app/KEY", false],
    ["srt://c.example.com:9000?streamid=KEY", false],
  ])("%s → %s", (url, expected) => {
    const parsed = parseTargetUrl(url);
    if (!parsed.ok) throw new Error(parsed.error);
    expect(relayedByOnair(parsed.url)).toBe(expected);
  });
});

describe("progressShowsMedia: connected once media went out", () => {
  it.each([
    ["out_time_us=395000", true],
    ["out_time_us=1", true],
    ["out_time_us=0", false], // the header only
    ["out_time_us=N/A", false],
    ["total_size=43195", false],
    ["out_time_ms=395000", false],
    ["progress=continue", false],
    ["out_time_us=395000\r", true],
  ])("%j → %s", (line, expected) => {
    expect(progressShowsMedia(line)).toBe(expected);
  });
});

describe("planPushes and diffPushes", () => {
  const T = (id: string, over: Partial<TargetRecord> = {}): TargetRecord => ({
    seq: 1, id, userId: "u", name: `name-${id}`, url: `rtmp://${id}.example.com/app/key-${id}`, disabled: false, tlsVerify: true, createdAt: 0, ...over,
  });
  const ladder = renditionLadder(
    [
      { name: "720p", bitrate: 3_000_000, fps: 30, width: 1280, height: 720 },
      { name: "360p", bitrate: 800_000, fps: 30, width: 640, height: 360 },
    ],
    2,
  );
  const base = { hlsDir: "/data/hls/pb", source: SOURCE, renditions: ladder };
  const targets = new Map([T("a"), T("b"), T("c", { disabled: true }), T("d")].map((t) => [t.id, t]));
  const target = (id: string) => targets.get(id);
  const ref = (id: string, profile: string, videoOnly = false) => ({ id, profile, videoOnly });

  it("source reads the publish (fed to it); a rendition reads its own live playlist; disabled targets are skipped", () => {
    const plan = planPushes({ ...base, target, refs: [ref("a", "source"), ref("b", "360p", true), ref("c", "source")] });
    expect(plan.wanted).toEqual([
      { key: "a/source/av", target: { id: "a", name: "name-a", profile: "source" }, url: "rtmp://a.example.com/app/key-a", tlsVerify: true, videoOnly: false, input: SOURCE },
      { key: "b/360p/video", target: { id: "b", name: "name-b", profile: "360p" }, url: "rtmp://b.example.com/app/key-b", tlsVerify: true, videoOnly: true, input: { kind: "rendition", playlist: "/data/hls/pb/1/index.m3u8" } },
    ]);
    expect([...plan.disabled]).toEqual(["c/source/av"]);
    expect(plan.problems).toEqual([]);
  });

  it("the same reference twice is one push; the same target with another profile is another", () => {
    const plan = planPushes({ ...base, target, refs: [ref("a", "source"), ref("a", "source"), ref("a", "720p"), ref("a", "source", true), ref("gone", "source")] });
    expect(plan.wanted.map((w) => w.key)).toEqual(["a/source/av", "a/720p/av", "a/source/video"]);
  });

  it("a profile the session does not produce is a problem, named with what it has", () => {
    const plan = planPushes({ ...base, target, refs: [ref("a", "1080p")] });
    expect(plan.wanted).toEqual([]);
    expect(plan.problems).toEqual([{ key: "a/1080p/av", target: { id: "a", name: "name-a", profile: "1080p" }, error: expect.stringContaining(`it has "720p", "360p"`) }]);
    const passthrough = planPushes({ ...base, renditions: renditionLadder([], 2), target, refs: [ref("a", "360p"), ref("b", "source")] });
    expect(passthrough.problems[0]!.error).toContain("passes the source through");
    expect(passthrough.wanted.map((w) => w.input)).toEqual([SOURCE]);
  });

  it.each([
    [undefined, 1],
    ["H.264", 1],
    ["HEVC", 0],
    ["AV1", 0],
  ])("a source push of a %s source: %i wanted; FLV carries H.264 only, so the others are a problem naming a profile to push", (sourceCodec, wanted) => {
    const plan = planPushes({ ...base, sourceCodec, target, refs: [ref("a", "source"), ref("b", "360p")] });
    expect(plan.wanted.filter((w) => w.input.kind === "source")).toHaveLength(wanted);
    expect(plan.wanted.map((w) => w.key)).toContain("b/360p/av");
    expect(plan.problems.map((p) => p.error)).toEqual(wanted ? [] : [expect.stringMatching(new RegExp(`^the source is ${sourceCodec}, which a source push cannot send .*push one of the stream's profiles`))]);
  });

  it("diff: starts what is new, stops what went or changed, leaves the rest", () => {
    const running = new Map([
      ["a/source/av", { url: "rtmp://a.example.com/app/key-a", tlsVerify: true }],
      ["b/360p/video", { url: "rtmp://old.example.com/app/key-b", tlsVerify: true }],
      ["c/source/av", { url: "rtmp://c.example.com/app/key-c", tlsVerify: true }],
      ["d/720p/av", { url: "rtmp://d.example.com/app/key-d", tlsVerify: false }],
      ["x/source/av", { url: "rtmp://x.example.com/app/key-x", tlsVerify: true }],
    ]);
    const renamed = new Map(targets).set("a", T("a", { name: "renamed" }));
    const plan: PushPlan = planPushes({
      ...base,
      target: (id) => renamed.get(id),
      refs: [ref("a", "source"), ref("b", "360p", true), ref("c", "source"), ref("d", "720p")],
    });
    const changes = diffPushes(running, plan);
    expect(changes.stop).toEqual([
      { key: "b/360p/video", why: "target url changed" },
      { key: "c/source/av", why: "target disabled" },
      { key: "d/720p/av", why: "target tlsVerify changed" },
      { key: "x/source/av", why: "reference removed" },
    ]);
    expect(changes.start.map((s) => s.key)).toEqual(["b/360p/video", "d/720p/av"]);
    expect(changes.keep.map((s) => [s.key, s.target.name])).toEqual([["a/source/av", "renamed"]]);
    expect(diffPushes(new Map(), { wanted: [], disabled: new Set(), problems: [] })).toEqual({ start: [], stop: [], keep: [] });
  });

  it("pushKey", () => {
    expect(pushKey(ref("t1", "720p", true))).toBe("t1/720p/video");
    expect(pushKey(ref("t1", "720p"))).toBe("t1/720p/av");
  });
});
