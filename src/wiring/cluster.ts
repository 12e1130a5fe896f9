import { ClusterNode } from "../cluster";
import type { NodeRecord, Store } from "../db";
import type { Wiring } from "./context";
import type { SessionsArea } from "./sessions";

export interface ClusterArea {
  cluster: ClusterNode;
  /** This process in the nodes table; its internal URL is known once HTTP listens. */
  node: Omit<NodeRecord, "lastSeen">;
}

/** This process as a node: its heartbeat (and its streams' leases), the janitor, and on an ingest node the notices of other nodes. */
export async function wireCluster({ config, log, stops, has }: Wiring, store: Store, { sessions, orphans }: SessionsArea): Promise<ClusterArea> {
  const node: ClusterArea["node"] = { id: config.nodeId, roles: [...config.roles], internalUrl: config.internalUrlSetting ?? null, rtmpAddress: null, startedAt: Date.now() };
  const cluster = new ClusterNode({
    store,
    log,
    node,
    heartbeatMs: config.heartbeatMs,
    leaseMs: config.leaseMs,
    controlPollMs: config.controlPollMs,
    orphans,
    sessions: has("ingest") ? sessions : undefined,
    databaseUrl: config.databaseUrl,
  });
  await cluster.start();
  // Its streams' leases given back once its ffmpeg are gone (see SHUTDOWN_PHASES).
  stops.register("handover", "cluster node", () => cluster.stop(true));
  return { cluster, node };
}
