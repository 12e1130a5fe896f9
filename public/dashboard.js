// onair dashboard: everything comes from the REST API with the operator's key, which is kept
// in this browser's localStorage only. Every value is put into the page as text, never HTML.
"use strict";
(function () {
  var KEY_ITEM = "onair.apiKey";
  var POLL_MS = 4000;

  var root = document.getElementById("dashboard");
  var rtmpUrl = root.dataset.rtmpUrl;
  var form = document.getElementById("key-form");
  var keyInput = document.getElementById("key");
  var forget = document.getElementById("forget");
  var message = document.getElementById("message");
  var content = document.getElementById("content");
  var revealed = {}; // stream id → stream key shown
  var timer = null;

  function el(tag, props, children) {
    var node = document.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      if (k === "text") node.textContent = props[k];
      else if (k === "onclick") node.addEventListener("click", props[k]);
      else node.setAttribute(k, props[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  function api(path) {
    return fetch("/api" + path, { headers: { authorization: "Bearer " + localStorage.getItem(KEY_ITEM) }, cache: "no-store" }).then(function (res) {
      if (res.status === 401) throw Object.assign(new Error("The API key was refused: enter a valid one."), { refused: true });
      if (!res.ok) throw new Error("GET /api" + path + " answered " + res.status);
      return res.json();
    });
  }

  function when(ms) { return ms ? new Date(ms).toLocaleString() : ""; }
  function length(s) {
    var sec = Math.max(0, Math.round((s.lastSeen - s.createdAt) / 1000));
    return Math.floor(sec / 60) + " min " + (sec % 60) + " s";
  }
  function rows(tbody, list, columns, emptyText) {
    tbody.textContent = "";
    if (list.length === 0) tbody.appendChild(el("tr", {}, [el("td", { class: "empty", colspan: String(columns), text: emptyText })]));
    list.forEach(function (cells) { tbody.appendChild(el("tr", {}, cells.map(function (c) { return el("td", {}, [c]); }))); });
  }
  function status(text, cls) { return el("span", { class: "status " + (cls || ""), text: text }); }

  // Live, reconnecting (the publisher left; the session waits for it) or idle, with the
  // stream's health issues (isHealthy/issues) listed under it for the broadcaster to act on.
  function streamState(s) {
    var reconnecting = !s.isActive && s.issues && s.issues.some(function (i) { return i.indexOf("reconnecting") === 0; });
    var badge = s.suspended ? status("suspended", "bad") : s.isActive ? status("live", "live") : reconnecting ? status("reconnecting", "bad") : status("idle");
    if (s.isHealthy === null || s.isHealthy === undefined) return badge;
    var health = s.isHealthy ? [status("healthy", "ok")] : (s.issues || []).map(function (i) { return el("li", { text: i }); });
    return el("span", { class: "health" }, [badge, document.createTextNode(" "),
      s.isHealthy ? health[0] : el("ul", { class: "issues" }, health)]);
  }

  // Concurrent viewers of a live stream (GET /api/data/views/now), with how many play over
  // WebRTC and how many over HLS ("3 viewers · 2 WebRTC, 1 HLS"); nothing for one not live.
  function viewerCount(s, viewers) {
    if (!s.isActive) return el("span", { class: "viewers", text: "" });
    var v = viewers[s.playbackId] || { total: 0, webrtc: 0 };
    var text = v.total + (v.total === 1 ? " viewer" : " viewers");
    var parts = [];
    if (v.webrtc > 0) parts.push(v.webrtc + " WebRTC");
    if (v.total - v.webrtc > 0) parts.push((v.total - v.webrtc) + " HLS");
    if (parts.length > 0) text += " · " + parts.join(", ");
    return el("span", { class: "viewers", text: text });
  }

  function renderStreams(streams, viewers) {
    rows(document.querySelector("#streams tbody"), streams.map(function (s) {
      var key = revealed[s.id]
        ? el("span", {}, [el("code", { text: rtmpUrl + "/" + s.streamKey }), document.createTextNode(" "),
            el("button", { type: "button", text: "Hide key", onclick: function () { delete revealed[s.id]; refresh(); } })])
        : el("span", {}, [el("code", { text: rtmpUrl }), document.createTextNode(" "),
            el("button", { type: "button", class: "reveal", text: "Show stream key", onclick: function () { revealed[s.id] = true; refresh(); } })]);
      return [
        el("span", { text: s.name }),
        streamState(s),
        viewerCount(s, viewers),
        key,
        el("span", { class: "actions" }, [
          el("a", { href: "/play/" + encodeURIComponent(s.playbackId), text: "Watch" }),
          el("a", { href: "/broadcast?stream=" + encodeURIComponent(s.id), class: "go-live", text: "Go live" }),
        ]),
      ];
    }), 5, "No streams yet: create one with POST /api/stream.");
  }

  // The API's URL (signed: its query is what opens the recording), on this page's origin like
  // every other link here: PUBLIC_URL may name a host this browser does not reach.
  function sameOrigin(url) {
    var u = new URL(url, location.href);
    return u.pathname + u.search;
  }

  function renderSessions(sessions, playbackIds) {
    rows(document.querySelector("#sessions tbody"), sessions.map(function (s) {
      var playbackId = s.playbackId || playbackIds[s.parentId];
      var actions = el("span", { class: "actions" }, [
        s.record && playbackId ? el("a", { href: "/play/" + encodeURIComponent(playbackId) + "?session=" + encodeURIComponent(s.id), text: "Play" }) : null,
        s.recordingStatus === "ready" && s.mp4Url ? el("a", { href: sameOrigin(s.mp4Url), download: "", text: "Download MP4" }) : null,
      ]);
      var rec = !s.record ? status("not recorded") : s.recordingStatus === "ready" ? status("ready", "ok")
        : s.recordingStatus === "failed" ? status("failed", "bad") : status(s.recordingStatus || "recording");
      return [el("span", { text: s.name }), el("span", { text: when(s.createdAt) }), s.isActive ? status("live", "live") : el("span", { text: length(s) }),
        el("span", { class: "protocol", text: s.protocol || "rtmp" }), rec, actions];
    }), 6, "No sessions yet.");
  }

  function renderWebhooks(hooks) {
    var box = document.getElementById("webhooks");
    box.textContent = "";
    if (hooks.length === 0) box.appendChild(el("p", { class: "ingest", text: "No webhooks." }));
    hooks.forEach(function (h) {
      var table = el("table", {}, [
        el("thead", {}, [el("tr", {}, ["Time", "Event", "Attempt", "Result", "Duration"].map(function (t) { return el("th", { text: t }); }))]),
        el("tbody"),
      ]);
      rows(table.querySelector("tbody"), h.log.map(function (l) {
        var result = l.response ? l.response.status + " " + l.response.statusText : l.error || "no response";
        return [el("span", { text: when(l.createdAt) }), el("span", { text: l.event }), el("span", { text: String(l.attempt) }),
          status(result, l.success ? "ok" : "bad"), el("span", { text: l.duration.toFixed(2) + " s" })];
      }), 5, "No deliveries yet.");
      box.appendChild(el("h3", {}, [document.createTextNode(h.name + " "), el("code", { text: h.url })]));
      box.appendChild(table);
    });
  }

  function refresh() {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!localStorage.getItem(KEY_ITEM)) return;
    Promise.all([
      api("/stream?streamsonly=1&limit=100"),
      api("/session?limit=50"),
      api("/data/views/now?breakdownBy[]=playbackId"),
      api("/webhook").then(function (hooks) {
        return Promise.all(hooks.map(function (h) {
          return api("/webhook/" + encodeURIComponent(h.id) + "/log?limit=10").then(function (log) { h.log = log; return h; });
        }));
      }),
    ]).then(function (all) {
      var playbackIds = {};
      all[0].forEach(function (s) { playbackIds[s.id] = s.playbackId; });
      var viewers = {};
      all[2].forEach(function (v) { viewers[v.playbackId] = { total: v.viewCount, webrtc: v.webrtcViewCount || 0 }; });
      renderStreams(all[0], viewers);
      renderSessions(all[1], playbackIds);
      renderWebhooks(all[3]);
      message.hidden = true;
      content.hidden = false;
    }).catch(function (err) {
      message.textContent = err.message;
      message.hidden = false;
      if (err.refused) content.hidden = true;
    }).then(function () {
      if (localStorage.getItem(KEY_ITEM)) timer = setTimeout(refresh, POLL_MS);
    });
  }

  function showKeyState() {
    var has = !!localStorage.getItem(KEY_ITEM);
    forget.hidden = !has;
    keyInput.placeholder = has ? "key saved in this browser" : "paste an API key";
    if (!has) content.hidden = true;
  }

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var key = keyInput.value.trim();
    if (!key) return;
    localStorage.setItem(KEY_ITEM, key);
    keyInput.value = "";
    showKeyState();
    refresh();
  });
  forget.addEventListener("click", function () {
    localStorage.removeItem(KEY_ITEM);
    revealed = {};
    message.hidden = true;
    showKeyState();
  });

  showKeyState();
  refresh();
})();
