import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { tempDir } from "../helpers/server";

const ROOT = path.resolve(__dirname, "../..");

/** Resolves with the text printed so far once `pattern` appears on the stream. */
function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; output so far:\n${text}`)), timeoutMs);
    child.stdout!.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      if (pattern.test(text)) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${pattern}; output:\n${text}`));
    });
  });
}

/** How the process ended: its exit code, or the signal that killed it. */
function exited(child: ChildProcess): Promise<number | NodeJS.Signals> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode ?? child.signalCode!);
    else child.once("exit", (code, signal) => resolve(code ?? signal!));
  });
}

const cli = (dataDir: string, ...args: string[]) =>
  spawnSync("npm", ["run", "-s", "cli", "--", ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir }, encoding: "utf8" });

describe("npm start and the cli", () => {
  let dataDir: string;
  let server: ChildProcess | undefined;

  beforeEach(() => {
    dataDir = tempDir();
  });
  afterEach(async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      process.kill(-server.pid!, "SIGKILL");
      await exited(server);
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("prints the banner with a new key on an empty data dir; cli keys work while it runs; SIGTERM stops it", async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const rtmpPort = port + 1;
    // Its own process group, so that the test stops exactly what it started.
    server = spawn("npm", ["start"], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", RTMP_PORT: String(rtmpPort), LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const out = await waitForOutput(server, /API key:\s+\S+/);
    expect(out).toContain(`API:          http://localhost:${port}/api`);
    expect(out).toContain(`RTMP ingest:  rtmp://localhost:${rtmpPort}/live/<streamKey>`);
    expect(out).toMatch(/ffmpeg: +(\/\S+ \(from (FFMPEG_PATH|PATH|@ffmpeg-installer\/ffmpeg)\)|not found)/);
    const firstKey = /API key:\s+(\S+)/.exec(out)![1]!;

    const api = (key: string) => fetch(`http://127.0.0.1:${port}/api/stream`, { headers: { authorization: `Bearer ${key}` } });
    expect((await api(firstKey)).status).toBe(200);

    const created = cli(dataDir, "keys", "create", "carol");
    expect(created.status).toBe(0);
    const lines = created.stdout.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^[0-9A-Za-z]{32}$/);
    expect((await api(lines[0]!)).status).toBe(200);
    expect((await api(lines[0]!.slice(1))).status).toBe(401);
    // The first key is also in a file only the operator can read.
    const keyFile = path.join(dataDir, "first-api-key");
    expect(fs.readFileSync(keyFile, "utf8").trim()).toBe(firstKey);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);

    // Keys are listed by id (never shown again) and revoked by id: 401 at once.
    const id = /key (\S+) created for carol/.exec(created.stderr)![1]!;
    const listed = cli(dataDir, "keys", "list", "carol");
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${id}  carol  \\d{4}-\\d\\d-\\d\\dT`));
    expect(listed.stdout).not.toContain(lines[0]!);
    expect(cli(dataDir, "keys", "list").stdout.split("\n").filter(Boolean)).toHaveLength(2);
    expect(cli(dataDir, "keys", "revoke", id).status).toBe(0);
    expect((await api(lines[0]!)).status).toBe(401);
    expect((await api(firstKey)).status).toBe(200);
    expect(cli(dataDir, "keys", "revoke", id).status).toBe(1);

    // As a supervisor would: SIGTERM to npm reaches the server, which stops cleanly.
    process.kill(server.pid!, "SIGTERM");
    expect(await exited(server)).toBe(0);
  });

  it("a second start on the same data dir prints no new key", async () => {
    expect(cli(dataDir, "keys", "create", "admin").status).toBe(0);
    // The server itself, without npm in between: SIGTERM goes straight to the PID we started.
    server = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const out = await waitForOutput(server, /ffmpeg:.*\n/);
    expect(out).not.toContain("API key:");
    process.kill(server.pid!, "SIGTERM");
    expect(await exited(server)).toBe(0);
  });

  it("the cli explains its usage and refuses bad input", () => {
    const usage = cli(dataDir, "keys");
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain("keys create <user>");
    expect(usage.stdout).toBe("");
  });

  it("refuses a bad setting with a clear message", () => {
    const res = spawnSync("npm", ["start"], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir, PORT: "eighty" }, encoding: "utf8" });
    expect(res.status).not.toBe(0);
    expect(res.stderr).toContain('PORT must be a port number (0-65535), got "eighty"');
  });
});
