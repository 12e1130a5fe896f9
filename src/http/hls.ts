import http from "node:http";
import https from "node:https";
import path from "node:path";
import zlib from "node:zlib";
import express, { type Request, type Response } from "express";
import type { Store } from "../db";
import { parseBlockingQuery, satisfies, tooFarAhead, type LiveHls, type LivePackager } from "../hls";
import { malformedPathIsNotFound } from "./malformedPath";

// HLS at /hls/<playbackId>/index.m3u8 (master) and /hls/<playbackId>/<n>/<file>. A live
// session's playlists, parts and segments come from its packager in memory, with blocking
// reload (LL-HLS); an ended session's from the files it left on disk.

const PLAYBACK_ID = /^[0-9a-z]{16}$/;
const VARIANT = /^\d{1,2}$/;
const FILE = /^[\w-]{1,64}\.(m3u8|ts|m4s|mp4)$/;

const PLAYLIST_TYPE = "application/vnd.apple.mpegurl";
const TYPES: Record<string, string> = { ".m3u8": PLAYLIST_TYPE, ".ts": "video/mp2t", ".m4s": "video/mp4", ".mp4": "video/mp4" };
/** Media names are unique per session and never change. */
const MEDIA_CACHE = "public, max-age=86400, immutable";

const notFound = (res: Response) => void res.status(404).json({ errors: ["not found"] });

/** Apple's authoring spec asks for compressed playlists; a live one is a few hundred bytes to a few KiB. */
function sendPlaylist(req: Request, res: Response, text: string, cacheControl: string, gzip?: Buffer): void {
  res.set({ "content-type": PLAYLIST_TYPE, "cache-control": cacheControl, vary: "accept-encoding" });
  if (/\bgzip\b/.test(req.get("accept-encoding") ?? "")) {
    res.set("content-encoding", "gzip");
    return void res.send(gzip ?? zlib.gzipSync(text, { level: 1 }));
  }
  // A Buffer: res.send would add "; charset" to a string's content type.
  res.send(Buffer.from(text));
}

/** Marks a request one node passed to another: it is answered there, never passed on again. */
const PROXIED = "x-onair-proxied";

/** Response headers a proxied HLS answer keeps. */
const PROXIED_HEADERS = ["content-type", "content-length", "content-encoding", "cache-control", "vary", "etag", "last-modified"];

/**
 * Passes an HLS request to the node packaging the stream (its internal URL) and its answer back,
 * blocking reloads included: the player waits on that node's packager as it would here. A node
 * that does not answer is a 502 (players retry; the stream's next session may be elsewhere).
 */
function proxy(req: Request, res: Response, base: string): Promise<void> {
  return new Promise((resolve) => {
    const url = new URL(req.originalUrl, base);
    const headers = { "accept-encoding": req.get("accept-encoding") ?? "", [PROXIED]: "1" };
    const upstream = (url.protocol === "https:" ? https : http).get(url, { headers, timeout: 15_000 }, (up) => {
      res.status(up.statusCode ?? 502);
      for (const h of PROXIED_HEADERS) if (up.headers[h] !== undefined) res.set(h, up.headers[h] as string);
      up.pipe(res);
      up.on("end", resolve);
      up.on("error", () => (res.destroy(), resolve()));
    });
    upstream.on("timeout", () => upstream.destroy(new Error("timed out")));
    upstream.on("error", () => {
      if (!res.headersSent) res.status(502).json({ errors: ["the node packaging this stream did not answer: retry"] });
      else res.destroy();
      resolve();
    });
    // The player went away: so does the request it was waiting on.
    res.on("close", () => upstream.destroy());
  });
}

/**
 * `remote`: where a stream live on another node is packaged (several nodes), or nothing: every
 * live stream of this node is in `live`.
 */
