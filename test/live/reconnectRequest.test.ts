import { enhancedFrames } from "../helpers/enhancedFrames";
import { waitFor } from "../helpers/media";
import { RtmpPublisher } from "../helpers/rtmpClient";
import { apiClient, startTestServer, type TestServer } from "../helpers/server";

// A server that shuts down asks the E-RTMP publishers that said they can (capsEx reconnect in
// their connect) to reconnect at once, with NetConnection.Connect.ReconnectRequest; a legacy
// publisher (ffmpeg, older OBS) is not sent a status it does not know.

const CAPS_RECONNECT = 0x01;

let t: TestServer | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

it("asks an E-RTMP publisher to reconnect as it shuts down, and a legacy one nothing", async () => {
  t = await startTestServer();
  const api = apiClient(t.apiUrl, t.key);
  const stream = (await api("POST", "/stream", { name: "reconnect request", profiles: [] })).body;
  const legacyStream = (await api("POST", "/stream", { name: "legacy", profiles: [] })).body;
  const url = (key: string) => `rtmp://127.0.0.1:${t!.server.rtmpPort}/live/${key}`;
  const enhanced = await RtmpPublisher.connect(url(stream.streamKey), { capsEx: CAPS_RECONNECT });
  const legacy = await RtmpPublisher.connect(url(legacyStream.streamKey));
  try {
    expect(await enhanced.publish()).toMatchObject({ code: "NetStream.Publish.Start" });
    expect(await legacy.publish()).toMatchObject({ code: "NetStream.Publish.Start" });
    // The E-RTMP publisher is live (its session open): the request must come before the
    // session's end disconnects it. The legacy one is only admitted.
    const encoded = await enhancedFrames("avc1", 2);
    enhanced.sendMetadata(encoded.metadata);
    for (const m of encoded.messages) (m.type === 9 ? enhanced.sendVideo : enhanced.sendAudio).call(enhanced, m.body, m.timestamp);
    await waitFor("the session open", async () => (await api("GET", `/stream/${stream.id}/sessions`)).body.length === 1);
    const stopping = t.stop();
    t = undefined;
    expect(await enhanced.nextStatus(10_000)).toMatchObject({ level: "status", code: "NetConnection.Connect.ReconnectRequest", description: expect.stringContaining("shutting down") });
    expect(await legacy.nextStatus(10_000)).toEqual({ closed: true });
    await stopping;
    await waitFor("the enhanced publisher closed", async () => "closed" in (await enhanced.nextStatus(10_000)));
  } finally {
    enhanced.close();
    legacy.close();
  }
}, 60_000);
