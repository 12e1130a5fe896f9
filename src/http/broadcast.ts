import express from "express";
import { escapeHtml, OBJECT_ID, renderPage, sendPage, serveAsset } from "./pages";

// "Go live" from a browser tab: /broadcast picks a camera and microphone (or a screen), shows
// a preview and publishes over WHIP to this server. The key (a stream key, or an API key to
// pick one of its streams) is typed into the page and kept in this browser only;
// public/broadcast.js does the rest.

/** The broadcast page's HTML. Pure: nothing of the request is put into it but `streamId`, escaped. */
export function renderBroadcast(streamId: string | undefined): string {
  const body = `<main id="broadcast" data-stream-id="${escapeHtml(streamId ?? "")}" data-state="idle">
<header><h1>Go live</h1><a href="/">Dashboard</a></header>
<form id="keys" class="key" autocomplete="off">
<label for="stream-key">Stream key</label>
<input id="stream-key" type="password" placeholder="xxxx-xxxx-xxxx-xxxx" spellcheck="false">
<span class="or">or</span>
<label for="api-key">API key</label>
<input id="api-key" type="password" placeholder="to pick one of your streams" spellcheck="false">
<select id="stream" hidden></select>
<button type="button" id="forget">Forget keys</button>
</form>
<section class="studio">
<div class="stage"><video id="preview" muted autoplay playsinline></video><span id="live-badge" class="badge" hidden>LIVE</span></div>
<div class="controls">
<label>Source <select id="source"><option value="camera">Camera and microphone</option><option value="screen">Screen</option></select></label>
<label>Camera <select id="camera"></select></label>
<label>Microphone <select id="microphone"></select></label>
<label>Resolution <select id="resolution"><option value="1920x1080">1080p</option><option value="1280x720" selected>720p</option><option value="854x480">480p</option><option value="640x360">360p</option></select></label>
<label>Bitrate <select id="bitrate"><option value="6000">6 Mbit/s</option><option value="4000">4 Mbit/s</option><option value="2500" selected>2.5 Mbit/s</option><option value="1200">1.2 Mbit/s</option><option value="600">600 kbit/s</option></select></label>
<div class="buttons"><button type="button" id="go-live">Go live</button><button type="button" id="stop" disabled>Stop</button></div>
<p id="status" class="status">Not live</p>
<p id="stats" class="stats"></p>
<ul id="issues" class="issues"></ul>
<p id="watch" hidden><a id="watch-link" href="#" target="_blank" rel="noopener">Watch the stream</a></p>
<p id="message" class="error" hidden></p>
</div>
</section>
</main>`;
  return renderPage({ title: "Go live · onair", body, scripts: ["broadcast.js"], bodyClass: "broadcast-page" });
}

export function broadcastRouter(): express.Router {
  const router = express.Router();
  serveAsset(router, "broadcast.js", "broadcast.js");
  router.get("/broadcast", (req, res) => {
    const stream = typeof req.query.stream === "string" && OBJECT_ID.test(req.query.stream) ? req.query.stream : undefined;
    sendPage(res, 200, renderBroadcast(stream), { framable: false });
  });
  return router;
}
