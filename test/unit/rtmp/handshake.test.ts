import { ClientHandshake, HANDSHAKE_SIZE, helloPacket, RtmpHandshakeError, ServerHandshake } from "../../../src/rtmp/handshake";

const filler = (byte: number) => (n: number) => Buffer.alloc(n, byte);

describe("the simple handshake (spec 5.2)", () => {
  it("helloPacket: time, four zero bytes, then the random part", () => {
    const p = helloPacket(0x01020304, filler(0xab));
    expect(p.length).toBe(HANDSHAKE_SIZE);
    expect(p.subarray(0, 8).toString("hex")).toBe("0102030400000000");
    expect(p.subarray(8).every((b) => b === 0xab)).toBe(true);
  });

  it("a client and a server complete it together, in any slicing, and hand over what follows", () => {
    for (const sliceSize of [1, 7, 1536, 4000]) {
      const c1 = helloPacket(1, filler(1));
      const s1 = helloPacket(2, filler(2));
      const client = new ClientHandshake(c1);
      const server = new ServerHandshake(s1);
      const toServer = Buffer.concat([client.start()]);
      const sliced = (b: Buffer) => Array.from({ length: Math.ceil(b.length / sliceSize) }, (_, i) => b.subarray(i * sliceSize, (i + 1) * sliceSize));
      // C0+C1 in: S0+S1+S2 out (S2 echoes C1).
      const serverOut = sliced(toServer).map((b) => server.push(b)).flatMap((s) => (s.send ? [s.send] : []));
      const s012 = Buffer.concat(serverOut);
      expect(s012.length).toBe(1 + 2 * HANDSHAKE_SIZE);
      expect(s012[0]).toBe(3);
      expect(s012.subarray(1, 1 + HANDSHAKE_SIZE).equals(s1)).toBe(true);
      expect(s012.subarray(1 + HANDSHAKE_SIZE).equals(c1)).toBe(true);
      // S0+S1+S2 and the first chunk in: C2 (S1 echoed) out, done, the chunk handed over.
      const firstChunk = Buffer.from("02000000000004010000000000001000", "hex");
      const slices = sliced(Buffer.concat([s012, firstChunk]));
      const sent: Buffer[] = [];
      let rest: Buffer | undefined;
      let i = 0;
      while (rest === undefined) {
        const step = client.push(slices[i++]!);
        if (step.send) sent.push(step.send);
        if (step.done) rest = step.rest!;
      }
      expect(Buffer.concat(sent).equals(s1)).toBe(true);
      expect(Buffer.concat([rest, ...slices.slice(i)]).equals(firstChunk)).toBe(true);
      const c2 = Buffer.concat(sent);
      // The server is done once C2 is in.
      expect(server.push(c2).done).toBe(true);
    }
  });

  it.each([
    ["a server that is not RTMP (an HTTP answer)", () => new ClientHandshake(helloPacket(0, filler(0))).push(Buffer.from("HTTP/1.1 400"))],
    ["a client that is not RTMP (a TLS ClientHello)", () => new ServerHandshake(helloPacket(0, filler(0))).push(Buffer.from([0x16, 0x03, 0x01]))],
  ])("refuses %s by its first byte", (_what, step) => {
    expect(step).toThrow(RtmpHandshakeError);
    expect(step).toThrow(/not 3/);
  });
});
