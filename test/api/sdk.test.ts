import { Livepeer } from "livepeer";
import { Events } from "livepeer/models/components";
import { startTestServer, type TestServer } from "../helpers/server";

// The official SDK, unpatched, against a started server: only its serverURL changes.

let t: TestServer;
let sdk: Livepeer;

beforeAll(async () => {
  t = await startTestServer();
  sdk = new Livepeer({ apiKey: t.key, serverURL: t.apiUrl });
});
afterAll(() => t.stop());

const P720 = { name: "720p", bitrate: 3_000_000, fps: 30, width: 1280, height: 720 };

describe("livepeer SDK", () => {
  it("stream create / get / getAll / update / delete", async () => {
    const created = await sdk.stream.create({ name: "sdk stream", profiles: [P720], record: true });
    expect(created.statusCode).toBe(201);
    const s = created.stream!;
    expect(s).toMatchObject({ name: "sdk stream", record: true, isActive: false, profiles: [P720] });
    expect(s.streamKey).toMatch(/^[0-9a-z]{4}(-[0-9a-z]{4}){3}$/);
    expect(s.playbackId).toBeTruthy();

    const got = await sdk.stream.get(s.id!);
    expect(got.stream).toMatchObject({ id: s.id, name: "sdk stream", streamKey: s.streamKey });

    const updated = await sdk.stream.update({ name: "renamed", record: false, suspended: true }, s.id!);
    expect(updated.statusCode).toBe(204);
    expect((await sdk.stream.get(s.id!)).stream).toMatchObject({ name: "renamed", record: false, suspended: true });

    const all = await sdk.stream.getAll("1");
    expect(all.data!.map((x) => x.id)).toContain(s.id);

    const deleted = await sdk.stream.delete(s.id!);
    expect(deleted.statusCode).toBe(204);
    await expect(sdk.stream.get(s.id!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it("multistream create / getAll / get / update / delete", async () => {
    const created = await sdk.multistream.create({ url: "rtmp://a.rtmp.youtube.com/live2/key", name: "YouTube" });
    expect(created.statusCode).toBe(201);
    const target = created.multistreamTarget!;
    expect(target).toMatchObject({ name: "YouTube", disabled: false });

    const all = await sdk.multistream.getAll();
    expect(all.data!.map((x) => x.id)).toContain(target.id);
    expect((await sdk.multistream.get(target.id!)).multistreamTarget).toMatchObject({ id: target.id, name: "YouTube" });

    const updated = await sdk.multistream.update({ url: "rtmp://b.rtmp.youtube.com/live2/key2", disabled: true }, target.id!);
    expect(updated.statusCode).toBe(204);
    expect((await sdk.multistream.get(target.id!)).multistreamTarget).toMatchObject({ name: "YouTube", disabled: true });

    // A stream can reference the target through the SDK's own types.
    const s = (await sdk.stream.create({ name: "with target", multistream: { targets: [{ id: target.id, profile: "source", videoOnly: false }] } })).stream!;
    expect(s.multistream!.targets).toEqual([{ id: target.id, profile: "source", videoOnly: false }]);
    await sdk.stream.update({ multistream: { targets: [] } }, s.id!);

    expect((await sdk.multistream.delete(target.id!)).statusCode).toBe(204);
    await expect(sdk.multistream.get(target.id!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it("webhook create / getAll / get / update / delete", async () => {
    const created = await sdk.webhook.create({ name: "hook", url: "http://127.0.0.1:9/hook", events: [Events.StreamStarted, Events.StreamIdle], sharedSecret: "s" });
    expect(created.statusCode).toBe(200);
    const w = created.webhook!;
    expect(w).toMatchObject({ name: "hook", url: "http://127.0.0.1:9/hook", events: ["stream.started", "stream.idle"] });

    expect((await sdk.webhook.getAll()).data!.map((x) => x.id)).toContain(w.id);
    expect((await sdk.webhook.get(w.id!)).webhook).toMatchObject({ id: w.id, name: "hook" });

    const updated = await sdk.webhook.update({ name: "hook2", url: "http://127.0.0.1:9/other", events: [Events.RecordingReady] }, w.id!);
    expect(updated.statusCode).toBe(200);
    expect(updated.webhook).toMatchObject({ id: w.id, name: "hook2", events: ["recording.ready"] });

    const deleted = await sdk.webhook.delete(w.id!);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.webhook).toMatchObject({ id: w.id });
    await expect(sdk.webhook.get(w.id!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it("session getAll / get / getRecorded", async () => {
    const s = (await sdk.stream.create({ name: "sessions", record: true })).stream!;
    const { store } = t.server;
    const session = await store.sessions.start((await store.streams.get(s.id!))!);
    await store.sessions.end(session.id);
    await store.sessions.setRecordingStatus(session.id, "ready");

    const all = await sdk.session.getAll();
    expect(all.data!.map((x) => x.id)).toContain(session.id);
    expect((await sdk.session.get(session.id)).session).toMatchObject({ id: session.id, parentId: s.id, record: true });
    const recorded = await sdk.session.getRecorded(s.id!, true);
    expect(recorded.data).toHaveLength(1);
    expect(recorded.data![0]).toMatchObject({ id: session.id, recordingStatus: "ready" });
    expect(recorded.data![0]!.recordingUrl).toMatch(/\/recordings\/.+\/index\.m3u8\?sig=[\w-]{43}$/);
    expect(recorded.data![0]!.mp4Url).toMatch(/\/recordings\/.+\/output\.mp4\?sig=[\w-]{43}$/);
  });

  it("playback get", async () => {
    const s = (await sdk.stream.create({ name: "playback" })).stream!;
    const info = await sdk.playback.get(s.playbackId!);
    expect(info.playbackInfo).toMatchObject({ type: "live", meta: { live: 0 } });
    expect(info.playbackInfo!.meta.source[0]).toMatchObject({ hrn: "HLS (TS)", url: `${t.server.publicUrl}/hls/${s.playbackId}/index.m3u8` });
    await expect(sdk.playback.get("unknown")).rejects.toBeTruthy();
  });
});
