import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import path from "node:path";
import zlib from "node:zlib";
import { markedProxied, passedUrl, PROXIED } from "./proxyMark";
import express, { type Request, type Response } from "express";
import type { Store } from "../db";
import { addUriQuery, parseBlockingQuery, satisfies, tooFarAhead, withoutDeltaUpdates, type BlockingWaits, type LiveHls, type LivePackager } from "../hls";
import { isGated } from "../shapes";
import { MEDIA_PARAM, SESSION_PARAM, type Credentials, type PlaybackGate, type PlaybackSubject, type UriQueries } from "../playback";
import { THUMBNAIL_FILE } from "../media";
import { malformedPathIsNotFound } from "./malformedPath";

// HLS at /hls/<playbackId>/index.m3u8 (master) and /hls/<playbackId>/<n>/<file>. A live
// session's playlists, parts and segments come from its packager in memory, with blocking
// reload (LL-HLS); an ended session's from the files it left on disk.

const PLAYBACK_ID = /^[0-9a-z]{16}$/;
const VARIANT = /^\d{1,2}$/;
const FILE = /^[\w-]{1,64}\.(m3u8|ts|m4s|mp4)$/;

const PLAYLIST_TYPE = "application/vnd.apple.mpegurl";
const TYPES: Record<string, string> = { ".m3u8": PLAYLIST_TYPE, ".ts": "video/mp2t", ".m4s": "video/mp4", ".mp4": "video/mp4", ".jpg": "image/jpeg" };
/** The thumbnail is rewritten every THUMBNAIL_SECONDS under the same name. */
const THUMBNAIL_CACHE = "public, max-age=5";
/** Media names are unique per session and never change. */
const MEDIA_CACHE = "public, max-age=86400, immutable";
/** A protected stream's media: a shared cache keyed without the query would hand it to anyone. */
const cacheFor = (gated: boolean, cache: string) => (gated ? cache.replace(/^public/, "private") : cache);

const notFound = (res: Response) => void res.status(404).json({ errors: ["not found"] });

/**
 * Who may watch what (src/playback): the gate, and the stream a playback id names (cached
 * briefly: a policy change takes effect within seconds, and a segment costs no query).
 */
export interface HlsAccess {
  gate: PlaybackGate;
  subject(playbackId: string): Promise<PlaybackSubject | undefined>;
}

/** What a player shows: `?jwt=` or a `Livepeer-Jwt` header, `?accessKey=` or a `Livepeer-Access-Key` header, and our own tokens. */
export const credentials = (req: Request): Credentials => ({
  jwt: req.query.jwt,
  jwtHeader: req.get("livepeer-jwt"),
  accessKey: req.query.accessKey || req.get("livepeer-access-key"),
  session: req.query[SESSION_PARAM],
  media: req.query[MEDIA_PARAM],
});

/** A refusal (401), or a check that could not be made now (503, with when to try again). */
export const refused = (res: Response, r: { status: number; error: string; retryAfterSeconds?: number }) => {
  if (r.retryAfterSeconds !== undefined) res.set("retry-after", String(r.retryAfterSeconds));
  res.status(r.status).set("cache-control", "no-store").json({ errors: [r.error] });
};

/** A held-open request past BLOCKING_WAITS_*: players retry after a second (and hls.js then reloads plainly). */
const HELD_RETRY_SECONDS = 1;
const tooManyHeld = (res: Response) =>
  void res
    .status(503)
    .set({ "retry-after": String(HELD_RETRY_SECONDS), "cache-control": "no-store" })
    .json({ errors: [`too many requests are held open waiting for this stream's live edge: retry in ${HELD_RETRY_SECONDS} s`] });

/** Playlists written for one viewer (tokens in their URIs) are never shared by caches. */
const PER_VIEWER = "private, no-cache";

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


/** The caps on held-open requests, and the cluster's proxy mark (one node: none). */
interface Holds {
  waits: BlockingWaits | undefined;
  mark: string | undefined;
}

/**
 * The address a client is counted under (pure): an IPv6 client by its /64, which one subscriber
 * line usually holds whole, an IPv4 (or IPv4-mapped) one by its address.
 */
export function clientKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!ip.includes(":")) return ip;
  const [head = "", tail] = ip.split("%")[0]!.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

