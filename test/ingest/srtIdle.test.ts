import fs from "node:fs";
import { callSrt, waitFor } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// SRT listeners are armed lazily (each idle one is an ffmpeg of about
// 47 MB): one that no caller used and no read asked for in SRT_LISTENER_IDLE_SECONDS stops, a
// read of the stream arms it again on the same port, and a caller keeps it armed however long.

const base = 23000 + 10 * Math.floor(Math.random() * 400);
const IDLE_SECONDS = 5;
const fx = useTestServer({ SRT_PORTS: `${base}-${base + 1}`, SRT_PUBLIC_HOST: "127.0.0.1", SRT_LISTENER_IDLE_SECONDS: String(IDLE_SECONDS), HLS_SEGMENT_SECONDS: "1" });
const { api } = fx;

function portBound(port: number): boolean {
  return fs.readFileSync("/proc/net/udp", "utf8").split("\n").slice(1).some((l) => parseInt(l.trim().split(/\s+/)[1]?.split(":")[1] ?? "", 16) === port);
}


describe("SRT listeners armed lazily", () => {
  it("an idle listener stops, a read arms it again on the same port, and a caller outlasting the idle time keeps it", async () => {
    const s = (await api("POST", "/stream", { name: "lazy" })).body;
    const port = Number(/:(\d+)\?/.exec(s.srtUrl)![1]);
    await waitFor("armed on create", () => portBound(port), 10_000);
    const armedAt = Date.now();
    await waitFor("stopped when idle", () => !portBound(port), (IDLE_SECONDS + 10) * 1000);
    expect(Date.now() - armedAt).toBeGreaterThanOrEqual((IDLE_SECONDS - 2) * 1000);
    await waitFor("its ffmpeg gone", () => fx.t.server.processes.size === 0, 5000);

    // The owner reads the stream: the same port and passphrase, armed again.
    const again = (await api("GET", `/stream/${s.id}`)).body;
    expect(again.srtUrl).toBe(s.srtUrl);
    await waitFor("armed again by the read", () => portBound(port), 10_000);

    // A publish longer than the idle time is not cut: live past it, one session, the caller ends
    // well. Watched through the list, which (unlike GET /stream/{id}) does not keep the listener armed.
    const live = async () => ((await api("GET", "/stream?streamsonly=1")).body as { id: string; isActive: boolean }[]).find((x) => x.id === s.id)!.isActive;
    const started = Date.now();
    const call = callSrt(`${s.srtUrl}&pkt_size=1316`, IDLE_SECONDS + 6);
    await waitFor("isActive", live, 20_000);
    await waitFor("still live past the idle time", async () => Date.now() - started > (IDLE_SECONDS + 3) * 1000 && (await live()), 20_000);
    expect((await call).code).toBe(0);
    expect((await api("GET", `/stream/${s.id}/sessions`)).body).toHaveLength(1);
    // Used just now: armed again for the next call.
    await waitFor("re-armed after the call", () => portBound(port), 10_000);
  });
});
