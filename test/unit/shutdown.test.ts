import { spawn } from "node:child_process";
import path from "node:path";
import { createLogger } from "../../src/log";
import { Shutdown, SHUTDOWN_PHASES, type ShutdownPhase } from "../../src/shutdown";

const ROOT = path.resolve(__dirname, "../..");

/** Short bounds, the real phase names and order. */
const PHASES = SHUTDOWN_PHASES.map((p) => ({ ...p, boundMs: 150 }));

function logged(): { log: ReturnType<typeof createLogger>; lines: () => { msg: string; component?: string; components?: string[] }[] } {
  const out: string[] = [];
  const log = createLogger("info", { write: (line: string) => void out.push(line) });
  return { log, lines: () => out.map((l) => JSON.parse(l) as { msg: string }) };
}

const later = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe("Shutdown", () => {
  it("runs the phases in their declared order whatever the registration order, the last registered of a phase first", async () => {
    const shutdown = new Shutdown(logged().log, PHASES);
    const seen: string[] = [];
    const stop = (name: string) => () => void seen.push(name);
    shutdown.register("stores", "database", stop("database"));
    shutdown.register("drain", "webhook deliveries", stop("webhook deliveries"));
    shutdown.register("intake", "WHIP", stop("WHIP"));
    shutdown.register("intake", "pulls", stop("pulls"));
    shutdown.register("sessions", "live sessions", stop("live sessions"));
    shutdown.register("release", "RTMP server", stop("RTMP server"));
    shutdown.register("stores", "Redis", stop("Redis"));
    expect(await shutdown.run()).toEqual({ clean: true, problems: [] });
    expect(seen).toEqual(["pulls", "WHIP", "live sessions", "RTMP server", "webhook deliveries", "Redis", "database"]);
  });

  it("runs a phase's stops side by side, and the next phase only once they have all finished", async () => {
    const shutdown = new Shutdown(logged().log, PHASES.map((p) => ({ ...p, boundMs: 1_000 })));
    const seen: string[] = [];
    shutdown.register("intake", "slow", async () => {
      seen.push("slow started");
      await later(60);
      seen.push("slow done");
    });
    shutdown.register("intake", "quick", () => void seen.push("quick"));
    shutdown.register("sessions", "next phase", () => void seen.push("next phase"));
    expect((await shutdown.run()).clean).toBe(true);
    expect(seen).toEqual(["quick", "slow started", "slow done", "next phase"]);
  });

  it("a stop that never ends: its phase gives up at its bound, names it, and the later phases still run; not clean", async () => {
    const { log, lines } = logged();
    const shutdown = new Shutdown(log, PHASES);
    const seen: string[] = [];
    shutdown.register("sessions", "stuck pipeline", () => new Promise(() => undefined));
    shutdown.register("sessions", "other session", () => void seen.push("other session"));
    shutdown.register("drain", "HTTP", () => void seen.push("HTTP"));
    shutdown.register("stores", "database", () => void seen.push("database"));
    const started = performance.now();
    const result = await shutdown.run();
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(seen).toEqual(["other session", "HTTP", "database"]);
    expect(result.clean).toBe(false);
    expect(result.problems).toEqual(["shutdown: phase 'end live sessions' timed out after 0.15 s waiting for stuck pipeline"]);
    expect(lines()).toContainEqual(expect.objectContaining({ msg: result.problems[0], components: ["stuck pipeline"] }));
  });

  it("a stop that throws or rejects is logged by name; the others of its phase and the later phases still run", async () => {
    const { log, lines } = logged();
    const shutdown = new Shutdown(log, PHASES);
    const seen: string[] = [];
    shutdown.register("intake", "throws", () => {
      throw new Error("boom");
    });
    shutdown.register("intake", "rejects", () => Promise.reject(new Error("gone")));
    shutdown.register("intake", "fine", () => void seen.push("fine"));
    shutdown.register("stores", "database", () => void seen.push("database"));
    const result = await shutdown.run();
    expect(seen).toEqual(["fine", "database"]);
    expect(result.clean).toBe(false);
    expect(result.problems.sort()).toEqual(["shutdown: phase 'stop taking new work': rejects failed: gone", "shutdown: phase 'stop taking new work': throws failed: boom"]);
    expect(lines().map((l) => l.component)).toEqual(expect.arrayContaining(["throws", "rejects"]));
  });

  it("runs once: a second run answers the first's result without stopping anything again, and nothing registers after", async () => {
    const shutdown = new Shutdown(logged().log, PHASES);
    let stops = 0;
    shutdown.register("stores", "database", () => void stops++);
    const first = shutdown.run();
    expect(shutdown.run()).toBe(first);
    await first;
    expect(stops).toBe(1);
    expect(() => shutdown.register("intake", "late", () => undefined)).toThrow(/late registered after the stop began/);
  });

  it("undoes a start that failed half-way: what was registered is stopped, in the phases' order", async () => {
    const shutdown = new Shutdown(logged().log, PHASES);
    const seen: string[] = [];
    const start = async () => {
      shutdown.register("stores", "database", () => void seen.push("database"));
      shutdown.register("drain", "webhook deliveries", () => void seen.push("webhook deliveries"));
      shutdown.register("release", "RTMP server", () => void seen.push("RTMP server"));
      throw new Error("cannot listen for the operator");
    };
    await expect(start().catch(async (err: unknown) => {
      await shutdown.run();
      throw err;
    })).rejects.toThrow("cannot listen for the operator");
    expect(seen).toEqual(["RTMP server", "webhook deliveries", "database"]);
  });

  it("the phases are declared once, in the order the server stops", () => {
    expect(SHUTDOWN_PHASES.map((p) => p.name)).toEqual<ShutdownPhase[]>(["intake", "sessions", "release", "handover", "drain", "stores"]);
    for (const p of SHUTDOWN_PHASES) expect(p.boundMs).toBeGreaterThan(0);
  });

  it("a process whose stop hangs in one phase: SIGTERM still closes the later phases, logs which component hung, and exits 1", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/hangingShutdown.ts"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    for (let i = 0; !stdout.includes("ready") && i < 300; i++) await later(50);
    expect(stdout).toContain("ready");
    child.kill("SIGTERM");
    const code = await exited;
    expect(code).toBe(1);
    expect(stdout).toContain("database closed");
    const log = stdout + stderr;
    expect(log).toContain("shutdown: phase 'end live sessions' timed out after 0.3 s waiting for stuck session");
    expect(log).toContain("stopped, but not cleanly");
  });
});
