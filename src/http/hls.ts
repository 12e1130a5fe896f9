import path from "node:path";
import express, { type Response } from "express";
import type { Store } from "../db";
import { malformedPathIsNotFound } from "./malformedPath";

// Live HLS at /hls/<playbackId>/index.m3u8 (master) and /hls/<playbackId>/<n>/<file>.

const PLAYBACK_ID = /^[0-9a-z]{16}$/;
const VARIANT = /^\d{1,2}$/;
const FILE = /^[\w-]{1,64}\.(m3u8|ts)$/;

const notFound = (res: Response) => void res.status(404).json({ errors: ["not found"] });

export function hlsRouter(store: Store, hlsDir: string): express.Router {
  const router = express.Router();

  router.use("/hls", (_req, res, next) => {
    // Players on other origins (any web page) fetch playlists and segments.
    res.set("access-control-allow-origin", "*");
    next();
  });

  const send = (res: Response, playbackId: string, parts: string[]) => {
    // Only names of our own making reach the file system: nothing can climb out of hlsDir.
    if (!PLAYBACK_ID.test(playbackId) || !store.streams.getByPlaybackId(playbackId)) return notFound(res);
    const file = parts[parts.length - 1]!;
    const playlist = file.endsWith(".m3u8");
    res.sendFile(path.join(playbackId, ...parts), {
      root: hlsDir,
      dotfiles: "deny",
      // Playlists change every segment; segment names are unique per session and never change.
      headers: playlist
        ? { "content-type": "application/vnd.apple.mpegurl", "cache-control": "no-cache" }
        : { "content-type": "video/mp2t", "cache-control": "public, max-age=86400, immutable" },
      cacheControl: false,
      lastModified: !playlist,
      etag: !playlist,
    }, (err) => {
      if (err && !res.headersSent) notFound(res);
    });
  };

  router.get("/hls/:playbackId/index.m3u8", (req, res) => send(res, req.params.playbackId, ["index.m3u8"]));
  router.get("/hls/:playbackId/:variant/:file", (req, res) => {
    const { playbackId, variant, file } = req.params;
    if (!VARIANT.test(variant) || !FILE.test(file)) return notFound(res);
    send(res, playbackId, [variant, file]);
  });
  router.use(malformedPathIsNotFound);
  return router;
}
