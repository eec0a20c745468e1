/*
 * consentkit's measure of a consent element (D37): the text the consumer
 * could read of it, and how it was shown. It is the one definition of that
 * measure, shared by the capture snippet, which measures the live page at
 * submit (the service serves this file's text before the snippet's, as
 * /capture/capture.js), and by the replay of a recording, which measures
 * the replayed page (retain/mp4's Attest). It defines one function and
 * nothing else:
 *
 *   consentkitMeasure(el, win, page) -> {text, visibility: {in_viewport,
 *     visible, font_size_px, text_color, background_color, contrast_ratio,
 *     hidden_text}}
 *
 * el is the consent element, win its window (by default its document's):
 * the page measured is el's own document, never the global one, so that a
 * replay can measure inside the iframe it replays in. page, optional, is an
 * object passed to every call for the same document: the calls then share
 * the page's measures (viewport, scrollable area), taken at the first, and
 * their budgets (MAX_HIT_TESTS, MAX_WORDS), as when a form's consents are
 * measured together. It throws when el cannot be measured.
 */
function consentkitMeasure(el, win, page) {
  "use strict";
  var doc = el.ownerDocument;
  win = win || doc.defaultView;

  function luminance(rgb) {
    var c = rgb.map(function (v) {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }

  // parseColor reads a computed colour, "rgb(1, 2, 3)", "rgba(1, 2, 3, 0.5)"
  // or "rgb(1 2 3 / 50%)", and one of another notation (oklch(), lab(),
  // color()) as a canvas draws it (drawnColor); null when it is none.
  function parseColor(s) {
    var m = /^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,\/]\s*([\d.]+)(%?))?\s*\)$/.exec(s || "");
    if (!m) return s && s !== "none" ? drawnColor(s) : null;
    var alpha = m[4] === undefined ? 1 : m[5] ? m[4] / 100 : +m[4];
    return { rgb: [+m[1], +m[2], +m[3]], alpha: Math.min(alpha, 1) };
  }

  // drawnColor is colour s as a canvas pixel painted with it holds it, in
  // sRGB: null when s is not a colour or no canvas can tell. Each colour
  // is drawn once a measure (up to MAX_DRAWN colours).
  var drawn = {}, drawnCount = 0, pixel;
  function drawnColor(s) {
    if (Object.prototype.hasOwnProperty.call(drawn, s)) return drawn[s];
    if (pixel === undefined) {
      var cv = doc.createElement("canvas");
      cv.width = cv.height = 1;
      pixel = (cv.getContext && cv.getContext("2d", { willReadFrequently: true })) || null;
    }
    var out = null;
    if (pixel) {
      pixel.fillStyle = "#010203";
      pixel.fillStyle = s; // left as it was when s is no colour
      if (pixel.fillStyle !== "#010203") {
        pixel.clearRect(0, 0, 1, 1);
        pixel.fillRect(0, 0, 1, 1);
        var d = pixel.getImageData(0, 0, 1, 1).data;
        out = { rgb: [d[0], d[1], d[2]], alpha: d[3] / 255 };
      }
    }
    if (drawnCount < MAX_DRAWN) { drawn[s] = out; drawnCount++; }
    return out;
  }

  // ---- What the consumer could read (D37) ----
  //
  // For each consent element the snippet walks its text nodes in the flat
  // tree, as they are rendered (an open shadow root's content in place of
  // its host's, the nodes slotted into a slot in its place, styles
  // inherited through slots), and decides for each whether its text was
  // rendered so that a person could read it. The element's text is the text of the visible
  // fragments only; each hidden fragment is listed on its own, in order.
  //
  // Tests of a whole text node, from the computed style of its element:
  //   display   display: none on it or an ancestor, or its element not
  //             rendered by Element.checkVisibility() (content-visibility:
  //             hidden, a closed <details>);
  //   visibility hidden or collapse (computed, so inherited as rendered);
  //   opacity   the product of opacity (times filter: opacity()) of its
  //             element and every ancestor under 0.1 (a product, since
  //             opacities multiply: 0.3 inside 0.3 is 0.09);
  //   font      font size under 4 px.
  // Tests of each rendered box (Range.getClientRects(): one a line):
  //   size      under 3 px high (text scaled down by a transform), or
  //             squeezed: its boxes' area over the width a canvas measures
  //             for the text in its font under 3 px (scaleX); a node with
  //             no box of positive width and height is hidden whole;
  //   contrast  under 1.5:1 (WCAG formula) between the colour it is drawn
  //             in (-webkit-text-fill-color, which is color unless set)
  //             and its background: the ancestors' background colours
  //             composited over white (so the nearest opaque one, else
  //             white), the colour's alpha times the opacity composited
  //             over that; where the hit test at the box's centre finds
  //             an element other than an ancestor painting beneath the
  //             text (a positioned box), the elements beneath it there
  //             composited instead. The colours drawn inside a filter are
  //             mapped as its brightness, contrast, invert, grayscale,
  //             sepia, saturate and hue-rotate map them; under a filter
  //             the snippet cannot follow (url()) the consent is not
  //             visible, its text kept. A colour of another notation
  //             than rgb() (oklch(), lab(), color()) is read as a canvas
  //             draws it; one no canvas tells, or a background image under
  //             the text (colours unknown), skips this test;
  //   clipped   under half of a box's area left inside the clip boxes of
  //             the ancestors that clip it: overflow hidden/clip (per axis,
  //             padding box; absolutely and fixed positioned boxes escape
  //             the ancestors below their containing block), clip: rect()
  //             and clip-path: inset() (other clip-path shapes are left to
  //             the hit test below);
  //   off-page  under half of it inside the document's scrollable area
  //             (left:-9999px, negative offsets; in an axis where the
  //             viewport's overflow is hidden, the viewport itself; for a
  //             box fixed to the viewport, which no scrolling moves, the
  //             viewport) or, inside an ancestor that scrolls (overflow
  //             auto/scroll), inside what scrolling it can reach;
  //   covered   at the centre of its visible part, another element that
  //             paints is above the text's element (elementsFromPoint): a
  //             background colour, an inset box-shadow solid there, or a
  //             ::before or ::after background, under which the text's
  //             contrast falls under 1.5:1, or an image, replaced element
  //             or form control at opacity 0.5 or more; or the text's
  //             element is not found there under a clip-path other than
  //             inset() (a shape that clips it away). Transparent overlays
  //             (such as an opacity-0 input over a custom checkbox) do not
  //             count. A point outside the viewport, a text element that
  //             hit testing does not find there otherwise (pointer-events:
  //             none) and tests beyond MAX_HIT_TESTS skip the hit test:
  //             they do not make text hidden (contrast is then judged over
  //             the ancestors' background).
  // A custom element that seems to render a closed shadow root (inline,
  // wider than its own content), which the snippet cannot read, makes the
  // consent not visible.
  // A node whose boxes are all hidden is hidden; one whose boxes are partly
  // hidden is measured again word by word, and its runs of hidden words are
  // its hidden fragments (beyond MAX_WORDS such a node is hidden whole).
  // The text is joined as innerText joins it: white space collapsed as the
  // element's white-space says, <br> and blocks as line breaks (two around
  // a <p>), table cells by tabs, text-transform applied, then trimmed;
  // control characters (which the service refuses) read as white space.
  var MIN_OPACITY = 0.1, MIN_FONT_PX = 4, MIN_BOX_PX = 3, MIN_CONTRAST = 1.5;
  var MAX_HIT_TESTS = 1000, MAX_WORDS = 2000, MAX_HIDDEN = 100, MAX_HIDDEN_CHARS = 16384, MAX_DRAWN = 256;
  var WHITE = [255, 255, 255];
  var SKIPPED = /^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE|TEXTAREA|SELECT|IFRAME|OBJECT|EMBED|VIDEO|AUDIO|CANVAS)$/i;
  var PAINTED = /^(IMG|VIDEO|CANVAS|IFRAME|EMBED|OBJECT|INPUT|SELECT|TEXTAREA|BUTTON|PROGRESS|METER)$/;
  var BLANKS = /[ \t\n\r\f]+/g;
  // Control characters (a vertical tab where a word processor had a line
  // break), which the service refuses in text: read as spaces.
  var CONTROLS = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]/g;

  function blend(top, alpha, under) {
    return [0, 1, 2].map(function (i) { return top[i] * alpha + under[i] * (1 - alpha); });
  }

  function contrast(a, b) {
    var x = luminance(a), y = luminance(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  }

  function rgbString(c) { return "rgb(" + c.map(Math.round).join(", ") + ")"; }

  function clean(s) { return s.replace(CONTROLS, " ").replace(BLANKS, " ").replace(/^ | $/g, ""); }

  // parentOf is n's parent in the flat tree, as it is rendered: the slot
  // it is slotted into, else its parent, else a shadow root's host.
  function parentOf(n) {
    return n.assignedSlot || n.parentElement || (n.parentNode && n.parentNode.host) || null;
  }

  // ---- Filters: how filter functions change the colours drawn ----
  // Each maps an sRGB colour (0-255) as the browser's filter shorthands
  // do; a filter that the snippet cannot follow (url()) is unknown.
  function matrix(m) {
    return function (c) {
      return [0, 1, 2].map(function (i) { return m[3 * i] * c[0] + m[3 * i + 1] * c[1] + m[3 * i + 2] * c[2]; });
    };
  }

  var FILTERS = {
    brightness: function (a) { return function (c) { return c.map(function (v) { return v * a; }); }; },
    contrast: function (a) { return function (c) { return c.map(function (v) { return (v / 255 - 0.5) * a * 255 + 127.5; }); }; },
    invert: function (a) {
      a = Math.min(a, 1);
      return function (c) { return c.map(function (v) { return v * (1 - a) + (255 - v) * a; }); };
    },
    grayscale: function (a) {
      var s = 1 - Math.min(a, 1);
      return matrix([0.2126 + 0.7874 * s, 0.7152 - 0.7152 * s, 0.0722 - 0.0722 * s,
        0.2126 - 0.2126 * s, 0.7152 + 0.2848 * s, 0.0722 - 0.0722 * s,
        0.2126 - 0.2126 * s, 0.7152 - 0.7152 * s, 0.0722 + 0.9278 * s]);
    },
    sepia: function (a) {
      var s = 1 - Math.min(a, 1);
      return matrix([0.393 + 0.607 * s, 0.769 - 0.769 * s, 0.189 - 0.189 * s,
        0.349 - 0.349 * s, 0.686 + 0.314 * s, 0.168 - 0.168 * s,
        0.272 - 0.272 * s, 0.534 - 0.534 * s, 0.131 + 0.869 * s]);
    },
    saturate: function (s) {
      return matrix([0.213 + 0.787 * s, 0.715 - 0.715 * s, 0.072 - 0.072 * s,
        0.213 - 0.213 * s, 0.715 + 0.285 * s, 0.072 - 0.072 * s,
        0.213 - 0.213 * s, 0.715 - 0.715 * s, 0.072 + 0.928 * s]);
    },
    "hue-rotate": function (deg) {
      var r = deg * Math.PI / 180, k = Math.cos(r), n = Math.sin(r);
      return matrix([0.213 + k * 0.787 - n * 0.213, 0.715 - k * 0.715 - n * 0.715, 0.072 - k * 0.072 + n * 0.928,
        0.213 - k * 0.213 + n * 0.143, 0.715 + k * 0.285 + n * 0.140, 0.072 - k * 0.072 - n * 0.283,
        0.213 - k * 0.213 - n * 0.787, 0.715 - k * 0.715 + n * 0.715, 0.072 + k * 0.928 + n * 0.072]);
    }
  };

  // filterOf reads a computed filter: the opacity it multiplies by, the
  // map of the colours it draws (null: unchanged), and whether it changes
  // them in a way the snippet cannot follow. Blur and drop-shadow keep
  // the colours.
  function filterOf(v) {
    var out = { op: 1, map: null, unknown: false }, maps = [];
    if (!v || v === "none") return out;
    var re = /([a-z-]+)\(((?:[^()]|\([^()]*\))*)\)/g, m;
    while ((m = re.exec(v))) {
      var name = m[1], arg = m[2].trim(), a = parseFloat(arg);
      if (name === "blur" || name === "drop-shadow") continue;
      if (name === "hue-rotate") {
        a = isNaN(a) ? 0 : /rad$/.test(arg) ? a * 180 / Math.PI : /grad$/.test(arg) ? a * 0.9 : /turn$/.test(arg) ? a * 360 : a;
      } else a = arg === "" ? 1 : isNaN(a) ? NaN : /%$/.test(arg) ? a / 100 : a;
      if (name === "opacity" && !isNaN(a)) out.op *= Math.min(a, 1);
      else if (FILTERS[name] && !isNaN(a)) maps.push(FILTERS[name](a));
      else out.unknown = true; // url(), or what this code does not know
    }
    if (maps.length) {
      out.map = function (c) {
        for (var i = 0; i < maps.length; i++) c = maps[i](c).map(function (x) { return Math.min(255, Math.max(0, x)); });
        return c;
      };
    }
    return out;
  }

  // The page as a whole: viewport, scrollable area, budgets.
  function pageEnv() {
    var de = doc.documentElement, se = doc.scrollingElement || de;
    var vw = de.clientWidth || win.innerWidth, vh = de.clientHeight || win.innerHeight;
    var hs = win.getComputedStyle(de), bs = doc.body ? win.getComputedStyle(doc.body) : null;
    var propagates = hs.overflowX === "visible" && hs.overflowY === "visible"; // body's overflow is the viewport's
    var vs = propagates && bs ? bs : hs;
    var lockX = /hidden|clip/.test(vs.overflowX), lockY = /hidden|clip/.test(vs.overflowY);
    var sx = win.pageXOffset || 0, sy = win.pageYOffset || 0;
    return {
      vw: vw, vh: vh, propagates: propagates,
      area: {
        l: lockX ? 0 : -sx, r: lockX ? vw : -sx + Math.max(se.scrollWidth, vw),
        t: lockY ? 0 : -sy, b: lockY ? vh : -sy + Math.max(se.scrollHeight, vh)
      },
      range: doc.createRange(), hits: MAX_HIT_TESTS, words: MAX_WORDS
    };
  }

  function px(v, whole) {
    if (!v || v === "auto") return null;
    var n = parseFloat(v);
    if (isNaN(n)) return null;
    return /%$/.test(v) ? n * whole / 100 : n;
  }

  // overflowBox reports whether el has a box that its overflow applies to:
  // not inline, not the viewport's (the root, or the body whose overflow
  // the viewport takes).
  function overflowBox(el, st, env) {
    if (el === doc.documentElement || (el === doc.body && env.propagates)) return false;
    return el.namespaceURI === "http://www.w3.org/2000/svg" ? el.localName === "svg" :
      st.display !== "inline" && st.display !== "contents";
  }

  // The boxes by which el clips its content (and, for clip and clip-path,
  // itself). In an axis where it scrolls, the box is what scrolling can
  // reach: its scrollable overflow from the scroll origin.
  function ownClips(el, st, env) {
    var out = [], r = null;
    var svg = el.namespaceURI === "http://www.w3.org/2000/svg";
    // Paint containment clips like overflow: clip, its overflow still
    // computed visible.
    var cp = /\b(paint|strict|content)\b/.test(st.contain || "");
    var cx = cp || /hidden|clip/.test(st.overflowX), cy = cp || /hidden|clip/.test(st.overflowY);
    var sx = /auto|scroll/.test(st.overflowX), sy = /auto|scroll/.test(st.overflowY);
    if (overflowBox(el, st, env) && (cx || cy || sx || sy)) {
      r = el.getBoundingClientRect();
      var L = r.left + (el.clientLeft || 0), T = r.top + (el.clientTop || 0);
      var W = el.clientWidth || (svg ? r.width : 0), H = el.clientHeight || (svg ? r.height : 0);
      var x = cx ? [L, L + W] : sx ? [L - el.scrollLeft, L - el.scrollLeft + el.scrollWidth] : [-Infinity, Infinity];
      var y = cy ? [T, T + H] : sy ? [T - el.scrollTop, T - el.scrollTop + el.scrollHeight] : [-Infinity, Infinity];
      out.push({ l: x[0], r: x[1], t: y[0], b: y[1], sx: sx, sy: sy });
    }
    var m = /^rect\(([^)]*)\)/.exec(st.clip || "");
    if (m && (st.position === "absolute" || st.position === "fixed")) {
      r = r || el.getBoundingClientRect();
      var v = m[1].split(/[\s,]+/);
      var t = px(v[0]), rt = px(v[1]), b = px(v[2]), l = px(v[3]);
      out.push({ t: r.top + (t === null ? 0 : t), r: r.left + (rt === null ? r.width : rt),
        b: r.top + (b === null ? r.height : b), l: r.left + (l === null ? 0 : l) });
    }
    m = /^inset\(([^)]*)\)/.exec(st.clipPath || "");
    if (m) {
      r = r || el.getBoundingClientRect();
      var s = m[1].split(/\s+round\s/)[0].trim().split(/\s+/);
      var top = s[0], right = s[1] || top, bottom = s[2] || top, left = s[3] || right;
      out.push({ t: r.top + (px(top, r.height) || 0), r: r.right - (px(right, r.width) || 0),
        b: r.bottom - (px(bottom, r.height) || 0), l: r.left + (px(left, r.width) || 0) });
    }
    return out;
  }

  // The facts of one element that its text inherits, given its parent's.
  function styleCtx(el, p, env) {
    var st = win.getComputedStyle(el);
    var c = { el: el, st: st };
    var op = parseFloat(st.opacity);
    if (isNaN(op)) op = 1;
    var f = filterOf(st.filter);
    c.opacity = (p ? p.opacity : 1) * op * f.op;
    // The colours drawn at and inside a filter: its map, then the
    // ancestors' (a filter applies to what its element draws, not to
    // what lies beneath it).
    var pm = p ? p.map : null;
    c.map = f.map ? (pm ? function (x) { return pm(f.map(x)); } : f.map) : pm;
    c.colorUnknown = !!(p && p.colorUnknown) || f.unknown;
    // checkVisibility() also sees what display does not: content skipped by
    // content-visibility: hidden, such as a closed <details>.
    c.none = !!(p && p.none) || st.display === "none" ||
      (st.display !== "contents" && typeof el.checkVisibility === "function" && !el.checkVisibility());
    c.hitEl = st.display === "contents" ? (p ? p.hitEl : null) : el;
    // Contents not rendered though the element is: all of them under
    // content-visibility: hidden, all but the summary in a closed
    // <details>. checkVisibility() tells of the elements among them, not
    // of text directly inside (walk).
    c.skips = !c.none && (st.contentVisibility === "hidden" || (el.localName === "details" && !el.open));
    // The background: colours composited over white; unknown (bgKnown
    // false) above a background image until an opaque colour covers it.
    c.bg = p ? p.bg : WHITE;
    c.bgKnown = p ? p.bgKnown : true;
    var bg = parseColor(st.backgroundColor);
    if (bg && bg.alpha > 0) c.bg = blend(c.map ? c.map(bg.rgb) : bg.rgb, bg.alpha, c.bg);
    if (bg && bg.alpha >= 1) c.bgKnown = true;
    if (st.backgroundImage && st.backgroundImage !== "none") c.bgKnown = false;
    // The text is drawn in -webkit-text-fill-color, which is color unless
    // set otherwise; SVG text in its fill, at its fill-opacity (none: not
    // drawn; a paint server, url(), colours unknown).
    var fill, fg, svgFill = el.namespaceURI === "http://www.w3.org/2000/svg" && st.fill;
    if (svgFill) {
      var fo = parseFloat(st.fillOpacity);
      fg = st.fill === "none" ? { rgb: [0, 0, 0], alpha: 0 } : parseColor(st.fill);
      if (fg && !isNaN(fo)) fg = { rgb: fg.rgb, alpha: fg.alpha * Math.min(Math.max(fo, 0), 1) };
      if (!fg) c.colorUnknown = true;
      c.color = st.fill;
    } else {
      fill = parseColor(st.webkitTextFillColor);
      fg = fill || parseColor(st.color);
      c.color = fill ? st.webkitTextFillColor : st.color;
    }
    c.fgRaw = fg ? (c.map ? c.map(fg.rgb) : fg.rgb) : null;
    if (fg && c.map) c.color = rgbString(c.fgRaw);
    c.fgAlpha = fg ? fg.alpha * Math.min(c.opacity, 1) : 0;
    c.fg = fg ? blend(c.fgRaw, c.fgAlpha, c.bg) : null;
    c.contrast = c.fg ? contrast(c.fg, c.bg) : null;
    // A clip-path other than inset() (a circle, a polygon, a url()) is
    // left to the hit test: text it clips away is not found there.
    c.shape = !!(p && p.shape) || !!(st.clipPath && st.clipPath !== "none" && !/^inset\(/.test(st.clipPath));
    var pos = st.position;
    var base = !p ? [] : pos === "fixed" ? p.fixedClips : pos === "absolute" ? p.absClips : p.clips;
    var own = c.none ? [] : ownClips(el, st, env);
    c.clips = own.length ? base.concat(own) : base;
    var contains = (st.transform && st.transform !== "none") || (st.filter && st.filter !== "none") ||
      (st.perspective && st.perspective !== "none") || /paint|layout|strict|content/.test(st.contain || "");
    c.absClips = pos !== "static" || contains ? c.clips : (p ? p.absClips : []);
    c.fixedClips = contains ? c.clips : (p ? p.fixedClips : []);
    // Fixed to the viewport (vfixed): a fixed box whose containing block
    // is the viewport, or one fixed to it, and everything inside it. No
    // scrolling moves it.
    c.vfixed = pos === "fixed" ? (p ? p.fixedCBV : true) : (p ? p.vfixed : false);
    c.fixedCBV = contains ? c.vfixed : (p ? p.fixedCBV : true);
    return c;
  }

  function intersect(a, b) {
    var r = { l: Math.max(a.l, b.l), r: Math.min(a.r, b.r), t: Math.max(a.t, b.t), b: Math.min(a.b, b.b) };
    return r.r > r.l && r.b > r.t ? r : null;
  }

  // boxesOf returns the boxes of node's text from..to, in style st; each
  // is thin when the text is squeezed (a transform's scaleX): its boxes'
  // area over the width the text takes unscaled in its font is under
  // MIN_BOX_PX, as for a box under MIN_BOX_PX high.
  function boxesOf(node, from, to, env, st) {
    env.range.setStart(node, from);
    env.range.setEnd(node, to);
    var list = env.range.getClientRects(), out = [], area = 0, i;
    for (i = 0; i < list.length; i++) {
      var r = list[i];
      if (r.width > 0 && r.height > 0) {
        out.push({ l: r.left, r: r.right, t: r.top, b: r.bottom });
        area += r.width * r.height;
      }
    }
    var w = out.length ? naturalWidth(node.data.slice(from, to), st, env) : 0;
    if (w > 0 && area / w < MIN_BOX_PX) for (i = 0; i < out.length; i++) out[i].thin = true;
    return out;
  }

  // naturalWidth is the width of text s in style st, untransformed, as a
  // canvas measures it in the same font; 0 when it cannot tell.
  function naturalWidth(s, st, env) {
    s = clean(s);
    if (!s) return 0;
    if (env.g === undefined) {
      var cv = doc.createElement("canvas");
      env.g = (cv.getContext && cv.getContext("2d")) || null;
    }
    var g = env.g;
    if (!g) return 0;
    g.font = st.font || [st.fontStyle, st.fontWeight, st.fontSize, st.fontFamily].join(" ");
    if ("letterSpacing" in g) g.letterSpacing = /px$/.test(st.letterSpacing) ? st.letterSpacing : "0px";
    return g.measureText(st.textTransform === "uppercase" ? s.toUpperCase() : s).width;
  }

  function opacityOf(el) {
    var op = 1;
    for (var n = el; n && n.nodeType === 1 && op >= MIN_OPACITY; n = parentOf(n)) {
      var v = parseFloat(win.getComputedStyle(n).opacity);
      if (!isNaN(v)) op *= v;
    }
    return op;
  }

  // flatContains reports whether a is b or its ancestor in the flat tree.
  function flatContains(a, b) {
    for (var n = b; n; n = parentOf(n)) if (n === a) return true;
    return false;
  }

  // hides reports whether colour col at alpha a, drawn over text c, leaves
  // the text's contrast under MIN_CONTRAST.
  function hides(col, a, c) {
    if (!c.fg || a <= 0) return false;
    return contrast(blend(col, a, c.fg), blend(col, a, c.bg)) < MIN_CONTRAST;
  }

  // paints reports whether style st, at opacity op, hides text c under it.
  function paints(st, op, replaced, c) {
    if (st.visibility !== "visible" || op < MIN_OPACITY) return false;
    if (replaced || (st.backgroundImage && st.backgroundImage !== "none")) return op >= 0.5;
    var bg = parseColor(st.backgroundColor);
    return !!bg && hides(bg.rgb, bg.alpha * op, c);
  }

  // insetShadow reports whether an inset box-shadow of e, style st, at
  // opacity op, paints over point x, y (where it is solid: outside its
  // inner edge and half its blur) and hides text c there.
  function insetShadow(e, st, op, c, x, y) {
    if (!/\binset\b/.test(st.boxShadow || "") || st.visibility !== "visible" || op < MIN_OPACITY) return false;
    var parts = st.boxShadow.split(/,(?![^(]*\))/), r = null;
    for (var i = 0; i < parts.length; i++) {
      if (!/\binset\b/.test(parts[i])) continue;
      var cm = /rgba?\([^)]*\)/.exec(parts[i]), col = parseColor(cm ? cm[0] : st.color);
      if (!col) continue;
      var n = parts[i].replace(/rgba?\([^)]*\)|inset/g, " ").trim().split(/\s+/).map(parseFloat);
      var ox = n[0] || 0, oy = n[1] || 0, soft = (n[2] || 0) / 2, spread = n[3] || 0;
      r = r || e.getBoundingClientRect();
      var L = r.left + (e.clientLeft || 0), T = r.top + (e.clientTop || 0);
      var W = e.clientWidth || r.width, H = e.clientHeight || r.height;
      var inL = L + ox + spread, inR = L + W + ox - spread, inT = T + oy + spread, inB = T + H + oy - spread;
      var shaded = x >= L && x < L + W && y >= T && y < T + H &&
        (inR <= inL || inB <= inT || x < inL - soft || x > inR + soft || y < inT - soft || y > inB + soft);
      if (shaded && hides(col.rgb, col.alpha * op, c)) return true;
    }
    return false;
  }

  // paintsOver reports whether e, found above the text's element at point
  // x, y, hides the text there: by its background, an image, an inset
  // box-shadow, or its ::before or ::after (an ancestor found above the
  // text is there by those, or because the text sits under it, a negative
  // z-index).
  function paintsOver(e, c, x, y) {
    var st = win.getComputedStyle(e), op = opacityOf(e);
    var svg = e.namespaceURI === "http://www.w3.org/2000/svg";
    var replaced = PAINTED.test(e.nodeName) || (svg && e.localName !== "svg" && st.fill && st.fill !== "none");
    if (paints(st, op, replaced, c) || insetShadow(e, st, op, c, x, y)) return true;
    for (var i = 0; i < 2; i++) {
      var ps = win.getComputedStyle(e, i ? "::after" : "::before");
      if (ps.content && ps.content !== "none" && ps.content !== "normal" && paints(ps, op * (parseFloat(ps.opacity) || 0), false, c)) return true;
    }
    return false;
  }

  // ownCover reports whether a positioned ::before or ::after of the
  // text's own element, which is drawn over its in-flow text (a z-index
  // that is not negative), paints over point x, y and hides the text
  // there: the hit test finds the element itself there, whether its text
  // or its pseudo-element is hit.
  function ownCover(c, x, y) {
    var e = c.hitEl, op = opacityOf(e);
    for (var i = 0; i < 2; i++) {
      var ps = win.getComputedStyle(e, i ? "::after" : "::before");
      if (!ps.content || ps.content === "none" || ps.content === "normal") continue;
      if (!/^(absolute|fixed)$/.test(ps.position) || parseInt(ps.zIndex, 10) < 0) continue;
      var r = pseudoBox(e, ps);
      if (r && x >= r.l && x < r.r && y >= r.t && y < r.b && paints(ps, op * (parseFloat(ps.opacity) || 0), false, c)) return true;
    }
    return false;
  }

  // pseudoBox is the border box of e's positioned pseudo-element of style
  // ps, from its resolved offsets and size within its containing block:
  // the viewport when fixed, else the padding box of the nearest
  // positioned element from e up, or the document's origin. null when its
  // offsets or size are not resolved.
  function pseudoBox(e, ps) {
    var L = px(ps.left), T = px(ps.top), W = px(ps.width), H = px(ps.height);
    if (L === null || T === null || W === null || H === null) return null;
    var cb = { l: -win.scrollX, t: -win.scrollY };
    if (ps.position === "fixed") cb = { l: 0, t: 0 };
    else {
      for (var n = e; n && n.nodeType === 1; n = parentOf(n)) {
        var st = win.getComputedStyle(n);
        if (st.position === "static") continue;
        var r = n.getBoundingClientRect();
        cb = { l: r.left + (parseFloat(st.borderLeftWidth) || 0), t: r.top + (parseFloat(st.borderTopWidth) || 0) };
        break;
      }
    }
    var w = W + ["paddingLeft", "paddingRight", "borderLeftWidth", "borderRightWidth"].reduce(function (a, k) { return a + (parseFloat(ps[k]) || 0); }, 0);
    var h = H + ["paddingTop", "paddingBottom", "borderTopWidth", "borderBottomWidth"].reduce(function (a, k) { return a + (parseFloat(ps[k]) || 0); }, 0);
    return { l: cb.l + L, t: cb.t + T, r: cb.l + L + w, b: cb.t + T + h };
  }

  // paintsBeneath reports whether e paints something (a colour, an image,
  // a replaced element) that text above it is drawn on.
  function paintsBeneath(e) {
    var st = win.getComputedStyle(e), bg = parseColor(st.backgroundColor);
    return st.visibility === "visible" && (PAINTED.test(e.nodeName) || (bg && bg.alpha > 0) ||
      (st.backgroundImage && st.backgroundImage !== "none"));
  }

  // beneath composites what is drawn beneath text c at a point, from the
  // canvas up through the elements list[at..] (list as elementsFromPoint
  // returns it, topmost first): the background, whether it is known (not
  // over an image), and the text's contrast with it.
  function beneath(list, at, c) {
    var de = doc.documentElement, hb = parseColor(win.getComputedStyle(de).backgroundColor);
    var canvas = hb && hb.alpha > 0 ? de : doc.body, cb = canvas ? parseColor(win.getComputedStyle(canvas).backgroundColor) : null;
    var bg = cb && cb.alpha > 0 ? blend(cb.rgb, cb.alpha, WHITE) : WHITE, known = true;
    for (var i = list.length - 1; i >= at; i--) {
      var e = list[i], st = win.getComputedStyle(e);
      if (e === de || e === canvas || st.visibility !== "visible") continue;
      var op = opacityOf(e);
      if (op < MIN_OPACITY) continue;
      if (PAINTED.test(e.nodeName) || (st.backgroundImage && st.backgroundImage !== "none")) { known = false; continue; }
      var b = parseColor(st.backgroundColor);
      if (b && b.alpha > 0) {
        bg = blend(b.rgb, b.alpha * op, bg);
        if (b.alpha * op >= 1) known = true;
      }
    }
    return { bg: bg, known: known, ratio: c.fgRaw ? contrast(blend(c.fgRaw, c.fgAlpha, bg), bg) : null };
  }

  // atPoint hit-tests the centre of box v of text c: {cover} when another
  // element paints over the text there, or when the text's element is not
  // found there and a clip-path shape could have clipped it away; {under},
  // the background there (beneath()), when an element other than its
  // ancestors paints beneath it. null when the point cannot be tested:
  // outside the viewport, pointer-events: none, past MAX_HIT_TESTS.
  function atPoint(v, c, env) {
    var x = (v.l + v.r) / 2, y = (v.t + v.b) / 2;
    if (x < 0 || y < 0 || x >= env.vw || y >= env.vh || !c.hitEl || env.hits <= 0) return null;
    if (win.getComputedStyle(c.hitEl).pointerEvents === "none") return null;
    env.hits--;
    var root = c.hitEl.getRootNode ? c.hitEl.getRootNode() : doc;
    if (!root.elementsFromPoint) root = doc;
    var list = root.elementsFromPoint(x, y), at = Array.prototype.indexOf.call(list, c.hitEl), i;
    // Text slotted from outside root may be found as its host there.
    for (i = 0; at < 0 && i < list.length; i++) if (list[i].getRootNode() !== root && flatContains(list[i], c.hitEl)) at = i;
    if (at < 0) return { cover: c.shape };
    for (i = 0; i < at; i++) if (paintsOver(list[i], c, x, y)) return { cover: true };
    if (ownCover(c, x, y)) return { cover: true };
    if (c.map) return { cover: false }; // colours under a filter: the ancestors' judgement
    for (i = at + 1; i < list.length; i++) {
      if (!flatContains(list[i], c.hitEl) && paintsBeneath(list[i])) return { cover: false, under: beneath(list, at, c) };
    }
    return { cover: false };
  }

  // hiddenBox reports whether the consumer could not read the text in box
  // r. The background found beneath it by the hit test, if any, is kept
  // in r.under.
  function hiddenBox(r, c, env) {
    if (r.b - r.t < MIN_BOX_PX || r.thin) return true;
    // Inside a scroll container, what a person can scroll to is bounded
    // in its axis by what it reaches (among the clips), not the viewport;
    // a box fixed to the viewport by the viewport itself.
    var a = c.vfixed ? { l: 0, t: 0, r: env.vw, b: env.vh } : env.area, sx = false, sy = false, i;
    for (i = 0; i < c.clips.length; i++) { sx = sx || c.clips[i].sx; sy = sy || c.clips[i].sy; }
    var v = intersect(r, { l: sx ? -Infinity : a.l, r: sx ? Infinity : a.r, t: sy ? -Infinity : a.t, b: sy ? Infinity : a.b });
    for (i = 0; v && i < c.clips.length; i++) v = intersect(v, c.clips[i]);
    if (!v || (v.r - v.l) * (v.b - v.t) < 0.5 * (r.r - r.l) * (r.b - r.t)) return true;
    var h = atPoint(v, c, env);
    if (h && h.cover) return true;
    if (h && h.under) {
      r.under = h.under;
      return h.under.known && h.under.ratio !== null && h.under.ratio < MIN_CONTRAST;
    }
    return c.bgKnown && c.contrast !== null && c.contrast < MIN_CONTRAST;
  }

  function allHidden(boxes, c, env) {
    var hidden = 0;
    for (var i = 0; i < boxes.length; i++) if (hiddenBox(boxes[i], c, env)) hidden++;
    return !boxes.length ? true : hidden === boxes.length ? true : hidden ? null : false;
  }

  function seen(out, c, boxes, env) {
    out.seen++;
    var size = parseFloat(c.st.fontSize) || 0;
    if (out.font === null || size < out.font) out.font = size;
    // The background the hit test found beneath the text, else its
    // ancestors'.
    var u = null, i;
    for (i = 0; i < boxes.length && !u; i++) u = boxes[i].under || null;
    var ratio = u ? u.ratio : c.contrast;
    if (ratio !== null) {
      var run = { ratio: ratio, color: c.color, background: rgbString(u ? u.bg : c.bg) };
      if (!(u ? u.known : c.bgKnown)) out.unknown = out.unknown || run;
      else if (out.worst === null || ratio < out.worst.ratio) out.worst = run;
    }
    // Under a filter the snippet cannot follow, it cannot tell the colours.
    if (c.colorUnknown) out.unsure = true;
    for (i = 0; i < boxes.length && !out.inViewport; i++) {
      out.inViewport = !!intersect(boxes[i], { l: 0, t: 0, r: env.vw, b: env.vh });
    }
  }

  // hide lists a hidden fragment. Past MAX_HIDDEN fragments (the service's
  // limit) or MAX_HIDDEN_CHARS characters (well inside its 64 KiB) the list
  // stops, its last fragment cut with "…"; every fragment still makes the
  // consent not visible.
  function hide(out, s) {
    s = clean(s);
    if (!s) return;
    out.hiddenCount++;
    var room = MAX_HIDDEN_CHARS - out.hiddenChars;
    if (out.hidden.length >= MAX_HIDDEN || room <= 0) return;
    if (s.length > room) s = s.slice(0, room) + "\u2026";
    out.hiddenChars += s.length;
    out.hidden.push(s);
  }

  function textPart(s, st) { return { s: s, ws: st.whiteSpace || "normal", tt: st.textTransform }; }

  function measureText(node, c, env, out) {
    var data = node.data, st = c.st;
    if (!/[^ \t\n\r\f]/.test(data)) { // white space only: nothing to read, but it spaces words
      if (!c.none && st.visibility === "visible") out.parts.push(textPart(data, st));
      return;
    }
    // Contrast is judged box by box (hiddenBox): what lies beneath the
    // text may not be its ancestors.
    var hidden = c.none || st.visibility !== "visible" || c.opacity < MIN_OPACITY ||
      (parseFloat(st.fontSize) || 0) < MIN_FONT_PX;
    var boxes = hidden ? [] : boxesOf(node, 0, data.length, env, st);
    if (!hidden) hidden = allHidden(boxes, c, env);
    if (hidden === null) { // partly hidden: word by word
      var re = /[^ \t\n\r\f]+/g, m, words = [];
      while ((m = re.exec(data))) words.push([m.index, m.index + m[0].length]);
      if (words.length > env.words) { env.words = 0; hidden = true; } else env.words -= words.length;
    }
    if (hidden === true) { hide(out, data); return; }
    if (hidden === false) { seen(out, c, boxes, env); out.parts.push(textPart(data, st)); return; }
    var text = "", at = 0, start = -1;
    for (var i = 0; i <= words.length; i++) {
      var w = words[i], b = w ? boxesOf(node, w[0], w[1], env, st) : null;
      if (w && allHidden(b, c, env) !== false) { if (start < 0) start = w[0]; continue; }
      if (start >= 0) { // a run of hidden words ends
        text += data.slice(at, start);
        hide(out, data.slice(start, words[i - 1][1]));
        at = words[i - 1][1];
        start = -1;
      }
      if (w) seen(out, c, b, env);
    }
    out.parts.push(textPart(text + data.slice(at), st));
  }

  function lineBreaks(el, st) {
    if (el.nodeName === "P") return 2;
    return /^(block|flow-root|list-item|table|table-caption|table-row|flex|grid)$/.test(st.display) ||
      /^block /.test(st.display) ? 1 : 0;
  }

  // childrenOf lists el's children as rendered (the flat tree): an open
  // shadow root's in place of a host's own, the nodes assigned to a slot
  // in place of its fallback content.
  function childrenOf(el) {
    if (el.shadowRoot) return el.shadowRoot.childNodes;
    if (el.localName === "slot" && typeof el.assignedNodes === "function") {
      var a = el.assignedNodes();
      if (a.length) return a;
    }
    return el.childNodes;
  }

  // closedRoot reports whether el, a custom element, seems to render a
  // closed shadow root, which the snippet cannot read: an inline host
  // wider than its own content.
  function closedRoot(el, c, env) {
    var st = c.st;
    if (el.shadowRoot || el.localName.indexOf("-") < 0 || c.none || !/^inline/.test(st.display)) return false;
    var r = el.getBoundingClientRect();
    env.range.selectNodeContents(el);
    var own = env.range.getBoundingClientRect();
    var edges = ["paddingLeft", "paddingRight", "borderLeftWidth", "borderRightWidth"].reduce(function (s, k) {
      return s + (parseFloat(st[k]) || 0);
    }, 0);
    return r.width - edges > own.width + 1;
  }

  function walk(el, c, env, out) {
    var kids = childrenOf(el);
    for (var k = 0; k < kids.length; k++) {
      var n = kids[k];
      if (n.nodeType === 3) { if (c.skips) hide(out, n.data); else measureText(n, c, env, out); continue; }
      if (n.nodeType !== 1 || SKIPPED.test(n.nodeName)) continue;
      var cc = styleCtx(n, c, env);
      if (closedRoot(n, cc, env)) out.unsure = true;
      if (n.nodeName === "BR") { if (!cc.none) out.parts.push({ nl: true }); continue; }
      var br = cc.none ? 0 : lineBreaks(n, cc.st);
      if (br) out.parts.push({ br: br });
      walk(n, cc, env, out);
      if (br) out.parts.push({ br: br });
      if (!cc.none && cc.st.display === "table-cell" && nextElement(kids, k)) out.parts.push({ s: "\t", ws: "pre" });
    }
  }

  function nextElement(kids, k) {
    for (k++; k < kids.length; k++) if (kids[k].nodeType === 1) return true;
    return false;
  }

  function transformed(s, tt, before) {
    if (tt === "uppercase") return s.toUpperCase();
    if (tt === "lowercase") return s.toLowerCase();
    if (tt !== "capitalize") return s;
    var starts = !before || /[ \t\n\r\f]$/.test(before);
    return s.replace(/(^|[ \t\n\r\f])([^ \t\n\r\f])/g, function (m, a, ch, i) {
      return i === 0 && !a && !starts ? m : a + ch.toUpperCase();
    });
  }

  // joinText joins the visible parts as innerText would.
  function joinText(parts) {
    var text = "", br = 0;
    function breaks() {
      if (br && text) text = text.replace(/ +$/, "") + (br === 2 ? "\n\n" : "\n");
      br = 0;
    }
    for (var i = 0; i < parts.length; i++) {
      var p = parts[i];
      if (p.br) { br = Math.max(br, p.br); continue; }
      if (p.nl) { breaks(); text = text.replace(/ +$/, "") + "\n"; continue; }
      var s = p.s.replace(CONTROLS, " "), pre = /^(pre|pre-wrap|break-spaces)$/.test(p.ws);
      if (!pre) s = p.ws === "pre-line" ? s.replace(/[ \t\r\f]+/g, " ").replace(/ ?\n ?/g, "\n") : s.replace(BLANKS, " ");
      if (!pre && s === " ") { // a collapsible space: kept only between words on a line
        if (text && !br && !/[ \n\t]$/.test(text)) text += " ";
        continue;
      }
      if (!s) continue;
      breaks();
      if (!pre && (!text || /[ \n]$/.test(text))) s = s.replace(/^ /, "");
      text += transformed(s, p.tt, text);
    }
    return text.replace(/^[ \t\n\r\f]+|[ \t\n\r\f]+$/g, "");
  }

  // evidence measures one consent element: its visible text and its
  // visibility. font_size_px is the smallest font size among its visible
  // text, and text_color, background_color and contrast_ratio those of the
  // visible text of lowest contrast (over a known background, else the
  // first over an image): the worst a reader met. With nothing visible they
  // are the element's own; in_viewport says whether some visible text (with
  // none, some of the element's box) was inside the viewport.
  function evidence(el, env) {
    var chain = [];
    for (var n = parentOf(el); n; n = parentOf(n)) chain.unshift(n);
    var c = null;
    for (var i = 0; i < chain.length; i++) c = styleCtx(chain[i], c, env);
    c = styleCtx(el, c, env);
    var out = { parts: [], hidden: [], hiddenCount: 0, hiddenChars: 0, seen: 0, font: null, worst: null, unknown: null,
      inViewport: false, unsure: false };
    if (closedRoot(el, c, env)) out.unsure = true;
    walk(el, c, env, out);
    var text = joinText(out.parts);
    if (!out.seen) { // nothing visible: the element's own style
      var r = el.getBoundingClientRect();
      out.font = parseFloat(c.st.fontSize) || 0;
      out.worst = { ratio: c.contrast === null ? 1 : c.contrast, color: c.color, background: rgbString(c.bg) };
      out.inViewport = r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < env.vh && r.left < env.vw;
    }
    var w = out.worst || out.unknown || { ratio: c.contrast === null ? 1 : c.contrast, color: c.color, background: rgbString(c.bg) };
    return {
      text: text,
      visibility: {
        in_viewport: out.inViewport, visible: out.seen > 0 && text !== "" && !out.hiddenCount && !out.unsure,
        font_size_px: out.font, text_color: w.color, background_color: w.background,
        contrast_ratio: Math.min(21, Math.max(1, Math.round(w.ratio * 100) / 100)),
        hidden_text: out.hidden
      }
    };
  }

  var env = page && page.env && page.doc === doc ? page.env : pageEnv();
  if (page) { page.env = env; page.doc = doc; }
  return evidence(el, env);
}
