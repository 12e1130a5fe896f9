import { Livepeer } from "livepeer";
import { apiClient, startTestServer, type Api, type TestServer } from "../helpers/server";

// stream.addMultistreamTarget / removeMultistreamTarget with the official SDK, unpatched: each
// the same as PATCH /stream/{id} of `multistream.targets` with one reference added or taken out.

let t: TestServer;
let sdk: Livepeer;
let bobSdk: Livepeer;
let api: Api;

beforeAll(async () => {
  // A small per-stream cap, so reaching it takes a few calls.
  t = await startTestServer({ MAX_TARGETS_PER_STREAM: "3" });
  sdk = new Livepeer({ apiKey: t.key, serverURL: t.apiUrl });
  bobSdk = new Livepeer({ apiKey: await t.keyFor("bob"), serverURL: t.apiUrl });
  api = apiClient(t.apiUrl, t.key);
});
afterAll(() => t.stop());

const P360 = { name: "360p", bitrate: 800_000, fps: 30, width: 640, height: 360 };
const targetsOf = async (id: string) => (await sdk.stream.get(id)).stream!.multistream!.targets;
const newTarget = async (client: Livepeer, name: string) =>
  (await client.multistream.create({ url: `rtmp://a.rtmp.youtube.com/live2/${name}`, name })).multistreamTarget!;
/** The `{errors}` of an SDK call the server refused, with its status. */
const refusal = (call: Promise<unknown>) =>
  call.then(
    () => {
      throw new Error("the call succeeded");
    },
    (err: { statusCode: number; body: string }) => ({ status: err.statusCode, errors: JSON.parse(err.body).errors as string[] }),
  );

