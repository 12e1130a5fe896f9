import express, { type Request, type Response } from "express";
import type { Store } from "../db";
import { dvrWindowSeconds, isGated } from "../shapes";
import { STORYBOARD_VTT, THUMBNAIL_FILE } from "../media";
import { malformedPathIsNotFound } from "./malformedPath";
import { escapeHtml, OBJECT_ID, renderPage, sendPage, serveAsset } from "./pages";

// The viewer's page: /play/<playbackId> plays the live stream (offline until it goes live, then
// on by itself), /play/<playbackId>?session=<sessionId> one of its recordings. The page carries
// its data in data- attributes; public/player.js does the rest in the browser.

const PLAYBACK_ID = /^[0-9a-z]{16}$/;

export interface PlayerView {
  title: string;
  playbackId: string;
  /** Where the HLS master playlist is, relative to the page's origin. */
  src: string;
  /** live: poll for the stream going live; vod: a recording, playable now. */
  kind: "live" | "vod";
  /** The thumbnail shown until the video plays (and after a live stream ends), relative to the page's origin. */
  poster?: string;
  /** Live DVR: seconds the stream's playlists reach back (0 or unsaid: none); the page then offers a seek bar. */
  dvrSeconds?: number;
  /** Live DVR: the storyboard VTT the seek bar's preview reads, relative to the page's origin. */
  storyboard?: string;
}

/** The player page's HTML. Pure: every value is escaped here. */
export function renderPlayer(v: PlayerView): string {
  const attr = escapeHtml;
  const body = `<main id="player" data-kind="${attr(v.kind)}" data-src="${attr(v.src)}" data-status-url="/api/playback/${attr(v.playbackId)}" data-dvr="${attr(String(v.dvrSeconds ?? 0))}"${v.storyboard ? ` data-storyboard="${attr(v.storyboard)}"` : ""} data-state="loading">
<div class="stage">
<video id="video" controls playsinline${v.poster ? ` poster="${attr(v.poster)}"` : ""}></video>
<div id="offline" class="notice" hidden><strong>This stream is offline.</strong><span>Playback starts by itself when it goes live.</span></div>
<div id="error" class="notice" hidden><strong id="error-text">This recording cannot be played.</strong></div>
<span id="live-badge" class="badge" hidden>LIVE</span>
<span id="protocol" class="badge protocol" hidden></span>
</div>
<div id="dvr" class="dvr" hidden>
<div id="seek-preview" class="seek-preview" hidden></div>
<input id="seek" type="range" min="0" max="0" step="1" value="0" aria-label="Position in the live stream (arrow keys: 1 s; L: go live)">
<span id="behind" class="behind" aria-live="polite"></span>
<button id="go-live" type="button" title="Back to the live edge (L)">Go live</button>
</div>
<div class="bar">
<h1>${escapeHtml(v.title)}</h1>
<label class="quality">Quality <select id="quality" disabled><option value="-1">Auto</option></select></label>
</div>
</main>`;
  return renderPage({ title: `${v.title} · onair`, body, scripts: ["hls.min.js", "latencyTarget.js", "seekPreview.js", "partHints.js", "whep.js", "player.js"], bodyClass: "player-page" });
}

/**
 * What the page's own URL shows for a gated stream (`?jwt=` or `?accessKey=`), passed on to the
 * master playlist: the page of a `jwt` stream is embedded as `/play/<playbackId>?jwt=<token>`.
 */
export function viewerQuery(req: Request): string {
  const q = new URLSearchParams();
  for (const name of ["jwt", "accessKey"]) {
    const v = req.query[name];
    if (typeof v === "string" && v.length > 0 && v.length <= 8192) q.set(name, v);
  }
  const text = q.toString();
  return text === "" ? "" : `?${text}`;
}

function notFoundPage(res: Response): void {
  const body = `<main class="message"><h1>Not found</h1><p>There is no stream or recording at this address.</p></main>`;
  sendPage(res, 404, renderPage({ title: "Not found · onair", body, scripts: [], bodyClass: "message-page" }), { framable: true });
}

/**
 * `signRecording`: the page of a recording embeds its signed playlist URL, so the page is what
 * the stream's playback id and the session id together open, and the session id alone opens
 * nothing.
 */
export function playerRouter(store: Store, signRecording: (sessionId: string) => string, dvrDefaultSeconds = 0): express.Router {
  const router = express.Router();
  serveAsset(router, "hls.min.js", require.resolve("hls.js/dist/hls.min.js"));
  serveAsset(router, "latencyTarget.js", "latencyTarget.js");
  serveAsset(router, "seekPreview.js", "seekPreview.js");
  serveAsset(router, "partHints.js", "partHints.js");
  serveAsset(router, "whep.js", "whep.js");
  serveAsset(router, "player.js", "player.js");
  serveAsset(router, "onair.css", "onair.css");

  router.get("/play/:playbackId", async (req: Request, res: Response) => {
    const { playbackId } = req.params as { playbackId: string };
    const session = req.query.session;
    const stream = PLAYBACK_ID.test(playbackId) ? await store.streams.getByPlaybackId(playbackId) : undefined;
    if (!stream) return notFoundPage(res);
    if (session === undefined) {
      const src = `/hls/${playbackId}/index.m3u8${viewerQuery(req)}`;
      // Built beside src, with the same query: whatever opens the playlist opens the poster.
      const poster = `/hls/${playbackId}/${THUMBNAIL_FILE}${viewerQuery(req)}`;
      const dvrSeconds = dvrWindowSeconds(stream.dvrWindow, dvrDefaultSeconds);
      const storyboard = dvrSeconds > 0 ? `/hls/${playbackId}/${STORYBOARD_VTT}${viewerQuery(req)}` : undefined;
      return sendPage(res, 200, renderPlayer({ title: stream.name, playbackId, src, kind: "live", poster, dvrSeconds, storyboard }), { framable: true });
    }
    // A protected stream's recordings are not opened by a page anyone with the ids can load:
    // their signed URLs go to the owner through the API.
    if (isGated(stream.playbackPolicy)) return notFoundPage(res);
    // A recording of this stream only: a session id alone never reveals another stream's.
    const record = typeof session === "string" && OBJECT_ID.test(session) ? await store.sessions.get(session) : undefined;
    if (!record || !record.record || record.parentId !== stream.id) return notFoundPage(res);
    const title = `${stream.name} · recording of ${new Date(record.createdAt).toISOString().slice(0, 16).replace("T", " ")} UTC`;
    const src = `/recordings/${record.id}/index.m3u8?sig=${signRecording(record.id)}`;
    const poster = `/recordings/${record.id}/${THUMBNAIL_FILE}?sig=${signRecording(record.id)}`;
    sendPage(res, 200, renderPlayer({ title, playbackId, src, kind: "vod", poster }), { framable: true });
  });
  router.use(malformedPathIsNotFound);
  return router;
}
