import { buildPullArgs, inputAudioCodec, pullInput, pullTailLine } from "../../../../src/ingest";
import { inputScript } from "../../../../src/media";
import { parsePullSource, pullConfig } from "../../../../src/shapes";

const OUT = "rtmp://127.0.0.1:1935/live/bridge-ticket";
const SCRIPT = ["-f", "concat", "-safe", "0", "-i", "/data/private/inputs/x.ffconcat"];

describe("pullInput: the options per scheme, in the script, never in argv", () => {
  it.each([
    { scheme: "rtmp", url: "rtmp://cam.example/live/key", kind: "rtmp", options: { rw_timeout: "10000000" }, before: [] },
    { scheme: "rtmps", url: "rtmps://cam.example/live/key", kind: "rtmps", options: { rw_timeout: "10000000" }, before: [] },
    // Interleaved over the relay's TCP connection; the demuxer's own socket timeout.
    { scheme: "rtsp", url: "rtsp://user:pw@127.0.0.1:4000/stream1", kind: "rtsp", options: { rtsp_transport: "tcp", timeout: "10000000" }, before: [] },
    // SRT's own timeout: its reads never return EAGAIN.
    { scheme: "srt", url: "srt://cam.example:9000?passphrase=0123456789", kind: "srt", options: { timeout: "10000000" }, before: [] },
    // The gateway's url; -re paces a file-like source, outside the script (an option of the outer input).
    { scheme: "https", url: "http://127.0.0.1:4001/credential/1/live.m3u8", kind: "gateway", options: { rw_timeout: "10000000" }, before: ["-re"] },
    { scheme: "http", url: "http://127.0.0.1:4001/credential/1/live.m3u8", kind: "gateway", options: { rw_timeout: "10000000" }, before: ["-re"] },
  ] as const)("$scheme", ({ scheme, url, kind, options, before }) => {
    const { input, before: b } = pullInput({ scheme, url, ioTimeoutMs: 10_000 });
    expect(input).toEqual({ kind, url, options });
    expect(b).toEqual(before);
    // The url and its options go into the script (its secrets with them).
    const script = inputScript(input);
    expect(script).toContain(`file '${url}'`);
    for (const [k, v] of Object.entries(options)) expect(script).toContain(`option ${k} '${v}'`);
  });

  it("scales the I/O timeout to microseconds", () => {
    expect(pullInput({ scheme: "rtmp", url: "rtmp://x/live/y", ioTimeoutMs: 5_000 }).input.options).toEqual({ rw_timeout: "5000000" });
  });
});

describe("buildPullArgs", () => {
  it("reads the script's input and publishes FLV to the ticket's url, video copied", () => {
    const args = buildPullArgs(SCRIPT, { audio: "copy", audioBitrate: 128_000, outputUrl: OUT });
    expect(args.join(" ")).toContain(SCRIPT.join(" "));
    expect(args.slice(-3)).toEqual(["-f", "flv", OUT]);
    expect(args.join(" ")).toContain("-map 0:v:0 -map 0:a:0? -c:v copy -c:a copy");
    expect(args).not.toContain("-headers");
    expect(args).not.toContain("-http_proxy");
  });

  it.each([
    ["copy", ["-c:a", "copy"], "-b:a"],
    ["aac", ["-c:a", "aac", "-b:a", "96000", "-ar", "48000", "-ac", "2"], undefined],
  ] as const)("audio %s", (audio, expected, absent) => {
    const args = buildPullArgs(SCRIPT, { audioBitrate: 96_000, audio, outputUrl: OUT });
    expect(args.join(" ")).toContain(expected.join(" "));
    if (absent) expect(args).not.toContain(absent);
  });
});

describe("inputAudioCodec", () => {
  it.each([
    ["an AAC source", ["Input #0, flv, from 'rtmp://x/live/y':", "  Stream #0:0: Video: h264 (High), yuv420p", "  Stream #0:1: Audio: aac (LC), 48000 Hz, stereo, fltp"], "aac"],
    ["G.711 from an IP camera (stream ids in brackets)", ["Input #0, rtsp, from 'rtsp://cam/x':", "  Stream #0:0[0x100]: Video: h264", "  Stream #0:1(eng): Audio: pcm_alaw, 8000 Hz, mono"], "pcm_alaw"],
    ["no audio", ["Input #0, rtsp, from 'rtsp://cam/x':", "  Stream #0:0: Video: h264"], undefined],
    ["the output's audio is not the input's", ["Input #0, rtsp, from 'x':", "  Stream #0:0: Video: h264", "Output #0, flv, to 'rtmp://o':", "  Stream #0:1: Audio: aac"], undefined],
    ["nothing yet", [], undefined],
  ])("%s", (_name, lines, codec) => {
    expect(inputAudioCodec(lines)).toBe(codec);
  });
});

