import fs from "node:fs";
import { Writable } from "node:stream";
import { loadConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { startServer } from "../../src/server";
import { pushTestStream, waitFor } from "../helpers/media";
import { apiClient, tempDir } from "../helpers/server";

// Every log line about a live session carries its stream id and session id: an operator can
// follow one session with a single filter.

it("logs each line of a live session with its streamId and sessionId, as JSON", async () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const dataDir = tempDir();
  const config = loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", HLS_SEGMENT_SECONDS: "1", LOG_LEVEL: "debug", RECONNECT_WINDOW_SECONDS: "0", WEBRTC_STUN_PORT: "0" });
  const server = await startServer(config, createLogger(config.logLevel, sink));
  try {
    const api = apiClient(server.apiUrl.replace("localhost", "127.0.0.1"), server.firstUser!.apiKey);
    const s = (await api("POST", "/stream", { name: "logged", record: true })).body;
    const push = pushTestStream(`rtmp://127.0.0.1:${server.rtmpPort}/live/${s.streamKey}`, { seconds: 3 });
    expect((await push.exited).code).toBe(0);
    const [session] = (await waitFor("the session to end", async () => {
      const list = (await api("GET", `/stream/${s.id}/sessions`)).body as { id: string; isActive: boolean }[];
      return list.length === 1 && !list[0]!.isActive ? list : undefined;
    })) as { id: string }[];
    // The recording's finalize job (a queue worker, after the session) logs with the ids too.
    await waitFor("the recording to be finalized", () => lines.some((l) => l.msg === "recording ready"));

    // The lifecycle of the session, each line with both ids.
    const ofSession = lines.filter((l) => l.sessionId === session!.id);
    // A copied source is packaged with no ffmpeg: its run's start and end are logged all the same.
    for (const msg of ["live session started", "packaging the source as sent: no transcode", "stream is live: HLS playable", "packaging the source ended", "live session ended", "recording started", "recording ready"]) {
      expect(ofSession.map((l) => l.msg)).toContain(msg);
    }
    for (const l of ofSession) expect(l).toMatchObject({ service: "onair", streamId: s.id, sessionId: session!.id });
    // No line about the session's ffmpeg or its lifecycle lacks the ids.
    const aboutSession = lines.filter((l) => l.process === "ffmpeg live" || /live session|stream is live|packaging the source/.test(String(l.msg)));
    expect(aboutSession.length).toBeGreaterThanOrEqual(5);
    for (const l of aboutSession) expect(l).toMatchObject({ streamId: s.id, sessionId: session!.id });
    // JSON lines with pino's fields, and never an API key.
    expect(lines.every((l) => typeof l.level === "number" && typeof l.time === "number")).toBe(true);
    expect(JSON.stringify(lines)).not.toContain(server.firstUser!.apiKey);
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
