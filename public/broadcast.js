// onair "Go live": capture a camera and microphone (or a screen) and publish it over WHIP
// (RFC 9725) to this server. The keys stay in this browser's localStorage; values go into the
// page as text, never HTML.
"use strict";
(function () {
  var STREAM_KEY_ITEM = "onair.streamKey";
  var API_KEY_ITEM = "onair.apiKey"; // shared with the dashboard
  var POLL_MS = 2000;

  var root = document.getElementById("broadcast");
  var $ = function (id) { return document.getElementById(id); };
  var streamKeyInput = $("stream-key"), apiKeyInput = $("api-key"), streamSelect = $("stream");
  var preview = $("preview"), statusText = $("status"), stats = $("stats"), issues = $("issues"), message = $("message");
  var goLive = $("go-live"), stop = $("stop");
  var media = null, pc = null, resource = null, poll = null, lastBytes = null;
  // Captures run one after another: a second one must not stop tracks the first handed out.
  var capturing = Promise.resolve();
  var streams = {}; // id → stream (API key mode)

  function setState(state, text) {
    root.dataset.state = state;
    statusText.textContent = text;
    $("live-badge").hidden = state !== "live";
  }
  function fail(text) {
    message.textContent = text;
    message.hidden = false;
  }

  function api(path) {
    return fetch("/api" + path, { headers: { authorization: "Bearer " + localStorage.getItem(API_KEY_ITEM) }, cache: "no-store" }).then(function (res) {
      if (!res.ok) throw new Error(res.status === 401 ? "The API key was refused." : "GET /api" + path + " answered " + res.status);
      return res.json();
    });
  }

  // With an API key: its streams to pick from (the dashboard's "Go live" link preselects one).
  function loadStreams() {
    if (!localStorage.getItem(API_KEY_ITEM)) return Promise.resolve();
    return api("/stream?streamsonly=1&limit=100").then(function (list) {
      streamSelect.textContent = "";
      streams = {};
      list.forEach(function (s) {
        streams[s.id] = s;
        var o = document.createElement("option");
        o.value = s.id;
        o.textContent = s.name;
        streamSelect.appendChild(o);
      });
      if (root.dataset.streamId && streams[root.dataset.streamId]) streamSelect.value = root.dataset.streamId;
      streamSelect.hidden = list.length === 0;
    }).catch(function (err) { fail(err.message); });
  }

  function chosenKey() {
    var typed = streamKeyInput.value.trim() || localStorage.getItem(STREAM_KEY_ITEM);
    if (typed) return typed;
    var s = streams[streamSelect.value];
    return s && s.streamKey;
  }

  function listDevices() {
    return navigator.mediaDevices.enumerateDevices().then(function (devices) {
      [["camera", "videoinput"], ["microphone", "audioinput"]].forEach(function (pair) {
        var select = $(pair[0]), current = select.value;
        select.textContent = "";
        devices.filter(function (d) { return d.kind === pair[1]; }).forEach(function (d, i) {
          var o = document.createElement("option");
          o.value = d.deviceId;
          o.textContent = d.label || pair[0] + " " + (i + 1);
          select.appendChild(o);
        });
        if (current) select.value = current;
      });
    });
  }

  function capture() {
    var size = $("resolution").value.split("x").map(Number);
    var video = { width: { ideal: size[0] }, height: { ideal: size[1] }, frameRate: { ideal: 30 } };
    if ($("source").value === "screen") {
      return navigator.mediaDevices.getDisplayMedia({ video: video, audio: true });
    }
    if ($("camera").value) video.deviceId = { exact: $("camera").value };
    var audio = $("microphone").value ? { deviceId: { exact: $("microphone").value } } : true;
    return navigator.mediaDevices.getUserMedia({ video: video, audio: audio });
  }

  // The preview follows the choices while not live; live, the source stays as it is.
  function showPreview() {
    capturing = capturing.then(function () {
      if (pc) return;
      return capture().then(function (stream) {
        if (media) media.getTracks().forEach(function (t) { t.stop(); });
        media = stream;
        preview.srcObject = stream;
        return listDevices();
      }).catch(function (err) { fail("No camera or microphone: " + err.message); });
    });
    return capturing;
  }

  // H.264 with packetization-mode 1 is what onair ingests: asked for first.
  function preferH264(transceiver) {
    if (!transceiver.setCodecPreferences || !RTCRtpSender.getCapabilities) return;
    var codecs = RTCRtpSender.getCapabilities("video").codecs;
    var h264 = codecs.filter(function (c) { return c.mimeType === "video/H264" && /packetization-mode=1/.test(c.sdpFmtpLine || ""); });
    h264.sort(function (a, b) { return rank(a) - rank(b); });
    if (h264.length) transceiver.setCodecPreferences(h264);
    function rank(c) { return /profile-level-id=42e0/.test(c.sdpFmtpLine) ? 0 : 1; }
  }

  function gathered(peer) {
    return new Promise(function (resolve) {
      if (peer.iceGatheringState === "complete") return resolve();
      var done = function () { if (peer.iceGatheringState === "complete") resolve(); };
      peer.addEventListener("icegatheringstatechange", done);
      setTimeout(resolve, 2000); // enough candidates by then; the server needs no more
    });
  }

  function start() {
    message.hidden = true;
    var key = chosenKey();
    if (!key) return fail("Enter a stream key, or an API key and pick a stream.");
    if (streamKeyInput.value.trim()) localStorage.setItem(STREAM_KEY_ITEM, streamKeyInput.value.trim());
    goLive.disabled = true;
    setState("connecting", "Connecting…");
    capturing.then(function () {
      return media ? undefined : showPreview();
    }).then(function () {
      if (!media) throw new Error("nothing to publish");
      pc = new RTCPeerConnection();
      var kbps = Number($("bitrate").value);
      media.getTracks().forEach(function (track) {
        var t = pc.addTransceiver(track, { direction: "sendonly", sendEncodings: track.kind === "video" ? [{ maxBitrate: kbps * 1000 }] : undefined });
        if (track.kind === "video") {
          preferH264(t);
          var params = t.sender.getParameters();
          params.degradationPreference = "maintain-resolution";
          t.sender.setParameters(params).catch(function () {});
        }
      });
      pc.addEventListener("connectionstatechange", function () {
        if (pc && pc.connectionState === "failed") { fail("The connection to the server failed."); end(); }
      });
      return pc.createOffer();
    }).then(function (offer) {
      return pc.setLocalDescription(offer);
    }).then(function () {
      return gathered(pc);
    }).then(function () {
      return fetch("/whip", { method: "POST", headers: { "content-type": "application/sdp", authorization: "Bearer " + key }, body: pc.localDescription.sdp });
    }).then(function (res) {
      if (res.status !== 201) {
        return res.json().then(function (body) { throw new Error((body.errors || []).join("; ") || "the server answered " + res.status); },
          function () { throw new Error("the server answered " + res.status); });
      }
      resource = new URL(res.headers.get("location"), location.href).toString();
      return res.text().then(function (answer) { return pc.setRemoteDescription({ type: "answer", sdp: answer }); });
    }).then(function () {
      stop.disabled = false;
      setState("connecting", "Connected: waiting for the stream to go live…");
      poll = setInterval(check, POLL_MS);
    }).catch(function (err) {
      fail("Could not go live: " + err.message);
      end();
    });
  }

  // The stream's state from the server (the WHIP resource) and what this browser sends.
  function check() {
    if (!resource) return;
    fetch(resource, { cache: "no-store" }).then(function (res) {
      if (res.status === 404) { fail("The server ended the publish."); end(); return; }
      return res.json().then(function (s) {
        if (s.isActive) setState("live", s.isHealthy === false ? "Live, with issues" : "Live");
        else setState("connecting", "Connected: waiting for the stream to go live…");
        issues.textContent = "";
        (s.issues || []).forEach(function (i) { var li = document.createElement("li"); li.textContent = i; issues.appendChild(li); });
        if (s.playbackId) {
          $("watch-link").href = "/play/" + encodeURIComponent(s.playbackId);
          $("watch").hidden = false;
        }
      });
    }).catch(function () { /* the next poll tries again */ });
    if (pc) pc.getStats().then(function (report) {
      report.forEach(function (r) {
        if (r.type !== "outbound-rtp" || r.kind !== "video") return;
        var now = { at: r.timestamp, bytes: r.bytesSent };
        var rate = lastBytes ? Math.round(((now.bytes - lastBytes.bytes) * 8) / (now.at - lastBytes.at)) : 0;
        lastBytes = now;
        stats.textContent = (r.frameWidth ? r.frameWidth + "×" + r.frameHeight + " " : "") + (r.framesPerSecond ? Math.round(r.framesPerSecond) + " fps, " : "") + rate + " kbit/s";
      });
    });
  }

  function end() {
    if (poll) clearInterval(poll);
    poll = null;
    if (resource) fetch(resource, { method: "DELETE" }).catch(function () {});
    resource = null;
    if (pc) pc.close();
    pc = null;
    lastBytes = null;
    stats.textContent = "";
    issues.textContent = "";
    goLive.disabled = false;
    stop.disabled = true;
    setState("idle", "Not live");
  }

  $("keys").addEventListener("submit", function (e) { e.preventDefault(); });
  apiKeyInput.addEventListener("change", function () {
    if (apiKeyInput.value.trim()) localStorage.setItem(API_KEY_ITEM, apiKeyInput.value.trim());
    apiKeyInput.value = "";
    loadStreams();
  });
  $("forget").addEventListener("click", function () {
    localStorage.removeItem(STREAM_KEY_ITEM);
    localStorage.removeItem(API_KEY_ITEM);
    streamKeyInput.value = "";
    streamSelect.hidden = true;
  });
  ["source", "camera", "microphone", "resolution"].forEach(function (id) { $(id).addEventListener("change", showPreview); });
  goLive.addEventListener("click", start);
  stop.addEventListener("click", end);
  // Leaving the page ends the publish at once rather than after the server's media timeout.
  window.addEventListener("pagehide", function () { if (resource) fetch(resource, { method: "DELETE", keepalive: true }).catch(function () {}); });

  if (localStorage.getItem(STREAM_KEY_ITEM)) streamKeyInput.placeholder = "key saved in this browser";
  loadStreams();
  showPreview();
})();