describe("pullTailLine", () => {
  it.each([
    ["an HLS segment being opened", "[hls @ 0x55] Opening 'https://cdn.example/live/seg7.ts?token=s3cret' for reading", undefined],
    ["an AES key being opened", "[hls @ 0x55] Opening 'crypto+http://cdn.example/k/seg1.ts' for reading", undefined],
    ["a url in an error: scheme and host kept", "[hls @ 0x55] Error when loading first segment 'https://cdn.example:8443/live/seg0.ts?token=s3cret'", "[hls @ 0x55] Error when loading first segment 'https://cdn.example:8443/…'"],
    ["the gateway's refusal", "[http @ 0x5] HTTP error 403 Forbidden", "[http @ 0x5] HTTP error 403 Forbidden"],
    ["a gateway url: its credential left out", "[hls @ 0x5] Failed to open segment 'http://127.0.0.1:4001/cred/7/seg7.ts'", "[hls @ 0x5] Failed to open segment 'http://127.0.0.1:4001/…'"],
    ["the input's stream list", "  Stream #0:1: Audio: mp2, 48000 Hz, mono, fltp, 64 kb/s", "  Stream #0:1: Audio: mp2, 48000 Hz, mono, fltp, 64 kb/s"],
  ])("%s", (_name, line, kept) => {
    expect(pullTailLine(line)).toBe(kept);
  });
});

describe("parsePullSource", () => {
  it.each([
    ["rtmp://cam.example/live/x", { scheme: "rtmp", host: "cam.example", port: undefined }],
    ["RTSP://User:Pw@Cam.Example:8554/s?token=1", { scheme: "rtsp", host: "cam.example", port: 8554, redacted: "rtsp://cam.example:8554/…" }],
    ["srt://[::1]:9000?streamid=a&latency=200000", { scheme: "srt", host: "::1", port: 9000 }],
    ["https://cdn.example/a/live.m3u8", { scheme: "https", host: "cdn.example" }],
    ["http://127.0.0.1:8080/x.m3u8", { scheme: "http", host: "127.0.0.1", port: 8080 }],
  ])("takes %s", (text, expected) => {
    const parsed = parsePullSource(text);
    expect(parsed).toMatchObject({ ok: true, source: expected });
  });

  it.each([
    ["file:///etc/passwd", /must be a rtmp, rtmps, rtsp, srt, http, https url/],
    ["ftp://x.example/a", /must be a/],
    ["\trtmp://x.example/live/a", /printable/],
    ["rtmp://x.example/live/a b", /printable/],
    ["rtmp://x.example", /needs an application/],
    ["srt://x.example", /needs a port/],
    ["srt://x.example:9000?mode=listener", /only mode=caller/],
    ["srt://x.example:9000?localport=5", /is not allowed/],
    ["srt://u:p@x.example:9000", /no user name/],
    ["rtsp://", /needs a host|not a valid url/],
    ["rtmp://x.example/" + "a".repeat(2100), /at most 2048/],
  ])("refuses %s", (text, error) => {
    const parsed = parsePullSource(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toMatch(error);
  });
});

describe("pull config", () => {
  it.each([
    ["headers on an RTSP source", { source: "rtsp://cam/x", headers: { a: "b" } }, /only http\(s\) sources take headers/],
    ["a header value with a line break", { source: "https://cdn.example/x.m3u8", headers: { a: "b\r\nHost: evil" } }, /without line breaks/],
    ["a header name that is not a token", { source: "https://cdn.example/x.m3u8", headers: { "a b": "c" } }, /not a header name/],
    ["too many headers", { source: "https://cdn.example/x.m3u8", headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`h${i}`, "v"])) }, /at most 20 headers/],
    ["a location off the globe", { source: "rtmp://cam/live/x", location: { lat: 91, lon: 0 } }, /./],
  ])("refuses %s", (_name, body, error) => {
    const r = pullConfig.safeParse(body);
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toMatch(error);
  });

  it("takes Livepeer's shape", () => {
    const body = { source: "https://cdn.example/x.m3u8", headers: { Authorization: "Bearer x" }, isMobile: 2, location: { lat: 1.5, lon: -3 } };
    expect(pullConfig.parse(body)).toEqual(body);
  });
});
