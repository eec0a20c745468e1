/*
 * consentkit capture snippet (D36). Embed it on the page of the form:
 *
 *   <script src="https://consent.example.com/capture/capture.js" data-property-id="PROPERTY" async></script>
 *
 * It starts a recording session, records the page with rrweb's recorder
 * (served beside this file), sends the events in numbered chunks, puts the
 * reserved certificate id into the form as the hidden input
 * consent_certificate_id, and sends the consent when the form is submitted.
 * It never delays, blocks or breaks the form: every call is asynchronous, and
 * any failure only stops the recording.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || window.__consentkit) return;
  window.__consentkit = true;

  var FLUSH_MS = 1000;           // send a chunk every second…
  var CHUNK_BYTES = 64 * 1024;   // …or at 64 KiB, whichever comes first
  var MAX_BUFFER = 8 << 20;      // stop recording rather than grow without bound
  var KEEPALIVE_BYTES = 60000;   // browsers refuse keepalive bodies over 64 KiB
  var MAX_BACKOFF_MS = 30000;

  var property = script.getAttribute("data-property-id");
  var base = script.src.replace(/\/capture\/capture\.js(\?.*)?$/, "");
  var session = null;            // {session_id, certificate_id, upload_token}
  var buffer = [], bufferBytes = 0;
  var queue = [], queuedBytes = 0; // chunks waiting: {seq, events, bytes}
  var nextSeq = 0, sending = false, backoff = 500, stopped = false, consented = false;
  var stopRecording = null;

  function safe(fn) {
    return function () {
      try { return fn.apply(this, arguments); } catch (e) { stop(); }
    };
  }

  function stop() {
    stopped = true;
    if (stopRecording) { try { stopRecording(); } catch (e) { /* ignore */ } }
    buffer = []; queue = []; bufferBytes = 0; queuedBytes = 0;
  }

  function consentElements(root) {
    return Array.prototype.slice.call((root || document).querySelectorAll("[data-consent]"));
  }

  function consentForm() {
    var el = consentElements()[0];
    return (el && el.closest("form")) || document.forms[0] || null;
  }

  // The hidden input is there from page load; it gets its value as soon as
  // the service has reserved the certificate.
  function hiddenInput() {
    var form = consentForm();
    if (!form) return null;
    var input = form.querySelector('input[name="consent_certificate_id"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = "consent_certificate_id";
      form.appendChild(input);
    }
    return input;
  }

  function post(path, body, opts) {
    opts = opts || {};
    var headers = { "Content-Type": opts.plain ? "text/plain;charset=UTF-8" : "application/json" };
    if (session) headers.Authorization = "Bearer " + session.upload_token;
    return fetch(base + path, {
      method: "POST", mode: "cors", credentials: "omit", headers: headers,
      body: body, keepalive: !!opts.keepalive
    });
  }

  function retryable(status) { return status === 0 || status === 408 || status === 429 || status >= 500; }

  function start() {
    post("/capture/sessions", JSON.stringify({ property_id: property, url: location.href }), { plain: true })
      .then(function (r) {
        if (r.status === 201) return r.json();
        if (retryable(r.status)) later(start); else stop();
        return null;
      }, function () { later(start); }) // the network failed: try again
      .then(safe(function (s) {
        if (!s) return;
        session = s;
        backoff = 500;
        var input = hiddenInput();
        if (input) input.value = s.certificate_id;
        pump();
      }));
  }

  function later(fn) {
    setTimeout(fn, backoff);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }

  function cut() {
    if (!buffer.length) return;
    queue.push({ seq: nextSeq, events: buffer, bytes: bufferBytes });
    queuedBytes += bufferBytes;
    nextSeq++;
    buffer = []; bufferBytes = 0;
  }

  function chunkBody(c) { return '{"seq":' + c.seq + ',"events":' + JSON.stringify(c.events) + "}"; }

  // One chunk in flight at a time, in order, so the service sees no gap.
  function pump() {
    if (sending || stopped || !session || consented || !queue.length) return;
    sending = true;
    var c = queue[0];
    post("/capture/sessions/" + encodeURIComponent(session.session_id) + "/events", chunkBody(c))
      .then(function (r) {
        sending = false;
        if (r.ok) { queuedBytes -= queue.shift().bytes; backoff = 500; pump(); return; }
        if (retryable(r.status)) { later(pump); return; }
        stop();
      }, function () { sending = false; later(pump); });
  }

  function record(event) {
    if (stopped || consented) return;
    var size = JSON.stringify(event).length;
    buffer.push(event); bufferBytes += size;
    if (bufferBytes >= CHUNK_BYTES) { cut(); pump(); }
    if (bufferBytes + queuedBytes > MAX_BUFFER) stop();
  }

  function masked(text, element) {
    if (element && (element.type === "password" || element.hasAttribute("data-consent-mask"))) {
      return "*".repeat(text.length);
    }
    return text;
  }

  function loadRecorder() {
    var s = document.createElement("script");
    s.src = base + "/capture/rrweb.js";
    s.async = true;
    s.onload = safe(function () {
      var r = window.rrweb && window.rrweb.record;
      if (!r) { stop(); return; }
      stopRecording = r({
        emit: safe(record),
        // Every input goes through masked(): passwords and inputs marked
        // data-consent-mask are replaced by asterisks, others kept.
        maskInputOptions: {
          color: true, date: true, "datetime-local": true, email: true, month: true, number: true,
          range: true, search: true, tel: true, text: true, time: true, url: true, week: true,
          textarea: true, select: true, password: true
        },
        maskInputFn: masked
      });
    });
    s.onerror = stop;
    (document.head || document.documentElement).appendChild(s);
  }

  // Visibility of the consent element at the moment of consent (D37).
  function luminance(rgb) {
    var c = rgb.map(function (v) {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }

  function parseColor(s) {
    var m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(s || "");
    if (!m) return null;
    return { rgb: [+m[1], +m[2], +m[3]], alpha: m[4] === undefined ? 1 : +m[4] };
  }

  function visibility(el) {
    var style = getComputedStyle(el);
    var rect = el.getBoundingClientRect();
    var inViewport = rect.width > 0 && rect.height > 0 && rect.bottom > 0 && rect.right > 0 &&
      rect.top < (window.innerHeight || document.documentElement.clientHeight) &&
      rect.left < (window.innerWidth || document.documentElement.clientWidth);
    var visible = true, background = "rgb(255, 255, 255)";
    var foundBackground = false;
    for (var n = el; n && n.nodeType === 1; n = n.parentElement) {
      var st = getComputedStyle(n);
      if (st.display === "none" || st.visibility === "hidden" || st.visibility === "collapse" || parseFloat(st.opacity) === 0) {
        visible = false;
      }
      var bg = parseColor(st.backgroundColor);
      if (!foundBackground && bg && bg.alpha > 0) { background = st.backgroundColor; foundBackground = true; }
    }
    var fg = parseColor(style.color), bgc = parseColor(background);
    var ratio = 1;
    if (fg && bgc) {
      var a = luminance(fg.rgb), b = luminance(bgc.rgb);
      ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    }
    return {
      in_viewport: inViewport, visible: visible, font_size_px: parseFloat(style.fontSize) || 0,
      text_color: style.color, background_color: background, contrast_ratio: Math.round(ratio * 100) / 100
    };
  }

  function field(form, marker, type) {
    var el = (form || document).querySelector("[" + marker + "]") || (form && form.querySelector('input[type="' + type + '"]'));
    return el && el.value ? el.value : "";
  }

  // On submit: the events not yet sent travel with the consent, in one
  // keepalive request that outlives the page, so nothing waits.
  function onSubmit(e) {
    var form = e.target;
    var els = consentElements(form);
    if (!els.length || consented || !session) return;
    consented = true;
    cut();
    var tail = null;
    if (queue.length && !sending) {
      var events = [];
      for (var i = 0; i < queue.length; i++) events = events.concat(queue[i].events);
      tail = { seq: queue[0].seq, events: events };
    } else if (queue.length > 1) {
      var rest = [];
      for (var j = 1; j < queue.length; j++) rest = rest.concat(queue[j].events);
      tail = { seq: queue[1].seq, events: rest };
    }
    var body = {
      consents: els.map(function (el) {
        var types = (el.getAttribute("data-consent-types") || "").split(",")
          .map(function (t) { return t.trim(); }).filter(Boolean);
        return { text: el.innerText, types: types };
      }),
      email: field(form, "data-consent-email", "email"),
      mobile: field(form, "data-consent-mobile", "tel"),
      url: location.href,
      visibility: visibility(els[0])
    };
    if (tail) { body.seq = tail.seq; body.events = tail.events; }
    var json = JSON.stringify(body);
    if (tail && json.length > KEEPALIVE_BYTES) { // too big to outlive the page: send what fits
      delete body.seq; delete body.events;
      json = JSON.stringify(body);
    }
    send(json, 0);
  }

  function send(json, attempt) {
    post("/capture/sessions/" + encodeURIComponent(session.session_id) + "/consent", json, { keepalive: json.length <= KEEPALIVE_BYTES })
      .then(function (r) {
        if (retryable(r.status) && attempt < 5) setTimeout(function () { send(json, attempt + 1); }, 500 << attempt);
      }, function () {
        if (attempt < 5) setTimeout(function () { send(json, attempt + 1); }, 500 << attempt);
      });
  }

  function onHide() {
    if (stopped || consented || !session) return;
    cut();
    if (sending || !queue.length) return;
    var c = queue[0];
    var body = chunkBody(c);
    if (body.length > KEEPALIVE_BYTES) return;
    sending = true;
    post("/capture/sessions/" + encodeURIComponent(session.session_id) + "/events", body, { keepalive: true })
      .then(function (r) { sending = false; if (r.ok) { queuedBytes -= queue.shift().bytes; pump(); } }, function () { sending = false; });
  }

  safe(function () {
    if (!property || !window.fetch) return;
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", safe(hiddenInput));
    else hiddenInput();
    document.addEventListener("submit", safe(onSubmit), true);
    window.addEventListener("pagehide", safe(onHide));
    document.addEventListener("visibilitychange", safe(function () { if (document.visibilityState === "hidden") onHide(); }));
    setInterval(safe(function () { cut(); pump(); }), FLUSH_MS);
    loadRecorder();
    start();
  })();
})();
