import type { StreamRecord } from "../../../src/db";
import { snapshotStream } from "../../../src/events";
import { buildDeliveryBody, EVENT_NAMES, type RaisedEvent } from "../../../src/shapes";

const stream: StreamRecord = {
  seq: 1,
  id: "s-1",
  userId: "u-1",
  parentId: null,
  name: "studio",
  streamKey: "abcd-efgh-ijkl-mnop",
  playbackId: "0123456789abcdef",
  createdAt: 1_000,
  isActive: true,
  lastSeen: 2_000,
  record: true,
  suspended: false,
  profiles: [{ name: "720p", bitrate: 3_000_000, fps: 30, width: 1280, height: 720 }],
  playbackPolicy: null,
  lastTerminatedAt: null,
  reconnectWindow: null,
  dvrWindow: null,
  srtPort: null,
  srtPassphrase: null,
  // A pull source's url and headers may hold credentials: no delivery carries them.
  pull: { source: "https://cam.example/live.m3u8", headers: { authorization: "Bearer pull-secret" } },
  pullRequestedAt: null,
  deletedAt: null,
  sourceSegments: 3,
  transcodedSegments: 6,
  sourceSegmentsDuration: 6,
  transcodedSegmentsDuration: 12,
  sourceBytes: 100,
  transcodedBytes: 200,
};

describe("delivery body", () => {
  it("snapshots the stream as the API shows it, without its key", () => {
    const snap = snapshotStream(stream, [{ id: "t-1", profile: "720p", videoOnly: false }]);
    expect(snap).not.toHaveProperty("streamKey");
    expect(JSON.stringify(snap)).not.toContain(stream.streamKey);
    expect(snap).not.toHaveProperty("pull");
    expect(JSON.stringify(snap)).not.toContain("pull-secret");
    expect(snap).toMatchObject({ id: "s-1", kind: "stream", name: "studio", playbackId: "0123456789abcdef", isActive: true, record: true, multistream: { targets: [{ id: "t-1", profile: "720p", videoOnly: false }] } });
  });

  it.each(EVENT_NAMES.map((n) => [n]))("%s: {id, webhookId, createdAt, timestamp, event, stream, payload}", (name) => {
    const event: RaisedEvent = { id: "e-1", name, createdAt: 5_000, stream: snapshotStream(stream, []), payload: { sessionId: "sess-1" } as never };
    const body = buildDeliveryBody(event, "w-1", 6_000);
    expect(Object.keys(body)).toEqual(["id", "webhookId", "createdAt", "timestamp", "event", "stream", "payload"]);
    expect(body).toMatchObject({ id: "e-1", webhookId: "w-1", createdAt: 5_000, timestamp: 6_000, event: name, payload: { sessionId: "sess-1" } });
    expect(body.stream.id).toBe("s-1");
  });
});
