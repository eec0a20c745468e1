package mp4

import (
	"strconv"
	"strings"
)

// clockScript replaces the page's clock with a virtual one before rrweb
// loads: performance.now returns virtual time and requestAnimationFrame
// callbacks run only when Go advances the clock, one round per frame. CSS
// animations and transitions (the replayer's click effect among them) are
// paused and set from the same clock. advance returns how many of them are
// still running, so that frames where nothing moves can be reused.
const clockScript = `(function () {
  'use strict';
  let now = 0, queue = [], nextId = 1, replayer = null;
  performance.now = () => now;
  window.requestAnimationFrame = (cb) => { const id = nextId++; queue.push([id, cb]); return id; };
  window.cancelAnimationFrame = (id) => { queue = queue.filter((e) => e[0] !== id); };
  const born = new WeakMap();
  function sync(doc) {
    if (!doc || !doc.getAnimations) return 0;
    let running = 0;
    for (const a of doc.getAnimations()) {
      if (!born.has(a)) { born.set(a, now); a.pause(); }
      const t = now - born.get(a);
      a.currentTime = t;
      const end = a.effect ? a.effect.getComputedTiming().endTime : 0;
      if (!(end <= t)) running++;
    }
    return running;
  }
  // rrweb replays scrolls with behavior "smooth", which the compositor
  // animates in real time; every scroll of the replayed windows is made
  // instant instead.
  function instant(args) {
    const o = args[0];
    if (o && typeof o === 'object' && o.behavior === 'smooth') args[0] = Object.assign({}, o, { behavior: 'instant' });
    return args;
  }
  function patchScrolling(win) {
    try {
      if (!win || win.__consentkitInstant) return;
      win.__consentkitInstant = true;
      for (const target of [win, win.Element && win.Element.prototype]) {
        if (!target) continue;
        for (const name of ['scroll', 'scrollTo', 'scrollBy']) {
          const orig = target[name];
          if (typeof orig === 'function') target[name] = function (...args) { return orig.apply(this, instant(args)); };
        }
      }
    } catch (e) { /* a window of another origin cannot be patched, nor scrolled by the replayer */ }
  }
  // The replay has no network, so a media element could only show its
  // loading spinner for as long as the refused request takes, in real time,
  // and then its error state. Media elements are built without their
  // source instead: the player shows as an empty one, the same in every
  // frame and every conversion. The source URL stays on the element as
  // data-consentkit-src.
  function isMediaSource(el, win) {
    return (el instanceof win.HTMLMediaElement) || (el instanceof win.HTMLSourceElement);
  }
  function quietMedia(win) {
    try {
      if (!win || win.__consentkitQuietMedia) return;
      win.__consentkitQuietMedia = true;
      const E = win.Element.prototype, set = E.setAttribute, setNS = E.setAttributeNS;
      E.setAttribute = function (name, value) {
        if (String(name).toLowerCase() === 'src' && isMediaSource(this, win)) return set.call(this, 'data-consentkit-src', value);
        return set.call(this, name, value);
      };
      E.setAttributeNS = function (ns, name, value) {
        if (!ns && String(name).toLowerCase() === 'src' && isMediaSource(this, win)) return set.call(this, 'data-consentkit-src', value);
        return setNS.call(this, ns, name, value);
      };
      for (const C of [win.HTMLMediaElement, win.HTMLSourceElement]) {
        Object.defineProperty(C.prototype, 'src', {
          configurable: true,
          get() { return this.getAttribute('data-consentkit-src') || ''; },
          set(v) { set.call(this, 'data-consentkit-src', v); },
        });
      }
      // Nothing plays, so nothing needs pausing either; and pause(), like
      // load() and play(), makes an element without media look for some.
      const M = win.HTMLMediaElement.prototype;
      M.load = function () {};
      M.play = function () { return Promise.resolve(); };
      M.pause = function () {};
      Object.defineProperty(M, 'srcObject', { configurable: true, get() { return null; }, set() {} });
    } catch (e) { /* a window of another origin is not the replayer's */ }
  }
  // onBuild sees every element the replayer builds: a media element built
  // in a window that was not patched yet loses its source before its load
  // algorithm runs.
  const mediaPlugin = {
    onBuild(node) {
      try {
        if (!node || node.nodeType !== 1 || !node.ownerDocument) return;
        const win = node.ownerDocument.defaultView;
        if (!win) return;
        quietMedia(win);
        noCanvasContext(win);
        if (isMediaSource(node, win) && node.hasAttribute('src')) {
          const src = node.getAttribute('src');
          node.removeAttribute('src');
          node.setAttribute('data-consentkit-src', src);
        }
      } catch (e) {}
    },
  };
  // A <source> child of a media element would be looked at even without
  // its src: the element goes through its loading state, and Chromium's
  // controls show a spinner that they animate and fade out on real time.
  // Such children are renamed in the recording, before the replayer sees
  // it, to an element that means nothing to the browser, by the tag of
  // their parent (the node that the full snapshot or an earlier mutation
  // added with that id). The children of a media element are never drawn,
  // so the page looks the same otherwise; a <source> of a <picture> is
  // left alone.
  //
  // A <canvas> is not reproduced either (the snippet does not record
  // drawings; Converter.Attest lists every canvas as unreproducible), but
  // rrweb draws the image of a canvas's rr_dataURL into it, and
  // getContext('2d') then gives the canvas a pixel buffer of width ×
  // height × 4 bytes, outside the JavaScript heap and its bound, as large
  // as the recording says: 16384² is a GiB a canvas. rr_dataURL is dropped
  // from every canvas, in full snapshots and added nodes, and from every
  // attribute change; a canvas's width and height are clamped to
  // maxCanvas, the viewport's bound. (noCanvasContext makes sure besides.)
  const maxCanvas = MAX_CANVAS;
  function quietCanvas(attrs, canvas) {
    if (!attrs || typeof attrs !== 'object') return;
    for (const k of Object.keys(attrs)) {
      const name = k.toLowerCase();
      if (name === 'rr_dataurl') {
        delete attrs[k];
      } else if (canvas && (name === 'width' || name === 'height') && attrs[k] !== null && attrs[k] !== undefined) {
        const n = parseInt(String(attrs[k]), 10);
        if (n > maxCanvas) attrs[k] = String(maxCanvas);
      }
    }
  }
  function rewriteRecording(events) {
    const tags = new Map(); // node id → lower-case tag name
    const tagOf = (n) => (n && n.type === 2 && typeof n.tagName === 'string' ? n.tagName.toLowerCase() : '');
    function walk(root, parentTag) {
      const stack = [[root, parentTag]];
      while (stack.length) {
        const [n, parent] = stack.pop();
        if (!n || typeof n !== 'object') continue;
        let tag = tagOf(n);
        if (tag === 'source' && (parent === 'video' || parent === 'audio') && !n.isSVG) tag = n.tagName = 'consentkit-source';
        if (tag === 'canvas') quietCanvas(n.attributes, true);
        if (n.id !== undefined) tags.set(n.id, tag);
        if (Array.isArray(n.childNodes)) for (const c of n.childNodes) stack.push([c, tag]);
      }
    }
    // In the order the replayer applies them.
    const ordered = events.filter((e) => e && typeof e === 'object' && e.data && typeof e.data === 'object')
      .sort((a, b) => a.timestamp - b.timestamp);
    for (const e of ordered) {
      if (e.type === 2) {
        walk(e.data.node, '');
      } else if (e.type === 3 && e.data.source === 0) {
        if (Array.isArray(e.data.adds)) {
          // An add may come before the add of its parent in the same event.
          for (const a of e.data.adds) if (a && a.node && a.node.id !== undefined) tags.set(a.node.id, tagOf(a.node));
          for (const a of e.data.adds) if (a) walk(a.node, tags.get(a.parentId) || '');
        }
        // The replayer applies a mutation's attribute changes after its adds.
        if (Array.isArray(e.data.attributes)) {
          for (const m of e.data.attributes) if (m && typeof m === 'object') quietCanvas(m.attributes, tags.get(m.id) === 'canvas');
        }
      }
    }
  }
  // No canvas of the replayed page gets a context, and so a pixel buffer,
  // whatever builds it: no script of the page runs, and the replayer,
  // which does not replay canvas (UNSAFE_replayCanvas), only asks for one
  // to draw an rr_dataURL, and handles a null context.
  function noCanvasContext(win) {
    try {
      if (!win || win.__consentkitNoCanvas) return;
      win.__consentkitNoCanvas = true;
      win.HTMLCanvasElement.prototype.getContext = function () { return null; };
    } catch (e) { /* a window of another origin is not the replayer's */ }
  }
  function patchFrames(win) {
    patchScrolling(win);
    quietMedia(win);
    noCanvasContext(win);
    try { for (let i = 0; i < win.frames.length; i++) patchFrames(win.frames[i]); } catch (e) {}
  }
  let given = [];
  window.__consentkit = {
    // take adds a piece of the recording, taken returns the pieces so far
    // as one array and forgets them (Go's handOver).
    take(piece) {
      for (const e of piece) given.push(e);
      return true;
    },
    taken() {
      const events = given;
      given = [];
      return events;
    },
    load(events, rules) {
      rewriteRecording(events);
      replayer = new rrweb.Replayer(events, {
        root: document.getElementById('stage'),
        speed: 1,
        skipInactive: false,
        showWarning: false,
        showDebug: false,
        mouseTail: false,
        triggerFocus: true,
        UNSAFE_replayCanvas: false,
        pauseAnimation: false,
        insertStyleRules: rules,
        plugins: [mediaPlugin],
      });
      if (replayer.iframe) patchFrames(replayer.iframe.contentWindow);
      replayer.play(0);
      return true;
    },
    advance(ms) {
      if (replayer && replayer.iframe) patchFrames(replayer.iframe.contentWindow);
      now += ms;
      const due = queue;
      queue = [];
      for (const [, cb] of due) cb(now);
      const doc = replayer && replayer.iframe ? replayer.iframe.contentDocument : null;
      return sync(document) + sync(doc);
    },
    // replayer returns the Replayer of the last load (Converter.Attest
    // measures the page it replays).
    replayer() { return replayer; },
  };
})();`

