// onair player: LL-HLS parts asked for as soon as a playlist's EXT-X-PRELOAD-HINT names them, and
// handed to hls.js when it asks (public/player.js uses both).
"use strict";
(function (root, factory) {
  root.onairPartHints = factory();
})(typeof self !== "undefined" ? self : this, function () {
  // Preload hints (EXT-X-PRELOAD-HINT). hls.js asks for a part only once a playlist lists it: the
  // blocking reload returns as the part completes, then the part request costs another round
  // trip, 80 ms more behind the edge for a viewer 80 ms away (and that round trip's jitter). The
  // server holds a request for the hinted part until the part is complete, so asked as soon as a
  // playlist names it, the part comes back with the next playlist: hls.js then gets it from here.
  // A few are kept (a start catching up asks for older parts first); one never asked for (a
  // level switch) is dropped.
  var HINTS_KEPT = 8;
  function hintPrefetcher() {
    var hints = {};
    var order = [];
    return {
      /** A playlist arrived (LEVEL_LOADED's details): its hinted part is asked for now. */
      playlist: function (details) {
        var hint = details && details.live && details.preloadHint;
        if (!hint || hint.TYPE !== "PART" || !hint.URI || hint["BYTERANGE-START"] !== undefined) return;
        var url = new URL(hint.URI, details.url).href;
        if (hints[url]) return;
        var controller = new AbortController();
        var entry = { asked: performance.now(), first: 0, end: 0, abort: function () { controller.abort(); } };
        entry.data = fetch(url, { credentials: "same-origin", signal: controller.signal }).then(function (res) {
          entry.first = performance.now();
          if (!res.ok) throw new Error("hinted part answered " + res.status);
          return res.arrayBuffer();
        }).then(function (data) {
          entry.end = performance.now();
          return data;
        });
        // Whoever takes it handles a failure; one nobody takes fails quietly.
        entry.data.catch(function () {});
        hints[url] = entry;
        order.push(url);
        // One nobody took (a level switch, a reload that moved on) stops downloading.
        while (order.length > HINTS_KEPT) {
          var gone = order.shift();
          if (hints[gone]) hints[gone].abort();
          delete hints[gone];
        }
      },
      /** The request for `url` if it was hinted (once: then it is hls.js's). */
      take: function (url) {
        var entry = hints[url];
        if (entry) delete hints[url];
        return entry;
      },
    };
  }

  // hls.js's fragment loader, answering a part from the hinted request when there is one. Its
  // stats say what hls.js waited: from its asking (or the request's answer, if later) to the data,
  // so neither bandwidth estimates nor round trips count the server holding the part.
  function hintedLoader(Base, prefetcher) {
    return class {
      constructor(config) {
        this.inner = new Base(config);
        // hls.js keeps this object (part.stats) from construction on.
        this.stats = this.inner.stats;
        this.context = null;
        this.callbacks = null;
      }
      load(context, config, callbacks) {
        var hint = context.rangeEnd ? undefined : prefetcher.take(context.url);
        if (!hint) return this.inner.load(context, config, callbacks);
        var self = this;
        var stats = this.stats;
        this.context = context;
        this.callbacks = callbacks;
        stats.loading.start = performance.now();
        // hls.js leaves timeouts to its loader: a held part that stalls (a far, lossy network)
        // is given up after hls.js's own time to first byte, and asked for the usual way.
        var limitMs = (config.loadPolicy && config.loadPolicy.maxTimeToFirstByteMs) || 10000;
        this.hint = hint;
        this.timer = setTimeout(function () { hint.abort(); }, limitMs);
        hint.data.then(function (data) {
          if (self.callbacks !== callbacks) return;
          self.callbacks = null;
          clearTimeout(self.timer);
          stats.hinted = true;
          stats.loading.first = Math.max(stats.loading.start, hint.first);
          // The body's own transfer time, at least: a bandwidth estimate needs it.
          stats.loading.end = Math.max(hint.end, stats.loading.first + (hint.end - hint.first));
          stats.loaded = stats.total = data.byteLength;
          callbacks.onSuccess({ url: context.url, data: data, code: 200 }, stats, context, null);
        }, function () {
          if (self.callbacks !== callbacks) return;
          self.callbacks = null;
          clearTimeout(self.timer);
          // The held request failed (a cap, the stream moved on): asked for the usual way.
          stats.loading.start = 0;
          self.inner.load(context, config, callbacks);
        });
      }
      abort() {
        var callbacks = this.callbacks;
        if (!callbacks) return this.inner.abort();
        this.callbacks = null;
        clearTimeout(this.timer);
        this.hint.abort();
        this.stats.aborted = true;
        if (callbacks.onAbort) callbacks.onAbort(this.stats, this.context, null);
      }
      destroy() {
        this.callbacks = null;
        clearTimeout(this.timer);
        this.inner.destroy();
      }
    };
  }

  return { prefetcher: hintPrefetcher, loader: hintedLoader };
});
