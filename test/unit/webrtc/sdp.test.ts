import { iceServerLinks, OfferError, restrictOffer, withPublicAddress } from "../../../src/webrtc/sdp";

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

// A Chrome-like WHEP offer (a player): recvonly, VP8 first, H.264 in four profiles each in
// packetization modes 1 and 0 with their rtx, red and ulpfec; transport-cc and goog-remb feedback;
// the transport-wide-cc and abs-send-time header extensions; Opus recvonly.
const h264 = (pt: number, rtx: number, mode: 0 | 1, profile: string) => [
  `a=rtpmap:${pt} H264/90000`, `a=rtcp-fb:${pt} goog-remb`, `a=rtcp-fb:${pt} transport-cc`, `a=rtcp-fb:${pt} ccm fir`, `a=rtcp-fb:${pt} nack`, `a=rtcp-fb:${pt} nack pli`,
  `a=fmtp:${pt} level-asymmetry-allowed=1;packetization-mode=${mode};profile-level-id=${profile}`,
  `a=rtpmap:${rtx} rtx/90000`, `a=fmtp:${rtx} apt=${pt}`,
];
const VIDEO_HEAD = [
  "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0", "a=ice-ufrag:wXyZ", "a=ice-pwd:abcdefghijklmnopqrstuvwx", "a=ice-options:trickle",
  "a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99", "a=setup:actpass", "a=mid:0",
  "a=extmap:1 urn:ietf:params:rtp-hdrext:toffset", "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
  "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01", "a=extmap:4 urn:3gpp:video-orientation",
];
const playOffer = (videoDirection: string, audioDirection: string) => [
  "v=0", "o=- 4611731400430051336 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1", "a=extmap-allow-mixed", "a=msid-semantic: WMS",
  "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 104 105 106 107 108 109 127 125 39 40 112 113 114 115 116 117 118",
  ...VIDEO_HEAD, `a=${videoDirection}`, "a=rtcp-mux", "a=rtcp-rsize",
  "a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 goog-remb", "a=rtcp-fb:96 transport-cc", "a=rtcp-fb:96 nack", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96",
  ...h264(102, 103, 1, "42001f"), ...h264(104, 105, 0, "42001f"),
  ...h264(106, 107, 1, "42e01f"), ...h264(108, 109, 0, "42e01f"),
  ...h264(127, 125, 1, "4d001f"), ...h264(39, 40, 0, "4d001f"),
  ...h264(114, 115, 0, "640c1f"), ...h264(112, 113, 1, "640c1f"),
  "a=rtpmap:116 red/90000", "a=rtpmap:117 rtx/90000", "a=fmtp:117 apt=116", "a=rtpmap:118 ulpfec/90000",
  "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126", "c=IN IP4 0.0.0.0", "a=mid:1",
  "a=extmap:14 urn:ietf:params:rtp-hdrext:ssrc-audio-level", "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
  "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01", `a=${audioDirection}`, "a=rtcp-mux",
  "a=rtpmap:111 opus/48000/2", "a=rtcp-fb:111 transport-cc", "a=fmtp:111 minptime=10;useinbandfec=1",
  "a=rtpmap:63 red/48000/2", "a=fmtp:63 111/111", "a=rtpmap:9 G722/8000", "a=rtpmap:0 PCMU/8000", "a=rtpmap:8 PCMA/8000",
  "a=rtpmap:13 CN/8000", "a=rtpmap:110 telephone-event/48000", "a=rtpmap:126 telephone-event/8000",
  "a=candidate:842163049 1 udp 1677729535 198.51.100.9 61234 typ srflx raddr 0.0.0.0 rport 0 generation 0", "a=end-of-candidates",
].join("\r\n") + "\r\n";

/** The lines of the restricted offer's section with `mid`, from its m-line to the next. */
function section(sdp: string, mid: string): string[] {
  const lines = sdp.split("\r\n");
  const at = lines.indexOf(`a=mid:${mid}`);
  const start = lines.slice(0, at).map((l) => l.startsWith("m=")).lastIndexOf(true);
  const next = lines.findIndex((l, i) => i > start && l.startsWith("m="));
  return lines.slice(start, next === -1 ? lines.length - 1 : next);
}

