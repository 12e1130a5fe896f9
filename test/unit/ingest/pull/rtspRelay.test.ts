import { locationHost, readHead, RtspServerStream } from "../../../../src/ingest/pull/rtspRelay";

const frame = (len: number) => Buffer.concat([Buffer.from([0x24, 0, len >> 8, len & 0xff]), Buffer.alloc(len, 0x0d)]);

describe("RtspServerStream", () => {
  it("reads responses between interleaved frames, and skips bodies", () => {
    const w = new RtspServerStream();
    const describe = "RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Length: 20\r\n\r\nRTSP/1.0 302 in body";
    expect(w.push(Buffer.from(describe))).toEqual([{ status: 200, location: undefined }]);
    // A frame whose payload looks like a response is not one.
    const fake = Buffer.from("RTSP/1.0 302 Found\r\nLocation: rtsp://x/\r\n\r\n");
    expect(w.push(Buffer.concat([Buffer.from([0x24, 0, 0, fake.length]), fake]))).toEqual([]);
    expect(w.push(Buffer.from("RTSP/1.0 302 Moved\r\nCSeq: 3\r\nLocation: rtsp://10.0.0.5/x\r\n\r\n"))).toEqual([{ status: 302, location: "rtsp://10.0.0.5/x" }]);
    expect(w.pending).toBe(0);
  });

  it("holds back a head until it is whole, byte by byte", () => {
    const w = new RtspServerStream();
    const bytes = Buffer.concat([frame(5), Buffer.from("RTSP/1.0 301 Moved\r\nlocation: rtsp://10.0.0.5/\r\n\r\n")]);
    const seen = [];
    for (let i = 0; i < bytes.length; i++) {
      seen.push(...w.push(bytes.subarray(i, i + 1)));
      if (i < bytes.length - 1) expect(seen).toEqual([]);
    }
    expect(seen).toEqual([{ status: 301, location: "rtsp://10.0.0.5/" }]);
  });

  it("counts what is not yet a whole head as pending (held from ffmpeg)", () => {
    const w = new RtspServerStream();
    w.push(Buffer.from("RTSP/1.0 302 Fou"));
    expect(w.pending).toBe(16);
  });

  it("requests a server sends are not responses", () => {
    expect(new RtspServerStream().push(Buffer.from("GET_PARAMETER rtsp://x RTSP/1.0\r\nCSeq: 9\r\n\r\n"))).toEqual([]);
  });

  it("a head without an end past 64 KiB is not RTSP", () => {
    const w = new RtspServerStream();
    w.push(Buffer.alloc(70 * 1024, 0x41));
    expect(w.broken).toBe(true);
  });
});

describe("readHead: what ffmpeg could read otherwise is refused", () => {
  it.each([
    ["a response", "RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: 12", { status: 200, location: undefined, contentLength: 12 }],
    ["a status without a reason", "RTSP/1.0 302\r\nLocation: rtsp://h/x", { status: 302, location: "rtsp://h/x", contentLength: 0 }],
    ["a request from the server", "GET_PARAMETER rtsp://h/x RTSP/1.0\r\nCSeq: 9", { status: undefined, location: undefined, contentLength: 0 }],
    ["content-length with spaces", "RTSP/1.0 200 OK\r\ncontent-length:  7 ", { status: 200, location: undefined, contentLength: 7 }],
  ])("%s", (_what, head, read) => {
    expect(readHead(head)).toEqual(read);
  });

  it.each([
    ["a status of four digits (atoi reads 302)", "RTSP/1.0 0302 Found\r\nLocation: rtsp://10.0.0.5/"],
    ["a tab between version and status", "RTSP/1.0\t302 Found\r\nLocation: rtsp://10.0.0.5/"],
    ["another version word", "HTTP/1.0 302 Found\r\nLocation: rtsp://10.0.0.5/"],
    ["a bare LF (a second reply hidden in the head)", "RTSP/1.0 200 OK\r\nCSeq: 1\n\nRTSP/1.0 302 Found\r\nLocation: rtsp://10.0.0.5/"],
    ["a bare CR", "RTSP/1.0 200 OK\rCSeq: 1"],
    ["a NUL", "RTSP/1.0 200 OK\r\nContent-Length: 5\u0000 99"],
    ["a content-length strtol reads otherwise", "RTSP/1.0 200 OK\r\nContent-Length: 40x"],
    ["a hexadecimal content-length", "RTSP/1.0 200 OK\r\nContent-Length: 0x40"],
    ["two content-lengths (ffmpeg takes the last)", "RTSP/1.0 200 OK\r\nContent-Length: 0\r\nContent-Length: 30"],
  ])("%s", (_what, head) => {
    expect(readHead(head)).toBeUndefined();
  });

  it("a refused head breaks the stream: nothing after it is read", () => {
    const w = new RtspServerStream();
    expect(w.push(Buffer.from("RTSP/1.0 0302 Found\r\nLocation: rtsp://10.0.0.5/\r\n\r\nRTSP/1.0 200 OK\r\n\r\n"))).toEqual([]);
    expect(w.broken).toBe(true);
  });
});

describe("locationHost", () => {
  it.each([
    ["rtsp://10.0.0.5:554/x", "10.0.0.5"],
    ["rtsp://[fd00::1]/x", "fd00::1"],
    [undefined, "an unnamed place"],
    ["::", "an unreadable url"],
  ])("%s", (location, host) => {
    expect(locationHost(location)).toBe(host);
  });
});
