import { testDatabaseEnv } from "../helpers/database";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createEventSink } from "../../src/events";
import { createLogger } from "../../src/log";
import { apiClient, LOOPBACK_DESTINATIONS, startTestServer, tempDir, type TestServer } from "../helpers/server";
import { deleteKeys, REDIS_URL, uniquePrefix } from "../queue/redis";
import { startReceiver, type Receiver } from "../helpers/receiver";

// `npm run worker`: delivery workers in a process of their own, against Redis, while the API
// process (WEBHOOK_CONCURRENCY=0) only raises events.

const ROOT = path.resolve(__dirname, "../..");
const prefix = uniquePrefix("worker");

function exited(child: ChildProcess): Promise<number | NodeJS.Signals> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode ?? child.signalCode!);
    else child.once("exit", (code, signal) => resolve(code ?? signal!));
  });
}

function startWorker(env: Record<string, string>): { child: ChildProcess; output: () => string; ready: Promise<void> } {
  // Its own process group, so that the test stops exactly what it started.
  const child = spawn("npm", ["run", "-s", "worker"], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let text = "";
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready after 20 s:\n${text}`)), 20_000);
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes("onair worker is running")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code}:\n${text}`));
    });
  });
  ready.catch(() => {});
  return { child, output: () => text, ready };
}

let worker: ChildProcess | undefined;
let server: TestServer | undefined;
let rx: Receiver | undefined;

afterEach(async () => {
  if (worker && worker.exitCode === null && worker.signalCode === null) {
    process.kill(-worker.pid!, "SIGKILL");
    await exited(worker);
  }
  worker = undefined;
  await server?.stop();
  server = undefined;
  await rx?.close();
  rx = undefined;
});
afterAll(() => deleteKeys(prefix));

it("refuses to start without REDIS_URL, saying why", async () => {
  const dataDir = tempDir();
  const w = startWorker({ DATA_DIR: dataDir, REDIS_URL: "" });
  worker = w.child;
  expect(await exited(w.child)).toBe(2);
  expect(w.output()).toMatch(/REDIS_URL is required/);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

it("delivers the events an API process raises, and stops cleanly on SIGTERM", async () => {
  const env = { REDIS_URL, REDIS_PREFIX: prefix };
  rx = await startReceiver(() => 200);
  server = await startTestServer({ ...env, WEBHOOK_CONCURRENCY: "0" });
  // The worker delivers to this test's loopback receiver, as the server would.
  const w = startWorker({ ...env, ...LOOPBACK_DESTINATIONS, ...(await testDatabaseEnv(server.dataDir)), DATA_DIR: server.dataDir, LOG_LEVEL: "info" });
  worker = w.child;
  await w.ready;

  const api = apiClient(server.apiUrl, server.key);
  const hook = (await api("POST", "/webhook", { url: rx.url, sharedSecret: "k" })).body;
  const stream = (await api("POST", "/stream", { name: "cam" })).body;
  const events = createEventSink(server.server.store, createLogger("silent"));
  for (let i = 1; i <= 20; i++) await events.raise("stream.started", stream.id, { sessionId: `s${i}` });
  await rx.waitFor((r) => r.length === 20, "20 deliveries by the worker process");
  expect(rx.received.map((r) => r.body.payload.sessionId)).toEqual(Array.from({ length: 20 }, (_, i) => `s${i + 1}`));
  expect(rx.received.every((r) => r.body.webhookId === hook.id)).toBe(true);

  process.kill(-w.child.pid!, "SIGTERM");
  expect(await exited(w.child)).toBe(0);
});
