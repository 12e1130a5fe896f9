import net from "node:net";

// A TCP proxy that holds every byte for a fixed time in each direction: a viewer far away, on a
// machine whose kernel has no netem. Bandwidth is not limited; order is kept (each chunk leaves
// `oneWayMs` after it arrived, and timers of equal delay fire in the order they were set).

export interface DelayProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number;
  /** The round trip it adds (ms): twice the one-way delay. */
  roundTripMs: number;
  /** Connections opened through it so far. */
  connections(): number;
  close(): Promise<void>;
}

/** Forwards `from` to `to`, each chunk `delayMs` late; the end and errors follow the same way. */
function pipeDelayed(from: net.Socket, to: net.Socket, delayMs: number): void {
  const later = (fn: () => void) => (delayMs > 0 ? setTimeout(fn, delayMs) : setImmediate(fn));
  from.on("data", (chunk: Buffer) => later(() => to.destroyed || to.write(chunk)));
  from.on("end", () => later(() => to.destroyed || to.end()));
  from.on("error", () => later(() => to.destroy()));
  from.on("close", () => later(() => to.destroy()));
}

/** Listens on an ephemeral loopback port and forwards to `targetPort` on 127.0.0.1. */
export async function startDelayProxy(targetPort: number, roundTripMs: number): Promise<DelayProxy> {
  const oneWay = roundTripMs / 2;
  const sockets = new Set<net.Socket>();
  let opened = 0;
  const server = net.createServer((client) => {
    opened++;
    client.setNoDelay(true);
    // Connecting takes a round trip too: the handshake's SYN and SYN-ACK cross the same distance.
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    upstream.setNoDelay(true);
    client.pause();
    upstream.once("connect", () => setTimeout(() => client.resume(), roundTripMs));
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    }
    pipeDelayed(client, upstream, oneWay);
    pipeDelayed(upstream, client, oneWay);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    roundTripMs,
    connections: () => opened,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
