import { attributes, bodyKind, resolveNamed, rewritePlaylist, SNIFF_LIMIT, type NamedUrl } from "../../../../src/ingest/pull/playlistRewrite";

const BASE = "https://cdn.example/live/index.m3u8?token=t";
/** Stands for the gateway: a url's own text in brackets, or the refused scheme. */
const urlFor = (n: NamedUrl) => (n.ok ? `G(${n.url})` : `R(${n.scheme})`);

describe("rewritePlaylist", () => {
  it.each([
    ["a relative segment", "#EXTINF:2,\nseg1.ts", "#EXTINF:2,\nG(https://cdn.example/live/seg1.ts)\n"],
    ["an absolute one on another host", "http://10.0.0.5/x.ts", "G(http://10.0.0.5/x.ts)\n"],
    ["protocol-relative", "//169.254.169.254/latest", "G(https://169.254.169.254/latest)\n"],
    ["a fragment dropped", "a.ts#x", "G(https://cdn.example/live/a.ts)\n"],
    ["an httpproxy: segment", "httpproxy://127.0.0.3:80/a.ts", "R(httpproxy:)\n"],
    ["crypto: without //", "crypto:127.0.0.3/a.ts", "R(crypto:)\n"],
    ["file:, data:", "file:///etc/passwd\ndata:text/plain,x", "R(file:)\nR(data:)\n"],
    ["a url line with white space around it (ffmpeg reads it as a url)", "  seg.ts  ", "G(https://cdn.example/live/seg.ts)\n"],
    ["NUL ends a line, as in ffmpeg", "#EXT-X-VERSION:3\0http://10.0.0.5/x.ts", "#EXT-X-VERSION:3\nG(http://10.0.0.5/x.ts)\n"],
    ["CR alone ends a line", "#EXTM3U\rseg.ts", "#EXTM3U\nG(https://cdn.example/live/seg.ts)\n"],
    ["blank lines dropped, comments kept", "#EXTM3U\n\n   \n# a comment with http://10.0.0.5/", "#EXTM3U\n# a comment with http://10.0.0.5/\n"],
    ["EXT-X-KEY", '#EXT-X-KEY:METHOD=AES-128,URI="key.bin",IV=0x1', '#EXT-X-KEY:METHOD=AES-128,URI="G(https://cdn.example/live/key.bin)",IV=0x1'],
    ["EXT-X-MAP", '#EXT-X-MAP:URI="init.mp4",BYTERANGE="100@0"', '#EXT-X-MAP:URI="G(https://cdn.example/live/init.mp4)",BYTERANGE="100@0"'],
    ["EXT-X-MEDIA, URI unquoted (ffmpeg reads it up to a comma)", "#EXT-X-MEDIA:TYPE=AUDIO,URI=http://10.0.0.5/a.m3u8,NAME=x", '#EXT-X-MEDIA:TYPE=AUDIO,URI="G(http://10.0.0.5/a.m3u8)",NAME=x'],
    ["EXT-X-I-FRAME-STREAM-INF", '#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI="if.m3u8"', '#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI="G(https://cdn.example/live/if.m3u8)"'],
    ["EXT-X-PART and EXT-X-PRELOAD-HINT", '#EXT-X-PART:DURATION=0.3,URI="p1.mp4"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI="p2.mp4"', '#EXT-X-PART:DURATION=0.3,URI="G(https://cdn.example/live/p1.mp4)"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI="G(https://cdn.example/live/p2.mp4)"'],
    ["EXT-X-RENDITION-REPORT and a SERVER-URI", '#EXT-X-RENDITION-REPORT:URI="../hi/x.m3u8",LAST-MSN=1\n#EXT-X-CONTENT-STEERING:SERVER-URI="/steer"', '#EXT-X-RENDITION-REPORT:URI="G(https://cdn.example/hi/x.m3u8)",LAST-MSN=1\n#EXT-X-CONTENT-STEERING:SERVER-URI="G(https://cdn.example/steer)"'],
    ["a refused scheme in an attribute", '#EXT-X-KEY:METHOD=AES-128,URI="httpproxy:10.0.0.5:6379/k"', '#EXT-X-KEY:METHOD=AES-128,URI="R(httpproxy:)"'],
    ["a quote escaped inside a value (ffmpeg's backslash rule)", '#EXT-X-MAP:URI="a\\"b.mp4"', '#EXT-X-MAP:URI="G(https://cdn.example/live/a%22b.mp4)"'],
    ["a stream-inf and its variant line", '#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="avc1,mp4a"\nhttp://10.0.0.5/v.m3u8', '#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="avc1,mp4a"\nG(http://10.0.0.5/v.m3u8)'],
  ])("%s", (_name, text, expected) => {
    expect(rewritePlaylist(text, BASE, urlFor)).toBe(expected.endsWith("\n") ? expected : `${expected}\n`);
  });

  it("leaves no url a playlist names in what ffmpeg gets", () => {
    const text = '#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=http://a.internal/k\n#EXT-X-MAP:URI="//b.internal/i.mp4"\n#EXTINF:1,\nhttp://c.internal/s.ts\n#EXTINF:1,\n\0http://d.internal/s.ts\n';
    const out = rewritePlaylist(text, BASE, urlFor);
    for (const host of ["a.internal", "b.internal", "c.internal", "d.internal"]) expect(out.split("\n").filter((l) => l.includes(host)).every((l) => /G\(https?:\/\/[a-d]\.internal/.test(l))).toBe(true);
  });
});

describe("attributes", () => {
  it("reads pairs as ff_parse_key_value does: quoted, bare, apart by commas or spaces", () => {
    expect(attributes('A=1,B="x,y" C=z').map((a) => [a.key, a.value])).toEqual([["A", "1"], ["B", "x,y"], ["C", "z"]]);
  });
});

describe("resolveNamed", () => {
  it.each([
    ["seg.ts", { ok: true, url: "https://cdn.example/live/seg.ts" }],
    ["HTTP://X.example/a", { ok: true, url: "http://x.example/a" }],
    ["httpproxy:x", { ok: false, scheme: "httpproxy:", uri: "httpproxy:x" }],
    ["http://[::1", { ok: false, scheme: "unreadable", uri: "http://[::1" }],
  ])("%s", (uri, expected) => {
    expect(resolveNamed(uri, BASE)).toEqual(expected);
  });
});

describe("bodyKind", () => {
  const id3 = (size: number) => Buffer.concat([Buffer.from("ID3\x04\x00\x00", "latin1"), Buffer.from([(size >> 21) & 0x7f, (size >> 14) & 0x7f, (size >> 7) & 0x7f, size & 0x7f]), Buffer.alloc(size)]);
  it.each([
    ["a playlist", Buffer.from("#EXTM3U\n#EXT-X-TARGETDURATION:2\n"), true, { kind: "playlist", skip: 0 }],
    ["a playlist behind a byte-order mark and white space", Buffer.from("\ufeff \n#EXTM3U\n", "utf8"), true, { kind: "playlist", skip: 0 }],
    ["a playlist behind ID3 tags (avformat_open_input skips them)", Buffer.concat([id3(20), id3(5), Buffer.from("#EXTM3U\nx.ts\n")]), true, { kind: "playlist", skip: 45 }],
    ["an ffconcat script", Buffer.from("ffconcat version 1.0\nfile a.m3u8\n"), true, { kind: "refused", what: "an ffconcat script" }],
    ["a DASH manifest", Buffer.from('<?xml version="1.0"?>\n<!-- x -->\n<MPD xmlns="urn">'), true, { kind: "refused", what: "a DASH manifest" }],
    ["MPEG-TS", Buffer.from([0x47, 0x40, 0x00, 0x10, ...Array(200).fill(0xff)]), false, { kind: "media" }],
    ["too few bytes yet", Buffer.from("#EXT"), false, { kind: "more" }],
    ["a cut-off ID3 header", Buffer.from("ID3\x04"), false, { kind: "more" }],
    ["a whole body cut inside its ID3 header (answered, not held)", Buffer.from("ID3\x04\x00", "latin1"), true, { kind: "media" }],
    ["a short whole body", Buffer.from("ok"), true, { kind: "media" }],
  ])("%s", (_name, head, ended, expected) => {
    expect(bodyKind(head, ended)).toEqual(expected);
  });

  it("refuses ID3 tags too large to look behind", () => {
    const big = Buffer.concat([Buffer.from("ID3\x04\x00\x00\x7f\x7f\x7f\x7f", "latin1"), Buffer.alloc(SNIFF_LIMIT)]);
    expect(bodyKind(big, false)).toMatchObject({ kind: "refused" });
  });
});
