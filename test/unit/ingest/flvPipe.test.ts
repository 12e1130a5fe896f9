import { PassThrough, Writable } from "node:stream";
import { FlvPipeReader, flvBytes } from "../../../src/ingest/flvPipe";
import type { RelayedMedia } from "../../../src/ingest/liveSource";
import { FlvReader, FlvTagType } from "../../../src/rtmp";

const video = (timestamp: number, body: number[]): RelayedMedia => ({ kind: "video", timestamp, body: Buffer.from(body) });

describe("flvBytes", () => {
  it.each([
    ["video", FlvTagType.video, [0x34, 0x56, 0x78, 0x12]],
    ["audio", FlvTagType.audio, [0x34, 0x56, 0x78, 0x12]],
    // Script data at 0 whenever it came, as an RTMP play has it (ffmpeg reads it as metadata then).
    ["data", FlvTagType.script, [0, 0, 0, 0]],
  ] as const)("a %s message is an FLV tag of type %i", (kind, type, time) => {
    const bytes = flvBytes({ kind, timestamp: 0x12345678, body: Buffer.from([1, 2, 3]) }, false);
    expect(bytes[0]).toBe(type);
    // 24-bit size, then the timestamp's low 24 bits and its top byte, a zero stream id.
    expect([...bytes.subarray(1, 11)]).toEqual([0, 0, 3, ...time, 0, 0, 0]);
    expect([...bytes.subarray(11, 14)]).toEqual([1, 2, 3]);
    expect(bytes.readUInt32BE(14)).toBe(11 + 3);
  });

  it("the first carries the file header, which an FLV reader takes", () => {
    const stream = Buffer.concat([flvBytes(video(0, [0x17, 0]), true), flvBytes(video(33, [0x27, 1]), false)]);
    expect(stream.subarray(0, 5).toString("latin1")).toBe("FLV\x01\x05");
    const tags = new FlvReader().push(stream);
    expect(tags.map((t) => [t.type, t.timestamp, [...t.data]])).toEqual([
      [9, 0, [0x17, 0]],
      [9, 33, [0x27, 1]],
    ]);
  });
});

describe("FlvPipeReader", () => {
  it("writes each message as it comes, the header once, and ends the pipe at the end of the publish", async () => {
    const pipe = new PassThrough();
    const chunks: Buffer[] = [];
    pipe.on("data", (c: Buffer) => chunks.push(c));
    const ended = new Promise((resolve) => pipe.on("end", resolve));
    const reader = new FlvPipeReader(pipe);
    expect(reader.sendMedia(video(0, [0x17, 1]))).toBe(true);
    expect(reader.sendMedia(video(40, [0x27, 1]))).toBe(true);
    reader.endPlay();
    await ended;
    expect(new FlvReader().push(Buffer.concat(chunks)).map((t) => t.timestamp)).toEqual([0, 40]);
    // Ended: it takes nothing more, and a second end is harmless.
    expect(reader.sendMedia(video(80, [0x27, 1]))).toBe(false);
    expect(() => reader.endPlay()).not.toThrow();
  });

  it("counts what the pipe has not taken as its lag, and a cut throws it away", () => {
    // A pipe whose reader is stuck: every write stays buffered.
    const stuck = new Writable({ highWaterMark: 16, write: () => undefined });
    const reader = new FlvPipeReader(stuck);
    reader.sendMedia(video(0, new Array(100).fill(0)));
    reader.sendMedia(video(40, new Array(100).fill(0)));
    expect(reader.bufferedBytes).toBeGreaterThanOrEqual(200);
    reader.cut();
    expect(stuck.destroyed).toBe(true);
    expect(reader.sendMedia(video(80, [0x27]))).toBe(false);
  });

  it("a pipe whose process has gone (EPIPE) is not an error thrown at the ingest", () => {
    const broken = new Writable({ write: (_chunk, _enc, done) => done(Object.assign(new Error("write EPIPE"), { code: "EPIPE" })) });
    const reader = new FlvPipeReader(broken);
    expect(reader.sendMedia(video(0, [0x17]))).toBe(true);
    return new Promise<void>((resolve) => setImmediate(() => {
      expect(reader.sendMedia(video(40, [0x27]))).toBe(false);
      resolve();
    }));
  });
});