// replayRules are inserted into the replayed document: scrolling is
// instant and the text caret does not blink, so every frame is a function
// of the virtual clock alone.
var replayRules = []string{
	`*, *::before, *::after { scroll-behavior: auto !important; caret-color: transparent !important; }`,
}

// buildPage returns the replay page: the virtual clock, rrweb's stylesheet
// and bundle, and a stage at the top left corner. The recording itself is
// never part of the page's source: it is handed to the page as data.
func buildPage(rrwebJS, rrwebCSS string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>replay</title><style>`)
	b.WriteString(noCloseTag(rrwebCSS, "style"))
	b.WriteString(`
html, body { margin: 0; padding: 0; overflow: hidden; background: #fff; }
#stage, .replayer-wrapper { position: absolute; top: 0; left: 0; }
.replayer-wrapper iframe { border: 0; display: block; }
</style><script>`)
	b.WriteString(strings.Replace(clockScript, "MAX_CANVAS", strconv.Itoa(maxViewport), 1))
	b.WriteString(`</script><script>`)
	b.WriteString(noCloseTag(rrwebJS, "script"))
	b.WriteString(`</script></head><body><div id="stage"></div></body></html>`)
	return b.String()
}

// noCloseTag keeps a script or stylesheet from ending its element early.
func noCloseTag(s, tag string) string {
	return strings.ReplaceAll(s, "</"+tag, `<\/`+tag)
}
