import { spawn } from "node:child_process";
import { FFMPEG, probe, waitFor } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// SRT ingest with ffmpeg as the caller (as OBS's SRT output is): the stream's own listener on
// loopback, the stream's passphrase checked in the handshake.

const base = 21000 + 10 * Math.floor(Math.random() * 400);
const fx = useTestServer({ SRT_PORTS: `${base}-${base + 3}`, SRT_PUBLIC_HOST: "127.0.0.1", HLS_SEGMENT_SECONDS: "1" });
const { api } = fx;

/** An SRT caller sending `seconds` of testsrc2 + sine as MPEG-TS (H.264 + AAC); its exit and stderr. */
function callSrt(url: string, seconds: number): Promise<{ code: number | null; stderr: string; afterMs: number }> {
  const started = Date.now();
  const child = spawn(FFMPEG, [
    "-hide_banner", "-nostdin", "-loglevel", "warning",
    "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-pix_fmt", "yuv420p", "-b:v", "500k",
    "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", url,
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stderr, afterMs: Date.now() - started })));
}

describe("SRT ingest", () => {
  it("gives each stream its own port and passphrase, refuses a wrong passphrase in the handshake, and goes live with the right one", async () => {
    const s = (await api("POST", "/stream", { name: "srt", profiles: [{ name: "180p", width: 320, height: 180, fps: 30, bitrate: 300_000 }] })).body;
    const other = (await api("POST", "/stream", { name: "srt 2" })).body;
    expect(s.srtUrl).toMatch(new RegExp(`^srt://127\\.0\\.0\\.1:${base}\\?passphrase=[0-9a-z]{24}&latency=200000$`));
    expect(other.srtUrl).toMatch(new RegExp(`^srt://127\\.0\\.0\\.1:${base + 1}\\?`));
    expect(s.srtUrl).not.toContain(s.streamKey);
    // One listener per stream.
    await waitFor("both listeners armed", () => fx.t.server.processes.size === 2, 10_000);

    const wrong = s.srtUrl.replace(/passphrase=[0-9a-z]+/, "passphrase=not-the-passphrase-0");
    const refused = await callSrt(wrong, 5);
    expect(refused.code).not.toBe(0);
    expect(refused.afterMs).toBeLessThan(5000);
    expect((await api("GET", `/stream/${s.id}/sessions`)).body).toEqual([]);
    expect((await api("GET", `/stream/${s.id}`)).body.isActive).toBe(false);

    // The right one, with a Livepeer/Mux-style streamid, which is accepted and ignored.
    const call = callSrt(`${s.srtUrl}&streamid=${s.streamKey}&pkt_size=1316`, 8);
    await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive, 20_000);
    const probed = await probe(`http://127.0.0.1:${fx.t.server.port}/hls/${s.playbackId}/0/index.m3u8`);
    expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264", width: 320, height: 180 });
    expect(probed.streams.find((x) => x.codec_type === "audio")).toMatchObject({ codec_name: "aac" });
    const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
    expect(session).toMatchObject({ protocol: "srt", isActive: true });
    expect((await call).code).toBe(0);
    await waitFor("the stream idle", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 10_000);
    // Armed again for the next call.
    await waitFor("the listener re-armed", () => fx.t.server.processes.size === 2, 10_000);

    // A suspended stream has no listener; deleting the other gives its port back.
    await api("PATCH", `/stream/${s.id}`, { suspended: true });
    await waitFor("the suspended stream's listener stopped", () => fx.t.server.processes.size === 1, 10_000);
    expect((await api("DELETE", `/stream/${other.id}`)).status).toBe(204);
    await waitFor("no listener", () => fx.t.server.processes.size === 0, 10_000);
    const next = (await api("POST", "/stream", { name: "srt 3" })).body;
    expect(next.srtUrl).toMatch(new RegExp(`:${base + 1}\\?`));
  });
});
