import { dropTestDatabase, openTestStore } from "../helpers/database";
import fs from "node:fs";
import type { Store } from "../../src/db";
import { createLogger } from "../../src/log";
import { enqueueJob, type JobQueue } from "../../src/queue";
import { EmbeddedQueue } from "../../src/queue/embedded";
import { JobTable } from "../../src/queue/jobTable";
import { MAX_PRIORITY, OwnerTurns } from "../../src/queue/turns";
import { tempDir } from "../helpers/server";

// Claiming takes turns between owners (users): one user's burst of jobs does not hold back
// another user's, and each owner's own jobs still run oldest first.

let dir: string;
let store: Store;
let queue: JobQueue | undefined;

beforeEach(async () => {
  dir = tempDir();
  store = await openTestStore(dir);
});
afterEach(async () => {
  await queue?.close();
  queue = undefined;
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
  await dropTestDatabase(dir);
});

const add = (id: string, owner: string, delayMs = 0) => enqueueJob(store.db, "q", { id, data: { id }, owner, delayMs }, 1_000);

describe("JobTable.claim", () => {
  it("takes one due job per owner in turn, each owner's oldest first, wrapping around", async () => {
    for (let i = 0; i < 50; i++) await add(`a${i}`, "alice");
    await add("b0", "bob");
    await add("b1", "bob");
    await add("c0", "carol");
    const table = new JobTable(store.db);
    const first = await table.claim("q", 2_000, 60_000, 5);
    expect(first.rows.map((r) => r.id)).toEqual(["a0", "b0", "c0", "a1", "b1"]);
    expect(first.lastOwner).toBe("bob");
    // The next claim starts after bob: carol has nothing left, so alice's next.
    const second = await table.claim("q", 2_000, 60_000, 2, first.lastOwner);
    expect(second.rows.map((r) => r.id)).toEqual(["a2", "a3"]);
  });

  it("passes over owners whose jobs are not due, and leased jobs", async () => {
    await add("a-later", "alice", 10_000);
    await add("b0", "bob");
    await add("b1", "bob");
    const table = new JobTable(store.db);
    // b0 is leased by the first claim; the second finds bob's next due job, not b0 again.
    expect((await table.claim("q", 2_000, 60_000, 1)).rows.map((r) => r.id)).toEqual(["b0"]);
    expect((await table.claim("q", 2_000, 60_000, 5, "bob")).rows.map((r) => r.id)).toEqual(["b1"]);
    expect((await table.claim("q", 2_000, 60_000, 5)).rows).toEqual([]);
    expect((await table.claim("q", 20_000, 60_000, 5)).rows.map((r) => r.id)).toEqual(["a-later"]);
  });

  it("still claims when thousands of idle owners stand before the one with a due job", async () => {
    for (let i = 0; i < 2_500; i++) await add(`idle${i}`, `idle-${String(i).padStart(5, "0")}`, 60_000);
    await add("due", "zed");
    const table = new JobTable(store.db);
    expect((await table.claim("q", 2_000, 60_000, 3)).rows.map((r) => r.id)).toEqual(["due"]);
  });

  it("keeps jobs of other queues out", async () => {
    await add("a0", "alice");
    await enqueueJob(store.db, "other", { id: "o0", data: {}, owner: "alice" }, 1_000);
    const table = new JobTable(store.db);
    expect((await table.claim("q", 2_000, 60_000, 5)).rows.map((r) => r.id)).toEqual(["a0"]);
  });
});

it("the embedded queue runs a second user's job among the first few of another's burst", async () => {
  // In one transaction: the burst is all there before any worker looks.
  await store.db.transaction(async (tx) => {
    for (let i = 0; i < 200; i++) await enqueueJob(tx, "q", { id: `a${i}`, data: { id: `a${i}` }, owner: "alice" });
    await enqueueJob(tx, "q", { id: "b0", data: { id: "b0" }, owner: "bob" });
  });
  const ran: string[] = [];
  let allRan!: () => void;
  const done = new Promise<void>((resolve) => (allRan = resolve));
  queue = new EmbeddedQueue(store.db, createLogger("silent"));
  queue.process<{ id: string }>(
    "q",
    async (job) => {
      ran.push(job.data.id);
      if (ran.length === 201) allRan();
    },
    { concurrency: 2 },
  );
  await done;
  expect(ran.indexOf("b0")).toBeLessThan(3);
  // Alice's own jobs ran in the order she enqueued them (give or take the two slots).
  const alice = ran.filter((id) => id.startsWith("a")).map((id) => Number(id.slice(1)));
  alice.forEach((n, i) => expect(Math.abs(n - i)).toBeLessThanOrEqual(1));
});

describe("OwnerTurns (priorities for BullMQ)", () => {
  it.each([
    ["a burst ranks 1, 2, 3…; another owner starts at 1", [["a", 0], ["a", 1], ["a", 2], ["b", 3], ["a", 4]], [1, 2, 3, 1, 4]],
    ["an owner quiet longer than the window starts over", [["a", 0], ["a", 10], ["a", 100]], [1, 2, 1]],
    ["activity within the window keeps counting", [["a", 0], ["a", 40], ["a", 80], ["a", 120]], [1, 2, 3, 4]],
  ] as [string, [string, number][], number[]][])("%s", (_name, calls, ranks) => {
    const turns = new OwnerTurns(50);
    expect(calls.map(([owner, at]) => turns.next(owner, at))).toEqual(ranks);
  });

  it("never exceeds BullMQ's largest priority", async () => {
    const turns = new OwnerTurns(1_000);
    let last = 0;
    for (let i = 0; i < MAX_PRIORITY + 5; i++) last = turns.next("a", 0);
    expect(last).toBe(MAX_PRIORITY);
  });
});
