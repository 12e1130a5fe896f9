import dgram from "node:dgram";
import type { Logger } from "../log";
import { stunAnswer, type StunSender } from "./stun";

/**
 * A UDP socket answering STUN (see stun.ts) on WEBRTC_STUN_PORT. It is a convenience for players
 * that ask the WHEP URL's host for STUN: a port already taken (another onair, a TURN server on the
 * same machine) is logged and left alone, never an error at start.
 */
export class StunResponder {
  private constructor(
    private readonly socket: dgram.Socket,
    readonly port: number,
  ) {}

  /** Listens on `port` of `address` (every interface when unset); undefined when it cannot. */
  static async listen(port: number, address: string | undefined, log: Logger): Promise<StunResponder | undefined> {
    // Every interface: IPv6 and IPv4 on one socket, or IPv4 alone where IPv6 is off.
    const tries: [dgram.SocketOptions, string][] = address === undefined ? [[{ type: "udp6", ipv6Only: false }, "::"], [{ type: "udp4" }, "0.0.0.0"]] : [[{ type: address.includes(":") ? "udp6" : "udp4" }, address]];
    let lastError: unknown;
    for (const [options, host] of tries) {
      const socket = dgram.createSocket(options);
      try {
        await new Promise<void>((resolve, reject) => {
          socket.once("error", reject);
          socket.bind(port, host, () => resolve());
        });
      } catch (err) {
        socket.close();
        lastError = err;
        continue;
      }
      socket.on("message", (msg, from) => {
        const answer = stunAnswer(msg, from as StunSender);
        if (!answer) return;
        // send() throws for some addresses before it calls back: one datagram must not end the process.
        try {
          socket.send(answer, from.port, from.address, () => undefined);
        } catch (err) {
          log.debug({ err, from: from.address }, "STUN: could not answer");
        }
      });
      // A send that fails (the sender's address unreachable) is that datagram's business only.
      socket.on("error", (err) => log.debug({ err }, "STUN: socket error"));
      log.info({ port: socket.address().port, address: host }, "STUN: answering on UDP");
      return new StunResponder(socket, socket.address().port);
    }
    log.warn({ err: lastError, port }, "STUN: the port is taken or not allowed; players that ask this host for STUN gather without it (slower)");
    return undefined;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}
