import path from "node:path";
import { InputScripts, locateFfmpeg, ProcessRegistry, reapLeftovers, type FfmpegLocation } from "../media";
import type { Wiring } from "./context";

export interface MediaArea {
  ffmpeg: FfmpegLocation | undefined;
  /** Every process the server has running (ffmpeg). */
  processes: ProcessRegistry;
  /** Where tenant-chosen inputs are handed to ffmpeg, out of argv (media/untrustedInput.ts). */
  inputScripts: InputScripts;
}

/** ffmpeg, and the registry of every process the server runs. */
export function wireMedia({ config, log, stops }: Wiring): MediaArea {
  const ffmpeg = locateFfmpeg(config.ffmpegPath);
  // ffmpeg left running by a previous run that died (SIGKILL, a power cut) is killed first.
  const processesDir = path.join(config.dataDir, "processes");
  reapLeftovers(processesDir, (pid) => log.warn({ pid }, "killed an ffmpeg left running by a previous run"));
  const processes = new ProcessRegistry(processesDir);
  // Once the sessions have ended: any ffmpeg still draining (a multistream push, a bridge).
  stops.register("release", "ffmpeg processes", () => processes.stopAll(2000));
  // Per node (DATA_DIR may be shared by nothing else): cleared at start, after the reaping above.
  const inputScripts = new InputScripts(path.join(config.dataDir, "private", "inputs"));
  return { ffmpeg, processes, inputScripts };
}
