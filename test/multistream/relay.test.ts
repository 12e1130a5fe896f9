import fs from "node:fs";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { tempDir } from "../helpers/server";
import { startRtmpDestination, startSrtDestination, type Destination } from "./destinations";
import { startHarness, targetEvents, type Harness } from "./harness";
import { startTestRtmpServer, type TestRtmpServer } from "./rtmpServer";

// onair publishes rtmp pushes itself (src/rtmp): the destination's stream key is in no
// process's command line, which every local user can read in /proc/<pid>/cmdline; a refused
// publish is reported in the server's words.

let h: Harness;
let dir: string;
const publishers: Push[] = [];
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  h = await startHarness();
  dir = tempDir("onair-ms-relay-");
});
afterEach(async () => {
  // Only what this file started, by PID.
  for (const p of publishers.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  await h.stop();
  await h.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

function publish(streamKey: string, seconds: number): Push {
  const p = pushTestStream(`${h.rtmp}/${streamKey}`, { seconds });
  publishers.push(p);
  return p;
}
const eventsOf = (targetId: string) => targetEvents(h.receiver, targetId);

/** Every process whose parent chain leads to this one (the server runs in the test's process), with its command line. */
function descendants(): { pid: number; cmdline: string }[] {
  const parents = new Map<number, number>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = fs.readFileSync(`/proc/${entry}/status`, "utf8");
      parents.set(Number(entry), Number(/^PPid:\s+(\d+)/m.exec(status)![1]));
    } catch {
      // exited meanwhile
    }
  }
  const isDescendant = (pid: number): boolean => {
    for (let p = parents.get(pid), hops = 0; p !== undefined && p > 1 && hops < 64; p = parents.get(p), hops++) if (p === process.pid) return true;
    return false;
  };
  return [...parents.keys()].filter(isDescendant).flatMap((pid) => {
    try {
      return [{ pid, cmdline: fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ") }];
    } catch {
      return [];
    }
  });
}

it("while an rtmp push runs, no command line of the service's children holds the destination's key (srt's streamid is the documented exception)", async () => {
  const rtmp: Destination = await startRtmpDestination(dir, "argv");
  const srt: Destination = await startSrtDestination(dir, "argv-srt");
  closers.push(() => rtmp.close(), () => srt.close());
  const target = (await h.api("POST", "/multistream/target", { url: rtmp.url, name: "key kept out of argv" })).body as { id: string };
  const srtTarget = (await h.api("POST", "/multistream/target", { url: srt.url, name: "srt stays on ffmpeg" })).body as { id: string };
  const s = (await h.api("POST", "/stream", { name: "argv", multistream: { targets: [{ id: target.id, profile: "source" }, { id: srtTarget.id, profile: "source" }] } })).body;
  publish(s.streamKey, 60);
  await h.receiver.waitFor(() => eventsOf(target.id).some((e) => e.event === "multistream.connected"), "the rtmp push to connect", 15_000);
  await h.receiver.waitFor(() => eventsOf(srtTarget.id).some((e) => e.event === "multistream.connected"), "the srt push to connect", 15_000);
  await waitFor("media at the destination", () => rtmp.received() > 10_000, 10_000);

  // The service's children: the test's own processes (the destinations, the publisher) left out.
  const ours = new Set([rtmp.pid, srt.pid, ...publishers.map((p) => p.child.pid)]);
  const children = descendants().filter((c) => !ours.has(c.pid));
  const registered = h.server.processes.pids();
  // The two pushes (the copied source's live run is no process), children of the server: the walk sees them, and nothing else.
  expect(registered).toHaveLength(2);
  expect(children.map((c) => c.pid).sort()).toEqual([...registered].sort());
  // The rtmp push's ffmpeg writes FLV to onair; the destination is named nowhere.
  const relayed = children.filter((c) => c.cmdline.includes("unix:"));
  expect(relayed).toHaveLength(1);
  for (const c of children) expect(c.cmdline).not.toContain(rtmp.key);
  expect(children.filter((c) => c.cmdline.includes(`127.0.0.1:${rtmp.port}`))).toEqual([]);
  // The source pushes read the publish on their stdin: no url of the stream at all.
  expect(children.filter((c) => c.cmdline.includes("-f flv -i pipe:0"))).toHaveLength(2);
  for (const c of children) expect(c.cmdline).not.toContain(`/live/${s.id}`);
  // ffmpeg still pushes srt itself (Node has no SRT): its streamid is in argv, as documented.
  expect(children.filter((c) => c.cmdline.includes(srt.key))).toHaveLength(1);
  expect(h.logs.join("")).not.toContain(rtmp.key);

  await waitFor("more media", () => rtmp.received() > 50_000, 15_000);
  await h.api("DELETE", `/stream/${s.id}/terminate`);
  await rtmp.exited;
  expect((await probe(rtmp.file)).streams.map((x) => x.codec_type).sort()).toEqual(["audio", "video"]);
  await waitFor("every ffmpeg to exit", () => h.server.processes.size === 0, 10_000);
});

it("a destination that refuses the publish (NetStream.Publish.BadName): multistream.error in the server's words, retried, never connected", async () => {
  const server: TestRtmpServer = await startTestRtmpServer({ refuse: { code: "NetStream.Publish.BadName", description: "Stream key sk_live_refused_987654 is not valid" } });
  closers.push(() => server.close());
  const key = "sk_live_refused_987654";
  const target = (await h.api("POST", "/multistream/target", { url: server.url("live2", key), name: "refuses" })).body as { id: string };
  const s = (await h.api("POST", "/stream", { name: "refused", multistream: { targets: [{ id: target.id, profile: "source" }] } })).body;
  publish(s.streamKey, 60);

  await h.receiver.waitFor(() => eventsOf(target.id).some((e) => e.event === "multistream.error"), "multistream.error", 15_000);
  expect(eventsOf(target.id).map((e) => e.payload.error)).toEqual([`127.0.0.1:${server.port} refused the stream: NetStream.Publish.BadName: Stream key … is not valid`]);
  // What our client sent, as an encoder would; then a retry after 1 s.
  const [first] = server.sessions;
  expect(first!.commands.map((c) => c[0])).toEqual(["connect", "releaseStream", "FCPublish", "createStream", "publish"]);
  expect(first!.commands[0]![2]).toMatchObject({ app: "live2", type: "nonprivate", flashVer: "FMLE/3.0 (compatible; onair)", tcUrl: `rtmp://127.0.0.1:${server.port}/live2` });
  expect(first!.commands[4]!.slice(3)).toEqual([key, "live"]);
  await waitFor("a second attempt", () => server.sessions.length >= 2, 5000);
  // Refused before media: no ffmpeg was started for it (nor for the copied source's live run), and no push connected.
  expect(h.server.processes.size).toBe(0);
  expect(eventsOf(target.id).map((e) => e.event)).toEqual(["multistream.error"]);
  const logs = h.logs.map((l) => JSON.parse(l));
  expect(logs.filter((l) => l.targetId === target.id && l.msg === "multistream push failed: retrying").length).toBeGreaterThanOrEqual(1);
  // Counted with every other restart loop's retries.
  const metrics = await (await fetch(`${h.server.adminUrl}/metrics`)).text();
  expect(Number(/^onair_restarts_total\{kind="multistream_push",outcome="retry"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
  expect(h.logs.join("")).not.toContain(key);
  await h.api("DELETE", `/stream/${s.id}/terminate`);
  await waitFor("every ffmpeg to exit", () => h.server.processes.size === 0, 10_000);
});
