import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Writable } from "node:stream";
import { LivePackager } from "../../../src/hls";
import { createLogger } from "../../../src/log";
import { LivePipeline, ProcessRegistry } from "../../../src/media";
import { trackInputFd } from "../../../src/media/liveArgs";
import type { Rendition } from "../../../src/shapes";

// A run that copies rungs from other tracks of an encoder's ladder reads several input pipes, and
// ffmpeg goes on while any of them does. An input cut off (its reader fell behind) must end the
// run as the end of its one input did, so that the session restarts it, rather than leave the
// rungs of that input frozen under a run that never ends.

const RENDITIONS: Rendition[] = [
  { index: 0, name: "360p", encode: { width: 640, height: 360, fps: 30, bitrate: 900_000, gopFrames: 60 } },
  { index: 1, name: "270p", encode: null, track: 1 },
];

describe("LivePipeline with track inputs", () => {
  it("ends every input when one is cut off, so the run ends", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-pipeline-"));
    const fake = path.join(dir, "ffmpeg");
    // Like ffmpeg: reads stdin and the track's pipe, and exits once both have ended.
    const fd = trackInputFd(0, RENDITIONS.length, false);
    fs.writeFileSync(fake, `#!/bin/sh\ncat <&0 >/dev/null &\ncat <&${fd} >/dev/null\nwait\n`, { mode: 0o755 });
    const inputs: Writable[] = [];
    let ended = false;
    const pipeline = new LivePipeline({
      ffmpegPath: fake,
      input: {
        name: "stream-id",
        format: "flv",
        feed: (into) => (inputs.push(into), () => undefined),
        feedTrack: (_track, into) => (inputs.push(into), () => undefined),
      },
      renditions: RENDITIONS,
      segmentSeconds: 2,
      packager: new LivePackager({ renditions: RENDITIONS, lowLatency: true, segmentTarget: 2, windowSegments: 6, uriPrefix: "abcd1234", audioBitrate: 96_000 }),
      log: createLogger("silent"),
      registry: new ProcessRegistry(),
      onPlayable: () => undefined,
      onFault: () => undefined,
      onEnded: () => void (ended = true),
    });
    pipeline.start();
    expect(inputs).toHaveLength(2);
    // The ingest cuts the default track's reader off: its pipe is destroyed, the track's goes on.
    inputs[0]!.destroy();
    const done = await Promise.race([pipeline.done.then(() => true), new Promise((r) => setTimeout(() => r(false), 3000))]);
    if (!done) await pipeline.stop(100);
    expect(done).toBe(true);
    expect(ended).toBe(true);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