/** Response headers a proxied HLS answer keeps. */
const PROXIED_HEADERS = ["content-type", "content-length", "content-encoding", "cache-control", "vary", "etag", "last-modified"];

/**
 * Passes an HLS request to the node packaging the stream (its internal URL) and its answer back,
 * blocking reloads included: the player waits on that node's packager as it would here. A node
 * that does not answer is a 502 (players retry; the stream's next session may be elsewhere).
 */
export function proxy(req: Request, res: Response, base: string, mark: string): Promise<void> {
  return new Promise((resolve) => {
    const url = passedUrl(req.originalUrl, base);
    const headers: Record<string, string> = { "accept-encoding": req.get("accept-encoding") ?? "", [PROXIED]: mark };
    // The packaging node decides who watches: it sees what the player showed.
    for (const h of ["livepeer-jwt", "livepeer-access-key"]) {
      const v = req.get(h);
      if (v !== undefined) headers[h] = v;
    }
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

/** Where a stream live on another node is packaged (its internal URL), and the cluster's proxy mark. */
export interface RemoteNodes {
  find(playbackId: string): Promise<string | undefined>;
  mark: string;
}

/**
 * `remote`: where a stream live on another node is packaged (several nodes), or nothing: every
 * live stream of this node is in `live`; `remote.mark` is the cluster's proxy mark. `waits`: the
 * caps on requests held open on a packager (blocking reloads, preload-hinted parts); none: uncapped.
 */
export function hlsRouter(
  store: Store,
  hlsDir: string,
  live: LiveHls,
  access: HlsAccess,
  remote?: RemoteNodes,
  waits?: BlockingWaits,
): express.Router {
  const holds: Holds = { waits, mark: remote?.mark };
  const router = express.Router();

  router.use("/hls", (req, res, next) => {
    // Players on other origins (any web page) fetch playlists and segments, some with their
    // credential in a header (Livepeer's player), which the browser asks leave for first.
    res.set({ "access-control-allow-origin": "*", "access-control-allow-headers": "Livepeer-Jwt, Livepeer-Access-Key" });
    if (req.method === "OPTIONS") return void res.set("access-control-allow-methods", "GET, HEAD, OPTIONS").status(204).end();
    next();
  });

  /** An ended session's files (or a live one's that left memory): looked up, gated, `ready` (a live still), read from disk. */
  const fromDisk = async (req: Request, res: Response, playbackId: string, parts: string[], ready?: () => Promise<void>) => {
    // Only names of our own making reach the file system: nothing can climb out of hlsDir.
    const subject = await access.subject(playbackId);
    if (!subject) return notFound(res);
    const ext = path.extname(parts[parts.length - 1]!);
    const playlist = ext === ".m3u8";
    const file = path.join(hlsDir, playbackId, ...parts);
    if (isGated(subject.policy)) {
      if (!playlist) {
        const verdict = await access.gate.media(subject, credentials(req));
        if (!verdict.ok) return refused(res, verdict);
      } else {
        // A gated playlist names its media with the viewer's tokens: read and rewritten. Read
        // first: a stream with nothing to watch (offline, never streamed) costs no webhook question.
        let text: string;
        try {
          text = await fs.promises.readFile(file, "utf8");
        } catch {
          return notFound(res);
        }
        const verdict = parts.length === 1 ? await access.gate.open(subject, credentials(req)) : await access.gate.playlist(subject, credentials(req));
        if (!verdict.ok) return refused(res, verdict);
        return sendPlaylist(req, res, withQueries(text, verdict), PER_VIEWER);
      }
    }
    await ready?.().catch(() => undefined);
    res.sendFile(path.join(playbackId, ...parts), {
      root: hlsDir,
      dotfiles: "deny",
      headers: { "content-type": TYPES[ext]!, "cache-control": playlist ? "no-cache" : cacheFor(isGated(subject.policy), ext === ".jpg" ? THUMBNAIL_CACHE : MEDIA_CACHE) },
      cacheControl: false,
      lastModified: !playlist,
      etag: !playlist,
    }, (err) => {
      if (err && !res.headersSent) notFound(res);
    });
  };

  /** Not live here: live on another node (proxied), or ended (its files). */
  const elsewhere = async (req: Request, res: Response, playbackId: string, parts: string[]) => {
    const base = markedProxied(req, holds.mark) || !remote ? undefined : await remote.find(playbackId);
    if (!base) return fromDisk(req, res, playbackId, parts);
    const mark = remote!.mark;
    // A request that may be held open there holds this node's connection as long: counted here,
    // where the player's own address is known (the packaging node sees this node's).
    if (!mayBeHeld(req)) return proxy(req, res, base, mark);
    const held = await holdOpen(holds, req, () => proxy(req, res, base, mark).then(() => true));
    if (held === undefined) tooManyHeld(res);
  };

  router.get("/hls/:playbackId/index.m3u8", async (req, res) => {
    const { playbackId } = req.params;
    if (!PLAYBACK_ID.test(playbackId)) return notFound(res);
    const packager = live.get(playbackId);
    if (!packager) return elsewhere(req, res, playbackId, ["index.m3u8"]);
    const subject = await access.subject(playbackId);
    if (!subject) return notFound(res);
    const master = packager.announcedMaster();
    // Not live yet (before a first segment, or before isActive is written): nothing to play, and
    // nobody to ask about (a webhook policy's question costs its owner a POST).
    if (master === undefined) return notFound(res);
    const verdict = await access.gate.open(subject, credentials(req));
    if (!verdict.ok) return refused(res, verdict);
    // Each viewer's variant URIs carry its session token: it is how viewers are counted, and how
    // a gated stream's player goes on without showing its JWT again.
    sendPlaylist(req, res, withQueries(master, verdict), PER_VIEWER);
  });

  // The stream's newest picture, kept up to date by the packaging node's run (or taken when asked
  // if its run decodes nothing), left when the session ends; 404 until the first one is written.
  router.get(`/hls/:playbackId/${THUMBNAIL_FILE}`, async (req, res) => {
    const { playbackId } = req.params;
    if (!PLAYBACK_ID.test(playbackId)) return notFound(res);
    if (!live.get(playbackId)) return elsewhere(req, res, playbackId, [THUMBNAIL_FILE]);
    // Taken only for a viewer the gate admits: a refused or unknown one starts no process.
    return fromDisk(req, res, playbackId, [THUMBNAIL_FILE], () => live.freshThumbnail(playbackId));
  });

  router.get("/hls/:playbackId/:variant/:file", async (req, res) => {
    const { playbackId, variant, file } = req.params;
    if (!PLAYBACK_ID.test(playbackId) || !VARIANT.test(variant) || !FILE.test(file)) return notFound(res);
    const packager = live.get(playbackId);
    if (!packager) return elsewhere(req, res, playbackId, [variant, file]);
    const index = Number(variant);
    if (!packager.tracks[index]) return notFound(res);
    const subject = await access.subject(playbackId);
    if (!subject) return notFound(res);
    if (file === "index.m3u8") {
      const verdict = await access.gate.playlist(subject, credentials(req));
      if (!verdict.ok) return refused(res, verdict);
      return mediaPlaylist(req, res, packager, index, holds, verdict.media === undefined ? undefined : verdict);
    }
    const verdict = await access.gate.media(subject, credentials(req));
    if (!verdict.ok) return refused(res, verdict);
    if (await media(req, res, packager, index, file, isGated(subject.policy), holds)) return;
    await fromDisk(req, res, playbackId, [variant, file]);
  });
  router.use(malformedPathIsNotFound);
  return router;
}

/**
 * One reason for every abort: abort() without one builds a DOMException with its stack each
 * time (about 20 µs; 10,000 players dropping their connections at once would hold the loop).
 */
const CLIENT_GONE = new Error("the client went away");

/** Aborts when the client goes away before its answer (a player gave up on a blocking reload). */
function gone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort(CLIENT_GONE);
  });
  return controller.signal;
}

