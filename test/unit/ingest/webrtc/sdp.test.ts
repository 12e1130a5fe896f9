import { buildRtpBridgeArgs, buildSrtBridgeArgs, srtListenerUrl } from "../../../../src/ingest/bridgeArgs";
import { isRtcp, startsH264Keyframe } from "../../../../src/ingest/webrtc/rtp";
import { iceServerLinks, OfferError, restrictOffer, rtpInputSdp, withPublicAddress } from "../../../../src/ingest/webrtc/sdp";

// A Chrome-like offer: VP8 first, H.264 in several profiles and packetization modes, rtx, red.
const CHROME_OFFER = [
  "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1",
  "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9", "c=IN IP4 0.0.0.0", "a=mid:0", "a=sendonly", "a=ice-ufrag:abcd", "a=ice-pwd:0123456789012345678901",
  "a=candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host", "a=end-of-candidates", "a=rtpmap:111 opus/48000/2", "a=rtcp-fb:111 transport-cc", "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtpmap:63 red/48000/2", "a=rtpmap:9 G722/8000",
  "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 106 107", "c=IN IP4 0.0.0.0", "a=mid:1", "a=sendonly",
  "a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 nack", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96",
  "a=rtpmap:102 H264/90000", "a=rtcp-fb:102 nack pli", "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f",
  "a=rtpmap:103 H264/90000", "a=fmtp:103 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f",
  "a=rtpmap:106 H264/90000", "a=rtcp-fb:106 nack pli", "a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
  "a=rtpmap:107 rtx/90000", "a=fmtp:107 apt=106", "a=ssrc-group:FID 1 2", "a=ssrc:1 cname:x", "a=ssrc:2 cname:x",
].join("\r\n") + "\r\n";