describe("restrictOffer for a player", () => {
  const HIGH = "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640c1f";

  it("picks High profile in packetization mode 1 and Opus, and leaves nothing else to answer", () => {
    const r = restrictOffer(playOffer("recvonly", "recvonly"), "play");
    expect(r.video).toEqual({ mid: "0", payloadType: 112, fmtp: HIGH });
    expect(r.audio).toEqual({ mid: "1", payloadType: 111, fmtp: "minptime=10;useinbandfec=1", channels: 2 });
    expect(section(r.sdp, "0")).toEqual([
      "m=video 9 UDP/TLS/RTP/SAVPF 112",
      ...VIDEO_HEAD.filter((l) => !l.includes("transport-wide-cc")),
      "a=recvonly", "a=rtcp-mux", "a=rtcp-rsize",
      // goog-remb stays: the player's estimate is what the rendition choice reads; nack for retransmission.
      "a=rtpmap:112 H264/90000", "a=rtcp-fb:112 goog-remb", "a=rtcp-fb:112 ccm fir", "a=rtcp-fb:112 nack", "a=rtcp-fb:112 nack pli", `a=fmtp:112 ${HIGH}`,
    ]);
    expect(section(r.sdp, "1")).toEqual([
      "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:1",
      "a=extmap:14 urn:ietf:params:rtp-hdrext:ssrc-audio-level", "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
      "a=recvonly", "a=rtcp-mux", "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1",
    ]);
    // Without transport-cc offered, Chrome estimates on the receiving side and sends REMB.
    expect(r.sdp).not.toMatch(/transport-cc|transport-wide-cc/);
    expect(r.sdp.startsWith("v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n")).toBe(true);
    expect(r.candidates).toEqual([{ mid: "1", candidate: "candidate:842163049 1 udp 1677729535 198.51.100.9 61234 typ srflx raddr 0.0.0.0 rport 0 generation 0" }]);
    expect(r.sdp).not.toMatch(/a=candidate|a=end-of-candidates/);
  });

  const offerWith = (...profiles: [number, 0 | 1, string][]) =>
    ["v=0", `m=video 9 UDP/TLS/RTP/SAVPF ${profiles.map(([pt]) => pt).join(" ")}`, "a=mid:0", "a=recvonly",
      ...profiles.flatMap(([pt, mode, profile]) => [`a=rtpmap:${pt} H264/90000`, `a=fmtp:${pt} packetization-mode=${mode};profile-level-id=${profile}`])].join("\r\n") + "\r\n";
  it.each<[string, string, number]>([
    ["High over Main and baseline", offerWith([102, 1, "42e01f"], [127, 1, "4d001f"], [100, 1, "64001f"]), 100],
    ["Constrained High over Main", offerWith([127, 1, "4d001f"], [112, 1, "640c1f"]), 112],
    ["Main over constrained baseline", offerWith([106, 1, "42e01f"], [127, 1, "4d001f"]), 127],
    ["constrained baseline over baseline", offerWith([102, 1, "42001f"], [106, 1, "42e01f"]), 106],
    ["baseline alone still plays", offerWith([102, 1, "42001f"]), 102],
    ["never packetization mode 0, even in High", offerWith([114, 0, "640c1f"], [106, 1, "42e01f"]), 106],
  ])("prefers %s", (_what, offer, pt) => {
    expect(restrictOffer(offer, "play").video.payloadType).toBe(pt);
  });

  it.each([["sendonly"], ["inactive"]])("refuses a video that is %s: it does not receive", (direction) => {
    expect(() => restrictOffer(playOffer(direction, "recvonly"), "play")).toThrow(OfferError);
    expect(() => restrictOffer(playOffer(direction, "recvonly"), "play")).toThrow("does not receive");
  });

  it.each<[string, string, number | undefined]>([
    ["its id, for the answer to take up", "a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay", 5],
    ["its id with a direction", "a=extmap:7/recvonly http://www.webrtc.org/experiments/rtp-hdrext/playout-delay", 7],
    ["nothing for a two-byte-header id", "a=extmap:15 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay", undefined],
    ["nothing for another extension", "a=extmap:5 urn:ietf:params:rtp-hdrext:sdes:mid", undefined],
  ])("reads the offer's playout-delay extension: %s", (_what, line, id) => {
    const offer = playOffer("recvonly", "recvonly").replace("a=extmap:4 urn:3gpp:video-orientation", `a=extmap:4 urn:3gpp:video-orientation\r\n${line}`);
    expect(offer).toContain(line);
    expect(restrictOffer(offer, "play").video.playoutDelayId).toBe(id);
    // A publisher's offer: onair receives, the extension is the player's business.
    expect(restrictOffer(offer.replace(/a=recvonly/g, "a=sendonly"), "publish").video.playoutDelayId).toBeUndefined();
  });

  it("takes a sendrecv video", () => {
    expect(restrictOffer(playOffer("sendrecv", "recvonly"), "play").video.payloadType).toBe(112);
  });

  it.each([["sendonly"], ["inactive"]])("treats %s audio (not receiving) as no audio", (direction) => {
    const r = restrictOffer(playOffer("recvonly", direction), "play");
    expect(r.audio).toBeUndefined();
    expect(r.video.payloadType).toBe(112);
  });
});

describe("restrictOffer for a publisher, as before", () => {
  it("is the default role", () => {
    expect(restrictOffer(CHROME_OFFER, "publish")).toEqual(restrictOffer(CHROME_OFFER));
  });

  it("prefers constrained baseline and keeps transport-cc", () => {
    const r = restrictOffer(playOffer("sendonly", "sendonly"), "publish");
    expect(r.video.payloadType).toBe(106);
    expect(r.audio?.payloadType).toBe(111);
    expect(r.sdp).toContain("a=rtcp-fb:106 transport-cc");
    expect(r.sdp).toContain("transport-wide-cc");
    expect(restrictOffer(CHROME_OFFER, "publish").sdp).toContain("a=rtcp-fb:111 transport-cc");
  });

  it("refuses a player's offer: its video does not send", () => {
    expect(() => restrictOffer(playOffer("recvonly", "recvonly"), "publish")).toThrow("does not send");
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
});
