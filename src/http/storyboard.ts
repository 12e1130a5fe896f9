import express, { type Request, type Response } from "express";
import { STORYBOARD_SPRITE, STORYBOARD_SPRITE_PARAM, STORYBOARD_VTT } from "../media";
import { MEDIA_PARAM, type Credentials } from "../playback";
import { isGated, type PlaybackPolicy } from "../shapes";
import { credentials, proxy, refused, type HlsAccess, type RemoteNodes } from "./hls";
import { markedProxied } from "./proxyMark";

// A DVR stream's seek preview (src/media/storyboard.ts): `/hls/<playbackId>/storyboard.vtt` and
// the sprite its cues point into, `/hls/<playbackId>/storyboard.jpg?v=<id>`: the id names the
// build drawn from exactly the VTT's tiles. Gated as the live media are; both change as the
// window moves, so neither is cached unchecked (nor, when gated, by a shared cache).

const PLAYBACK_ID = /^[0-9a-z]{16}$/;
const SPRITE_ID = /^[0-9a-z]{1,32}$/;
const notFound = (res: Response) => void res.status(404).json({ errors: ["not found"] });

/** What the routes ask of the storyboards (LiveStoryboard, src/assets). */
export interface Storyboards {
  /** This node keeps the stream's storyboard (it packages its DVR session, or did). */
  has(playbackId: string): boolean;
  vtt(playbackId: string, spriteUrl: (id: string) => string): Promise<string | undefined>;
  sprite(playbackId: string, id?: string): Promise<string | undefined>;
}

const text = (v: unknown) => (typeof v === "string" && v.length > 0 && v.length <= 8192 ? v : undefined);

/**
 * The credential a gated stream's sprite URL carries (pure): the one the gate checks for the
 * policy (a header's too: an image request sends none), else the viewer's media token. Nothing
 * else of the VTT's query is passed on.
 */
export function spriteCredential(policy: PlaybackPolicy | null, c: Credentials): Record<string, string> {
  if (!isGated(policy)) return {};
  const jwt = text(c.jwtHeader) ?? text(c.jwt);
  if (policy?.type === "jwt" && jwt) return { jwt };
  const accessKey = text(c.accessKey);
  if (policy?.type === "webhook" && accessKey) return { accessKey };
  const media = text(c.media);
  return media ? { [MEDIA_PARAM]: media } : {};
}

/** The sprite's URL, relative to the VTT's (pure): build `id`, and the viewer's credential. */
export function spriteUrl(id: string, credential: Record<string, string>): string {
  return `${STORYBOARD_SPRITE}?${new URLSearchParams({ [STORYBOARD_SPRITE_PARAM]: id, ...credential }).toString()}`;
}

/**
 * The storyboard's two routes; a stream without DVR, or without a tile yet, is a 404. The
 * storyboard is kept where the stream is packaged: `remote` finds that node when it is another
 * (several nodes), and the request is passed there, to be gated there as its HLS requests are.
 */
export function storyboardRouter(storyboards: Storyboards, access: HlsAccess, remote?: RemoteNodes): express.Router {
  const router = express.Router();
  /** Passed to the node that has the stream's storyboard: true once answered. */
  const elsewhere = async (req: Request, res: Response): Promise<boolean> => {
    const playbackId = String(req.params.playbackId);
    if (!remote || !PLAYBACK_ID.test(playbackId) || storyboards.has(playbackId) || markedProxied(req, remote.mark)) return false;
    const base = await remote.find(playbackId);
    if (!base) return false;
    res.set("access-control-allow-origin", "*");
    await proxy(req, res, base, remote.mark);
    return true;
  };
  /** The viewer the gate admits (with the credential its sprite URL carries), or undefined: the answer is sent. */
  const admitted = async (req: Request, res: Response): Promise<Record<string, string> | undefined> => {
    const playbackId = String(req.params.playbackId);
    if (!PLAYBACK_ID.test(playbackId)) return void notFound(res);
    const subject = await access.subject(playbackId);
    if (!subject) return void notFound(res);
    const verdict = await access.gate.media(subject, credentials(req));
    if (!verdict.ok) return void refused(res, verdict);
    res.set({ "access-control-allow-origin": "*", "cache-control": isGated(subject.policy) ? "private, no-cache" : "no-cache" });
    return spriteCredential(subject.policy, credentials(req));
  };
  router.get(`/hls/:playbackId/${STORYBOARD_VTT}`, async (req, res) => {
    if (await elsewhere(req, res)) return;
    const credential = await admitted(req, res);
    if (!credential) return;
    const vtt = await storyboards.vtt(req.params.playbackId, (id) => spriteUrl(id, credential));
    if (vtt === undefined) return notFound(res);
    res.set("content-type", "text/vtt; charset=utf-8").send(Buffer.from(vtt));
  });
  router.get(`/hls/:playbackId/${STORYBOARD_SPRITE}`, async (req, res) => {
    if (await elsewhere(req, res)) return;
    if (!(await admitted(req, res))) return;
    const id = req.query[STORYBOARD_SPRITE_PARAM];
    if (id !== undefined && (typeof id !== "string" || !SPRITE_ID.test(id))) return notFound(res);
    const file = await storyboards.sprite(req.params.playbackId, id);
    if (file === undefined) return notFound(res);
    res.sendFile(file, { headers: { "content-type": "image/jpeg" }, cacheControl: false, lastModified: true, etag: true }, (err) => {
      if (err && !res.headersSent) notFound(res);
    });
  });
  return router;
}
