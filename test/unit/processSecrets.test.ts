import { createLogger } from "../../src/log";
import { ProcessRegistry, spawnSupervised } from "../../src/media";

// A process's stderr tail is logged when it fails and read by whoever supervises it: ffmpeg
// repeats its urls there (`rtmp://user:password@host/…: Connection refused`), so the secrets a
// process was given are masked in the tail as in its logged arguments.

describe("supervised process secrets", () => {
  it("masks each secret in the stderr tail, the longer one first", async () => {
    const registry = new ProcessRegistry();
    const p = spawnSupervised(registry, {
      command: "sh",
      args: ["-c", 'echo "rtmp://cam:hunter2-pass@cam.example/live/x?token=t0ken-abc: Connection refused" >&2; echo "plain line" >&2; exit 1'],
      log: createLogger("silent"),
      name: "test",
      secrets: ["hunter2-pass", "token=t0ken-abc", "t0ken-abc"],
    });
    const end = await p.ended;
    expect(end.code).toBe(1);
    expect(end.stderrTail).toEqual(["rtmp://cam:<secret>@cam.example/live/x?<secret>: Connection refused", "plain line"]);
    expect(registry.size).toBe(0);
  });
});
