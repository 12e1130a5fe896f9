import { rtpInputSdp } from "../../../../src/ingest/webrtc/bridgeSdp";

describe("rtpInputSdp", () => {
  it("describes the forwarded RTP for ffmpeg, from one source address only, format parameters sanitized", () => {
    const sdp = rtpInputSdp({ video: { port: 5000, payloadType: 106, fmtp: "packetization-mode=1;profile-level-id=42e01f\nm=x" }, audio: { port: 5002, payloadType: 111, channels: 2 }, from: "127.0.0.1" });
    const filter = "a=source-filter: incl IN IP4 127.0.0.1 127.0.0.1\n";
    expect(sdp).toBe(
      "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=onair WebRTC publish\nc=IN IP4 127.0.0.1\nt=0 0\nm=video 5000 RTP/AVP 106\n" + filter + "a=rtpmap:106 H264/90000\n" +
        "a=fmtp:106 packetization-mode=1;profile-level-id=42e01fm=x\nm=audio 5002 RTP/AVP 111\n" + filter + "a=rtpmap:111 opus/48000/2\n",
    );
    expect(rtpInputSdp({ video: { port: 5000, payloadType: 96, fmtp: undefined }, from: "127.0.0.5" })).toContain("a=source-filter: incl IN IP4 127.0.0.1 127.0.0.5\n");
    // A source that is not an IPv4 address would make an SDP line of its own.
    expect(() => rtpInputSdp({ video: { port: 5000, payloadType: 96, fmtp: undefined }, from: "127.0.0.1\nm=x" })).toThrow(/IPv4/);
  });
});
