import express from "express";
import { escapeHtml, renderPage, sendPage, serveAsset } from "./pages";

// The operator's dashboard at /. The server renders only the frame and the RTMP ingest base;
// public/dashboard.js asks the API with the key the operator typed, which stays in the
// browser (localStorage) and is never sent to any page route.

/** The dashboard's HTML. Pure: `rtmpUrl` is escaped here. */
export function renderDashboard(rtmpUrl: string): string {
  const body = `<main id="dashboard" data-rtmp-url="${escapeHtml(rtmpUrl)}">
<header>
<h1>onair</h1>
<form id="key-form" class="key" autocomplete="off">
<label for="key">API key</label>
<input id="key" type="password" placeholder="paste an API key" spellcheck="false">
<button type="submit">Use key</button>
<button type="button" id="forget" hidden>Forget key</button>
</form>
</header>
<p class="ingest">RTMP ingest: <code>${escapeHtml(rtmpUrl)}</code> + <code>/&lt;stream key&gt;</code> · WHIP: <code>/whip</code> with <code>Authorization: Bearer &lt;stream key&gt;</code> · <a href="/broadcast">Go live from this browser</a></p>
<p id="message" class="error" hidden></p>
<section id="content" hidden>
<h2>Streams</h2>
<table id="streams"><thead><tr><th>Name</th><th>Status</th><th>Viewers</th><th>Ingest</th><th>Playback</th></tr></thead><tbody></tbody></table>
<h2>Sessions and recordings</h2>
<table id="sessions"><thead><tr><th>Stream</th><th>Started</th><th>Length</th><th>Protocol</th><th>Recording</th><th></th></tr></thead><tbody></tbody></table>
<h2>Webhook deliveries</h2>
<div id="webhooks"></div>
</section>
</main>`;
  return renderPage({ title: "onair", body, scripts: ["dashboard.js"], bodyClass: "dashboard-page" });
}

export function dashboardRouter(rtmpUrl: () => string): express.Router {
  const router = express.Router();
  serveAsset(router, "dashboard.js", "dashboard.js");
  serveAsset(router, "onair.css", "onair.css");
  router.get("/", (_req, res) => sendPage(res, 200, renderDashboard(rtmpUrl()), { framable: false }));
  return router;
}
