import { pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer, type TestServer } from "../helpers/server";

// Issue 8, abuse limits: MAX_LIVE_STREAMS_PER_USER caps one user's concurrent publishes at
// admission, with real ffmpeg pushing real RTMP.

let t: TestServer;
let rtmp: string;

beforeAll(async () => {
  t = await startTestServer({ MAX_LIVE_STREAMS_PER_USER: "1", HLS_SEGMENT_SECONDS: "1" });
  rtmp = `rtmp://127.0.0.1:${t.server.rtmpPort}/live`;
});
afterAll(() => t.stop());

it("refuses a user's publish beyond MAX_LIVE_STREAMS_PER_USER at once; other users publish", async () => {
  const alice = apiClient(t.apiUrl, await t.keyFor("alice"));
  const bob = apiClient(t.apiUrl, await t.keyFor("bob"));
  const [a1, a2, b1] = [
    (await alice("POST", "/stream", { name: "alice one" })).body,
    (await alice("POST", "/stream", { name: "alice two" })).body,
    (await bob("POST", "/stream", { name: "bob one" })).body,
  ];
  const isActive = async (api: typeof alice, id: string) => (await api("GET", `/stream/${id}`)).body.isActive as boolean;

  const first = pushTestStream(`${rtmp}/${a1.streamKey}`, { seconds: 30 });
  await waitFor("alice's first stream active", () => isActive(alice, a1.id));

  // Her second stream is over her cap: refused at admission, quickly, and nothing starts.
  const second = pushTestStream(`${rtmp}/${a2.streamKey}`, { seconds: 10 });
  const refused = await second.exited;
  expect(refused.code).not.toBe(0);
  expect(refused.afterMs).toBeLessThan(5000);
  expect(t.server.sessions.liveSession(a2.id)).toBeUndefined();
  expect(await isActive(alice, a2.id)).toBe(false);

  // Bob has his own allowance.
  const bobs = pushTestStream(`${rtmp}/${b1.streamKey}`, { seconds: 30 });
  await waitFor("bob's stream active", () => isActive(bob, b1.id));
  expect(await isActive(alice, a1.id)).toBe(true);

  // Once her first session is over, her second stream may go live.
  expect((await alice("DELETE", `/stream/${a1.id}/terminate`)).status).toBe(204);
  await first.exited;
  await waitFor("alice's first session gone", () => t.server.sessions.liveSession(a1.id) === undefined, 5000);
  const retry = pushTestStream(`${rtmp}/${a2.streamKey}`, { seconds: 30 });
  await waitFor("alice's second stream active", () => isActive(alice, a2.id));

  expect((await alice("DELETE", `/stream/${a2.id}/terminate`)).status).toBe(204);
  expect((await bob("DELETE", `/stream/${b1.id}/terminate`)).status).toBe(204);
  await Promise.all([retry.exited, bobs.exited]);
});
