import { buildPullArgs, inputAudioCodec, policyRefusal, pullTailLine, type PullArgsInput } from "../../../../src/ingest";
import { parsePullSource, pullConfig } from "../../../../src/shapes";

const OUT = "rtmp://127.0.0.1:1935/live/bridge-ticket";
const PROXY = "http://127.0.0.1:41234";
const base = { audio: "copy", audioBitrate: 128_000, ioTimeoutMs: 10_000, outputUrl: OUT } as const;

/** The value after `flag`, or undefined when the flag is absent. */
const valueOf = (args: string[], flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
/** The arguments before `-i`: the input's options. */
const inputPart = (args: string[]) => args.slice(0, args.indexOf("-i"));

describe("buildPullArgs", () => {
  const cases: { name: string; input: PullArgsInput; before: [string, string][]; absent: string[]; whitelist: string }[] = [
    {
      name: "live RTMP: an I/O timeout, read as it comes (no -re)",
      input: { ...base, source: "rtmp://cam.example/live/x", scheme: "rtmp" },
      before: [["-rw_timeout", "10000000"]],
      absent: ["-re", "-rtsp_transport", "-headers"],
      whitelist: "rtmp,tcp",
    },
    {
      name: "RTMPS: TLS allowed",
      input: { ...base, source: "rtmps://cam.example/live/x", scheme: "rtmps", ioTimeoutMs: 5_000 },
      before: [["-rw_timeout", "5000000"]],
      absent: ["-re"],
      whitelist: "rtmps,tcp,tls",
    },
    {
      name: "RTSP: interleaved over TCP, the demuxer's socket timeout, no -re",
      input: { ...base, source: "rtsp://user:pw@10.0.0.9:554/stream1", scheme: "rtsp" },
      before: [["-rtsp_transport", "tcp"], ["-timeout", "10000000"]],
      absent: ["-re", "-rw_timeout", "-headers"],
      whitelist: "rtsp,rtp,tcp,udp",
    },
    {
      name: "SRT: SRT's own timeout, MPEG-TS, no -re",
      input: { ...base, source: "srt://cam.example:9000?streamid=a", scheme: "srt" },
      before: [["-timeout", "10000000"], ["-f", "mpegts"]],
      absent: ["-re", "-headers"],
      whitelist: "srt,udp",
    },
    {
      name: "HLS over HTTPS with headers: each header on its own CRLF line, paced with -re",
      input: { ...base, source: "https://cdn.example/live.m3u8", scheme: "https", headers: { Authorization: "Bearer t0k", "X-Cam": "1" }, httpProxy: PROXY },
      before: [["-rw_timeout", "10000000"], ["-http_proxy", PROXY], ["-headers", "Authorization: Bearer t0k\r\nX-Cam: 1\r\n"]],
      absent: ["-rtsp_transport"],
      whitelist: "http,https,tcp,tls,crypto,httpproxy",
    },
    {
      name: "HTTP without headers: no -headers, through the proxy all the same",
      input: { ...base, source: "http://cdn.example/live.m3u8", scheme: "http", httpProxy: PROXY },
      before: [["-rw_timeout", "10000000"], ["-http_proxy", PROXY]],
      absent: ["-headers"],
      whitelist: "http,https,tcp,tls,crypto,httpproxy",
    },
  ];

  it.each(cases)("$name", ({ input, before, absent, whitelist }) => {
    const args = buildPullArgs(input);
    const head = inputPart(args);
    for (const [flag, value] of before) expect(valueOf(head, flag)).toBe(value);
    for (const flag of absent) expect(args).not.toContain(flag);
    expect(valueOf(head, "-protocol_whitelist")).toBe(whitelist);
    expect(valueOf(args, "-i")).toBe(input.source);
    // -re paces file-like sources only, and as an input option.
    expect(head.includes("-re")).toBe(input.scheme === "http" || input.scheme === "https");
    // Video copied, FLV to the ticket's url, last.
    expect(valueOf(args, "-c:v")).toBe("copy");
    expect(args.slice(-3)).toEqual(["-f", "flv", OUT]);
    expect(args.join(" ")).toContain("-map 0:v:0 -map 0:a:0?");
    // Only HTTP goes through the forward proxy (the other protocols would not use it).
    expect(head.includes("-http_proxy")).toBe(input.scheme === "http" || input.scheme === "https");
  });

  it("refuses to build an http(s) pull without the forward proxy", () => {
    expect(() => buildPullArgs({ ...base, source: "http://cdn.example/live.m3u8", scheme: "http" })).toThrow(/forward proxy/);
  });

  it.each([
    ["copy", ["-c:a", "copy"], "-b:a"],
    ["aac", ["-c:a", "aac", "-b:a", "96000", "-ar", "48000", "-ac", "2"], undefined],
  ] as const)("audio %s", (audio, expected, absent) => {
    const args = buildPullArgs({ ...base, audioBitrate: 96_000, source: "rtsp://cam/x", scheme: "rtsp", audio });
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
    ["the proxy's refusal", "[http @ 0x5] HTTP error 403 Refused by the outbound policy: 127.0.0.2", "[http @ 0x5] HTTP error 403 Refused by the outbound policy: 127.0.0.2"],
    ["the input's stream list", "  Stream #0:1: Audio: mp2, 48000 Hz, mono, fltp, 64 kb/s", "  Stream #0:1: Audio: mp2, 48000 Hz, mono, fltp, 64 kb/s"],
  ])("%s", (_name, line, kept) => {
    expect(pullTailLine(line)).toBe(kept);
  });
});

describe("policyRefusal", () => {
  it.each([
    ["the forward proxy's 403 (http)", "[http @ 0x5] HTTP error 403 Refused by the outbound policy: 169.254.169.254", { what: "169.254.169.254", stop: false }],
    ["the forward proxy's 403 (CONNECT)", "[httpproxy @ 0x5] HTTP error 403 Refused by the outbound policy: metadata.internal", { what: "metadata.internal", stop: false }],
    ["a playlist naming an httpproxy: url (ffmpeg would connect itself)", "[hls @ 0x5] Opening 'httpproxy://10.0.0.5:6379/x' for reading", { what: "an httpproxy: url", stop: true }],
    ["the same behind crypto+", "[hls @ 0x5] Opening 'crypto+httpproxy://10.0.0.5:80/x' for reading", { what: "an httpproxy: url", stop: true }],
    ["another 403", "[http @ 0x5] HTTP error 403 Forbidden", undefined],
    ["an ordinary segment", "[hls @ 0x5] Opening 'https://cdn.example/a.ts' for reading", undefined],
  ])("%s", (_name, line, expected) => {
    expect(policyRefusal(line)).toEqual(expected);
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
