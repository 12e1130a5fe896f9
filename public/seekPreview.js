// onair player: the seek bar's preview of a DVR stream, from its storyboard (storyboard.vtt: a
// cue for every few seconds of the window, each naming a tile of a JPEG sprite by #xywh=).
// Cue times count from the program date in the VTT's `NOTE program-date-time` line, so a tile
// is found by the program date of the point under the pointer, whatever the player's own time.
// Pure: the player fetches the VTT and shows the tile; tests feed it texts.
"use strict";
(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.onairSeekPreview = factory();
})(typeof self !== "undefined" ? self : this, function () {
  var TIME = /^(\d+):(\d\d):(\d\d)\.(\d{3})$/;

  function seconds(text) {
    var m = TIME.exec(text);
    return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(m[4]) / 1000 : NaN;
  }

  /**
   * The storyboard's cues against the program date (ms): [{ from, to, url, x, y, w, h }], oldest
   * first; `base` resolves the sprite's URL (the VTT's own). Null when the text is no storyboard.
   */
  function parse(text, base) {
    var blocks = String(text).replace(/\r/g, "").trim().split(/\n\n+/);
    if (blocks[0] !== "WEBVTT") return null;
    var origin = NaN;
    var cues = [];
    for (var i = 1; i < blocks.length; i++) {
      var lines = blocks[i].split("\n");
      var note = /^NOTE program-date-time (\S+)$/.exec(lines[0]);
      if (note) {
        origin = Date.parse(note[1]);
        continue;
      }
      var times = /^(\S+) --> (\S+)/.exec(lines[0]);
      var target = lines[1] ? /^(.*)#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec(lines[1]) : null;
      if (!times || !target) continue;
      var from = seconds(times[1]);
      var to = seconds(times[2]);
      if (!(to > from)) continue;
      cues.push({ from: from, to: to, url: new URL(target[1], base).href, x: Number(target[2]), y: Number(target[3]), w: Number(target[4]), h: Number(target[5]) });
    }
    if (isNaN(origin)) return null;
    for (var j = 0; j < cues.length; j++) {
      cues[j].from = origin + cues[j].from * 1000;
      cues[j].to = origin + cues[j].to * 1000;
    }
    return cues;
  }

  /** The cue showing program date `at` (ms): the one covering it, else the nearest; null when none. */
  function at(cues, date) {
    if (!cues || cues.length === 0 || isNaN(date)) return null;
    var best = null;
    var bestGap = Infinity;
    for (var i = 0; i < cues.length; i++) {
      var c = cues[i];
      if (date >= c.from && date < c.to) return c;
      var gap = date < c.from ? c.from - date : date - c.to;
      if (gap < bestGap) {
        best = c;
        bestGap = gap;
      }
    }
    return best;
  }

  /**
   * The program date (ms) at media time `t` (s) of a live playlist's fragments (hls.js's, with
   * `start` and `programDateTime`): from the last fragment that starts at or before it.
   */
  function dateAt(fragments, t) {
    var from = null;
    for (var i = 0; i < (fragments || []).length; i++) {
      var f = fragments[i];
      if (typeof f.programDateTime !== "number" || !(f.programDateTime > 0)) continue;
      if (from === null || f.start <= t) from = f;
      if (f.start > t) break;
    }
    return from ? from.programDateTime + (t - from.start) * 1000 : NaN;
  }

  return { parse: parse, at: at, dateAt: dateAt };
});
