import fs from "node:fs";
import { callSrt, pushTestStream, waitFor } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// A bridge's ticket is in its argv, which every local user can read.
// An SRT listener's ticket waits for its caller as long as the listener is armed; it is bound to
// the listener's process, so another local process that publishes under it is refused, and the
// ticket still admits the listener's own publish afterwards.

const base = 25000 + 10 * Math.floor(Math.random() * 400);
const fx = useTestServer({ SRT_PORTS: `${base}-${base + 1}`, SRT_PUBLIC_HOST: "127.0.0.1", HLS_SEGMENT_SECONDS: "1" });
const { api } = fx;

/** The ticket in a child ffmpeg's command line, as any local user reads it. */
function ticketInArgv(): string | undefined {
  for (const pid of fx.t.server.processes.pids()) {
    const m = /\/live\/(bridge-[A-Za-z0-9_-]+)/.exec(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "));
    if (m) return m[1];
  }
  return undefined;
}


it("a ticket read from an SRT listener's argv admits no other process; the listener's own publish still goes live", async () => {
  const s = (await api("POST", "/stream", { name: "ticket" })).body;
  const ticket = await waitFor("the listener's ticket", ticketInArgv, 10_000);

  const thief = pushTestStream(`rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${ticket}`, { seconds: 5 });
  const { code, afterMs } = await thief.exited;
  expect(code).not.toBe(0);
  expect(afterMs).toBeLessThan(5000);
  expect((await api("GET", `/stream/${s.id}`)).body.isActive).toBe(false);
  expect((await api("GET", `/stream/${s.id}/sessions`)).body).toEqual([]);

  const call = callSrt(`${s.srtUrl}&pkt_size=1316`, 6);
  await waitFor("live through the listener", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 20_000);
  const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
  expect(session).toMatchObject({ protocol: "srt" });
  expect((await call).code).toBe(0);
});
