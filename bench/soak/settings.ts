// What a soak run is: its settings from the environment and the fixed parameters the report names.

import { positiveIntFromEnv } from "../lib";

/** The server's resources and event loop are read this often. */
export const SAMPLE_MS = 10_000;
/** Between the publishers leaving and the last memory sample: what the server gives back. */
export const SETTLE_MS = 10_000;
export const CLIP = { size: "640x360", fps: 30, seconds: 20 };
export const SMALL_RENDITION = { name: "240p", bitrate: 300_000, fps: 15, width: 426, height: 240 };

export interface Settings {
  minutes: number;
  publishers: number;
  readers: number;
  apiRate: number;
  baselineSeconds: number;
  segmentSeconds: number;
  passthrough: boolean;
}

export function readSettings(): Settings {
  const segmentSeconds = positiveIntFromEnv("SOAK_SEGMENT_SECONDS", 1, 10);
  const profile = process.env.SOAK_PROFILE || "240p15";
  if (profile !== "240p15" && profile !== "passthrough") throw new Error(`SOAK_PROFILE must be 240p15 or passthrough, got "${profile}"`);
  return {
    minutes: positiveIntFromEnv("SOAK_MINUTES", 10),
    publishers: positiveIntFromEnv("SOAK_PUBLISHERS", 5, 100),
    readers: positiveIntFromEnv("SOAK_READERS", 50, 5000),
    apiRate: positiveIntFromEnv("SOAK_API_RATE", 20, 1000),
    baselineSeconds: positiveIntFromEnv("SOAK_BASELINE_SECONDS", 15),
    segmentSeconds,
    passthrough: profile === "passthrough",
  };
}
