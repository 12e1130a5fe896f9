// onair player: how far behind the live edge to play, decided from what this viewer measures.
//
// A fixed target (0.5 s, tuned on loopback) stalls when parts arrive late: on a busy machine, or
// with a round trip of 80 ms or more, where each part costs a blocking playlist reload and a part
// request. The target here starts a little further back, closes in while the buffer has room to
// spare, and backs off before the buffer runs dry:
//  - headroom: the forward buffer just before each append (the lowest it gets between two parts);
//    under DANGER_S the target moves back at once, above COMFORT_S for a while it closes in;
//  - round trip: time to first byte of media requests; a part needs two at most (one when the
//    player takes it from the preload hint), so the target never goes under one part plus two
//    round trips plus a margin;
//  - a stall moves the target back further than a low headroom does, and holds it there longer.
// Pure (time is passed in): the player feeds it events, tests feed it tables.
"use strict";
(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.onairLatencyTarget = factory();
})(typeof self !== "undefined" ? self : this, function () {
  // Today's loopback latency: two and a half parts behind the edge (0.5 s with 0.2 s parts).
  var FLOOR_PARTS = 2.5;
  // Where playback starts, beyond what the network needs: closed in within about 10 s.
  var START_EXTRA_S = 0.3;
  // Headroom under this is a stall about to happen.
  var DANGER_S = 0.08;
  var DANGER_RAISE_S = 0.1;
  // A stall moves the target back by this for each stall of the last STALLS_MS: one hiccup costs
  // little, a network that keeps stalling is given more room each time.
  var STALL_RAISE_S = 0.15;
  var STALLS_MS = 60000;
  // Raises within this long of each other are one trouble: the larger counts, not the sum (a late
  // part shows in the audio and the video append, then as a stall).
  var RAISE_EVERY_MS = 2000;
  // Closing in: every CLOSE_EVERY_MS by up to CLOSE_STEP_S while every headroom seen in the last
  // CALM_MS stayed above COMFORT_S, and not within HOLD_MS of a raise.
  var COMFORT_S = 0.15;
  var CLOSE_STEP_S = 0.05;
  var CLOSE_EVERY_MS = 1000;
  var CALM_MS = 3000;
  // Closing in needs a fresh sample: no append for this long is a part running late.
  var FRESH_MS = 1000;
  var HOLD_MS = 8000;
  // What parts took of the target lately (target − headroom at each append): the target never
  // closes in below the most any took in the last USED_MS, plus USED_MARGIN_S. A busy machine's
  // late parts come in bursts: one seen is the measure of the next.
  var USED_MS = 30000;
  var USED_MARGIN_S = 0.2;
  // Except at the start: until playback first comes within CAUGHT_UP_S of the target (or for
  // START_CATCH_UP_MS at most), the buffer's end trails the edge because the backlog is still
  // being fetched one part at a time, a round trip each (seconds, far away): counted, it held the
  // target back for half a minute.
  var CAUGHT_UP_S = 0.1;
  var START_CATCH_UP_MS = 20000;
  // What a part needs from the network beyond its own length and two round trips.
  var NETWORK_MARGIN_S = 0.1;
  var RTT_SAMPLES = 20;
  var CEILING_S = 4;

  // The lower quartile: a request's first byte never comes sooner than a round trip, but often
  // later (a new connection's handshake, a busy server), and a start opens several connections.
  function lowerQuartile(xs) {
    var s = xs.slice().sort(function (a, b) { return a - b; });
    return s.length ? s[Math.floor(s.length / 4)] : 0;
  }

  /**
   * `partTarget`: the playlist's EXT-X-PART-INF PART-TARGET (s). `now`: ms at creation.
   * Returns an object whose `target` is the latency to hold, in seconds.
   */
  function create(partTarget, now) {
    var part = partTarget > 0 ? partTarget : 0.2;
    var floor = FLOOR_PARTS * part;
    var rtts = [];
    // [ms, headroom s] of the last CALM_MS.
    var headrooms = [];
    // [ms, s of the target a part used] of the last USED_MS.
    var used = [];
    var started = false;
    var startedAt = now;
    var caughtUp = false;
    // The raise in force (ms, s): later raises within RAISE_EVERY_MS only top it up.
    var raisedAt = -Infinity;
    var raisedBy = 0;
    var stalls = [];
    var holdUntil = now;
    var lastClose = now;

    var state = {
      target: floor + START_EXTRA_S,
      /** The latency the network alone asks for (s): one part, two round trips, a margin. */
      need: function () {
        return Math.min(CEILING_S, Math.max(floor, part + 2 * state.rtt() + NETWORK_MARGIN_S));
      },
      /** The round trip: lower quartile of the last media requests' times to first byte (s). */
      rtt: function () {
        return lowerQuartile(rtts);
      },
      setPartTarget: function (seconds) {
        if (!(seconds > 0) || seconds === part) return;
        part = seconds;
        floor = FLOOR_PARTS * part;
        if (!started) state.target = Math.min(CEILING_S, state.need() + START_EXTRA_S);
      },
      observeRtt: function (seconds) {
        if (!(seconds >= 0) || seconds > 10) return;
        rtts.push(seconds);
        if (rtts.length > RTT_SAMPLES) rtts.shift();
        // Before playback starts the start position still follows what the network costs, as
        // measured so far (a first request slowed by its handshake does not hold it back).
        if (!started) state.target = Math.min(CEILING_S, state.need() + START_EXTRA_S);
      },
      /** Playback began: from now on the target moves only by headroom and stalls. */
      playing: function (at) {
        if (started) return;
        started = true;
        startedAt = at;
        lastClose = at;
        holdUntil = at + CALM_MS;
      },
      /**
       * `seconds` of buffer left just before an append, playing `latency` s behind the live edge
       * (the target when not given): the part took the rest of that latency to arrive.
       */
      observeHeadroom: function (seconds, at, latency) {
        if (!started) return;
        var playedAt = latency > 0 ? latency : state.target;
        if (playedAt <= state.target + CAUGHT_UP_S || at - startedAt > START_CATCH_UP_MS) caughtUp = true;
        headrooms.push([at, seconds]);
        if (caughtUp) used.push([at, playedAt - seconds]);
        forget(at);
        if (seconds < DANGER_S) raise(DANGER_RAISE_S, at);
      },
      stalled: function (at) {
        stalls.push(at);
        while (stalls[0] < at - STALLS_MS) stalls.shift();
        raise(STALL_RAISE_S * stalls.length, at);
      },
      /** Closes in when calm; call it often (every 100 ms is fine). Returns the target. */
      tick: function (at) {
        var need = state.need();
        if (state.target < need) state.target = need;
        if (!started || at < holdUntil || at - lastClose < CLOSE_EVERY_MS) return state.target;
        lastClose = at;
        forget(at);
        if (!headrooms.length || headrooms[0][0] > at - CALM_MS + CLOSE_EVERY_MS) return state.target;
        if (headrooms[headrooms.length - 1][0] < at - FRESH_MS) return state.target;
        var lowest = Infinity;
        for (var i = 0; i < headrooms.length; i++) lowest = Math.min(lowest, headrooms[i][1]);
        var most = 0;
        for (var j = 0; j < used.length; j++) most = Math.max(most, used[j][1]);
        var closest = Math.max(need, most + USED_MARGIN_S);
        if (lowest > COMFORT_S && state.target > closest) state.target = Math.max(closest, state.target - Math.min(CLOSE_STEP_S, lowest - COMFORT_S));
        return state.target;
      },
    };

    function forget(at) {
      while (headrooms.length && headrooms[0][0] < at - CALM_MS) headrooms.shift();
      while (used.length && used[0][0] < at - USED_MS) used.shift();
    }

    function raise(by, at) {
      if (at - raisedAt < RAISE_EVERY_MS) {
        if (by <= raisedBy) return;
        state.target = Math.min(CEILING_S, state.target + by - raisedBy);
      } else {
        state.target = Math.min(CEILING_S, state.target + by);
        raisedAt = at;
      }
      raisedBy = by;
      holdUntil = Math.max(holdUntil, at + HOLD_MS);
      // What was calm before the raise says nothing about the new target.
      headrooms = [];
    }

    return state;
  }

  // Playback rate toward the target: faster the further behind (1.05x past 0.05 s, 1.5x from 0.7 s:
  // a stall's second and a half is made up in about 6 s), a little slower when ahead of a target
  // that just moved back (0.9x at most: pitch is kept, the slowdown is hard to hear), normal once
  // there. The dead band is narrow: the target closes in by 0.05 s steps, and a wider band would
  // leave the playhead where it was. hls.js's own catch-up does not engage below 1 s of buffer,
  // where LL-HLS plays. No speeding up with less than MIN_ROOM_S buffered: that runs into a stall.
  var OFF_TARGET_S = 0.05;
  var ON_TARGET_S = 0.02;
  var MIN_FAST = 1.05;
  var MAX_FAST = 1.5;
  var MIN_SLOW = 0.9;
  var MAX_SLOW = 0.95;
  var RATE_PER_S = 0.7;
  var MIN_ROOM_S = 0.15;

  /**
   * The rate to play at, `behind` s behind the target (negative: ahead), playing at `rate` now
   * with `room` s buffered, `rtt` s from the server. Far away the next part is up to two round
   * trips off (a start's backlog comes a part per round trip): speeding up then needs that much
   * more room, or it plays into a stall.
   */
  function playbackRate(behind, rate, room, rtt) {
    var minRoom = MIN_ROOM_S + 2 * (rtt > 0 ? rtt : 0);
    if ((behind > OFF_TARGET_S || (rate > 1 && behind >= ON_TARGET_S)) && room >= minRoom) return Math.min(MAX_FAST, Math.max(MIN_FAST, 1 + behind * RATE_PER_S));
    if (behind < -OFF_TARGET_S || (rate < 1 && behind <= -ON_TARGET_S)) return Math.max(MIN_SLOW, Math.min(MAX_SLOW, 1 + behind * RATE_PER_S));
    return 1;
  }

  return { create: create, playbackRate: playbackRate };
});
