import crypto from "node:crypto";
import { pushTestStream, waitFor } from "../helpers/media";
import { startReceiver } from "../helpers/receiver";
import { apiClient, startTestServer } from "../helpers/server";

describe("events from real media", () => {
  it("a push raises stream.started once playable and stream.idle when it ends, signed, in order", async () => {
    const t = await startTestServer({ HLS_SEGMENT_SECONDS: "1" });
    const receiver = await startReceiver(() => 204);
    try {
      const api = apiClient(t.apiUrl, t.key);
      await api("POST", "/webhook", { name: "r", url: receiver.url, events: ["stream.started", "stream.idle"], sharedSecret: "shh" });
      const s = (await api("POST", "/stream", { name: "evented" })).body;
      const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 3 });
      const started = await waitFor("stream.started", () => receiver.received.find((r) => r.body.event === "stream.started"));
      // Raised when the playback URL works, not at RTMP connect.
      expect((await fetch(`http://127.0.0.1:${t.server.port}/hls/${s.playbackId}/index.m3u8`)).status).toBe(200);
      await push.exited;
      await waitFor("stream.idle", () => receiver.received.find((r) => r.body.event === "stream.idle"), 5000);
      await new Promise((r) => setTimeout(r, 300)); // nothing more should follow

      expect(receiver.received.map((r) => r.body.event)).toEqual(["stream.started", "stream.idle"]);
      const [session] = (await api("GET", `/stream/${s.id}/sessions`)).body;
      for (const r of receiver.received) {
        expect(r.body.stream.id).toBe(s.id);
        expect(r.body.payload).toEqual({ sessionId: session.id });
        expect(r.raw).not.toContain(s.streamKey);
        const v1 = /v1=([0-9a-f]{64})/.exec(String(r.headers["livepeer-signature"] ?? ""))![1];
        expect(v1).toBe(crypto.createHmac("sha256", "shh").update(r.raw).digest("hex"));
      }
      expect(started.body.stream.isActive).toBe(true);
    } finally {
      await receiver.close();
      await t.stop();
    }
  });
});
