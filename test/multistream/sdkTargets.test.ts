import fs from "node:fs";
import { Livepeer } from "livepeer";
import { probe, pushTestStream, waitFor, type Push } from "../helpers/media";
import { tempDir } from "../helpers/server";
import { startRtmpDestination, type Destination } from "./destinations";
import { pushConnections, startHarness, targetEvents, type Harness } from "./harness";

// The SDK's stream.addMultistreamTarget / removeMultistreamTarget on a live stream: real ffmpeg
// publishes over RTMP, the server pushes with real ffmpeg to a real listening RTMP destination,
// and multistream events reach a real receiver.

let h: Harness;
let sdk: Livepeer;
let dir: string;
let destination: Destination | undefined;
let publisher: Push | undefined;

beforeAll(async () => {
  h = await startHarness();
  sdk = new Livepeer({ apiKey: h.server.firstUser!.apiKey, serverURL: `http://127.0.0.1:${h.server.port}/api` });
  dir = tempDir("onair-ms-sdk-");
});
afterAll(async () => {
  // Only what this file started, by PID.
  if (publisher && publisher.child.exitCode === null && publisher.child.signalCode === null) publisher.child.kill("SIGKILL");
  await destination?.close();
  await h.stop();
  await h.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

const eventNames = (targetId: string) => targetEvents(h.receiver, targetId).map((e) => e.event);

it("a target added through the SDK while live is pushed to at once; removing it stops that push, the stream stays live", async () => {
  const d = (destination = await startRtmpDestination(dir, "sdk-added"));
  const target = (await sdk.multistream.create({ url: d.url, name: "added by sdk" })).multistreamTarget!;
  const s = (await sdk.stream.create({ name: "live, then multistreamed" })).stream!;
  publisher = pushTestStream(`${h.rtmp}/${s.streamKey}`, { seconds: 60 });
  await waitFor("the stream to go live", async () => (await sdk.stream.get(s.id!)).stream!.isActive, 20_000);
  expect(pushConnections(d.port)).toEqual([]);

  const addedAt = Date.now();
  expect((await sdk.stream.addMultistreamTarget({ id: target.id, profile: "source" }, s.id!)).statusCode).toBe(204);
  await h.receiver.waitFor(() => eventNames(target.id!).includes("multistream.connected"), "multistream.connected", 10_000);
  await waitFor("the destination to receive media", () => d.received() > 1000, 10_000);
  expect(Date.now() - addedAt).toBeLessThan(10_000);
  expect(pushConnections(d.port)).toHaveLength(1);

  expect((await sdk.stream.removeMultistreamTarget(s.id!, target.id!)).statusCode).toBe(204);
  await h.receiver.waitFor(() => eventNames(target.id!).includes("multistream.disconnected"), "multistream.disconnected", 10_000);
  // The listener exits once its publisher (our push) has left.
  await d.exited;
  expect(pushConnections(d.port)).toEqual([]);
  expect(eventNames(target.id!)).toEqual(["multistream.connected", "multistream.disconnected"]);
  expect((await sdk.stream.get(s.id!)).stream).toMatchObject({ isActive: true, multistream: { targets: [] } });
  expect(h.server.processes.size).toBe(0); // no push left (the copied source is packaged with no process)
  // What reached the destination is the source, copied.
  expect((await probe(d.file)).streams.find((x) => x.codec_type === "video")).toMatchObject({ codec_name: "h264" });

  publisher.child.kill("SIGKILL");
  await waitFor("every ffmpeg to exit", () => h.server.processes.size === 0, 10_000);
});
