import { randomBytes } from "node:crypto";
import fs from "node:fs";
import type { IngestProtocol } from "../shapes";

/** What a bridge ticket stands for: the stream key it publishes to, and how its publisher came in. */
export interface BridgedPublish {
  streamKey: string;
  protocol: IngestProtocol;
}

/** A publish's TCP connection to the RTMP server, as the server's socket sees it. */
export interface TicketConnection {
  /** The publisher's side (the bridge's socket). */
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  /** The server's side. */
  readonly localPort?: number | undefined;
}

/**
 * Whether the connection is one of process `pid`'s sockets (Linux: the connection's inode in
 * /proc/net/tcp{,6}, then /proc/<pid>/fd); undefined when this cannot be told (no /proc).
 */
export type ConnectionOwnerCheck = (pid: number, connection: TicketConnection) => boolean | undefined;

/**
 * WebRTC and SRT publishers reach the sessions the way RTMP publishers do: a local ffmpeg
 * (their bridge) republishes them to the RTMP server, so admission, sessions, recordings and
 * multistream stay one code path. A bridge publishes under a ticket, a one-use random name
 * standing for the stream key: the key, a secret, appears in no command line (`ps` shows every
 * argv to every local user), and the ingest learns which protocol the publish came by.
 *
 * The ticket itself is in the bridge's argv. A ticket bound to its bridge's process (`bind`)
 * admits only a connection of that process: another local process that read it from
 * /proc/<pid>/cmdline cannot publish under it (an SRT listener's ticket waits for its caller
 * for as long as the listener is armed). Unbound tickets admit any local connection, once.
 */
export class BridgeTickets {
  private readonly open = new Map<string, { publish: BridgedPublish; pid: number | undefined }>();

  constructor(private readonly ownerCheck: ConnectionOwnerCheck = connectionOfProcess) {}

  issue(publish: BridgedPublish): string {
    const ticket = `bridge-${randomBytes(18).toString("base64url")}`;
    this.open.set(ticket, { publish, pid: undefined });
    return ticket;
  }

  /** The bridge the ticket was issued to has started as `pid`: only its connections may redeem it. */
  bind(ticket: string, pid: number | undefined): void {
    const entry = this.open.get(ticket);
    if (entry && pid !== undefined) entry.pid = pid;
  }

  /**
   * The publish a ticket stands for, once: a ticket admits one publish. A bound ticket shown on
   * another process's connection is refused and stays open for its bridge.
   */
  redeem(ticket: string, connection?: TicketConnection): BridgedPublish | undefined {
    const entry = this.open.get(ticket);
    if (!entry) return undefined;
    if (entry.pid !== undefined && connection && this.ownerCheck(entry.pid, connection) === false) return undefined;
    this.open.delete(ticket);
    return entry.publish;
  }

  /** Whether a ticket is still unused: a bridge whose ticket is spent is publishing. */
  isOpen(ticket: string): boolean {
    return this.open.has(ticket);
  }

  /** The bridge ended before it published (or its ticket is no longer wanted). */
  revoke(ticket: string): void {
    this.open.delete(ticket);
  }

  get size(): number {
    return this.open.size;
  }
}

/**
 * An address of /proc/net/tcp{,6} (hex, each 32-bit word in host order: little-endian here) as
 * Node writes it: `127.0.0.1`, an IPv4-mapped one as IPv4, `::1`; other IPv6 as the hex (pure).
 */
export function procAddress(hex: string): string {
  const v4 = (h: string) => [6, 4, 2, 0].map((i) => parseInt(h.slice(i, i + 2), 16)).join(".");
  if (hex.length === 8) return v4(hex);
  if (/^0{16}FFFF0000[0-9A-F]{8}$/i.test(hex)) return v4(hex.slice(24));
  if (/^0{24}01000000$/.test(hex)) return "::1";
  return hex.toUpperCase();
}

/**
 * The socket inode of the TCP connection whose local end is `local` (address, port) and whose
 * remote port is `remotePort`, in a /proc/net/tcp or tcp6 table (pure).
 */
export function tcpSocketInode(table: string, local: { address: string; port: number }, remotePort: number): string | undefined {
  const address = local.address.replace(/^::ffff:/i, "");
  for (const line of table.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    const [lAddr, lPort] = (f[1] ?? "").split(":");
    const rPort = (f[2] ?? "").split(":")[1];
    if (!lAddr || !lPort || !rPort || f[9] === undefined) continue;
    if (parseInt(lPort, 16) === local.port && parseInt(rPort, 16) === remotePort && procAddress(lAddr) === address) return f[9];
  }
  return undefined;
}

/** ConnectionOwnerCheck on Linux: the bridge's end of the connection is an open fd of `pid`. */
export function connectionOfProcess(pid: number, c: TicketConnection, proc = "/proc"): boolean | undefined {
  if (c.remoteAddress === undefined || c.remotePort === undefined || c.localPort === undefined) return false;
  let tables: string;
  try {
    tables = ["tcp", "tcp6"].map((t) => (fs.existsSync(`${proc}/net/${t}`) ? fs.readFileSync(`${proc}/net/${t}`, "utf8") : "")).join("\n");
  } catch {
    return undefined;
  }
  if (tables.trim() === "") return undefined;
  // Each table has its own heading line: searched one by one.
  const inode = tables.split(/\n(?=\s*sl\s)/).map((t) => tcpSocketInode(t, { address: c.remoteAddress!, port: c.remotePort! }, c.localPort!)).find((i) => i !== undefined);
  if (inode === undefined) return false;
  try {
    return fs.readdirSync(`${proc}/${pid}/fd`).some((fd) => {
      try {
        return fs.readlinkSync(`${proc}/${pid}/fd/${fd}`) === `socket:[${inode}]`;
      } catch {
        return false;
      }
    });
  } catch {
    // The bridge has exited: a connection of its cannot be publishing.
    return false;
  }
}
