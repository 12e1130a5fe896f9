import crypto from "node:crypto";
import net from "node:net";
import {
  ChunkReader,
  ChunkWriter,
  decodeAmf0,
  encodeAmf0,
  helloPacket,
  RtmpType,
  ServerHandshake,
  UserControl,
  type Amf0Value,
  type RtmpMessage,
} from "../../src/rtmp";

// A small RTMP server made of onair's own codecs (src/rtmp), for what a listening ffmpeg cannot
// do: refuse a publish with a status of our choosing, ping, stop reading. It records what each
// publisher sent.

export interface ServerOptions {
  /** Answer publish with this error status instead of NetStream.Publish.Start. */
  refuse?: { code: string; description: string };
  /** After Publish.Start, stop reading from the socket (a destination that hangs). */
  stopReading?: boolean;
  /** Send a ping request and a window acknowledgement size of this many bytes after connect. */
  ackWindow?: number;
}

export interface Session {
  commands: Amf0Value[][];
  /** Audio, video and data messages after publish. */
  media: RtmpMessage[];
  pongs: number;
  acknowledgements: number;
  closed: Promise<void>;
}

export interface TestRtmpServer {
  port: number;
  url(app: string, name: string): string;
  sessions: Session[];
  close(): Promise<void>;
}

export async function startTestRtmpServer(o: ServerOptions = {}): Promise<TestRtmpServer> {
  const sockets = new Set<net.Socket>();
  const sessions: Session[] = [];
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    const session: Session = { commands: [], media: [], pongs: 0, acknowledgements: 0, closed: new Promise((resolve) => socket.once("close", () => resolve())) };
    sessions.push(session);
    serve(socket, session, o);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: (app, name) => `rtmp://127.0.0.1:${port}/${app}/${name}`,
    sessions,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function serve(socket: net.Socket, session: Session, o: ServerOptions): void {
  let handshake: ServerHandshake | undefined = new ServerHandshake(helloPacket(0, (n) => crypto.randomBytes(n)));
  const reader = new ChunkReader();
  const writer = new ChunkWriter();
  const send = (m: RtmpMessage) => socket.write(writer.write(m));
  const command = (values: Amf0Value[], streamId = 0) => send({ csid: 3, type: RtmpType.amf0Command, streamId, timestamp: 0, payload: encodeAmf0(values) });
  const control = (type: number, value: number) => {
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(value);
    send({ csid: 2, type, streamId: 0, timestamp: 0, payload });
  };
  socket.on("data", (data: Buffer) => {
    try {
      onData(data);
    } catch {
      // Not RTMP (a TLS ClientHello, say): hang up, as a real server does.
      socket.destroy();
    }
  });
  const onData = (data: Buffer) => {
    if (handshake) {
      const step = handshake.push(data);
      if (step.send) socket.write(step.send);
      if (!step.done) return;
      handshake = undefined;
      data = step.rest!;
    }
    for (const m of reader.push(data)) {
      if (m.type === RtmpType.acknowledgement) session.acknowledgements++;
      if (m.type === RtmpType.userControl && m.payload.readUInt16BE(0) === UserControl.pingResponse) session.pongs++;
      if ([RtmpType.audio, RtmpType.video, RtmpType.amf0Data].includes(m.type as 8)) session.media.push(m);
      if (m.type !== RtmpType.amf0Command) continue;
      const values = decodeAmf0(m.payload);
      session.commands.push(values);
      const [name, txn] = values;
      if (name === "connect") {
        if (o.ackWindow) {
          control(RtmpType.windowAckSize, o.ackWindow);
          const ping = Buffer.alloc(6);
          ping.writeUInt16BE(UserControl.pingRequest);
          ping.writeUInt32BE(1234, 2);
          send({ csid: 2, type: RtmpType.userControl, streamId: 0, timestamp: 0, payload: ping });
        }
        command(["_result", txn!, { fmsVer: "FMS/3,0,1,123" }, { level: "status", code: "NetConnection.Connect.Success", description: "Connection succeeded." }]);
      } else if (name === "createStream") {
        command(["_result", txn!, null, 1]);
      } else if (name === "publish") {
        const status = o.refuse ? { level: "error", ...o.refuse } : { level: "status", code: "NetStream.Publish.Start", description: `${String(values[3])} is now published.` };
        command(["onStatus", 0, null, status], 1);
        if (o.refuse) socket.end();
        else if (o.stopReading) socket.pause();
        // A server that sends more than the window: the client must acknowledge it.
        if (o.ackWindow) send({ csid: 3, type: RtmpType.amf0Data, streamId: 1, timestamp: 0, payload: encodeAmf0(["onFiller", "x".repeat(o.ackWindow)]) });
      }
    }
  };
}
