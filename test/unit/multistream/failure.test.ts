import { describePushFailure, describeRelayInputFailure, describeRtmpFailure, redactDestination } from "../../../src/multistream/failure";
import { RtmpError, type RtmpErrorKind, type RtmpStage } from "../../../src/rtmp";

// stderr tails as ffmpeg 5.1 writes them (captured from real failures), with the key in them.
const RTMP = "rtmp://127.0.0.1:19351/app/sk_live_0123456789";
const SRT = "srt://10.0.0.5:9000?streamid=publish:sk_srt_987654&passphrase=hunter2hunter2";

const down = { connected: false, code: 1, signal: null };
const up = { connected: true, code: 1, signal: null };

describe("describePushFailure", () => {
  it.each([
    [
      "connection refused",
      RTMP,
      down,
      [
        "[tcp @ 0x559687984e00] Connection to tcp://127.0.0.1:19351?tcp_nodelay=0 failed: Connection refused",
        "[rtmp @ 0x5596879882c0] Cannot open connection tcp://127.0.0.1:19351?tcp_nodelay=0",
        `${RTMP}: Connection refused`,
      ],
      "connection refused by 127.0.0.1:19351",
    ],
    [
      "unknown host",
      "rtmp://no-such-host.invalid/app/sk_live_0123456789",
      down,
      [
        "[tcp @ 0x555be7c98e00] Failed to resolve hostname no-such-host.invalid: Name or service not known",
        "rtmp://no-such-host.invalid/app/sk_live_0123456789: Input/output error",
      ],
      "cannot resolve host no-such-host.invalid",
    ],
    [
      "a host that never answers the handshake",
      RTMP,
      down,
      ["[rtmp @ 0x561b8a1fdbc0] Cannot read RTMP handshake response", `${RTMP}: Connection timed out`],
      "no answer from 127.0.0.1:19351 within 10 s",
    ],
    [
      "a destination that stops reading while connected",
      RTMP,
      up,
      [`av_interleaved_write_frame(): Connection timed out`],
      "127.0.0.1:19351 stopped taking media (nothing sent for 10 s)",
    ],
    [
      "refused stream key (the server closes the connection)",
      RTMP,
      down,
      [`${RTMP}: Input/output error`],
      "127.0.0.1:19351 closed the connection before taking the stream (check the url and stream key)",
    ],
    [
      "refused stream key, with the server's words",
      RTMP,
      down,
      ["[rtmp @ 0x1] Server error: Publish rejected for sk_live_0123456789", `${RTMP}: Operation not permitted`],
      "127.0.0.1:19351 refused the stream: Publish rejected for …",
    ],
    [
      "dropped while connected",
      RTMP,
      up,
      ["av_interleaved_write_frame(): Broken pipe", "    Last message repeated 4 times", `Error writing trailer of ${RTMP}: Broken pipe`],
      "127.0.0.1:19351 dropped the connection",
    ],
    [
      "unreachable network",
      RTMP,
      down,
      ["[tcp @ 0x1] Connection to tcp://127.0.0.1:19351 failed: No route to host"],
      "127.0.0.1:19351 is unreachable",
    ],
    [
      "no SRT listener",
      SRT,
      down,
      [`[srt @ 0x55fc80c4b1c0] Connection to ${SRT} failed: Input/output error`, `${SRT}: Input/output error`],
      "no SRT listener at 10.0.0.5:9000 took the connection (check the url and streamid)",
    ],
    [
      "TLS failure",
      "rtmps://127.0.0.1:19360/live/sk_live_0123456789",
      down,
      ["[tls @ 0x1] Error in the pull function.", "[rtmps @ 0x2] Cannot open connection tls://127.0.0.1:19360"],
      "TLS handshake with 127.0.0.1:19360 failed",
    ],
    [
      "something else: its last line, without the url",
      RTMP,
      down,
      ["[flv @ 0x1] Tag avc1 incompatible with output codec id '27'", `Could not write header for output file #0 (incorrect codec parameters ?): Invalid argument ${RTMP}`],
      "Could not write header for output file #0 (incorrect codec parameters ?): Invalid argument rtmp://127.0.0.1:19351/…",
    ],
    ["nothing written, killed", RTMP, { connected: false, code: null, signal: "SIGKILL" as const }, [], "ffmpeg was killed (SIGKILL)"],
    ["nothing written, an exit code", RTMP, { connected: false, code: 187, signal: null }, [""], "ffmpeg exited with code 187"],
  ])("%s", (_case, url, o, tail, reason) => {
    const f = describePushFailure(tail, url, o);
    expect(f).toEqual({ reason, permanent: false });
    expect(f.reason).not.toContain("sk_");
    expect(f.reason).not.toContain("hunter2");
  });

  it("an ffmpeg without the protocol: permanent, and says what is missing", () => {
    expect(describePushFailure([`${SRT}: Protocol not found`], SRT, down)).toEqual({
      reason: "this server's ffmpeg cannot push srt:// (it needs ffmpeg built with libsrt)",
      permanent: true,
    });
    expect(describePushFailure(["[rtmps @ 0x1] Protocol not found"], "rtmps://h/a/k", down).reason).toContain("TLS");
  });
});

