import crypto from "node:crypto";
import os from "node:os";
import { area, custom, integer, matching, Problem, url } from "../declare";

/** What a process may do (ONAIR_ROLES). */
export const ROLES = ["api", "ingest", "worker"] as const;
export type Role = (typeof ROLES)[number];

export const cluster = area("cluster", {
  ONAIR_ROLES: custom<Role[]>({
    default: "`api,ingest,worker`",
    allowed: "some of `api`, `ingest`, `worker`, comma-separated",
    fallback: () => [...ROLES],
    doc: "What this process does: `api` (REST API, player, dashboard), `ingest` (RTMP, live pipelines, LL-HLS of its streams), `worker` (webhook deliveries, recording finalize). Fewer than all three needs `DATABASE_URL`.",
    parse: (v, env) => {
      if (v.trim() === "") return [...ROLES];
      const roles = v.split(",").map((r) => r.trim().toLowerCase()).filter(Boolean);
      const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
      if (unknown.length > 0 || roles.length === 0) return new Problem(`${env} must list some of ${ROLES.join(", ")} (comma-separated), got "${v}"`);
      return ROLES.filter((r) => roles.includes(r));
    },
  }).at("roles"),
  NODE_ID: matching({
    pattern: /^[A-Za-z0-9_.:-]{1,64}$/,
    what: "1-64 letters, digits or _ . : -",
    shown: "host name + random suffix",
    doc: "This process in the `nodes` table and on its sessions' rows. Set it to keep one across restarts: a restarted node then ends what its previous run left open at once.",
  }).at("nodeId", (id) => id ?? `${os.hostname().replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 40)}-${crypto.randomBytes(3).toString("hex")}`),
  INTERNAL_URL: url({
    protocols: ["http:", "https:"],
    shown: "`http://$HOST:$PORT` (the machine's name when `HOST` is a wildcard)",
    doc: "Where other nodes reach this one's HTTP: API nodes pass viewers' live HLS requests to the ingest node packaging the stream.",
  }).at("internalUrlSetting"),
  NODE_HEARTBEAT_SECONDS: integer({
    default: 5,
    min: 1,
    max: 60,
    unit: "seconds",
    doc: "How often a node says it is alive (and renews the leases on its streams).",
  }).at("heartbeatMs", (s) => s * 1000),
  NODE_LEASE_SECONDS: integer({
    default: 15,
    min: 2,
    max: 600,
    unit: "seconds",
    doc: "How long after a node's last heartbeat another node may take its streams and end its sessions; at least twice `NODE_HEARTBEAT_SECONDS`.",
  }).at("leaseMs", (s) => s * 1000),
  NODE_CLOCK_OFFSET_MS: integer({
    default: 0,
    min: -86_400_000,
    max: 86_400_000,
    unit: "ms",
    doc: "Shifts this node's own clock (its sessions' times and timers' view of now) by this much: for fault tests of a node whose clock is wrong. Leases and node liveness use the database's clock, so such a node keeps its streams and ends no one else's.",
  }).at("clockOffsetMs"),
  CONTROL_POLL_SECONDS: integer({
    default: 5,
    min: 1,
    max: 60,
    unit: "seconds",
    doc: "How often an ingest node converges its live streams on their stored control state (suspended, deleted, terminated, changed settings, a lease taken), in case it missed a notice (PostgreSQL `NOTIFY` keeps nothing for a listener that was disconnected).",
  }).at("controlPollMs", (s) => s * 1000),
});
