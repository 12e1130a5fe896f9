import { buildRtpBridgeArgs, buildSrtBridgeArgs, SRT_INPUT_BEFORE, srtListenerInput } from "../../../src/ingest/bridgeArgs";
import { inputScript } from "../../../src/media";

describe("bridge arguments", () => {
  it("the WebRTC bridge reads only its SDP, binds loopback, copies the video and publishes FLV to the ticket's URL", () => {
    const rtp = buildRtpBridgeArgs({ sdpFile: "/d/a.sdp", outputUrl: "rtmp://127.0.0.1:1935/live/bridge-x", hasAudio: true, audioBitrate: 128000, bindAddress: "127.0.0.1" });
    expect(rtp.join(" ")).toContain("-protocol_whitelist file,udp,rtp -format_whitelist sdp -f sdp -localaddr 127.0.0.1");
    expect(rtp.join(" ")).toContain("-i /d/a.sdp -map 0:v:0 -map 0:a:0 -c:v copy -c:a aac -b:a 128000");
    expect(rtp.slice(-3)).toEqual(["-f", "flv", "rtmp://127.0.0.1:1935/live/bridge-x"]);
    expect(buildRtpBridgeArgs({ sdpFile: "a", outputUrl: "o", hasAudio: false, audioBitrate: 1, bindAddress: "127.0.0.1" })).not.toContain("aac");
  });

  it.each([
    ["IPv4", "0.0.0.0", "srt://0.0.0.0:9000"],
    ["IPv6 in brackets", "::", "srt://[::]:9000"],
  ])("the SRT listener's input names no secret in its url (%s)", (_name, host, url) => {
    const input = srtListenerInput({ host, port: 9000, passphrase: "p&q=r 0123'456", latencyMs: 200 });
    expect(input).toEqual({
      kind: "srt",
      url,
      options: { mode: "listener", passphrase: "p&q=r 0123'456", pbkeylen: "16", latency: "200000", analyzeduration: "2000000" },
    });
    // The passphrase goes into the script as one quoted option.
    expect(inputScript(input)).toContain("option passphrase 'p&q=r 0123'\\''456'\n");
  });

  it("the SRT bridge reads its script and copies to the ticket's URL; the script's options are all its argv holds of the input", () => {
    const input = ["-f", "concat", "-safe", "0", "-i", "/d/x.ffconcat"];
    const args = buildSrtBridgeArgs({ input, outputUrl: "rtmp://127.0.0.1:1935/live/bridge-y" });
    expect(args.join(" ")).toContain("-f concat -safe 0 -i /d/x.ffconcat -map 0:v:0 -map 0:a:0? -c copy -f flv rtmp://127.0.0.1:1935/live/bridge-y");
    expect(args.join(" ")).not.toMatch(/srt:|passphrase/);
    expect(SRT_INPUT_BEFORE).toEqual(["-analyzeduration", "2000000"]);
  });
});
