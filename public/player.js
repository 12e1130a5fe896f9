// onair player: hls.js where MediaSource exists, the browser's own HLS otherwise (Safari).
// Live: polls /api/playback/<id> every 2 s; offline until meta.live is 1, then plays, and
// goes back to offline once the stream has ended. VOD (recordings): plays at once.
"use strict";
(function () {
  var POLL_MS = 2000;
  // Low-latency catch-up (hls.js's own does not engage below 1 s of buffer, where LL-HLS
  // plays): faster the further behind the target (1.1x at 0.1 s, 1.5x from 0.7 s: a stall's
  // second and a half is made up in about 6 s), normal speed once back.
  var CATCH_UP_EVERY_MS = 100;
  var BEHIND_S = 0.1;
  var CAUGHT_UP_S = 0.03;
  var MIN_RATE = 1.1;
  var MAX_RATE = 1.5;
  var RATE_PER_S = 0.7;
  // A stall moves hls.js's target back by liveSyncOnStallIncrease; after this long playing
  // again, the target returns to the playlist's own (PART-HOLD-BACK).
  var TARGET_RESET_MS = 5000;
  // After the stream ends, the last segments already fetched still play out; this caps the
  // wait for the video's "ended" when the player stalls instead.
  var ENDING_GRACE_MS = 15000;

  var root = document.getElementById("player");
  var video = document.getElementById("video");
  var badge = document.getElementById("live-badge");
  var offline = document.getElementById("offline");
  var errorBox = document.getElementById("error");
  var quality = document.getElementById("quality");
  var kind = root.dataset.kind;
  var src = root.dataset.src;

  var hls = null;
  var native = false;
  var endingTimer = null;
  var catchUpTimer = null;
  var targetResetTimer = null;
  // What tests and the latency bench read: the player, its stalls.
  var stats = { stalls: 0 };
  window.onairPlayer = stats;

  // The poster is the stream's newest thumbnail (the server builds its URL, with the page's
  // query): asked for again when the page goes offline, to show the picture the stream ended on.
  var poster = video.getAttribute("poster");
  function refreshPoster() {
    if (!poster) return;
    video.removeAttribute("poster");
    video.setAttribute("poster", poster);
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

  function catchUp() {
    if (!hls || video.paused || hls.latency === undefined || hls.targetLatency === undefined) return;
    var behind = hls.latency - hls.targetLatency;
    var rate = video.playbackRate;
    if (behind > BEHIND_S || (rate > 1 && behind >= CAUGHT_UP_S)) rate = Math.min(MAX_RATE, Math.max(MIN_RATE, 1 + behind * RATE_PER_S));
    else if (behind < CAUGHT_UP_S) rate = 1;
    if (Math.abs(rate - video.playbackRate) > 0.02) video.playbackRate = rate;
  }

  function teardown() {
    if (endingTimer) clearTimeout(endingTimer);
    endingTimer = null;
    if (catchUpTimer) clearInterval(catchUpTimer);
    catchUpTimer = null;
    if (targetResetTimer) clearTimeout(targetResetTimer);
    targetResetTimer = null;
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

  function load() {
    if (window.Hls && window.Hls.isSupported()) {
      var live = kind === "live";
      // Live: LL-HLS, half a second behind the newest part (Safari's native player keeps
      // PART-HOLD-BACK, 0.6 s); a stall costs 0.1 s of target, not hls.js's default 1 s for good.
      hls = new window.Hls(live ? { lowLatencyMode: true, liveSyncDuration: 0.5, liveSyncOnStallIncrease: 0.1, backBufferLength: 4 } : { lowLatencyMode: false });
      stats.hls = hls;
      var media = 0;
      var baseTarget;
      if (live) catchUpTimer = setInterval(catchUp, CATCH_UP_EVERY_MS);
      hls.on(window.Hls.Events.LEVEL_UPDATED, function () {
        if (baseTarget === undefined && hls.targetLatency) baseTarget = hls.targetLatency;
      });
      hls.on(window.Hls.Events.MANIFEST_PARSED, function (_event, data) {
        fillQuality(data.levels);
        play();
      });
      hls.on(window.Hls.Events.ERROR, function (_event, data) {
        if (data.details === window.Hls.ErrorDetails.BUFFER_STALLED_ERROR) {
          stats.stalls++;
          if (targetResetTimer) clearTimeout(targetResetTimer);
          targetResetTimer = setTimeout(function () {
            targetResetTimer = null;
            // The setter also clears hls.js's stall count.
            if (hls && baseTarget !== undefined) hls.targetLatency = baseTarget;
          }, TARGET_RESET_MS);
        }
        if (!data.fatal) return;
        // A decode hiccup is recoverable once or twice; anything else starts over (live: the
        // next poll reloads if the stream is still on).
        if (data.type === window.Hls.ErrorTypes.MEDIA_ERROR && media++ < 2) return hls.recoverMediaError();
        // A protected stream refused this viewer (no JWT or access key, or an expired one): say
        // so and stop, rather than polling as if the stream were offline.
        if (data.response && data.response.code === 401) {
          document.getElementById("error-text").textContent = "This stream needs a valid playback token (?jwt= or ?accessKey= in the page's address).";
          return fail("error");
        }
        fail(kind === "live" ? "offline" : "error");
      });
      hls.loadSource(src);
      hls.attachMedia(video);
    } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
      // Safari: its own HLS picks the rendition; the menu offers only Auto.
      native = true;
      video.src = src;
      play();
    } else {
      document.getElementById("error-text").textContent = "This browser cannot play HLS video.";
      setState("error");
      return false;
    }
    return true;
  }

  video.addEventListener("ended", function () {
    if (kind === "live") fail("offline");
  });
  video.addEventListener("error", function () {
    if (native) fail(kind === "live" ? "offline" : "error");
  });

  function onStatus(live) {
    var state = root.dataset.state;
    if (live && (state === "offline" || state === "loading")) {
      if (load()) setState("live");
    } else if (live && state === "ending") {
      // Live again before the last session finished playing: that playlist has ended, load anew.
      teardown();
      if (load()) setState("live");
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
      .then(function (info) { if (info && info.meta) onStatus(info.meta.live === 1); })
      .catch(function () { /* the server is unreachable for now: keep the state, ask again */ })
      .then(function () { setTimeout(poll, POLL_MS); });
  }

  if (kind === "vod") {
    if (load()) setState("vod");
  } else {
    poll();
  }
})();
