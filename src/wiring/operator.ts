import http from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import type { Store } from "../db";
import { cachedReadiness, livenessRouter, probeDatabaseWritable, probeFfmpeg, readinessRouter, type StorageWatch } from "../health";
import { closeGracefully } from "../http";
import type { FfmpegLocation } from "../media";
import { metricsRouter, type Metrics } from "../metrics";
import type { Wiring } from "./context";
import { listen } from "./http";
import type { LocalRtmp } from "./sessions";

export interface OperatorArea {
  /** The operator's listener (/metrics, /readyz, /healthz), as bound. */
  adminPort: number;
  /** host:port, as bound. */
  adminAddress: string;
  /** /readyz and /metrics, also served behind the gate on the public port. */
  routers: express.Router[];
}

/** /readyz and /metrics on the operator's listener (ADMIN_PORT). */
export async function wireOperator(
  { config, stops, has }: Wiring,
  store: Store,
  parts: { storage: StorageWatch; ffmpeg: FfmpegLocation | undefined; rtmp: LocalRtmp; metrics: Metrics },
): Promise<OperatorArea> {
  const readiness = cachedReadiness({
    database: () => probeDatabaseWritable(store.db),
    // The storage watch's last probe (every 2 s): a request never writes to the disk itself.
    storage: () => parts.storage.current,
    ffmpeg: () => probeFfmpeg(parts.ffmpeg?.path),
    rtmp: () => (!has("ingest") || parts.rtmp.server?.listening ? undefined : "the RTMP server is not listening"),
  });
  const routers = [readinessRouter(readiness), metricsRouter(parts.metrics)];
  const admin = http.createServer(express().disable("x-powered-by").use(livenessRouter(), ...routers));
  try {
    await listen(admin, config.adminPort, config.adminHost);
  } catch (err) {
    throw new Error(`cannot listen for the operator (ADMIN_PORT) on ${config.adminHost}:${config.adminPort}: ${(err as Error).message}`);
  }
  stops.register("drain", "operator HTTP listener", () => closeGracefully(admin, 3_000));
  const adminPort = (admin.address() as AddressInfo).port;
  const adminAddress = `${config.adminHost.includes(":") ? `[${config.adminHost}]` : config.adminHost}:${adminPort}`;
  return { adminPort, adminAddress, routers };
}
