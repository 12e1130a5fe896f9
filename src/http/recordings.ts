import path from "node:path";
import express, { type Response } from "express";
import type { Store } from "../db";
import { malformedPathIsNotFound } from "./malformedPath";

// Recordings at /recordings/<sessionId>/index.m3u8 (master), /<n>/index.m3u8 and segments,
// and /recordings/<sessionId>/output.mp4, with HTTP ranges (players seek in the MP4).

const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const VARIANT = /^\d{1,2}$/;
const FILE = /^[\w-]{1,64}\.(m3u8|ts)$/;
const TYPES: Record<string, string> = { ".m3u8": "application/vnd.apple.mpegurl", ".ts": "video/mp2t", ".mp4": "video/mp4" };

const notFound = (res: Response) => void res.status(404).json({ errors: ["not found"] });

export function recordingsRouter(store: Store, recordingsDir: string): express.Router {
  const router = express.Router();

  const send = (res: Response, sessionId: string, parts: string[]) => {
    // Only names of our own making reach the file system: nothing can climb out.
    if (!SESSION_ID.test(sessionId) || !store.sessions.get(sessionId)?.record) return notFound(res);
    const ext = path.extname(parts[parts.length - 1]!);
    res.set("access-control-allow-origin", "*");
    res.sendFile(path.join(sessionId, ...parts), {
      root: recordingsDir,
      dotfiles: "deny",
      // Playlists of a recording still in progress grow; the files they list never change.
      headers: { "content-type": TYPES[ext]!, "cache-control": ext === ".m3u8" ? "no-cache" : "public, max-age=3600" },
      cacheControl: false,
    }, (err) => {
      if (err && !res.headersSent) notFound(res);
    });
  };

  router.get("/recordings/:sessionId/index.m3u8", (req, res) => send(res, req.params.sessionId, ["index.m3u8"]));
  router.get("/recordings/:sessionId/output.mp4", (req, res) => send(res, req.params.sessionId, ["output.mp4"]));
  router.get("/recordings/:sessionId/:variant/:file", (req, res) => {
    const { sessionId, variant, file } = req.params;
    if (!VARIANT.test(variant) || !FILE.test(file)) return notFound(res);
    send(res, sessionId, [variant, file]);
  });
  router.use(malformedPathIsNotFound);
  return router;
}
