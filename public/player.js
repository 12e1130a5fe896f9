// onair player: hls.js where MediaSource exists, the browser's own HLS otherwise (Safari).
// Live: polls /api/playback/<id> every 2 s; offline until meta.live is 1, then plays (over
// WebRTC first when playback info lists it, public/whep.js, falling back to LL-HLS when it does
// not connect within WEBRTC_START_MS or then shows no frame), and goes back to offline once the stream has ended. VOD
// (recordings): plays at once.
"use strict";
(function () {
  var POLL_MS = 2000;
  // The live target is public/latencyTarget.js's: it moves with what this viewer measures; this
  // loop applies it (hls.js's target) and steers the playback rate toward it.
  var STEER_EVERY_MS = 100;
  // After the stream ends, the last segments already fetched still play out; this caps the
  // wait for the video's "ended" when the player stalls instead.
  var ENDING_GRACE_MS = 15000;
  // A live start waits for this much buffer (or START_WAIT_MS): starting on the first part, then
  // fetching the rest one request at a time, stalls on a busy machine or a far network.
  var START_BUFFER_S = 0.4;
  var START_WAIT_MS = 3000;
  // ICE, DTLS and the next keyframe (the ladder keeps one a segment) within this, or LL-HLS.
  var WEBRTC_START_MS = 3000;

  var root = document.getElementById("player");
  var video = document.getElementById("video");
  var badge = document.getElementById("live-badge");
  var offline = document.getElementById("offline");
  var errorBox = document.getElementById("error");
  var quality = document.getElementById("quality");
  var protocolLabel = document.getElementById("protocol");
  var kind = root.dataset.kind;
  var src = root.dataset.src;
  // Live DVR: the stream's playlists reach this far back; the seek bar covers what the player can seek.
  var dvrSeconds = Number(root.dataset.dvr) || 0;
  var dvrBar = document.getElementById("dvr");
  var seek = document.getElementById("seek");
  var behindLabel = document.getElementById("behind");
  var goLiveButton = document.getElementById("go-live");
  // The viewer went back on purpose: the player stays there (no catching up) until "Go live".
  var behindByChoice = false;
  var dragging = false;
  // Closer than this to the live edge is live (the target latency and a part or two of jitter).
  var LIVE_EDGE_S = 3;
  var SEEK_STEP_S = 5;

  var hls = null;
  var native = false;
  // A WebRTC playback (public/whep.js): { close() } once it plays, "starting" before.
  var webrtc = null;
  var endingTimer = null;
  var steerTimer = null;
  var latency = null;
  var startTimer = null;
  // The video ran dry and waits for data.
  var waiting = false;
  // What tests and the latency bench read: the player, its stalls, its live target.
  var stats = { stalls: 0, stallLog: [] };
  window.onairPlayer = stats;

  // The poster is the stream's newest thumbnail (the server builds its URL, with the page's
  // query): asked for again when the page goes offline, to show the picture the stream ended on.
  var poster = video.getAttribute("poster");
  function refreshPoster() {
    if (!poster) return;
    video.removeAttribute("poster");
    video.setAttribute("poster", poster);
  }

  // Which protocol plays, shown beside the title and read by tests: "webrtc", "hls" or none.
  function setProtocol(protocol) {
    stats.protocol = protocol;
    root.dataset.protocol = protocol || "";
    protocolLabel.hidden = !protocol;
    protocolLabel.textContent = protocol === "webrtc" ? "WebRTC" : protocol === "hls" ? "LL-HLS" : "";
  }

  function setState(state) {
    if (state === "offline" && kind === "live" && root.dataset.state !== "offline") refreshPoster();
    root.dataset.state = state;
    badge.hidden = state !== "live";
    offline.hidden = state !== "offline";
    errorBox.hidden = state !== "error";
  }

  function levelLabel(level) {
    if (level.name) return level.name;
    if (level.height) return level.height + "p";
    return Math.round(level.bitrate / 1000) + " kb/s";
  }

  function fillQuality(levels) {
    quality.textContent = "";
    var auto = document.createElement("option");
    auto.value = "-1";
    auto.textContent = "Auto";
    quality.appendChild(auto);
    // Best first, as players usually list them; the value is hls.js's level index.
    levels
      .map(function (level, index) { return { level: level, index: index }; })
      .sort(function (a, b) { return (b.level.height || 0) - (a.level.height || 0) || b.level.bitrate - a.level.bitrate; })
      .forEach(function (l) {
        var option = document.createElement("option");
        option.value = String(l.index);
        option.textContent = levelLabel(l.level);
        quality.appendChild(option);
      });
    quality.value = "-1";
    quality.disabled = levels.length < 2;
  }

  quality.addEventListener("change", function () {
    // currentLevel switches now (flushing what is buffered); -1 hands the choice back to ABR.
    if (hls) hls.currentLevel = Number(quality.value);
  });

  function play() {
    var attempt = video.play();
    // Browsers refuse to start sound without a click: start muted instead (the viewer unmutes).
    if (attempt && attempt.catch) {
      attempt.catch(function () {
        video.muted = true;
        video.play().catch(function () {});
      });
    }
  }

  // Forward buffer (s): what plays before the video runs dry (the range the playhead is in).
  function headroom() {
    var b = video.buffered;
    var t = video.currentTime;
    for (var i = 0; i < b.length; i++) if (b.start(i) <= t + 0.1 && t < b.end(i)) return b.end(i) - t;
    return 0;
  }

  // What a live start has buffered: hls.js moves the playhead to the start position only once the
  // first part is in, so it is measured from where the newest range begins.
  function startBuffer() {
    var b = video.buffered;
    return b.length ? b.end(b.length - 1) - Math.max(video.currentTime, b.start(b.length - 1)) : 0;
  }

  // hls.js's target follows ours (its setter also clears its own stall count: set only on change).
  function applyTarget(target) {
    if (hls.targetLatency !== null && Math.abs(hls.targetLatency - target) > 0.005) hls.targetLatency = target;
  }

  // The seekable window and where the playhead is in it; null before hls.js knows the playlist.
  function dvrRange() {
    if (!hls || !video.seekable.length) return null;
    var start = video.seekable.start(0);
    var edge = hls.liveSyncPosition || video.seekable.end(video.seekable.length - 1);
    return edge > start ? { start: start, edge: edge } : null;
  }

  function showDvr() {
    var r = dvrRange();
    // Shown once there is more to go back to than the live window itself.
    dvrBar.hidden = !r || r.edge - r.start < 15;
    if (!r) return;
    var behind = Math.max(0, r.edge - video.currentTime);
    if (behind < LIVE_EDGE_S && behindByChoice && !video.paused) behindByChoice = false;
    stats.dvr = { start: r.start, edge: r.edge, behind: behind, byChoice: behindByChoice };
    seek.max = String(Math.floor(r.edge - r.start));
    if (!dragging) seek.value = String(Math.round(video.currentTime - r.start));
    behindLabel.textContent = behind < LIVE_EDGE_S ? "live" : "-" + formatSeconds(behind);
    goLiveButton.disabled = behind < LIVE_EDGE_S;
  }

  function formatSeconds(s) {
    var t = Math.round(s);
    var m = Math.floor(t / 60);
    var sec = t % 60;
    return m > 0 ? m + ":" + (sec < 10 ? "0" : "") + sec : sec + " s";
  }

  function seekTo(position) {
    var r = dvrRange();
    if (!r) return;
    var at = Math.min(r.edge, Math.max(r.start, position));
    behindByChoice = r.edge - at >= LIVE_EDGE_S;
    if (behindByChoice) video.playbackRate = 1;
    video.currentTime = at;
    play();
    showDvr();
  }

  function goLive() {
    var r = dvrRange();
    behindByChoice = false;
    if (r) video.currentTime = r.edge;
    play();
    showDvr();
  }

  seek.addEventListener("input", function () { dragging = true; });
  seek.addEventListener("change", function () {
    dragging = false;
    var r = dvrRange();
    if (r) seekTo(r.start + Number(seek.value));
  });
  goLiveButton.addEventListener("click", goLive);

  // The seek bar's preview (public/seekPreview.js): the storyboard's tile of the point under the
  // pointer, or of where the bar is dragged. Read when the viewer first points at the bar (a
  // viewer who never seeks costs no storyboard), and again while in use when older than
  // PREVIEW_REFRESH_MS: it grows with the window.
  var storyboardUrl = root.dataset.storyboard;
  var preview = document.getElementById("seek-preview");
  var previewCues = null;
  var previewReadAt = 0;
  var PREVIEW_REFRESH_MS = 10000;
  function readStoryboard() {
    if (!storyboardUrl || Date.now() - previewReadAt < PREVIEW_REFRESH_MS) return;
    previewReadAt = Date.now();
    var url = new URL(storyboardUrl, location.href).href;
    fetch(url).then(function (r) { return r.ok ? r.text() : null; }).then(function (text) {
      // None (yet, or any more): no preview rather than tiles of a sprite that is gone.
      previewCues = text ? window.onairSeekPreview.parse(text, url) : null;
    }).catch(function () { /* no preview this time: the bar works without */ });
  }
  function showPreview(fraction) {
    readStoryboard();
    var r = dvrRange();
    var level = hls && (hls.levels[hls.currentLevel] || hls.levels[hls.loadLevel] || hls.levels[0]);
    var fragments = level && level.details ? level.details.fragments : null;
    if (!r || !fragments || !preview) return;
    var f = Math.min(1, Math.max(0, fraction));
    var t = r.start + f * (r.edge - r.start);
    var cue = window.onairSeekPreview.at(previewCues, window.onairSeekPreview.dateAt(fragments, t));
    if (!cue) return void (preview.hidden = true);
    var width = seek.getBoundingClientRect().width;
    preview.style.width = cue.w + "px";
    preview.style.height = cue.h + "px";
    preview.style.backgroundImage = 'url("' + cue.url + '")';
    preview.style.backgroundPosition = -cue.x + "px " + -cue.y + "px";
    preview.style.left = Math.max(0, Math.min(width - cue.w, f * width - cue.w / 2)) + "px";
    preview.hidden = false;
    stats.preview = { at: t, url: cue.url, x: cue.x, y: cue.y, w: cue.w, h: cue.h };
  }
  seek.addEventListener("pointermove", function (e) {
    var rect = seek.getBoundingClientRect();
    if (rect.width > 0) showPreview((e.clientX - rect.left) / rect.width);
  });
  seek.addEventListener("input", function () {
    if (Number(seek.max) > 0) showPreview(Number(seek.value) / Number(seek.max));
  });
  seek.addEventListener("pointerleave", function () { if (!dragging && preview) preview.hidden = true; });
  seek.addEventListener("change", function () { if (preview) preview.hidden = true; });
  document.addEventListener("keydown", function (e) {
    // Form controls keep their own keys: the seek bar its arrows, the quality list its choices.
    var control = e.target && e.target.closest && e.target.closest("input, select, textarea");
    if (!hls || dvrBar.hidden || control || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "l" || e.key === "L") goLive();
    else if (e.key === "ArrowLeft") seekTo(video.currentTime - SEEK_STEP_S);
    else if (e.key === "ArrowRight") seekTo(video.currentTime + SEEK_STEP_S);
    else return;
    e.preventDefault();
  });

  function steer() {
    if (!hls || !latency) return;
    if (dvrSeconds > 0) showDvr();
    // Behind the live edge by the viewer's choice: played at normal speed, where they put it.
    if (behindByChoice) {
      if (video.playbackRate !== 1) video.playbackRate = 1;
      return;
    }
    var target = latency.tick(Date.now());
    stats.targetLatency = target;
    stats.rtt = latency.rtt();
    applyTarget(target);
    var details = hls.latestLevelDetails;
    // An ended stream's playlist no longer moves, nor does hls.latency: play out at normal speed.
    if (!details || !details.live) {
      if (video.playbackRate !== 1) video.playbackRate = 1;
      return;
    }
    if (video.paused || !hls.latency) return;
    var rate = window.onairLatencyTarget.playbackRate(hls.latency - target, video.playbackRate, headroom(), latency.rtt());
    if (Math.abs(rate - video.playbackRate) > 0.02 || (rate === 1 && video.playbackRate !== 1)) video.playbackRate = rate;
  }

  // Time to first byte of a media request: a round trip plus the server's answer.
  function firstByte(stats) {
    return stats && stats.loading && stats.loading.first > 0 ? (stats.loading.first - stats.loading.start) / 1000 : -1;
  }

  // hls.js picks the next fragment to load at the buffer's end. Chrome keeps buffered ranges in
  // microseconds and hls.js offsets fMP4 timestamps by a float, so the end of a part can read
  // 1 µs short of the boundary (14.999999 for 15.0): hls.js then looks for the next part in the
  // segment it already has and loads nothing until the following segment is complete, a stall of
  // a second or two at a segment boundary (seen in the suite's 60 s test; more likely on a busy
  // machine). This stream controller moves such an end onto the boundary it falls short of.
  function boundaryStreamController(Base) {
    var SHORT_S = 1e-4;
    // The start of a part or segment that `end` falls just short of, if any.
    function boundaryAfter(end, details) {
      var lists = [details.partList || [], details.fragments, details.fragmentHint ? [details.fragmentHint] : []];
      for (var l = 0; l < lists.length; l++) {
        for (var i = 0; i < lists[l].length; i++) {
          var start = lists[l][i].start;
          if (start > end && start - end < SHORT_S) return start;
        }
      }
      return undefined;
    }
    // Asked at every tick of hls.js's loader: walks the listed parts, builds nothing.
    return class extends Base {
      getMainFwdBufferInfo() {
        var info = super.getMainFwdBufferInfo();
        try {
          var details = info && info.len > 0 && this.getLevelDetails();
          var boundary = details ? boundaryAfter(info.end, details) : undefined;
          if (boundary !== undefined) {
            info.len += boundary - info.end;
            info.end = boundary;
          }
        } catch (err) {
          // hls.js's internals moved: its own answer, unchanged.
        }
        return info;
      }
    };
  }

  // More buffered ahead than this is no live edge being played: no part is asked for early.
  var HINT_MAX_AHEAD_S = 3;

  function startLive() {
    if (!startTimer) return;
    clearTimeout(startTimer);
    startTimer = null;
    play();
  }

  function teardown() {
    dvrBar.hidden = true;
    behindByChoice = false;
    if (endingTimer) clearTimeout(endingTimer);
    endingTimer = null;
    if (steerTimer) clearInterval(steerTimer);
    steerTimer = null;
    latency = null;
    if (startTimer) clearTimeout(startTimer);
    startTimer = null;
    if (webrtc && webrtc.close) webrtc.close();
    if (webrtc) video.srcObject = null;
    webrtc = null;
    setProtocol(null);
    video.playbackRate = 1;
    if (hls) hls.destroy();
    hls = null;
    if (native) {
      video.removeAttribute("src");
      video.load();
    }
    native = false;
    fillQuality([]);
  }

  function fail(state) {
    teardown();
    setState(state);
  }

  // The WHEP URL playback info gives for this stream, with the page's jwt or access key.
  // `?protocol=hls` in the page's address keeps it on LL-HLS (an embedder's choice).
  function whepUrl(info) {
    var source = (info.meta.source || []).filter(function (s) { return s.hrn === "WebRTC (H264)"; })[0];
    if (!source || !window.RTCPeerConnection || !window.onairWhep) return null;
    if (new URLSearchParams(location.search).get("protocol") === "hls") return null;
    // On this page's origin, as the HLS source is (the page may connect to its own origin only).
    var url = new URL(new URL(source.url, location.href).pathname, location.href);
    var page = new URLSearchParams(location.search);
    ["jwt", "accessKey"].forEach(function (name) { if (page.get(name)) url.searchParams.set(name, page.get(name)); });
    return url.toString();
  }

  // WebRTC first; LL-HLS when it does not start (or fails before it plays). A stream with a DVR
  // window plays LL-HLS at once: WebRTC has nothing to seek back into.
  function loadLive(info) {
    var url = dvrSeconds > 0 ? null : whepUrl(info);
    if (!url) return load();
    var attempt = (webrtc = { starting: true });
    window.onairWhep.play(video, url, WEBRTC_START_MS, function (reason) {
      // A started playback ended (the stream ended, the connection failed): the next poll decides.
      if (webrtc !== attempt) return;
      stats.webrtcEnd = reason;
      fail("offline");
    }).then(function (session) {
      if (webrtc !== attempt) return session.close();
      attempt.close = session.close;
      // The viewer's WHEP resource: GET tells which rendition the server sends and why.
      stats.webrtcResource = session.resource;
      setProtocol("webrtc");
      fillQuality([]);
      play();
    }, function (err) {
      if (webrtc !== attempt) return;
      stats.webrtcError = String(err && err.message || err);
      webrtc = null;
      video.srcObject = null;
      // Refused by the playback policy: HLS would be refused alike.
      if (err && (err.status === 401 || err.status === 403)) return refusedToken();
      load();
    });
    return true;
  }

  function refusedToken() {
    document.getElementById("error-text").textContent = "This stream needs a valid playback token (?jwt= or ?accessKey= in the page's address).";
    fail("error");
  }

  function load() {
    if (window.Hls && window.Hls.isSupported()) {
      var live = kind === "live";
      if (live) latency = window.onairLatencyTarget.create(0.2, Date.now());
      var prefetcher = live ? window.onairPartHints.prefetcher() : null;
      // Live: LL-HLS at the measured target (public/latencyTarget.js), which owns the target and
      // the playback rate: hls.js's own step back per stall and its rate control (which also
      // resets any other rate to 1 at every timeupdate) are off.
      hls = new window.Hls(live ? {
        lowLatencyMode: true,
        liveSyncDuration: latency.target,
        liveSyncOnStallIncrease: 0,
        maxLiveSyncPlaybackRate: 1,
        backBufferLength: 4,
        streamController: boundaryStreamController(window.Hls.DefaultConfig.streamController),
        fLoader: window.onairPartHints.loader(window.Hls.DefaultConfig.loader, prefetcher),
      } : { lowLatencyMode: false });
      stats.hls = hls;
      var media = 0;
      if (live) {
        steerTimer = setInterval(steer, STEER_EVERY_MS);
        hls.on(window.Hls.Events.MANIFEST_LOADED, function (_event, data) {
          latency.observeRtt(firstByte(data.stats));
        });
        hls.on(window.Hls.Events.LEVEL_UPDATED, function (_event, data) {
          if (data.details.partTarget) latency.setPartTarget(data.details.partTarget);
          // Before the first fragment is asked for: the start position follows the target.
          applyTarget(latency.target);
        });
        // Played back in the window by choice, or paused with a buffer filling up (hls.js keeps
        // reloading the playlist meanwhile), the live edge's parts would be fetched for nothing.
        hls.on(window.Hls.Events.LEVEL_LOADED, function (_event, data) {
          if (!behindByChoice && headroom() < HINT_MAX_AHEAD_S) prefetcher.playlist(data.details);
        });
        hls.on(window.Hls.Events.FRAG_LOADED, function (_event, data) {
          var loaded = data.part ? data.part.stats : data.frag.stats;
          // A hinted part was asked for before it existed: its first byte says nothing of the network.
          if (!loaded.hinted) latency.observeRtt(firstByte(loaded));
        });
        hls.on(window.Hls.Events.BUFFER_APPENDED, function () {
          if (startTimer && startBuffer() >= START_BUFFER_S) startLive();
        });
        // Just before an append the buffer is at its lowest since the last one.
        // While stalled it says nothing new: the stall was counted.
        hls.on(window.Hls.Events.BUFFER_APPENDING, function () {
          if (!video.paused && !waiting && video.currentTime > 0) latency.observeHeadroom(headroom(), Date.now(), hls.latency);
        });
      }
      hls.on(window.Hls.Events.MANIFEST_PARSED, function (_event, data) {
        fillQuality(data.levels);
        if (!live) return play();
        startTimer = setTimeout(startLive, START_WAIT_MS);
      });
      hls.on(window.Hls.Events.ERROR, function (_event, data) {
        if (data.details === window.Hls.ErrorDetails.BUFFER_STALLED_ERROR) {
          stats.stalls++;
          // The last few, for whoever looks into them: where, with what buffer, at what target.
          stats.stallLog.push({ at: Math.round(video.currentTime * 100) / 100, buffer: data.buffer, target: latency ? latency.target : undefined, headroom: headroom(), playing: !video.paused });
          if (stats.stallLog.length > 10) stats.stallLog.shift();
          if (latency) latency.stalled(Date.now());
        }
        if (!data.fatal) return;
        // A decode hiccup is recoverable once or twice; anything else starts over (live: the
        // next poll reloads if the stream is still on).
        if (data.type === window.Hls.ErrorTypes.MEDIA_ERROR && media++ < 2) return hls.recoverMediaError();
        // A protected stream refused this viewer (no JWT or access key, or an expired one): say
        // so and stop, rather than polling as if the stream were offline.
        if (data.response && data.response.code === 401) return refusedToken();
        fail(kind === "live" ? "offline" : "error");
      });
      hls.loadSource(src);
      hls.attachMedia(video);
      setProtocol("hls");
    } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
      // Safari: its own HLS picks the rendition; the menu offers only Auto.
      native = true;
      video.src = src;
      setProtocol("hls");
      play();
    } else {
      document.getElementById("error-text").textContent = "This browser cannot play HLS video.";
      setState("error");
      return false;
    }
    return true;
  }

  video.addEventListener("playing", function () {
    waiting = false;
    if (latency) latency.playing(Date.now());
  });
  video.addEventListener("waiting", function () {
    waiting = true;
    // hls.js reports its own stalls; WebRTC's are the video running dry while it plays.
    if (stats.protocol === "webrtc" && video.currentTime > 0) stats.stalls++;
  });
  video.addEventListener("ended", function () {
    if (kind === "live") fail("offline");
  });
  video.addEventListener("error", function () {
    if (native) fail(kind === "live" ? "offline" : "error");
  });

  function onStatus(info) {
    var live = info.meta.live === 1;
    var state = root.dataset.state;
    if (live && (state === "offline" || state === "loading")) {
      if (loadLive(info)) setState("live");
    } else if (live && state === "ending") {
      // Live again before the last session finished playing: that playlist has ended, load anew.
      teardown();
      if (loadLive(info)) setState("live");
    } else if (!live && state === "live") {
      setState("ending");
      endingTimer = setTimeout(function () { fail("offline"); }, ENDING_GRACE_MS);
    } else if (!live && state === "loading") {
      setState("offline");
    }
  }

  function poll() {
    fetch(root.dataset.statusUrl, { cache: "no-store" })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (info) { if (info && info.meta) onStatus(info); })
      .catch(function () { /* the server is unreachable for now: keep the state, ask again */ })
      .then(function () { setTimeout(poll, POLL_MS); });
  }

  if (kind === "vod") {
    if (load()) setState("vod");
  } else {
    poll();
  }
})();
