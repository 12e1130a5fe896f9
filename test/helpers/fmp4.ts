import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { Fmp4Splitter, type Fmp4Piece } from "../../src/hls";
import { FFMPEG } from "./media";

/**
 * Runs ffmpeg with `args` writing fragmented MP4 to `pipes` outputs (fd 3, 4, …) and returns
 * what each carried, split into its init and fragments; throws with ffmpeg's log if it fails.
 */
export async function fmp4FromPipes(args: string[], pipes: number): Promise<Fmp4Piece[][]> {
  const extra = Array.from({ length: pipes }, () => "pipe" as const);
  const child = spawn(FFMPEG, args, { stdio: ["ignore", "ignore", "pipe", ...extra] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const read = (stream: Readable) =>
    new Promise<Fmp4Piece[]>((resolve, reject) => {
      const splitter = new Fmp4Splitter();
      const pieces: Fmp4Piece[] = [];
      stream.on("data", (c: Buffer) => {
        try {
          pieces.push(...splitter.push(c));
        } catch (err) {
          reject(err);
        }
      });
      stream.on("end", () => resolve(pieces));
    });
  const outputs = Promise.all(extra.map((_, i) => read(child.stdio[3 + i] as Readable)));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  if (code !== 0) throw new Error(`ffmpeg exited ${code}: ${stderr}`);
  return outputs;
}
