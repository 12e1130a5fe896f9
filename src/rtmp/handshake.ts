// The RTMP simple handshake (Adobe RTMP 1.0, section 5.2), both sides, as pure state machines:
// bytes in, the bytes to send and the leftover out. C0/S0 is the version (3); C1/S1 are 1536
// bytes: a time, four zero bytes and random; C2/S2 echo the peer's C1/S1. The digest
// ("complex") handshake is not spoken: ingest services (YouTube, Twitch, Facebook,
// nginx-rtmp, node-media-server, ffmpeg) accept the simple one from publishers, as OBS sends it.

export const HANDSHAKE_SIZE = 1536;
export const RTMP_VERSION = 3;

export class RtmpHandshakeError extends Error {
  override readonly name = "RtmpHandshakeError";
}

export interface HandshakeStep {
  /** Bytes to send to the peer now, if any. */
  send?: Buffer;
  /** The handshake is over: `rest` holds what came after it (the first chunks). */
  done: boolean;
  rest?: Buffer;
}

/** C1 or S1: time (ms, 32 bits), four zero bytes, then 1528 random bytes (`random` is the source, for tests). */
export function helloPacket(timeMs: number, random: (n: number) => Buffer): Buffer {
  const packet = Buffer.alloc(HANDSHAKE_SIZE);
  packet.writeUInt32BE(timeMs >>> 0, 0);
  random(HANDSHAKE_SIZE - 8).copy(packet, 8);
  return packet;
}

/**
 * Both sides' steps: the peer's version byte and hello (1 + 1536 bytes) in, our answer out once;
 * the peer's echo (1536 more) in, done. The sides differ only in what they answer.
 */
abstract class Handshake {
  private received: Buffer = Buffer.alloc(0);
  private finished = false;
  private answered = false;

  /** Who the peer is, for the version error. */
  protected abstract readonly peer: "server" | "client";

  /** What to send once the peer's hello (C1 or S1) is in. */
  protected abstract answer(peerHello: Buffer): Buffer;

  push(data: Buffer): HandshakeStep {
    if (this.finished) throw new RtmpHandshakeError("the handshake is already over");
    this.received = this.received.length === 0 ? data : Buffer.concat([this.received, data]);
    const version = this.received[0];
    if (version !== undefined && version !== RTMP_VERSION) throw new RtmpHandshakeError(`the ${this.peer} speaks RTMP version ${version}, not ${RTMP_VERSION} (not an RTMP ${this.peer}?)`);
    const step: HandshakeStep = { done: false };
    if (!this.answered && this.received.length >= 1 + HANDSHAKE_SIZE) {
      this.answered = true;
      step.send = this.answer(this.received.subarray(1, 1 + HANDSHAKE_SIZE));
    }
    // The peer's echo of our hello: servers vary (some echo nothing of it), and neither side gains by checking it.
    if (this.received.length >= 1 + 2 * HANDSHAKE_SIZE) {
      this.finished = true;
      step.done = true;
      step.rest = this.received.subarray(1 + 2 * HANDSHAKE_SIZE);
      this.received = Buffer.alloc(0);
    }
    return step;
  }
}

/**
 * The publisher's (client's) side: `start()` gives C0+C1; `push(bytes)` sends C2 (a copy of S1)
 * once S0+S1 are in, and is done once S2 is in too.
 */
export class ClientHandshake extends Handshake {
  protected readonly peer = "server";

  constructor(private readonly c1: Buffer) {
    super();
  }

  start(): Buffer {
    return Buffer.concat([Buffer.from([RTMP_VERSION]), this.c1]);
  }

  protected answer(s1: Buffer): Buffer {
    return Buffer.from(s1);
  }
}

/**
 * The server's side (for onair's own RTMP ingest, and tests): once C0+C1 are in, S0+S1+S2 (S2
 * a copy of C1) are sent; done once C2 is in.
 */
export class ServerHandshake extends Handshake {
  protected readonly peer = "client";

  constructor(private readonly s1: Buffer) {
    super();
  }

  protected answer(c1: Buffer): Buffer {
    return Buffer.concat([Buffer.from([RTMP_VERSION]), this.s1, c1]);
  }
}
