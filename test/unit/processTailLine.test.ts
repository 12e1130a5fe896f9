import { createLogger } from "../../src/log";
import { ProcessRegistry, spawnSupervised } from "../../src/media";

// What a supervised process's stderr tail keeps can be chosen line by line (a pull leaves out
// the segment urls an HLS source prints), while onStderrLine still hears every line whole; and
// a process can be given its own environment (a pull's ffmpeg runs without no_proxy).

describe("supervised process tail and environment", () => {
  it("keeps in the tail what tailLine returns, after masking, and passes every line to onStderrLine", async () => {
    const heard: string[] = [];
    const p = spawnSupervised(new ProcessRegistry(), {
      command: "sh",
      args: ["-c", "echo \"Opening 'http://cdn.example/seg.ts?token=abcd' for reading\" >&2; echo \"failed: pw-1234 http://cdn.example/a/b\" >&2; echo \"no_proxy=${no_proxy-unset}\" >&2; exit 1"],
      log: createLogger("silent"),
      name: "test",
      secrets: ["pw-1234"],
      env: { PATH: process.env.PATH },
      tailLine: (line) => (line.startsWith("Opening") ? undefined : line.replace("/a/b", "/…")),
      onStderrLine: (line) => heard.push(line),
    });
    const end = await p.ended;
    expect(end.stderrTail).toEqual(["failed: <secret> http://cdn.example/…", "no_proxy=unset"]);
    expect(heard).toEqual(["Opening 'http://cdn.example/seg.ts?token=abcd' for reading", "failed: pw-1234 http://cdn.example/a/b", "no_proxy=unset"]);
  });
});
