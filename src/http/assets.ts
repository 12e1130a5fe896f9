import path from "node:path";
import { pipeline } from "node:stream/promises";
import express, { type Request, type Response } from "express";
import { AssetsRepository, type Store } from "../db";
import type { RecordingStore } from "../storage";
import { malformedPathIsNotFound } from "./malformedPath";

// Ready assets (clips) at $PUBLIC_URL/vod/<playbackId>/index.m3u8 (HLS: init.mp4 and
// seg_<n>.m4s beside it) and …/video.mp4 (with HTTP ranges: players seek in it). The asset's
// playback id is the key, as for live HLS; an asset not ready, deleted or unknown is the same 404.

const PLAYBACK_ID = /^[0-9a-z]{16}$/;
const FILE = /^(index\.m3u8|video\.mp4|init\.mp4|seg_\d{3,6}\.m4s)$/;
const TYPES: Record<string, string> = { ".m3u8": "application/vnd.apple.mpegurl", ".m4s": "video/mp4", ".mp4": "video/mp4" };

const notFound = (res: Response) => void res.status(404).json({ errors: ["not found"] });

/**
 * `objects`: with object storage, files are read from the bucket (whichever node made the clip);
 * without, from `assetsDir` on this node.
 */
export function assetsRouter(store: Store, assetsDir: string, objects?: RecordingStore): express.Router {
  const router = express.Router();
  const assets = new AssetsRepository(store.db);

  const send = async (req: Request, res: Response, playbackId: string, file: string) => {
    if (!PLAYBACK_ID.test(playbackId) || !FILE.test(file)) return notFound(res);
    const asset = await assets.getByPlaybackId(playbackId);
    if (!asset || asset.phase !== "ready") return notFound(res);
    const type = TYPES[path.extname(file)]!;
    // A ready asset's files never change (its playlist included: a VOD playlist).
    const headers = { "content-type": type, "cache-control": "public, max-age=3600", "access-control-allow-origin": "*" };
    if (objects) {
      const range = req.get("range");
      const got = await objects.open(asset.id, "", file, range);
      if (!got) return notFound(res);
      res.status(got.range ? 206 : 200).set({ ...headers, "accept-ranges": "bytes" });
      if (got.size !== undefined) res.set("content-length", String(got.size));
      if (got.range) res.set("content-range", got.range);
      await pipeline(got.body, res).catch(() => res.destroy());
      return;
    }
    res.sendFile(path.join(asset.id, file), { root: assetsDir, dotfiles: "deny", headers, cacheControl: false }, (err) => {
      if (err && !res.headersSent) notFound(res);
    });
  };

  router.get("/vod/:playbackId/:file", (req, res) => send(req, res, req.params.playbackId, req.params.file));
  router.use(malformedPathIsNotFound);
  return router;
}
