import { finished } from "node:stream";
import { createLogger } from "../../../src/log";
import { ProcessRegistry, spawnSupervised } from "../../../src/media";

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

// A live pipeline's ffmpeg reads the publish from its stdin: a process may be given a pipe
// there; without one its stdin is closed, as before.

describe("supervised process input pipe", () => {
  it("hands the process what is written to its stdin, and its end as end of input", async () => {
    const lines: string[] = [];
    const p = spawnSupervised(new ProcessRegistry(), {
      command: "sh",
      args: ["-c", "wc -c"],
      log: createLogger("silent"),
      name: "test",
      inputPipe: true,
      onStdoutLine: (line) => lines.push(line.trim()),
    });
    p.stdin!.write("hello ");
    p.stdin!.end("world");
    expect((await p.ended).code).toBe(0);
    expect(lines).toEqual(["11"]);
  });

  it("has no stdin unless asked, and a write after the process has gone throws nothing", async () => {
    const none = spawnSupervised(new ProcessRegistry(), { command: "sh", args: ["-c", "exit 0"], log: createLogger("silent"), name: "test" });
    expect(none.stdin).toBeUndefined();
    await none.ended;
    const gone = spawnSupervised(new ProcessRegistry(), { command: "sh", args: ["-c", "exit 0"], log: createLogger("silent"), name: "test", inputPipe: true });
    await gone.ended;
    gone.stdin!.write(Buffer.alloc(1 << 20));
    // The write fails (EPIPE), which ends the pipe and reaches no one as an exception.
    await new Promise((resolve) => finished(gone.stdin!, resolve));
    expect(gone.stdin!.destroyed).toBe(true);
  });
});
