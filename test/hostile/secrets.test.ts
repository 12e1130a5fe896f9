import fs from "node:fs";
import { Writable } from "node:stream";
import { loadConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { startServer, type RunningServer } from "../../src/server";
import { waitFor } from "../helpers/media";
import { RtmpPublisher } from "../helpers/rtmpClient";
import { apiClient, tempDir, type Api } from "../helpers/server";

// Issue 8: API keys are never logged, at debug level too; stream keys never appear in playback
// info, error messages or logs (webhook bodies: test/media/events.test.ts).

let server: RunningServer;
let dataDir: string;
let key: string;
let api: Api;
const logLines: string[] = [];

beforeAll(async () => {
  dataDir = tempDir();
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  server = await startServer(loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", RTMPS_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "debug", API_RATE_LIMIT: "0", RECONNECT_WINDOW_SECONDS: "0", WEBRTC_STUN_PORT: "0" }), createLogger("debug", sink));
  key = server.firstUser!.apiKey;
  api = apiClient(server.apiUrl, key);
});
afterAll(async () => {
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const logs = () => logLines.join("");
afterAll(() => { if (process.env.DUMP_LOGS) fs.writeFileSync(process.env.DUMP_LOGS, logs()); });

it("the debug log records requests made with an API key, never the key", async () => {
  expect((await api("GET", "/stream")).status).toBe(200);
  expect((await api("POST", "/stream", { name: "x".repeat(600) })).status).toBe(422);
  expect((await api("GET", "/stream/nope")).status).toBe(404);
  // A wrong key (one character changed) is refused and not logged either.
  const wrong = key.slice(0, -1) + (key.endsWith("a") ? "b" : "a");
  expect((await apiClient(server.apiUrl, wrong)("GET", "/stream")).status).toBe(401);
  // The log did capture these requests at debug level: the assertion below is not vacuous.
  expect(logs()).toContain('/stream/nope","status":404');
  expect(logs()).not.toContain(key);
  expect(logs()).not.toContain(wrong);
});

it("a stream key shows only on its own stream object: not in playback info, errors or logs", async () => {
  const created = await api("POST", "/stream", { name: "secret-holder" });
  expect(created.status).toBe(201);
  const streamKey: string = created.body.streamKey;
  const { id, playbackId } = created.body as { id: string; playbackId: string };
  expect(streamKey).toMatch(/^[0-9a-z]{4}(-[0-9a-z]{4}){3}$/);

  // Answers to requests that do not carry the key must not carry it.
  const answers = [
    await api("GET", `/playback/${playbackId}`),
    await fetch(`http://127.0.0.1:${server.port}/api/playback/${playbackId}`).then(async (r) => ({ status: r.status, text: await r.text() })),
    await api("GET", `/stream/${id}/sessions`),
    await api("GET", "/session"),
    await api("PATCH", `/stream/${id}`, { name: "" }),
    await api("PATCH", `/stream/${id}`, { multistream: { targets: [{ id: "nope", profile: "source" }] } }),
    await api("PATCH", `/stream/${id}`, { multistream: { targets: [{ spec: { url: "rtmp://h/x" }, profile: "720p" }] } }),
    await api("POST", "/webhook", { url: "http://h/x", streamId: "nope" }),
    await api("GET", `/stream/${playbackId}`),
    await api("DELETE", `/multistream/target/${id}`),
  ];
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 422, 404, 422, 404, 404, 404]);
  for (const a of answers) expect(a.text).not.toContain(streamKey);

  // The key sent back in bodies and query values: refused without being logged.
  expect((await api("POST", "/webhook", { url: "http://h/x", name: streamKey, events: [streamKey] })).status).toBe(422);
  expect((await api("GET", `/stream?filters=${encodeURIComponent(JSON.stringify([{ id: streamKey, value: 1 }]))}`)).status).toBe(422);
  expect((await api("POST", "/stream", { name: streamKey, record: streamKey })).status).toBe(422);
  // (A key the client puts in a URL path is logged with the path: that is the client's doing.)

  expect(logs()).toContain(id); // "stream created" was logged with the stream's id
  expect(logs()).not.toContain(streamKey);
});

it("a stream key published over RTMP, accepted or refused, is not in the log", async () => {
  const created = await api("POST", "/stream", { name: "rtmp secret" });
  const streamKey: string = created.body.streamKey;
  const unknown = streamKey.slice(0, -1) + (streamKey.endsWith("a") ? "b" : "a");
  for (const [k, code] of [[streamKey, "NetStream.Publish.Start"], [unknown, "NetStream.Publish.BadName"]] as const) {
    const client = await RtmpPublisher.connect(`rtmp://127.0.0.1:${server.rtmpPort}/live/${k}`);
    try {
      expect(await client.publish()).toMatchObject({ code });
    } finally {
      client.close();
    }
  }
  // Both publishes were logged (the RTMP server's own line and the refusal): not vacuous.
  await waitFor("the publishes logged", () => (logs().match(/"msg":"RTMP publish"/g) ?? []).length >= 2 && logs().includes("publish refused"));
  expect(logs()).not.toContain(streamKey);
  expect(logs()).not.toContain(unknown);
});
