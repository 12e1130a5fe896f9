import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BridgeTickets, connectionOfProcess, procAddress, tcpSocketInode, type TicketConnection } from "../../../src/ingest/bridges";

const HEAD = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
const row = (local: string, remote: string, inode: number) => `   0: ${local} ${remote} 01 00000000:00000000 00:00000000 00000000     0        0 ${inode} 1 0000000000000000 20 4 30 10 -1`;
// The bridge's end 127.0.0.1:40000 → the RTMP server's 127.0.0.1:1935 (0x078F), and the server's end of it.
const TCP = [HEAD, row("0100007F:9C40", "0100007F:078F", 111), row("0100007F:078F", "0100007F:9C40", 222), row("0200007F:9C40", "0100007F:078F", 333)].join("\n");
const BRIDGE: TicketConnection = { remoteAddress: "127.0.0.1", remotePort: 40000, localPort: 1935 };

describe("bridge tickets", () => {
  it.each([
    ["0100007F", "127.0.0.1"],
    ["0900007F", "127.0.0.9"],
    ["0000000000000000FFFF00000100007F", "127.0.0.1"],
    ["00000000000000000000000001000000", "::1"],
    ["00000000000000000000000000000000", "00000000000000000000000000000000"],
  ])("reads the /proc address %s as %s", (hex, address) => {
    expect(procAddress(hex)).toBe(address);
  });

  it("finds a connection's inode by its local address and port and its remote port", () => {
    expect(tcpSocketInode(TCP, { address: "127.0.0.1", port: 40000 }, 1935)).toBe("111");
    expect(tcpSocketInode(TCP, { address: "::ffff:127.0.0.2", port: 40000 }, 1935)).toBe("333");
    expect(tcpSocketInode(TCP, { address: "127.0.0.1", port: 40001 }, 1935)).toBeUndefined();
    expect(tcpSocketInode("", { address: "127.0.0.1", port: 40000 }, 1935)).toBeUndefined();
  });

  it("tells a connection of the bridge's process from another's, through /proc", () => {
    const proc = fs.mkdtempSync(path.join(os.tmpdir(), "onair-proc-"));
    try {
      fs.mkdirSync(path.join(proc, "net"));
      fs.writeFileSync(path.join(proc, "net", "tcp"), TCP);
      for (const [pid, inode] of [[10, 111], [20, 333]] as const) {
        fs.mkdirSync(path.join(proc, String(pid), "fd"), { recursive: true });
        fs.symlinkSync("/dev/null", path.join(proc, String(pid), "fd", "0"));
        fs.symlinkSync(`socket:[${inode}]`, path.join(proc, String(pid), "fd", "5"));
      }
      expect(connectionOfProcess(10, BRIDGE, proc)).toBe(true);
      expect(connectionOfProcess(20, BRIDGE, proc)).toBe(false);
      expect(connectionOfProcess(20, { ...BRIDGE, remoteAddress: "127.0.0.2" }, proc)).toBe(true);
      // A process that has exited, a connection not in the table, one the socket cannot describe.
      expect(connectionOfProcess(30, BRIDGE, proc)).toBe(false);
      expect(connectionOfProcess(10, { ...BRIDGE, remotePort: 40001 }, proc)).toBe(false);
      expect(connectionOfProcess(10, { remoteAddress: "127.0.0.1" }, proc)).toBe(false);
      // No /proc to read: it cannot be told.
      expect(connectionOfProcess(10, BRIDGE, path.join(proc, "absent"))).toBeUndefined();
    } finally {
      fs.rmSync(proc, { recursive: true, force: true });
    }
  });

  it("a bound ticket admits its bridge's connection once; another process's is refused and the ticket stays", () => {
    const owners: Array<[number, TicketConnection]> = [];
    const tickets = new BridgeTickets((pid, c) => (owners.push([pid, c]), c.remotePort === 40000));
    const publish = { streamKey: "key", protocol: "srt" as const };
    const t = tickets.issue(publish);
    tickets.bind(t, 42);
    expect(tickets.redeem(t, { ...BRIDGE, remotePort: 40001 })).toBeUndefined();
    expect(tickets.isOpen(t)).toBe(true);
    expect(tickets.redeem(t, BRIDGE)).toEqual(publish);
    expect(owners.map(([pid]) => pid)).toEqual([42, 42]);
    expect(tickets.isOpen(t)).toBe(false);
    expect(tickets.redeem(t, BRIDGE)).toBeUndefined();
    // Unbound (a bridge that has not adopted it), or /proc unreadable: any local connection, once.
    const unbound = tickets.issue(publish);
    expect(tickets.redeem(unbound, { ...BRIDGE, remotePort: 1 })).toEqual(publish);
    const blind = new BridgeTickets(() => undefined);
    const b = blind.issue(publish);
    blind.bind(b, 42);
    expect(blind.redeem(b, BRIDGE)).toEqual(publish);
    expect(blind.size).toBe(0);
  });
});
