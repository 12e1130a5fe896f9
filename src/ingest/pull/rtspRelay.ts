import net from "node:net";
import type { AddressInfo } from "node:net";
import { pinnedLookup, type ResolvedAddress } from "../../outbound";

// An RTSP pull's ffmpeg connects to onair's relay on 127.0.0.1, and the relay to the source's
// checked address (ffmpeg never resolves the name itself). ffmpeg 5.1 follows an RTSP 3xx
// without asking anyone, to any host: the relay reads the server's side of the conversation
// (RTSP messages between interleaved `$` frames) and, at a 3xx, closes both sides before
// ffmpeg reads it. onair follows no RTSP redirect; the pull's status says where it led.

/** An RTSP response the relay saw: its status, and a redirect's Location. */
export interface RtspStatus {
  status: number;
  location: string | undefined;
}

/** A message head larger than this is not RTSP: the connection is closed. */
const MAX_HEAD = 64 * 1024;

/**
 * The server's side of an RTSP over TCP connection, read as it comes: RTSP messages (responses,
 * and requests a server may send) with their bodies, and interleaved binary frames
 * (`$`, channel, 16-bit length), which are skipped. `push` returns the responses completed.
 */
export class RtspServerStream {
  private buf = Buffer.alloc(0);
  /** Bytes of a body or frame still to skip. */
  private skip = 0;
  /** Not RTSP (a head too large): nothing more is read. */
  broken = false;

  /** Bytes received and not yet read as a whole message head or frame header: held back from ffmpeg. */
  get pending(): number {
    return this.buf.length;
  }

  push(chunk: Buffer): RtspStatus[] {
    const out: RtspStatus[] = [];
    this.buf = Buffer.concat([this.buf, chunk]);
    while (!this.broken) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, this.buf.length);
        this.skip -= n;
        this.buf = this.buf.subarray(n);
        if (this.skip > 0) return out;
      }
      if (this.buf.length === 0) return out;
      if (this.buf[0] === 0x24) {
        if (this.buf.length < 4) return out;
        this.skip = 4 + this.buf.readUInt16BE(2);
        continue;
      }
      const end = this.buf.indexOf("\r\n\r\n");
      if (end < 0) {
        if (this.buf.length > MAX_HEAD) this.broken = true;
        return out;
      }
      const head = this.buf.subarray(0, end).toString("latin1");
      this.buf = this.buf.subarray(end + 4);
      const read = readHead(head);
      if (!read) {
        this.broken = true;
        return out;
      }
      this.skip = read.contentLength;
      if (read.status !== undefined) out.push({ status: read.status, location: read.location });
    }
    return out;
  }
}

/**
 * One message head as ffmpeg 5.1 would read it, or undefined when ffmpeg might read it otherwise
 * than the relay (pure). ffmpeg ends a line at a bare LF, reads the status as atoi of the second
 * word whatever the first, stops a line at NUL and takes the last Content-Length by strtol: a
 * head that is not plainly RTSP/1.0 with CRLF lines, a 3-digit status, one all-digit
 * Content-Length and no NUL is refused, so that no reply can mean a redirect to ffmpeg and
 * something else to the relay.
 */
export function readHead(head: string): { status: number | undefined; location: string | undefined; contentLength: number } | undefined {
  if (/[\0]|\r(?!\n)|(?<!\r)\n/.test(head)) return undefined;
  const lines = head.split("\r\n");
  const first = lines[0] ?? "";
  const response = /^RTSP\/1\.0 ([1-9]\d\d)(?: [^\r\n]*)?$/.exec(first);
  // A server may send requests too (ANNOUNCE, GET_PARAMETER…): a method, a url, the version.
  if (!response && !/^[A-Z_]{1,32} \S+ RTSP\/1\.0$/.test(first)) return undefined;
  const values = (name: string) => lines.slice(1).filter((l) => l.toLowerCase().startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).trim());
  const lengths = values("content-length");
  if (lengths.length > 1 || (lengths.length === 1 && !/^\d{1,9}$/.test(lengths[0]!))) return undefined;
  return { status: response ? Number(response[1]) : undefined, location: values("location")[0], contentLength: Number(lengths[0] ?? 0) };
}

/** The host a Location names, for the status (pure). */
export function locationHost(location: string | undefined): string {
  if (!location) return "an unnamed place";
  try {
    return new URL(location).hostname.replace(/^\[(.*)\]$/, "$1") || "an unnamed place";
  } catch {
    return "an unreadable url";
  }
}

export interface RtspRelayOptions {
  /** The source's host name (as written) and port, and the addresses the policy allowed. */
  host: string;
  port: number;
  addresses: ResolvedAddress[];
  /** The server answered a 3xx: both sides are closed. */
  onRedirect(location: string | undefined): void;
}

/** One RTSP pull's relay: listening on 127.0.0.1 until `close()`. */
export class RtspRelay {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly o: RtspRelayOptions) {
    this.server = net.createServer((client) => this.relay(client));
    this.server.maxConnections = 4;
  }

  /** A relay listening; `port` is where ffmpeg connects. */
  static async open(o: RtspRelayOptions): Promise<RtspRelay & { port: number }> {
    const relay = new RtspRelay(o);
    await new Promise<void>((resolve, reject) => {
      relay.server.once("error", reject);
      relay.server.listen(0, "127.0.0.1", resolve);
    });
    return Object.assign(relay, { port: (relay.server.address() as AddressInfo).port });
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
    this.server.close();
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.once("close", () => this.sockets.delete(s));
    s.on("error", () => s.destroy());
  }

  private relay(client: net.Socket): void {
    this.track(client);
    const upstream = net.connect({ host: this.o.host, port: this.o.port, lookup: pinnedLookup(this.o.addresses) });
    this.track(upstream);
    const watch = new RtspServerStream();
    client.pipe(upstream);
    // What ffmpeg may read: up to the last whole message head (a 3xx's Location never reaches it).
    let held = Buffer.alloc(0);
    upstream.on("data", (data: Buffer) => {
      const redirect = watch.push(data).find((r) => r.status >= 300 && r.status < 400);
      if (redirect || watch.broken) {
        // Before ffmpeg reads it: the 3xx never reaches ffmpeg.
        client.destroy();
        upstream.destroy();
        if (redirect) this.o.onRedirect(redirect.location);
        return;
      }
      const all = Buffer.concat([held, data]);
      held = all.subarray(all.length - watch.pending);
      const chunk = all.subarray(0, all.length - watch.pending);
      if (chunk.length > 0 && !client.write(chunk)) {
        upstream.pause();
        client.once("drain", () => upstream.resume());
      }
    });
    upstream.on("end", () => client.end());
    upstream.on("close", () => client.destroy());
    client.on("close", () => upstream.destroy());
  }
}
