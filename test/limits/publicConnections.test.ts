import net from "node:net";
import { waitFor } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// PUBLIC_MAX_CONNECTIONS on a real server: idle keep-alive connections count; one more is closed
// as it arrives, with no answer; once some close, new ones are served again.

const CAP = 20;
const s = useTestServer({ PUBLIC_MAX_CONNECTIONS: String(CAP) });

/** A connection that asked for /healthz and keeps the connection open (keep-alive): what it was answered. */
function connection(): Promise<{ socket: net.Socket; answered: string }> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port: s.t.server.port });
    let data = "";
    socket.setEncoding("latin1");
    socket.on("connect", () => socket.write("GET /healthz HTTP/1.1\r\nHost: onair\r\n\r\n"));
    socket.on("data", (c: string) => {
      data += c;
      if (data.includes('{"status":"ok"}')) resolve({ socket, answered: data });
    });
    socket.on("error", () => undefined);
    socket.on("close", () => resolve({ socket, answered: data }));
  });
}

it("holds at most PUBLIC_MAX_CONNECTIONS sockets, keep-alive ones included, and serves again once some close", async () => {
  const held = await Promise.all(Array.from({ length: CAP }, connection));
  expect(held.every((c) => c.answered.startsWith("HTTP/1.1 200") && !c.socket.destroyed)).toBe(true);
  const refused = await connection();
  expect(refused.answered).toBe("");
  expect(refused.socket.destroyed).toBe(true);
  for (const c of held.slice(0, 5)) c.socket.destroy();
  const again = await waitFor("a connection to be served again", async () => {
    const c = await connection();
    return c.answered.startsWith("HTTP/1.1 200") ? c : undefined;
  }, 5_000, 50);
  again.socket.destroy();
  for (const c of held) c.socket.destroy();
});