export function hlsRouter(store: Store, hlsDir: string, live: LiveHls, remote?: (playbackId: string) => Promise<string | undefined>): express.Router {
  const router = express.Router();

  router.use("/hls", (_req, res, next) => {
    // Players on other origins (any web page) fetch playlists and segments.
    res.set("access-control-allow-origin", "*");
    next();
  });

  /** An ended session's files (or a live one's that left memory): looked up, then read from disk. */
  const fromDisk = async (res: Response, playbackId: string, parts: string[]) => {
    // Only names of our own making reach the file system: nothing can climb out of hlsDir.
    if (!(await store.streams.getByPlaybackId(playbackId))) return notFound(res);
    const ext = path.extname(parts[parts.length - 1]!);
    const playlist = ext === ".m3u8";
    res.sendFile(path.join(playbackId, ...parts), {
      root: hlsDir,
      dotfiles: "deny",
      headers: { "content-type": TYPES[ext]!, "cache-control": playlist ? "no-cache" : MEDIA_CACHE },
      cacheControl: false,
      lastModified: !playlist,
      etag: !playlist,
    }, (err) => {
      if (err && !res.headersSent) notFound(res);
    });
  };

  /** Not live here: live on another node (proxied), or ended (its files). */
  const elsewhere = async (req: Request, res: Response, playbackId: string, parts: string[]) => {
    const base = req.get(PROXIED) ? undefined : await remote?.(playbackId);
    if (base) return proxy(req, res, base);
    return fromDisk(res, playbackId, parts);
  };

  router.get("/hls/:playbackId/index.m3u8", async (req, res) => {
    const { playbackId } = req.params;
    if (!PLAYBACK_ID.test(playbackId)) return notFound(res);
    const packager = live.get(playbackId);
    if (!packager) return elsewhere(req, res, playbackId, ["index.m3u8"]);
    const master = packager.master();
    // Not playable yet: as before a first segment, nothing to play.
    if (master === undefined) return notFound(res);
    sendPlaylist(req, res, master, "no-cache");
  });

  router.get("/hls/:playbackId/:variant/:file", async (req, res) => {
    const { playbackId, variant, file } = req.params;
    if (!PLAYBACK_ID.test(playbackId) || !VARIANT.test(variant) || !FILE.test(file)) return notFound(res);
    const packager = live.get(playbackId);
    if (!packager) return elsewhere(req, res, playbackId, [variant, file]);
    const index = Number(variant);
    if (!packager.tracks[index]) return notFound(res);
    if (file === "index.m3u8") return mediaPlaylist(req, res, packager, index);
    if (await media(req, res, packager, index, file)) return;
    await fromDisk(res, playbackId, [variant, file]);
  });
  router.use(malformedPathIsNotFound);
  return router;
}

/** Aborts when the client goes away before its answer (a player gave up on a blocking reload). */
function gone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/**
 * A rendition's live playlist, at once or (with `_HLS_msn`/`_HLS_part`) as soon as it holds
 * what was asked, within three target durations (RFC 8216bis §6.2.5.2: 503 after that).
 */
async function mediaPlaylist(req: Request, res: Response, packager: LivePackager, index: number): Promise<void> {
  const query = parseBlockingQuery(req.query as Record<string, unknown>);
  if (!query.ok) return void res.status(400).json({ errors: [query.error] });
  const track = packager.tracks[index]!;
  const request = query.request;
  if (request) {
    if (tooFarAhead(track, request)) {
      return void res.status(400).json({ errors: [`_HLS_msn=${request.msn} is more than two segments past the playlist's last (${track.lastCompleteMsn})`] });
    }
    const ok = await packager.wait(index, () => satisfies(track, request), packager.targetDuration * 3 * 1000, gone(res));
    if (res.destroyed) return;
    if (!ok) return void res.status(503).json({ errors: [`segment ${request.msn}${request.part !== undefined ? ` part ${request.part}` : ""} did not arrive in ${packager.targetDuration * 3} s`] });
  }
  const playlist = packager.mediaPlaylistWithGzip(index);
  if (playlist === undefined) return notFound(res);
  // A blocking response names the state it waited for: a CDN may share it between the viewers
  // asking the same thing; an unqualified reload must revalidate.
  sendPlaylist(req, res, playlist.text, request ? `public, max-age=${packager.targetDuration * packager.windowSegments}` : "no-cache", playlist.gzip);
}

/**
 * A part, segment or init from memory. The part the preload hint names is awaited (Safari asks
 * for it before it exists). False: not in memory (an older file is looked for on disk).
 */
async function media(req: Request, res: Response, packager: LivePackager, index: number, file: string): Promise<boolean> {
  let found = packager.file(index, file);
  const partId = packager.partId(file);
  if (!found && partId !== undefined && partId === packager.tracks[index]!.next.partId) {
    await packager.wait(index, () => packager.file(index, file) !== undefined, packager.targetDuration * 3 * 1000, gone(res));
    if (res.destroyed) return true;
    found = packager.file(index, file);
  }
  if (!found) return false;
  res.set({ "content-type": "video/mp4", "cache-control": MEDIA_CACHE });
  res.send(found.bytes);
  return true;
}
