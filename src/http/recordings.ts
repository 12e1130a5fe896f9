import fs from "node:fs";
import path from "node:path";
import express, { type Request, type Response } from "express";
import { pipeline } from "node:stream/promises";
import type { Readable } from "node:stream";
import type { Store } from "../db";
import type { RecordingStore } from "../storage";
import { signPlaylistUris, SIGNATURE_PARAM, type RecordingUrlSigner } from "../recordings";
import { THUMBNAIL_FILE } from "../media";
import { malformedPathIsNotFound } from "./malformedPath";
import { OBJECT_ID } from "./pages";

// Recordings at /recordings/<sessionId>/index.m3u8 (master), /<n>/index.m3u8 and segments,
// /recordings/<sessionId>/output.mp4, with HTTP ranges (players seek in the MP4), and
// /recordings/<sessionId>/thumbnail.jpg. Every request carries the `sig` of the URL the API
// handed out; without it, or with another session's, the answer is the same 404 as for no
// recording at all: nothing tells them apart.

const VARIANT = /^\d{1,2}$/;
const FILE = /^[\w-]{1,64}\.(m3u8|ts|m4s|mp4)$/;
const TYPES: Record<string, string> = { ".m3u8": "application/vnd.apple.mpegurl", ".ts": "video/mp2t", ".m4s": "video/mp4", ".mp4": "video/mp4", ".jpg": "image/jpeg" };

const notFound = (res: Response) => void res.status(404).json({ errors: ["not found"] });

async function readAll(file: { body: Readable } | undefined): Promise<string> {
  if (!file) throw new Error("no such file");
  const chunks: Buffer[] = [];
  for await (const c of file.body) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** A file from the bucket, streamed through; a Range (players seek in the MP4) is the bucket's to answer. */
async function fromObjects(req: Request, res: Response, objects: RecordingStore, sessionId: string, file: string, type: string): Promise<void> {
  const range = req.get("range");
  const got = await objects.open(sessionId, "", file, range);
  if (!got) return notFound(res);
  res.status(got.range ? 206 : 200).set({ "content-type": type, "cache-control": "public, max-age=3600", "accept-ranges": "bytes" });
  if (got.size !== undefined) res.set("content-length", String(got.size));
  if (got.range) res.set("content-range", got.range);
  await pipeline(got.body, res).catch(() => res.destroy());
}

/**
 * `objects`: with object storage, every file is read from the bucket, the recording's one copy
 * every node sees alike (finalize's MP4 and closed playlists are written there by whichever node
 * ran it); without, from this node's disk.
 */
export function recordingsRouter(store: Store, recordingsDir: string, signer: RecordingUrlSigner, objects?: RecordingStore): express.Router {
  const router = express.Router();

  const send = async (req: Request, res: Response, sessionId: string, parts: string[]) => {
    const sig = req.query[SIGNATURE_PARAM];
    // Only names of our own making reach the file system: nothing can climb out.
    if (!OBJECT_ID.test(sessionId) || !signer.verify(sessionId, sig) || !(await store.sessions.get(sessionId))?.record) return notFound(res);
    const ext = path.extname(parts[parts.length - 1]!);
    res.set("access-control-allow-origin", "*");
    if (ext === ".m3u8") {
      // Playlists name their variants and segments relative to themselves: each gets the
      // signature, or the player's next request would be refused.
      let text: string;
      try {
        text = objects ? await readAll(await objects.open(sessionId, "", parts.join("/"))) : await fs.promises.readFile(path.join(recordingsDir, sessionId, ...parts), "utf8");
      } catch {
        return notFound(res);
      }
      // Playlists of a recording still in progress grow.
      res.set({ "content-type": TYPES[ext]!, "cache-control": "no-cache" });
      // A Buffer: res.send would add "; charset" to a string's content type.
      return void res.send(Buffer.from(signPlaylistUris(text, sig as string)));
    }
    if (objects) return fromObjects(req, res, objects, sessionId, parts.join("/"), TYPES[ext]!);
    res.sendFile(path.join(sessionId, ...parts), {
      root: recordingsDir,
      dotfiles: "deny",
      // The files playlists list never change.
      headers: { "content-type": TYPES[ext]!, "cache-control": "public, max-age=3600" },
      cacheControl: false,
    }, (err) => {
      if (err && !res.headersSent) notFound(res);
    });
  };

  router.get("/recordings/:sessionId/index.m3u8", (req, res) => send(req, res, req.params.sessionId, ["index.m3u8"]));
  router.get("/recordings/:sessionId/output.mp4", (req, res) => send(req, res, req.params.sessionId, ["output.mp4"]));
  // Made by finalize from the MP4 (none while the recording is still being made), signed alike.
  router.get(`/recordings/:sessionId/${THUMBNAIL_FILE}`, (req, res) => send(req, res, req.params.sessionId, [THUMBNAIL_FILE]));
  router.get("/recordings/:sessionId/:variant/:file", (req, res) => {
    const { sessionId, variant, file } = req.params;
    if (!VARIANT.test(variant) || !FILE.test(file)) return notFound(res);
    return send(req, res, sessionId, [variant, file]);
  });
  router.use(malformedPathIsNotFound);
  return router;
}
