import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { startServer, type RunningServer } from "../../src/server";
import { dropTestDatabase, testDatabaseEnv } from "./database";

export interface TestServer {
  server: RunningServer;
  dataDir: string;
  /** http://127.0.0.1:<port>/api */
  apiUrl: string;
  /** The key of the user created on first start. */
  key: string;
  /** A key for another user (created if needed). */
  keyFor(userName: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * The outbound policy refuses loopback destinations by default; the tests' webhook receivers
 * and multistream destinations listen on 127.0.0.1, as a self-hoster's local receiver would, so
 * test servers allow exactly that (a test of the default policy sets it back to "").
 */
export const LOOPBACK_DESTINATIONS = { DESTINATION_ALLOW_HOSTS: "127.0.0.1,localhost" };

export function tempDir(prefix = "onair-test-"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * A real server on an ephemeral port with a fresh data directory, or with `options.dataDir`: a
 * restart on the same data, which the caller owns (stop() then leaves it in place).
 */
export async function startTestServer(env: Record<string, string> = {}, options: { dataDir?: string } = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? tempDir();
  // Sessions end as soon as their publisher leaves unless a test asks for a reconnect window:
  // most tests are about one publish, and would otherwise wait out the default 30 s.
  // On PostgreSQL (TEST_DATABASE_URL), the data directory's own database: a restart finds it again.
  const database = await testDatabaseEnv(dataDir);
  const config = loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", RTMPS_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent", RECONNECT_WINDOW_SECONDS: "0", WEBRTC_STUN_PORT: "0", ...LOOPBACK_DESTINATIONS, ...database, ...env });
  const server = await startServer(config, createLogger(config.logLevel));
  const apiUrl = `http://127.0.0.1:${server.port}/api`;
  const keyFor = async (userName: string) => server.store.apiKeys.create((await server.store.users.getOrCreate(userName)).id);
  return {
    server,
    dataDir,
    apiUrl,
    // A restart creates no first user: give the test a fresh key of the same user.
    key: server.firstUser?.apiKey ?? (await keyFor("admin")),
    keyFor,
    stop: async () => {
      await server.stop();
      if (!options.dataDir) {
        fs.rmSync(dataDir, { recursive: true, force: true });
        await dropTestDatabase(dataDir);
      }
    },
  };
}

/**
 * A real server for the tests of one file: started before them, stopped after. `api` speaks
 * as its first user, `bob` as another user (for isolation checks); `t` is the server itself.
 */
export function useTestServer(env: Record<string, string> = {}): { readonly t: TestServer; api: Api; bob: Api } {
  let t: TestServer | undefined;
  let api: Api | undefined;
  let bob: Api | undefined;
  beforeAll(async () => {
    t = await startTestServer(env);
    api = apiClient(t.apiUrl, t.key);
    bob = apiClient(t.apiUrl, await t.keyFor("bob"));
  });
  afterAll(() => t?.stop());
  return {
    get t() {
      return t!;
    },
    api: (...args) => api!(...args),
    bob: (...args) => bob!(...args),
  };
}

/** fetch against the API with a key; JSON in and out. */
export function apiClient(apiUrl: string, key: string) {
  return async (method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(urlPath.startsWith("http") ? urlPath : apiUrl + urlPath, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, body: json, text, headers: res.headers };
  };
}

export type Api = ReturnType<typeof apiClient>;
