import net from "node:net";
import { decodeAmf0, encodeAmf0, FlvTagType, RtmpError, RtmpPublisher, RtmpType, splitRtmpPath, type RtmpDestination } from "../../src/rtmp";
import { freePort } from "./destinations";
import { startTestRtmpServer, type TestRtmpServer } from "./rtmpServer";

// onair's RTMP publisher (src/rtmp/publisher.ts) over real loopback sockets, against a server
// made of the same codecs (rtmpServer.ts): what it sends, how it answers a server, and how
// each kind of failure comes out.

const servers: TestRtmpServer[] = [];
const closers: (() => void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function destinationOf(port: number, path = "/live2/sk_test_0123456789"): RtmpDestination {
  const { app, streamName } = splitRtmpPath(path);
  return { address: "127.0.0.1", port, app, streamName, tcUrl: `rtmp://127.0.0.1:${port}/${app}` };
}

async function server(o: Parameters<typeof startTestRtmpServer>[0] = {}): Promise<TestRtmpServer> {
  const s = await startTestRtmpServer(o);
  servers.push(s);
  return s;
}

/** A TCP server that takes connections and never says a word. */
async function silentServer(): Promise<number> {
  const sockets = new Set<net.Socket>();
  const s = net.createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  closers.push(() => {
    for (const socket of sockets) socket.destroy();
    s.close();
  });
  return (s.address() as net.AddressInfo).port;
}

const onMetaData = encodeAmf0(["onMetaData", { width: 320, height: 180 }]);

it("publishes: the commands an encoder sends, onMetaData as @setDataFrame, media with its FLV timestamps; answers pings and acknowledges the window", async () => {
  const s = await server({ ackWindow: 4096 });
  const p = await RtmpPublisher.publish(destinationOf(s.port));
  expect(p.sendTag({ type: FlvTagType.script, timestamp: 0, data: onMetaData })).toBe(true);
  const video = Buffer.alloc(10_000, 7); // more than one 4096-byte chunk
  const tags = [
    { type: FlvTagType.video, timestamp: 0, data: video },
    { type: FlvTagType.audio, timestamp: 21, data: Buffer.from([0xaf, 0x01, 1, 2, 3]) },
    { type: FlvTagType.video, timestamp: 33, data: Buffer.from([0x27, 0x01, 0, 0, 0, 9]) },
    { type: FlvTagType.video, timestamp: 0x1000000 + 66, data: Buffer.from([0x27, 0x01, 0, 0, 0, 8]) }, // past 24 bits: the extended timestamp
  ];
  expect(p.sendTags(tags)).toBe(true);
  await p.mediaSent;
  const session = s.sessions[0]!;
  for (let i = 0; i < 100 && session.media.length < 5; i++) await new Promise((r) => setTimeout(r, 20));

  expect(session.commands.map((c) => c[0])).toEqual(["connect", "releaseStream", "FCPublish", "createStream", "publish"]);
  expect(session.commands[0]![2]).toEqual({ app: "live2", type: "nonprivate", flashVer: "FMLE/3.0 (compatible; onair)", tcUrl: `rtmp://127.0.0.1:${s.port}/live2` });
  expect(session.commands[4]!.slice(3)).toEqual(["sk_test_0123456789", "live"]);
  const [meta, ...media] = session.media;
  expect(meta!.type).toBe(RtmpType.amf0Data);
  expect(decodeAmf0(meta!.payload)).toEqual(["@setDataFrame", "onMetaData", { width: 320, height: 180 }]);
  expect(media.map((m) => [m.type, m.timestamp, m.streamId, m.payload.length])).toEqual(tags.map((t) => [t.type, t.timestamp, 1, t.data.length]));
  expect(media[0]!.payload.equals(video)).toBe(true);
  expect(session.pongs).toBe(1);
  expect(session.acknowledgements).toBeGreaterThanOrEqual(1);

  // The source ended: FCUnpublish and deleteStream, then the connection closes; no error.
  await p.finish();
  expect(await p.ended).toBeUndefined();
  await session.closed;
  expect(session.commands.slice(5).map((c) => c[0])).toEqual(["FCUnpublish", "deleteStream"]);
});

it.each([
  ["NetStream.Publish.BadName", "Invalid stream key"],
  ["NetStream.Publish.Denied", "Authentication failed"],
])("a publish refused with %s: rejected with the server's code and description", async (code, description) => {
  const s = await server({ refuse: { code, description } });
  const err = await RtmpPublisher.publish(destinationOf(s.port)).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(RtmpError);
  expect(err).toMatchObject({ kind: "rejected", stage: "publish", status: { code, description } });
});

it("a destination that stops reading: the publisher says stop, then fails with a timeout once nothing moved for timeoutMs", async () => {
  const s = await server({ stopReading: true });
  const p = await RtmpPublisher.publish(destinationOf(s.port), { timeoutMs: 1000, maxBufferedBytes: 256 * 1024 });
  const tag = { type: FlvTagType.video, timestamp: 0, data: Buffer.alloc(1024 * 1024) };
  let sent = 0;
  // The kernel's buffers on loopback hold a few MB; then the socket's own fills.
  while (p.sendTag({ ...tag, timestamp: sent * 33 }) && sent < 200) {
    sent++;
    await new Promise((r) => setImmediate(r));
  }
  expect(sent).toBeLessThan(200);
  const startedWaiting = Date.now();
  const err = await p.ended;
  expect(err).toMatchObject({ kind: "timeout", stage: "streaming" });
  expect(Date.now() - startedWaiting).toBeLessThan(5000);
  // drained() does not hang on a closed connection.
  await p.drained();
});

it("connection refused, a host that never answers, and an aborted set-up", async () => {
  const nobody = await freePort();
  await expect(RtmpPublisher.publish(destinationOf(nobody))).rejects.toMatchObject({ kind: "refused", stage: "connect" });

  const silent = await silentServer();
  const started = Date.now();
  await expect(RtmpPublisher.publish(destinationOf(silent), { timeoutMs: 500 })).rejects.toMatchObject({ kind: "timeout", stage: "handshake" });
  expect(Date.now() - started).toBeLessThan(3000);

  const abort = new AbortController();
  const aborted = RtmpPublisher.publish(destinationOf(silent), { signal: abort.signal });
  setTimeout(() => abort.abort(), 50);
  await expect(aborted).rejects.toMatchObject({ kind: "closed" });
});

it("rtmps to a server that does not speak TLS: a TLS failure, not a refusal", async () => {
  const s = await server();
  const d = { ...destinationOf(s.port), tls: { servername: "localhost", verify: true } };
  await expect(RtmpPublisher.publish(d, { timeoutMs: 2000 })).rejects.toMatchObject({ kind: "tls", stage: "connect" });
});
