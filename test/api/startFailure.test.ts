import fs from "node:fs";
import net from "node:net";
import { startTestServer, tempDir } from "../helpers/server";

// A start that fails half-way stops what it had started (src/shutdown.ts, run as the undo list):
// the database is closed and the data directory's lock released, so the next start on the same
// data directory goes ahead.

async function occupiedPort(): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as net.AddressInfo).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("a start that fails half-way", () => {
  const dataDir = tempDir();
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it.each([
    ["the RTMP port", "RTMP_PORT", /cannot listen for RTMP on 127\.0\.0\.1:\d+/],
    ["the operator's port", "ADMIN_PORT", /cannot listen for the operator \(ADMIN_PORT\) on 127\.0\.0\.1:\d+/],
  ])("%s taken: the start fails saying so, and what it started is stopped (a restart on the same data goes ahead)", async (_what, setting, message) => {
    const busy = await occupiedPort();
    try {
      await expect(startTestServer({ [setting]: String(busy.port) }, { dataDir })).rejects.toThrow(message);
    } finally {
      await busy.close();
    }
    const again = await startTestServer({}, { dataDir });
    try {
      const res = await fetch(`${again.apiUrl}/stream`, { headers: { authorization: `Bearer ${again.key}` } });
      expect(res.status).toBe(200);
    } finally {
      await again.stop();
    }
  });
});
