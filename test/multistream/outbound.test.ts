import dgram from "node:dgram";
import fs from "node:fs";
import net from "node:net";
import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { tempDir } from "../helpers/server";
import { startRtmpsDestination, type Destination } from "./destinations";
import { newestSegment, startHarness, targetEvents, type Harness } from "./harness";

// The outbound policy at push time: checked before every ffmpeg start, whatever the API took
// when the target was written. Only loopback is ever connected to (or not): 127.0.0.1 is
// allowed for the harness's webhook receiver, 127.0.0.2 is not.

let h: Harness;
let dir: string;
const publishers: Push[] = [];
const closers: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  h = await startHarness({ env: { DESTINATION_ALLOW_HOSTS: "127.0.0.1" } });
  dir = tempDir("onair-ms-outbound-");
});
afterEach(async () => {
  for (const p of publishers.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  await h.stop();
  await h.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** TCP and UDP on 127.0.0.2:<port>, counting whatever reaches them. */
async function refusedListener(): Promise<{ port: number; reached: () => number }> {
  let reached = 0;
  const tcp = net.createServer((socket) => {
    reached++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.2", resolve));
  const port = (tcp.address() as net.AddressInfo).port;
  const udp = dgram.createSocket("udp4");
  udp.on("message", () => reached++);
  await new Promise<void>((resolve) => udp.bind(port, "127.0.0.2", resolve));
  closers.push(() => new Promise<void>((resolve) => tcp.close(() => udp.close(() => resolve()))));
  return { port, reached: () => reached };
}

const eventsOf = (targetId: string) => targetEvents(h.receiver, targetId);

it("targets stored before the policy, at refused loopback addresses: multistream.error in the policy's words, nothing connected, HLS plays on", async () => {
  const listener = await refusedListener();
  const urls = [
    `rtmp://127.0.0.2:${listener.port}/app/sk_refused_rtmp`,
    `rtmps://[::ffff:127.0.0.2]:${listener.port}/app/sk_refused_rtmps`,
    `srt://127.0.0.2:${listener.port}?streamid=sk_refused_srt`,
  ];
  // Written straight to the store, as an older onair would have taken them (the API now says 422).
  const admin = await h.server.store.users.getOrCreate("admin");
  const targets = await Promise.all(urls.map((url, i) => h.server.store.targets.create({ userId: admin.id, name: `refused ${i}`, url, disabled: false })));
  const s = (await h.api("POST", "/stream", { name: "refused pushes", multistream: { targets: targets.map((t) => ({ id: t.id, profile: "source" })) } })).body;
  const publisher = pushTestStream(`${h.rtmp}/${s.streamKey}`, { seconds: 60 });
  publishers.push(publisher);

  for (const t of targets) {
    await h.receiver.waitFor(() => eventsOf(t.id).some((e) => e.event === "multistream.error"), `multistream.error for ${t.name}`, 15_000);
  }
  const hosts = ["127.0.0.2", "::ffff:127.0.0.2", "127.0.0.2"];
  targets.forEach((t, i) => {
    expect(eventsOf(t.id).map((e) => e.payload.error)).toEqual([
      `destination refused by the outbound policy: ${hosts[i]} is not a public address (an operator can allow it with ALLOW_PRIVATE_DESTINATIONS=true or by listing the host in DESTINATION_ALLOW_HOSTS)`,
    ]);
  });
  // The operator's log says which range; no push process was ever started for them.
  const logs = h.logs.map((l) => JSON.parse(l));
  expect(logs.filter((l) => l.msg === "multistream push refused by the outbound policy: retrying").map((l) => l.refused)).toContain("127.0.0.2 is a loopback address");
  expect(logs.filter((l) => l.msg === "multistream push starting")).toEqual([]);

  // The stream's own HLS is untouched.
  const playlist = h.hls(s.playbackId, "0/index.m3u8");
  const now = await newestSegment(playlist);
  await waitFor("two more segments", async () => (await newestSegment(playlist)) >= now + 2, 10_000);
  expect(listener.reached()).toBe(0);
  publisher.child.kill("SIGKILL");
  await waitFor("the session to end", async () => !(await h.api("GET", `/stream/${s.id}`)).body.isActive, 10_000);
  expect(listener.reached()).toBe(0);
});

it("rtmps certificates are verified by default: a self-signed destination is refused with the reason, and taken with tlsVerify false", async () => {
  const verified = await startRtmpsDestination(dir, "verified");
  const unverified = await startRtmpsDestination(dir, "unverified");
  closers.push(() => verified.close(), () => unverified.close());
  const create = async (d: Destination, name: string, tlsVerify?: boolean) =>
    (await h.api("POST", "/multistream/target", { url: d.url, name, ...(tlsVerify === undefined ? {} : { tlsVerify }) })).body as { id: string };
  const tVerified = await create(verified, "verified by default");
  const tUnverified = await create(unverified, "not verified", false);
  const s = (
    await h.api("POST", "/stream", { name: "rtmps", multistream: { targets: [{ id: tVerified.id, profile: "source" }, { id: tUnverified.id, profile: "source" }] } })
  ).body;
  publishers.push(pushTestStream(`${h.rtmp}/${s.streamKey}`, { seconds: 60 }));

  await h.receiver.waitFor(() => eventsOf(tUnverified.id).some((e) => e.event === "multistream.connected"), "the unverified push to connect", 20_000);
  await h.receiver.waitFor(() => eventsOf(tVerified.id).some((e) => e.event === "multistream.error"), "the verified push to fail", 20_000);
  expect(eventsOf(tVerified.id).map((e) => e.event)).not.toContain("multistream.connected");
  expect(eventsOf(tVerified.id)[0]!.payload.error).toBe(
    `the TLS certificate of 127.0.0.1:${new URL(verified.url.replace("rtmps:", "http:")).port} failed verification (a target whose destination has no publicly trusted certificate may set "tlsVerify": false)`,
  );
  expect(verified.received()).toBe(0);
});
