import { WHIP_REFUSAL_STATUS } from "../../../../src/ingest/webrtc/whipIngest";
import { rtmpRefusalStatus } from "../../../../src/ingest/rtmpIngest";
import { refusePublish, type PublishRefusalKind } from "../../../../src/shapes";

// One admission, two edges: the stream runtime's refusal kinds as a WHIP publisher's HTTP
// status and an RTMP publisher's onStatus code. A wrong key or a suspended stream is the
// encoder's to fix (BadName: OBS stops retrying); the rest is worth trying again.

describe("a publish refusal at each edge", () => {
  it.each([
    ["unknown", 401, "NetStream.Publish.BadName"],
    ["suspended", 403, "NetStream.Publish.BadName"],
    ["elsewhere", 409, "NetStream.Publish.Rejected"],
    ["unavailable", 503, "NetStream.Publish.Rejected"],
  ] as const)("%s: WHIP %i, RTMP %s", (kind: PublishRefusalKind, http, rtmp) => {
    expect(WHIP_REFUSAL_STATUS[kind]).toBe(http);
    expect(rtmpRefusalStatus(refusePublish(kind, "why"))).toBe(rtmp);
  });
});