describe("restrictOffer", () => {
  it("keeps H.264 packetization-mode 1 in the preferred profile and Opus, nothing else", () => {
    const r = restrictOffer(CHROME_OFFER);
    expect(r.video).toEqual({ mid: "1", payloadType: 106, fmtp: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f" });
    expect(r.audio).toEqual({ mid: "0", payloadType: 111, fmtp: "minptime=10;useinbandfec=1", channels: 2 });
    expect(r.sdp).toContain("m=video 9 UDP/TLS/RTP/SAVPF 106\r\n");
    expect(r.sdp).toContain("m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n");
    for (const gone of ["VP8", "rtx", "red/", "G722", "a=rtpmap:103", "a=fmtp:102", "ssrc-group"]) expect(r.sdp).not.toContain(gone);
    expect(r.sdp).toContain("a=rtcp-fb:106 nack pli");
    expect(r.sdp).toContain("a=ice-pwd:0123456789012345678901");
    // Candidates wait for the answer to have gone out.
    expect(r.candidates).toEqual([{ mid: "0", candidate: "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host" }]);
    expect(r.sdp).not.toMatch(/a=candidate|a=end-of-candidates/);
  });

  it("treats audio that does not send as no audio, and media types in any case", () => {
    const r = restrictOffer("v=0\r\nm=Video 9 RTP/AVP 96\r\na=mid:0\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\nm=audio 9 RTP/AVP 111\r\na=mid:1\r\na=recvonly\r\na=rtpmap:111 opus/48000/2\r\n");
    expect(r.video.payloadType).toBe(96);
    expect(r.audio).toBeUndefined();
  });

  it.each([
    ["not SDP", "hello", /start with v=0/],
    ["no video", "v=0\r\nm=audio 9 RTP/AVP 111\r\na=mid:0\r\na=rtpmap:111 opus/48000/2\r\n", /one video track, it has 0/],
    ["VP8 only", "v=0\r\nm=video 9 RTP/AVP 96\r\na=mid:0\r\na=rtpmap:96 VP8/90000\r\n", /H\.264/],
    ["H.264 mode 0 only", "v=0\r\nm=video 9 RTP/AVP 96\r\na=mid:0\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=0\r\n", /packetization-mode=1/],
    ["a receive-only video", "v=0\r\nm=video 9 RTP/AVP 96\r\na=mid:0\r\na=recvonly\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n", /does not send/],
    ["PCMU audio", "v=0\r\nm=video 9 RTP/AVP 96\r\na=mid:0\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\nm=audio 9 RTP/AVP 0\r\na=mid:1\r\na=rtpmap:0 PCMU/8000\r\n", /Opus/],
    ["no mid", "v=0\r\nm=video 9 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n", /a=mid/],
    ["too large", "v=0\r\n" + "a=x\r\n".repeat(20_000), /64 KiB/],
    ["a text section", "v=0\r\nm=video 9 RTP/AVP 96\r\na=mid:0\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\nm=text 9 RTP/AVP 98\r\na=mid:1\r\n", /not "text"/],
    ["a mid with a space", "v=0\r\nm=video 9 RTP/AVP 96\r\na=mid: 0\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n", /a=mid/],
  ])("refuses %s", (_what, offer, message) => {
    expect(() => restrictOffer(offer)).toThrow(OfferError);
    expect(() => restrictOffer(offer)).toThrow(message);
  });
});

describe("answer and ffmpeg descriptions", () => {
  it("announces each host candidate at the public address too", () => {
    const answer = "v=0\r\na=candidate:1 1 UDP 2114977791 10.0.0.5 40000 typ host\r\na=end-of-candidates";
    expect(withPublicAddress(answer, "203.0.113.7").split("\r\n")).toEqual([
      "v=0",
      "a=candidate:1 1 UDP 2114977791 10.0.0.5 40000 typ host",
      "a=candidate:1p 1 UDP 2114977790 203.0.113.7 40000 typ host",
      "a=end-of-candidates",
    ]);
  });

  it("gives ICE servers as Link values, TURN with its credentials", () => {
    expect(iceServerLinks(["stun:stun.example.net", "turn:turn.example.net?transport=udp"], "u", 'p"w')).toEqual([
      '<stun:stun.example.net>; rel="ice-server"',
      '<turn:turn.example.net?transport=udp>; rel="ice-server"; username="u"; credential="p\\"w"; credential-type="password"',
    ]);
  });

  it("describes the forwarded RTP for ffmpeg, format parameters sanitized", () => {
    const sdp = rtpInputSdp({ video: { port: 5000, payloadType: 106, fmtp: "packetization-mode=1;profile-level-id=42e01f\nm=x" }, audio: { port: 5002, payloadType: 111, channels: 2 } });
    expect(sdp).toBe(
      "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=onair WebRTC publish\nc=IN IP4 127.0.0.1\nt=0 0\nm=video 5000 RTP/AVP 106\na=rtpmap:106 H264/90000\n" +
        "a=fmtp:106 packetization-mode=1;profile-level-id=42e01fm=x\nm=audio 5002 RTP/AVP 111\na=rtpmap:111 opus/48000/2\n",
    );
  });

  it("bridges copy the video and publish FLV to the ticket's URL", () => {
    const rtp = buildRtpBridgeArgs({ sdpFile: "/d/a.sdp", outputUrl: "rtmp://127.0.0.1:1935/live/bridge-x", hasAudio: true, audioBitrate: 128000 });
    expect(rtp.join(" ")).toContain("-protocol_whitelist file,udp,rtp");
    expect(rtp.join(" ")).toContain("-i /d/a.sdp -map 0:v:0 -map 0:a:0 -c:v copy -c:a aac -b:a 128000");
    expect(rtp.slice(-3)).toEqual(["-f", "flv", "rtmp://127.0.0.1:1935/live/bridge-x"]);
    expect(buildRtpBridgeArgs({ sdpFile: "a", outputUrl: "o", hasAudio: false, audioBitrate: 1 })).not.toContain("aac");
    expect(srtListenerUrl({ host: "0.0.0.0", port: 9000, passphrase: "p&q=r 0123456", latencyMs: 200 })).toBe(
      "srt://0.0.0.0:9000?mode=listener&passphrase=p%26q%3Dr+0123456&pbkeylen=16&latency=200000",
    );
    expect(buildSrtBridgeArgs({ host: "::", port: 9001, passphrase: "x".repeat(16), latencyMs: 120, outputUrl: "o" })).toContain("-c");
  });
});

describe("RTP", () => {
  const rtp = (payload: number[], header: number[] = [0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) => Uint8Array.from([...header, ...payload]);
  it.each([
    ["an IDR slice", rtp([0x65, 0x88]), true],
    ["an SPS", rtp([0x67, 0x42]), true],
    ["a non-IDR slice", rtp([0x41, 0x9a]), false],
    ["an FU-A starting an IDR", rtp([0x7c, 0x85, 0x00]), true],
    ["an FU-A continuing an IDR", rtp([0x7c, 0x05, 0x00]), false],
    ["a STAP-A with SPS and PPS", rtp([0x78, 0x00, 0x02, 0x67, 0x42, 0x00, 0x02, 0x68, 0xce]), true],
    ["a STAP-A without", rtp([0x78, 0x00, 0x02, 0x41, 0x9a]), false],
    ["a header extension before an IDR", rtp([0x00, 0x01, 0xaa, 0xbb, 0xcc, 0xdd, 0x65], [0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xbe, 0xde]), true],
    ["too short", Uint8Array.from([0x80, 96, 0]), false],
  ])("%s → keyframe start %s", (_what, packet, expected) => {
    expect(startsH264Keyframe(packet)).toBe(expected);
  });
  it("tells RTCP from RTP under rtcp-mux", () => {
    expect(isRtcp(Uint8Array.from([0x80, 200]))).toBe(true);
    expect(isRtcp(Uint8Array.from([0x81, 206]))).toBe(true);
    expect(isRtcp(Uint8Array.from([0x80, 96]))).toBe(false);
    expect(isRtcp(Uint8Array.from([0x80, 0xe0]))).toBe(false);
  });
});
