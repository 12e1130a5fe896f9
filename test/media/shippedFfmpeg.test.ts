import { ffmpegHasCmaf } from "../../src/media";
import { FFMPEG, probe, pushTestStream, waitFor } from "../helpers/media";
import { apiClient, startTestServer } from "../helpers/server";

// The npm-shipped ffmpeg (@ffmpeg-installer/ffmpeg, a 2018 static build) is the last resort of
// `npm install && npm start` on a machine without one: the pipeline must work with it too.
const shipped = (require("@ffmpeg-installer/ffmpeg") as { path: string }).path;

describe("the npm-shipped ffmpeg", () => {
  it("has no -movflags cmaf (older than 4.3), which Debian's has: the pipeline asks only for what is there", () => {
    expect(ffmpegHasCmaf(shipped)).toBe(false);
    expect(ffmpegHasCmaf(FFMPEG)).toBe(true);
  });

  it("runs a short ladder", async () => {
    const t = await startTestServer({ HLS_SEGMENT_SECONDS: "1", FFMPEG_PATH: shipped });
    try {
      expect(t.server.ffmpeg).toEqual({ path: shipped, source: "FFMPEG_PATH" });
      const api = apiClient(t.apiUrl, t.key);
      const profiles = [
        { name: "180p", bitrate: 300_000, fps: 30, width: 320, height: 180 },
        { name: "90p", bitrate: 100_000, fps: 15, width: 160, height: 90 },
      ];
      const s = (await api("POST", "/stream", { name: "old ffmpeg", profiles })).body;
      const push = pushTestStream(`rtmp://127.0.0.1:${t.server.rtmpPort}/live/${s.streamKey}`, { seconds: 4 });
      await waitFor("isActive", async () => (await api("GET", `/stream/${s.id}`)).body.isActive);
      const master = await (await fetch(`http://127.0.0.1:${t.server.port}/hls/${s.playbackId}/index.m3u8`)).text();
      expect(master.match(/#EXT-X-STREAM-INF/g)).toHaveLength(2);
      for (const [i, p] of profiles.entries()) {
        const probed = await probe(`http://127.0.0.1:${t.server.port}/hls/${s.playbackId}/${i}/index.m3u8`);
        expect(probed.streams.find((x) => x.codec_type === "video")).toMatchObject({ width: p.width, height: p.height });
      }
      expect((await push.exited).code).toBe(0);
      await waitFor("isActive false", async () => !(await api("GET", `/stream/${s.id}`)).body.isActive, 5000);
    } finally {
      await t.stop();
    }
  });
});
