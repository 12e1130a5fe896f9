import fs from "node:fs";
import { callSrt, probe, waitFor } from "../helpers/media";
import { useTestServer } from "../helpers/server";

// SRT ingest with ffmpeg as the caller (as OBS's SRT output is): the stream's own listener on
// loopback, the stream's passphrase checked in the handshake and never in any argv.

const base = 21000 + 10 * Math.floor(Math.random() * 400);
const fx = useTestServer({ SRT_PORTS: `${base}-${base + 5}`, SRT_PORTS_PER_USER: "2", SRT_PUBLIC_HOST: "127.0.0.1", HLS_SEGMENT_SECONDS: "1" });
const { api, bob } = fx;

/** The ports of SRT_PORTS with a socket bound (armed listeners), from Linux's /proc/net/udp. */
function armedPorts(): number[] {
  const bound = new Set(
    fs.readFileSync("/proc/net/udp", "utf8").split("\n").slice(1).map((l) => parseInt(l.trim().split(/\s+/)[1]?.split(":")[1] ?? "", 16)),
  );
  return [0, 1, 2, 3, 4, 5].map((i) => base + i).filter((p) => bound.has(p));
}

/** The command lines of this process's children (the server under test runs in it). */
function childCommandLines(): string[] {
  const lines: string[] = [];
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== process.pid) continue;
      lines.push(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "));
    } catch {
      // ended meanwhile
    }
  }
  return lines;
}

const portOf = (srtUrl: string) => Number(/:(\d+)\?/.exec(srtUrl)![1]);

/** An SRT caller sending `seconds` of testsrc2 + sine as MPEG-TS (H.264 + AAC); its exit and stderr. */

describe("SRT ingest", () => {
  it("gives each stream its own port and passphrase, refuses a wrong passphrase in the handshake, and goes live with the right one", async () => {
    const s = (await api("POST", "/stream", { name: "srt", profiles: [{ name: "180p", width: 320, height: 180, fps: 30, bitrate: 300_000 }] })).body;
    const other = (await api("POST", "/stream", { name: "srt 2" })).body;
    expect(s.srtUrl).toMatch(new RegExp(`^srt://127\\.0\\.0\\.1:${base}\\?passphrase=[0-9a-z]{24}&latency=200000$`));
    expect(other.srtUrl).toMatch(new RegExp(`^srt://127\\.0\\.0\\.1:${base + 1}\\?`));
    expect(s.srtUrl).not.toContain(s.streamKey);
    // One listener per stream, armed once its owner has the srtUrl.
    await waitFor("both listeners armed", () => armedPorts().join() === `${base},${base + 1}`, 10_000);
    // Neither passphrase is in any command line of the server's children.
    const children = childCommandLines();
    expect(children.filter((c) => c.includes("ffmpeg"))).toHaveLength(2);
    for (const url of [s.srtUrl, other.srtUrl]) {
      const passphrase = new URL(url).searchParams.get("passphrase")!;
      for (const line of children) expect(line).not.toContain(passphrase);
    }

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
    await waitFor("the listener re-armed", () => armedPorts().join() === `${base},${base + 1}`, 10_000);

    // A suspended stream has no listener; deleting the other gives its port back.
    await api("PATCH", `/stream/${s.id}`, { suspended: true });
    await waitFor("the suspended stream's listener stopped", () => armedPorts().join() === `${base + 1}`, 10_000);
    expect((await api("DELETE", `/stream/${other.id}`)).status).toBe(204);
    await waitFor("no listener", () => armedPorts().length === 0, 10_000);
    const next = (await api("POST", "/stream", { name: "srt 3" })).body;
    expect(next.srtUrl).toMatch(new RegExp(`:${base + 1}\\?`));
    expect((await api("DELETE", `/stream/${s.id}`)).status).toBe(204);
    expect((await api("DELETE", `/stream/${next.id}`)).status).toBe(204);
  });

  it("gives ports on first use, never to pulled streams, at most SRT_PORTS_PER_USER to one user", async () => {
    // A pulled stream takes no port, and no listener.
    const pulled = (await api("POST", "/stream", { name: "pulled", pull: { source: "rtmp://127.0.0.1:9/live/none" } })).body;
    expect(pulled.srtUrl).toBeUndefined();
    expect((await api("GET", `/stream/${pulled.id}`)).body.srtUrl).toBeUndefined();

    const [a, b, c] = [(await api("POST", "/stream", { name: "a" })).body, (await api("POST", "/stream", { name: "b" })).body, (await api("POST", "/stream", { name: "c" })).body];
    expect([a.srtUrl, b.srtUrl].every((u: string) => u.startsWith("srt://"))).toBe(true);
    // Past the user's share: no srtUrl, on reads too; another user still gets one.
    expect(c.srtUrl).toBeUndefined();
    expect((await api("GET", `/stream/${c.id}`)).body.srtUrl).toBeUndefined();
    const bobs = (await bob("POST", "/stream", { name: "bob's" })).body;
    expect(bobs.srtUrl).toMatch(/^srt:\/\//);
    await waitFor("three listeners armed", () => armedPorts().length === 3, 10_000);

    // Setting a pull gives the port back: its listener stops, and the user's share has room again.
    expect((await api("PATCH", `/stream/${b.id}`, { pull: { source: "rtmp://127.0.0.1:9/live/none" } })).status).toBe(204);
    expect((await api("GET", `/stream/${b.id}`)).body.srtUrl).toBeUndefined();
    await waitFor("b's listener stopped", () => !armedPorts().includes(portOf(b.srtUrl)), 10_000);
    expect((await api("GET", `/stream/${c.id}`)).body.srtUrl).toMatch(/^srt:\/\//);
    // Listing shows the ports streams have and gives none.
    const listed = (await api("GET", "/stream?streamsonly=1")).body as { id: string; srtUrl?: string }[];
    expect(listed.filter((x) => x.srtUrl).map((x) => x.id).sort()).toEqual([a.id, c.id].sort());
    for (const x of [pulled, a, b, c]) await api("DELETE", `/stream/${x.id}`);
    await bob("DELETE", `/stream/${bobs.id}`);
    await waitFor("no listener", () => armedPorts().length === 0, 10_000);
  });
});