describe("stream.addMultistreamTarget / removeMultistreamTarget (SDK)", () => {
  it("adds a reference by id and one by spec, then removes them; stream.get shows each step", async () => {
    const s = (await sdk.stream.create({ name: "add remove", profiles: [P360] })).stream!;
    const yt = await newTarget(sdk, "yt");

    const byId = await sdk.stream.addMultistreamTarget({ id: yt.id, profile: "360p", videoOnly: true }, s.id!);
    expect(byId.statusCode).toBe(204);
    expect(await targetsOf(s.id!)).toEqual([{ id: yt.id, profile: "360p", videoOnly: true }]);

    // An inline spec creates the target, named as given, as PATCH's does.
    expect((await sdk.stream.addMultistreamTarget({ profile: "source", spec: { name: "twitch", url: "rtmp://live.twitch.tv/app/k" } }, s.id!)).statusCode).toBe(204);
    const targets = await targetsOf(s.id!);
    expect(targets).toHaveLength(2);
    expect(targets![0]).toEqual({ id: yt.id, profile: "360p", videoOnly: true });
    expect(targets![1]).toMatchObject({ profile: "source", videoOnly: false });
    const twitch = (await sdk.multistream.get(targets![1]!.id!)).multistreamTarget!;
    expect(twitch).toMatchObject({ name: "twitch", disabled: false });

    const removed = await sdk.stream.removeMultistreamTarget(s.id!, yt.id!);
    expect(removed.statusCode).toBe(204);
    expect(await targetsOf(s.id!)).toEqual([{ id: twitch.id, profile: "source", videoOnly: false }]);
    // The target itself stays; unreferenced now, it can be deleted.
    expect((await sdk.multistream.get(yt.id!)).multistreamTarget).toMatchObject({ id: yt.id });
    expect((await sdk.stream.removeMultistreamTarget(s.id!, twitch.id!)).statusCode).toBe(204);
    expect(await targetsOf(s.id!)).toEqual([]);
    expect((await sdk.multistream.delete(twitch.id!)).statusCode).toBe(204);
  });

  it("gives the same result as PATCH of multistream.targets", async () => {
    const yt = await newTarget(sdk, "same");
    const viaCall = (await sdk.stream.create({ name: "via call" })).stream!;
    const viaPatch = (await sdk.stream.create({ name: "via patch" })).stream!;
    await sdk.stream.addMultistreamTarget({ id: yt.id, profile: "source" }, viaCall.id!);
    await sdk.stream.addMultistreamTarget({ id: yt.id, profile: "source", videoOnly: true }, viaCall.id!);
    await sdk.stream.update({ multistream: { targets: [{ id: yt.id, profile: "source" }, { id: yt.id, profile: "source", videoOnly: true }] } }, viaPatch.id!);
    expect(await targetsOf(viaCall.id!)).toEqual(await targetsOf(viaPatch.id!));
    // Removing a target takes out every reference to it, as the call names only the target.
    await sdk.stream.removeMultistreamTarget(viaCall.id!, yt.id!);
    expect(await targetsOf(viaCall.id!)).toEqual([]);
  });

  it("refuses what PATCH refuses: unknown or another user's target or stream 404, bad profile 422, child stream 400", async () => {
    const s = (await sdk.stream.create({ name: "refusals", profiles: [P360] })).stream!;
    const mine = await newTarget(sdk, "mine");
    const bobs = await newTarget(bobSdk, "bobs");
    const bobStream = (await bobSdk.stream.create({ name: "bob's" })).stream!;

    expect(await refusal(sdk.stream.addMultistreamTarget({ id: "nope", profile: "source" }, s.id!))).toEqual({ status: 404, errors: ["id: multistream target nope not found"] });
    expect(await refusal(sdk.stream.addMultistreamTarget({ id: bobs.id, profile: "source" }, s.id!))).toMatchObject({ status: 404 });
    expect(await refusal(sdk.stream.addMultistreamTarget({ id: mine.id, profile: "source" }, bobStream.id!))).toMatchObject({ status: 404 });
    expect(await refusal(bobSdk.stream.addMultistreamTarget({ id: bobs.id, profile: "source" }, s.id!))).toEqual({ status: 404, errors: [`stream ${s.id} not found`] });
    expect(await refusal(sdk.stream.addMultistreamTarget({ id: mine.id, profile: "1080p" }, s.id!))).toEqual({
      status: 422,
      errors: ['profile: "1080p" is not a profile of this stream; use one of "source", "360p"'],
    });
    expect(await refusal(sdk.stream.addMultistreamTarget({ profile: "source" }, s.id!))).toEqual({ status: 422, errors: ["body: each target needs exactly one of id or spec"] });
    // An inline spec's url passes the outbound policy: a private address is refused, and nothing is created.
    const before = (await sdk.multistream.getAll()).data!.length;
    const refused = await refusal(sdk.stream.addMultistreamTarget({ profile: "source", spec: { url: "rtmp://10.1.2.3/live/k" } }, s.id!));
    expect(refused.status).toBe(422);
    expect(refused.errors[0]).toMatch(/^spec\.url: /);
    expect((await sdk.multistream.getAll()).data!.length).toBe(before);

    // Removal: a target the stream does not reference, another user's target or stream.
    expect(await refusal(sdk.stream.removeMultistreamTarget(s.id!, mine.id!))).toMatchObject({ status: 404 });
    await sdk.stream.addMultistreamTarget({ id: mine.id, profile: "source" }, s.id!);
    expect(await refusal(bobSdk.stream.removeMultistreamTarget(s.id!, mine.id!))).toMatchObject({ status: 404 });
    expect(await refusal(sdk.stream.removeMultistreamTarget(s.id!, bobs.id!))).toMatchObject({ status: 404 });
    expect(await targetsOf(s.id!)).toEqual([{ id: mine.id, profile: "source", videoOnly: false }]);

    // A child stream object (a session) is read-only history.
    const session = await t.server.store.sessions.start((await t.server.store.streams.get(s.id!))!);
    expect(await refusal(sdk.stream.addMultistreamTarget({ id: mine.id, profile: "source" }, session.id))).toMatchObject({ status: 400 });
    expect(await refusal(sdk.stream.removeMultistreamTarget(session.id, mine.id!))).toMatchObject({ status: 400 });
    expect(await targetsOf(s.id!)).toHaveLength(1);
  });

  it("keeps MAX_TARGETS_PER_STREAM, counting the references already there", async () => {
    const s = (await sdk.stream.create({ name: "capped" })).stream!;
    const yt = await newTarget(sdk, "capped");
    for (let i = 0; i < 3; i++) await sdk.stream.addMultistreamTarget({ id: yt.id, profile: "source" }, s.id!);
    expect(await refusal(sdk.stream.addMultistreamTarget({ id: yt.id, profile: "source" }, s.id!))).toEqual({
      status: 422,
      errors: ["multistream.targets: at most 3 multistream targets per stream (MAX_TARGETS_PER_STREAM), got 4"],
    });
    expect(await targetsOf(s.id!)).toHaveLength(3);
  });

  it("validates the body and the path like any route", async () => {
    const s = (await sdk.stream.create({ name: "raw" })).stream!;
    expect((await api("POST", `/stream/${s.id}/create-multistream-target`, { id: "x" })).status).toBe(422);
    expect((await api("POST", `/stream/${s.id}/create-multistream-target`, { id: "x", profile: "source", spec: { url: "rtmp://a.b/c" } })).status).toBe(422);
    expect((await api("POST", `/stream/nope/create-multistream-target`, { id: "x", profile: "source" })).status).toBe(404);
    expect((await api("DELETE", `/stream/nope/multistream/x`)).status).toBe(404);
    const doc = (await api("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/stream/{id}/create-multistream-target", "/stream/{id}/multistream/{targetId}"]));
  });
});
