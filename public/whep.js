// WHEP (draft-ietf-wish-whep) in the browser: one recvonly video and audio transceiver, the
// offer POSTed once ICE gathering is done (no trickle), the answer applied; the stream goes to
// the video element. Resolves once a first frame is shown, or rejects when the connection is not
// up within `timeoutMs` (a network that blocks WebRTC), or when, once up, no frame comes within
// MEDIA_MS: the player then falls back to LL-HLS.
"use strict";
(function () {
  var GATHER_MS = 1000;
  var OPTIONS_MS = 1000;
  // Once connected, the first frame waits for the source's next keyframe: up to a group of
  // pictures (2 s is common) plus the decoder's start, more on a loaded device. Falling back
  // then would throw away a connection that works.
  var MEDIA_MS = 4000;

  function gathered(pc) {
    if (pc.iceGatheringState === "complete") return Promise.resolve();
    return new Promise(function (resolve) {
      var done = function () {
        if (pc.iceGatheringState !== "complete") return;
        pc.removeEventListener("icegatheringstatechange", done);
        resolve();
      };
      pc.addEventListener("icegatheringstatechange", done);
      // Host candidates come at once; a STUN or TURN server may take longer than is worth waiting.
      setTimeout(resolve, GATHER_MS);
    });
  }

  // The first frame on screen: requestVideoFrameCallback where there is one, else "playing".
  function firstFrame(video) {
    return new Promise(function (resolve) {
      if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(function () { resolve(); });
      else video.addEventListener("playing", function () { resolve(); }, { once: true });
    });
  }

  // ICE servers from the endpoint's Link headers (draft-ietf-wish-whep §4.4): a TURN server
  // lets a viewer whose network blocks UDP play. Asked before the offer (no trickle).
  function iceServers(url) {
    return fetch(url, { method: "OPTIONS" })
      .then(function (res) {
        var servers = [];
        (res.headers.get("link") || "").split(/,\s*(?=<)/).forEach(function (link) {
          var m = /^<([^>]+)>(.*)$/.exec(link.trim());
          if (!m || !/rel="ice-server"/.test(m[2])) return;
          var server = { urls: m[1] };
          var user = /username="((?:[^"\\]|\\.)*)"/.exec(m[2]);
          var credential = /credential="((?:[^"\\]|\\.)*)"/.exec(m[2]);
          if (user && credential) {
            server.username = user[1].replace(/\\(.)/g, "$1");
            server.credential = credential[1].replace(/\\(.)/g, "$1");
          }
          servers.push(server);
        });
        return servers;
      })
      .catch(function () { return []; });
  }

  /**
   * Plays `url` in `video`. `onEnd(reason)` is called once when a started playback ends (the
   * stream ended, the connection failed). Resolves with { close(), resource }.
   */
  // The timeout counts from here: asking for the ICE servers is part of the start.
  function play(video, url, timeoutMs, onEnd) {
    var deadline = Date.now() + timeoutMs;
    // An OPTIONS that does not answer within a second is given up: host candidates then.
    var asked = Promise.race([iceServers(url), new Promise(function (resolve) { setTimeout(function () { resolve([]); }, OPTIONS_MS); })]);
    return asked.then(function (servers) { return start(video, url, servers, Math.max(0, deadline - Date.now()), onEnd); });
  }

  function start(video, url, servers, timeoutMs, onEnd) {
    var pc = new RTCPeerConnection({ iceServers: servers });
    var resource = null;
    var closed = false;
    var started = false;
    function close() {
      if (closed) return;
      closed = true;
      pc.close();
      if (resource) fetch(resource, { method: "DELETE" }).catch(function () {});
    }
    pc.addTransceiver("video", { direction: "recvonly" });
    pc.addTransceiver("audio", { direction: "recvonly" });
    pc.ontrack = function (event) {
      if (event.streams && event.streams[0]) {
        if (video.srcObject !== event.streams[0]) video.srcObject = event.streams[0];
      } else {
        var stream = video.srcObject || new MediaStream();
        stream.addTrack(event.track);
        video.srcObject = stream;
      }
    };
    pc.onconnectionstatechange = function () {
      if (!started || closed) return;
      if (pc.connectionState === "failed" || pc.connectionState === "closed") {
        close();
        onEnd("the connection " + pc.connectionState);
      }
    };
    var attempt = pc.createOffer()
      .then(function (offer) { return pc.setLocalDescription(offer); })
      .then(function () { return gathered(pc); })
      .then(function () {
        return fetch(url, { method: "POST", headers: { "content-type": "application/sdp" }, body: pc.localDescription.sdp });
      })
      .then(function (res) {
        if (res.status !== 201) {
          return res.text().then(function (text) {
            var err = new Error("WHEP answered " + res.status + ": " + text.slice(0, 200));
            err.status = res.status;
            throw err;
          });
        }
        var location = res.headers.get("location");
        if (location) resource = new URL(location, url).toString();
        return res.text();
      })
      .then(function (answer) { return pc.setRemoteDescription({ type: "answer", sdp: answer }); })
      .then(function () { return firstFrame(video); })
      .then(function () {
        started = true;
        return { close: close, pc: pc, resource: resource };
      });
    var timeout = new Promise(function (_resolve, reject) {
      var timer = setTimeout(function () { reject(new Error("no WebRTC connection within " + timeoutMs + " ms")); }, timeoutMs);
      pc.addEventListener("connectionstatechange", function () {
        if (pc.connectionState !== "connected" || started || closed) return;
        clearTimeout(timer);
        setTimeout(function () { reject(new Error("connected, but no WebRTC media within " + MEDIA_MS + " ms")); }, MEDIA_MS);
      });
    });
    return Promise.race([attempt, timeout]).catch(function (err) {
      close();
      throw err;
    });
  }

  window.onairWhep = { play: play };
})();