describe("redactDestination", () => {
  it.each([
    [`failed to open ${RTMP} now`, RTMP, "failed to open rtmp://127.0.0.1:19351/… now"],
    // ffmpeg sometimes prints the url without its query, or pieces of it
    ["Connection to srt://10.0.0.5:9000 failed (streamid publish:sk_srt_987654)", SRT, "Connection to srt://10.0.0.5:9000 failed (streamid …)"],
    ["key sk_live_0123456789 and encoded sk%5Flive", "rtmp://h/app/sk%5Flive_0123456789", "key … and encoded sk%5Flive"],
    ["passphrase hunter2hunter2", SRT, "passphrase …"],
    // short path parts (an app name) are not secrets and stay
    ["app live2 is fine", "rtmp://h/live2/sk_live_0123456789", "app live2 is fine"],
    ["not a url at all", "::::", "not a url at all"],
  ])("%j", (text, url, expected) => {
    expect(redactDestination(text, url)).toBe(expected);
  });
});

describe("describeRtmpFailure: onair's own client's failures, in the words ffmpeg's had", () => {
  const err = (kind: RtmpErrorKind, stage: RtmpStage = "connect", status?: { code: string; description: string }) => new RtmpError(kind, "what the client said", stage, status);
  it.each<[string, RtmpError, boolean, string]>([
    ["connection refused", err("refused"), false, "connection refused by 127.0.0.1:19351"],
    ["unreachable", err("unreachable"), false, "127.0.0.1:19351 is unreachable"],
    ["no answer to the handshake", err("timeout", "handshake"), false, "no answer from 127.0.0.1:19351 within 10 s"],
    ["a destination that stopped reading", err("timeout", "streaming"), true, "127.0.0.1:19351 stopped taking media (nothing sent for 10 s)"],
    [
      "a certificate that failed verification",
      err("tls-certificate"),
      false,
      'the TLS certificate of 127.0.0.1:19351 failed verification (a target whose destination has no publicly trusted certificate may set "tlsVerify": false)',
    ],
    ["another TLS failure", err("tls"), false, "TLS handshake with 127.0.0.1:19351 failed"],
    [
      "a refused publish: the server's code and description, the key cut out",
      err("rejected", "publish", { code: "NetStream.Publish.BadName", description: "sk_live_0123456789 is not a valid key" }),
      false,
      "127.0.0.1:19351 refused the stream: NetStream.Publish.BadName: … is not a valid key",
    ],
    ["a refusal without words", err("rejected", "publish", { code: "", description: "" }), false, "127.0.0.1:19351 refused the stream: no reason given"],
    ["closed before the publish was taken", err("closed", "publish"), false, "127.0.0.1:19351 closed the connection before taking the stream (check the url and stream key)"],
    ["closed while media went out", err("closed", "streaming"), true, "127.0.0.1:19351 dropped the connection"],
    ["not RTMP", err("protocol", "handshake"), false, "127.0.0.1:19351 does not speak RTMP (check the url's scheme and port)"],
  ])("%s", (_what, e, connected, reason) => {
    const failure = describeRtmpFailure(e, RTMP, { connected });
    expect(failure).toEqual({ reason, permanent: false });
    expect(failure.reason).not.toContain("sk_live_0123456789");
  });
});

describe("describeRelayInputFailure: a relayed push's ffmpeg only reads the input", () => {
  const SOURCE_URL = "rtmp://127.0.0.1:1935/live/abcd-efgh-ijkl-mnop";
  it.each<[string, string[], { code: number | null; signal: NodeJS.Signals | null }, string]>([
    ["its last words, the stream's own key cut out", [`[rtmp @ 0x55d0] ${SOURCE_URL}: Input/output error`], { code: 1, signal: null }, "reading the stream to push failed: rtmp://127.0.0.1:1935/…: Input/output error"],
    ["nothing said, killed", [], { code: null, signal: "SIGKILL" }, "ffmpeg was killed (SIGKILL)"],
    ["nothing said, an exit code", [""], { code: 1, signal: null }, "ffmpeg exited with code 1"],
  ])("%s", (_what, tail, end, reason) => {
    expect(describeRelayInputFailure(tail, [RTMP, SOURCE_URL], end)).toEqual({ reason, permanent: false });
  });
});
