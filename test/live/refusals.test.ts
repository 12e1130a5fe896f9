import { pushTestStream, waitFor, type Push } from "../helpers/media";
import { aacSequenceHeaderTag, avcKeyframeTag, avcSequenceHeaderTag, mp3FrameTag, RtmpPublisher, sorensonH263KeyframeTag, type RtmpClosed, type RtmpStatus } from "../helpers/rtmpClient";
import { apiClient, useTestServer } from "../helpers/server";

// Every refusal reaches the publisher as an RTMP status with the reason, before its connection
// closes (issue 13): BadName for a key that cannot publish, Rejected for everything else. Read
// here with a small RTMP client of our own, as OBS reads them.

// One 240p ladder costs 3.07 Mpx/s: the budget holds one, not two.
const fx = useTestServer({ MAX_LIVE_STREAMS_PER_USER: "1", TRANSCODE_BUDGET: "5" });
const { api } = fx;
const low = [{ name: "240p", width: 426, height: 240, fps: 30, bitrate: 300_000 }];
const url = (key: string) => `rtmp://127.0.0.1:${fx.t.server.rtmpPort}/live/${key}`;
const clients: RtmpPublisher[] = [];
const pushes: Push[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const p of pushes.splice(0)) {
    p.child.kill("SIGKILL");
    await p.exited;
  }
  // The next test starts with no stream live: this one's publishers count against the
  // per-user limit until the server has seen them go.
  await waitFor("no stream live", () => fx.t.server.sessions.runtimes().length === 0, 10_000);
});

async function publishStatus(key: string): Promise<{ client: RtmpPublisher; status: RtmpStatus | RtmpClosed }> {
  const client = await RtmpPublisher.connect(url(key));
  clients.push(client);
  return { client, status: await client.publish() };
}

/** What a refused publish sees: the status, then the end of the connection. */
async function expectRefused(key: string, code: string, description: string | RegExp): Promise<void> {
  const { client, status } = await publishStatus(key);
  expect(status).toMatchObject({ level: "error", code });
  if (typeof description === "string") expect((status as RtmpStatus).description).toBe(description);
  else expect((status as RtmpStatus).description).toMatch(description);
  await client.closed;
}

describe("refusals carry an RTMP status with the reason", () => {
  it("an unknown key: NetStream.Publish.BadName", async () => {
    await expectRefused("nope-nope-nope-nope", "NetStream.Publish.BadName", "unknown stream key");
  });

  it("a suspended stream: NetStream.Publish.BadName", async () => {
    const s = (await api("POST", "/stream", { name: "suspended" })).body;
    await api("PATCH", `/stream/${s.id}`, { suspended: true });
    await expectRefused(s.streamKey, "NetStream.Publish.BadName", `stream ${s.id} is suspended`);
  });

  it("a video codec onair cannot take: accepted, then NetStream.Publish.Rejected on the first video tag", async () => {
    const s = (await api("POST", "/stream", { name: "h263" })).body;
    const { client, status } = await publishStatus(s.streamKey);
    expect(status).toMatchObject({ code: "NetStream.Publish.Start" });
    client.sendVideo(sorensonH263KeyframeTag(), 0);
    expect(await client.nextStatus()).toMatchObject({
      level: "error",
      code: "NetStream.Publish.Rejected",
      description: "video codec Sorenson H.263 is not supported: send H.264, HEVC or AV1 video (with AAC audio)",
    });
    await client.closed;
    expect((await api("GET", `/stream/${s.id}/sessions`)).body).toEqual([]);
  });

  it("MP3 audio: NetStream.Publish.Rejected", async () => {
    const s = (await api("POST", "/stream", { name: "mp3" })).body;
    const { client } = await publishStatus(s.streamKey);
    client.sendVideo(avcSequenceHeaderTag(), 0);
    client.sendAudio(mp3FrameTag(), 0);
    expect(await client.nextStatus()).toMatchObject({ code: "NetStream.Publish.Rejected", description: "audio codec MP3 is not supported: send AAC audio (or no audio)" });
    await client.closed;
  });

  it("the per-user cap and the server's capacity: NetStream.Publish.Rejected naming the limit; a passthrough still fits", async () => {
    const live = (await api("POST", "/stream", { name: "live", profiles: low })).body;
    pushes.push(pushTestStream(url(live.streamKey), { seconds: 60 }));
    await waitFor("live", async () => (await api("GET", `/stream/${live.id}`)).body.isActive);

    const second = (await api("POST", "/stream", { name: "second of the same user" })).body;
    await expectRefused(second.streamKey, "NetStream.Publish.Rejected", /^user .* already has 1 live streams, the limit \(MAX_LIVE_STREAMS_PER_USER=1\)$/);

    const bob = apiClient(fx.t.apiUrl, await fx.t.keyFor("bob"));
    const ladder = (await bob("POST", "/stream", { name: "bob's ladder", profiles: low })).body;
    await expectRefused(ladder.streamKey, "NetStream.Publish.Rejected", /^server at capacity: this stream's ladder needs 3\.1 Mpx\/s of transcoding and 1\.9 of 5 are free \(TRANSCODE_BUDGET\)/);

    // Copying the source costs no transcoding: admitted.
    const passthrough = (await bob("POST", "/stream", { name: "bob's passthrough" })).body;
    const { status } = await publishStatus(passthrough.streamKey);
    expect(status).toMatchObject({ code: "NetStream.Publish.Start" });
  }, 30_000);

  it("a second publisher on a live key takes over; the first is disconnected", async () => {
    const s = (await api("POST", "/stream", { name: "takeover" })).body;
    const first = await publishStatus(s.streamKey);
    expect(first.status).toMatchObject({ code: "NetStream.Publish.Start" });
    first.client.sendVideo(avcSequenceHeaderTag(), 0);
    first.client.sendAudio(aacSequenceHeaderTag(), 0);
    first.client.sendVideo(avcKeyframeTag(), 0);
    const second = await publishStatus(s.streamKey);
    expect(second.status).toMatchObject({ code: "NetStream.Publish.Start" });
    await first.client.closed;
    expect(second.client.isOpen).toBe(true);
  });
});