/** A blocking reload or a part (the hinted one is awaited): what a packaging node may hold open. */
const mayBeHeld = (req: Request) => req.query._HLS_msn !== undefined || /_p\d+\.m4s$/.test(req.path);

/**
 * Holds a request open while `wait` runs, within the caps; undefined: a cap is reached, nothing
 * waited. Called only for a request that must wait: an answer at hand costs nothing here. A
 * request another node passed on counts per playback id and per node only: its address is that
 * node's, shared by all the viewers it serves, whose own addresses that node counted (so a
 * forged proxy mark escapes only the per-client cap, as requests between nodes are not
 * authenticated).
 */
async function holdOpen({ waits, mark }: Holds, req: Request, wait: () => Promise<boolean>): Promise<boolean | undefined> {
  if (!waits) return wait();
  const playbackId = String(req.params.playbackId);
  const client = markedProxied(req, mark) ? undefined : clientKey(req.ip ?? "");
  if (!waits.enter(playbackId, client)) return undefined;
  try {
    return await wait();
  } finally {
    waits.leave(playbackId, client);
  }
}

/**
 * A rendition's live playlist, at once or (with `_HLS_msn`/`_HLS_part`) as soon as it holds
 * what was asked, within three target durations (RFC 8216bis §6.2.5.2: 503 after that). Only a
 * request that must wait counts against the caps on held-open requests.
 */
