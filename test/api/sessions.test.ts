import { useTestServer } from "../helpers/server";

const fx = useTestServer();
const { api, bob } = fx;

/** Sessions are written by ingest; here the real repository stands in for a publish. */
async function publish(streamId: string) {
  const { store } = fx.t.server;
  const session = await store.sessions.start((await store.streams.get(streamId))!);
  await store.sessions.addProgress(session.id, { sourceSegments: 5, sourceSegmentsDuration: 10.2 });
  return session;
}

describe("sessions", () => {
  it("GET /session/{id}, /session and /stream/{id}/sessions show the caller's sessions", async () => {
    const P = { name: "360p", bitrate: 800000, fps: 30, width: 640, height: 360 };
    const s = (await api("POST", "/stream", { name: "show", profiles: [P], record: true })).body;
    const first = await publish(s.id);
    await fx.t.server.store.sessions.end(first.id);
    await api("PATCH", `/stream/${s.id}/record`, { record: false });
    const second = await publish(s.id);

    const got = await api("GET", `/session/${first.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: first.id, kind: "session", parentId: s.id, name: "show", record: true, profiles: [P], sourceSegmentsDuration: 10.2, sourceSegments: 5, isActive: false });
    expect((await api("GET", `/session/${second.id}`)).body).toMatchObject({ record: false, isActive: true });

    const all = (await api("GET", "/session")).body as { id: string }[];
    expect(all.map((x) => x.id)).toEqual([second.id, first.id]);
    const ofStream = (await api("GET", `/stream/${s.id}/sessions`)).body as { id: string }[];
    expect(ofStream.map((x) => x.id)).toEqual([second.id, first.id]);
    for (const q of ["record=1", "record=true"]) {
      const recorded = (await api("GET", `/stream/${s.id}/sessions?${q}`)).body as { id: string }[];
      expect(recorded.map((x) => x.id)).toEqual([first.id]);
    }
    expect((await api("GET", `/stream/${s.id}/sessions?record=2`)).status).toBe(422);
  });

  it("shows recording fields only on recorded sessions", async () => {
    const s = (await api("POST", "/stream", { name: "rec", record: true })).body;
    const session = await publish(s.id);
    await fx.t.server.store.sessions.end(session.id);
    await fx.t.server.store.sessions.setRecordingStatus(session.id, "ready");
    const body = (await api("GET", `/stream/${s.id}/sessions?record=1`)).body[0];
    expect(body).toMatchObject({ recordingStatus: "ready" });
    // The paths of docs/architecture.md#public-urls, signed: the session id alone opens nothing (test/recordings/signedUrls).
    expect(body.recordingUrl).toMatch(new RegExp(`/recordings/${session.id}/index\\.m3u8\\?sig=[\\w-]{43}$`));
    expect(body.mp4Url).toMatch(new RegExp(`/recordings/${session.id}/output\\.mp4\\?sig=[\\w-]{43}$`));
    expect(body.mp4URL).toBe(body.mp4Url);

    const plain = (await api("POST", "/stream", { name: "plain" })).body;
    const unrecorded = (await api("GET", `/session/${(await publish(plain.id)).id}`)).body;
    expect(unrecorded).not.toHaveProperty("recordingStatus");
    expect(unrecorded).not.toHaveProperty("recordingUrl");
  });

  it("another user sees none of them", async () => {
    const s = (await api("POST", "/stream", { name: "private" })).body;
    const session = await publish(s.id);
    expect((await bob("GET", `/session/${session.id}`)).status).toBe(404);
    expect((await bob("GET", `/stream/${s.id}/sessions`)).status).toBe(404);
    expect((await bob("GET", "/session")).body).toEqual([]);
    expect((await api("GET", "/session/nope")).status).toBe(404);
    // A child stream object is not a parent: it has no sessions of its own.
    expect((await api("GET", `/stream/${session.id}/sessions`)).status).toBe(404);
  });
});

describe("playback", () => {
  it("GET /playback/{playbackId} needs no key and gives the HLS and WebRTC (WHEP) URLs", async () => {
    const s = (await api("POST", "/stream", { name: "watch me" })).body;
    const res = await fetch(`${fx.t.apiUrl}/playback/${s.playbackId}`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toEqual({
      type: "live",
      meta: {
        live: 0,
        playbackPolicy: { type: "public" },
        source: [
          { hrn: "HLS (TS)", type: "html5/application/vnd.apple.mpegurl", url: `${fx.t.server.publicUrl}/hls/${s.playbackId}/index.m3u8` },
          // Livepeer's name and type for a WHEP endpoint, which its player tries first.
          { hrn: "WebRTC (H264)", type: "html5/video/h264", url: `${fx.t.server.publicUrl}/whep/${s.playbackId}` },
          { hrn: "Thumbnail (JPEG)", type: "image/jpeg", url: `${fx.t.server.publicUrl}/hls/${s.playbackId}/thumbnail.jpg` },
        ],
      },
    });
    expect(JSON.stringify(body)).not.toContain(s.streamKey);
    const missing = await fetch(`${fx.t.apiUrl}/playback/unknown`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ errors: ["playback id unknown not found"] });
  });
});