async function mediaPlaylist(req: Request, res: Response, packager: LivePackager, index: number, holds: Holds, queries?: UriQueries): Promise<void> {
  const query = parseBlockingQuery(req.query as Record<string, unknown>);
  if (!query.ok) return void res.status(400).json({ errors: [query.error] });
  const skip = req.query._HLS_skip;
  if (skip !== undefined && skip !== "YES" && skip !== "v2") return void res.status(400).json({ errors: ["_HLS_skip must be YES or v2 (RFC 8216bis 6.2.5.1)"] });
  const track = packager.tracks[index]!;
  const request = query.request;
  if (request) {
    if (tooFarAhead(track, request)) {
      return void res.status(400).json({ errors: [`_HLS_msn=${request.msn} is more than two segments past the playlist's last (${track.lastCompleteMsn})`] });
    }
    const ok = satisfies(track, request) || (await holdOpen(holds, req, () => packager.wait(index, () => satisfies(track, request), packager.targetDuration * 3 * 1000, gone(res))));
    if (res.destroyed) return;
    if (ok === undefined) return tooManyHeld(res);
    if (!ok) return void res.status(503).json({ errors: [`segment ${request.msn}${request.part !== undefined ? ` part ${request.part}` : ""} did not arrive in ${packager.targetDuration * 3} s`] });
  }
  // A viewer's own playlist names its media with tokens that expire: a player merging delta
  // updates keeps the skipped segments' URIs from its last whole reload, whose tokens run out
  // while it plays. Such viewers get the whole playlist every time, and are not offered deltas.
  if (queries) {
    const whole = packager.mediaPlaylistWithGzip(index);
    if (whole === undefined) return notFound(res);
    return sendPlaylist(req, res, withQueries(withoutDeltaUpdates(whole.text), queries), PER_VIEWER);
  }
  // A delta update where the playlist offers one (CAN-SKIP-UNTIL); the whole playlist otherwise.
  const playlist = packager.mediaPlaylistWithGzip(index, skip !== undefined);
  if (playlist === undefined) return notFound(res);
  // A blocking response names the state it waited for: a CDN may share it between the viewers
  // asking the same thing; an unqualified reload must revalidate.
  sendPlaylist(req, res, playlist.text, request ? `public, max-age=${packager.targetDuration * packager.windowSegments}` : "no-cache", playlist.gzip);
}

/**
 * A part, segment or init from memory. The part the preload hint names is awaited (Safari asks
 * for it before it exists). False: not in memory (an older file is looked for on disk).
 */
async function media(req: Request, res: Response, packager: LivePackager, index: number, file: string, gated: boolean, holds: Holds): Promise<boolean> {
  let found = packager.file(index, file);
  const partId = packager.partId(file);
  if (!found && partId !== undefined && partId === packager.tracks[index]!.next.partId) {
    const waited = await holdOpen(holds, req, () => packager.wait(index, () => packager.file(index, file) !== undefined, packager.targetDuration * 3 * 1000, gone(res)));
    if (res.destroyed) return true;
    if (waited === undefined) return (tooManyHeld(res), true);
    found = packager.file(index, file);
  }
  if (!found) return false;
  res.set({ "content-type": "video/mp4", "cache-control": cacheFor(gated, MEDIA_CACHE) });
  res.send(found.bytes);
  return true;
}

/** A viewer's playlist: its URIs carry what the gate gave (tokens, the viewer's credential). */
function withQueries(playlist: string, q: UriQueries): string {
  return addUriQuery(playlist, (role) => q[role]);
}
