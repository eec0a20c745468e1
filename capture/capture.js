/*
 * consentkit capture snippet (D36). Embed it on the page of the form:
 *
 *   <script src="https://consent.example.com/capture/capture.js" data-property-id="PROPERTY" async></script>
 *
 * It starts a recording session, records the page with rrweb's recorder
 * (served beside this file), sends the events in numbered chunks, puts the
 * reserved certificate id into the form as the hidden input
 * consent_certificate_id, and sends the consent when the form is submitted:
 * for each element marked data-consent, the text the consumer could read,
 * the fragments hidden from them (measured by consentkitMeasure, of
 * measure.js, which the service serves before this text, both in one
 * function so that neither name is the page's), and how its
 * checkbox came to be ticked (D37). At submit it adds to the recording its
 * own event "consentkit/signals" (D50): counts of key presses and pastes per
 * field, a few facts about the browser and the page's age, never what was
 * typed.
 * It never delays, blocks or breaks the form: every call is asynchronous, and
 * any failure only stops the recording.
 */
(function () {
  "use strict";
  // Markup on the page can stand in for both names: an <img
  // name="currentScript"> overrides document.currentScript, an element
  // whose id is __consentkit shows as window.__consentkit. So the script
  // is asked of Document's own getter, and must be a script element; and
  // only a property of the window's own is the guard.
  var current = Object.getOwnPropertyDescriptor(Document.prototype, "currentScript");
  var script = current && current.get ? current.get.call(document) : null;
  if (!(script instanceof HTMLScriptElement) || Object.prototype.hasOwnProperty.call(window, "__consentkit")) return;
  window.__consentkit = true;

  var FLUSH_MS = 1000;           // send a chunk every second…
  var CHUNK_BYTES = 64 * 1024;   // …or at 64 KiB, whichever comes first
  var MAX_BUFFER = 8 << 20;      // stop recording rather than grow without bound
  var KEEPALIVE_BYTES = 60000;   // browsers refuse keepalive bodies over 64 KiB, in UTF-8 bytes
  var MAX_BACKOFF_MS = 30000;
  var MAX_RETRY_AFTER_MS = 300000; // a Retry-After further off is taken as 5 minutes

  var property = script.getAttribute("data-property-id");
  var base = script.src.replace(/\/capture\/capture\.js(\?.*)?$/, "");
  var session = null;            // {session_id, certificate_id, upload_token}
  var buffer = [], bufferBytes = 0;
  var queue = [], queuedBytes = 0; // chunks waiting: {seq, events, bytes}
  var nextSeq = 0, sending = false, backoff = 500, stopped = false, consented = false;
  var retryAt = 0;               // no chunk is sent before this time (Date.now())
  var stopRecording = null;
  var recorder = null;           // rrweb's record, once it records
  var pending = null;            // a submission measured, not yet let go or cancelled
  var passwords = typeof WeakSet === "function" ? new WeakSet() : null; // inputs seen of type password

  function safe(fn) {
    return function () {
      try { return fn.apply(this, arguments); } catch (e) { stop(); }
    };
  }

  // stringify is JSON.stringify without the toJSON that a page's library
  // may have put on Array.prototype or Object.prototype (Prototype.js 1.6
  // writes arrays as strings), which would make every body malformed, and
  // with each lone surrogate made U+FFFD, as the browser draws it
  // (wellFormed).
  function stringify(value) {
    var protos = [Array.prototype, Object.prototype], saved = [];
    for (var i = 0; i < protos.length; i++) {
      if (Object.prototype.hasOwnProperty.call(protos[i], "toJSON")) {
        saved.push([protos[i], Object.getOwnPropertyDescriptor(protos[i], "toJSON")]);
        delete protos[i].toJSON;
      }
    }
    try {
      return wellFormed(JSON.stringify(value));
    } finally {
      for (var j = 0; j < saved.length; j++) Object.defineProperty(saved[j][0], "toJSON", saved[j][1]);
    }
  }

  // wellFormed makes \ufffd of each \udXXX escape in json. JSON.stringify
  // writes a surrogate so only when it is alone — half an emoji, of a
  // string a page's script cut — and the service refuses one (400): a chunk
  // refused so would end the recording, a consent text lose its
  // certificate. A backslash escaped before "ud800" is text, not an escape.
  function wellFormed(json) {
    if (json.indexOf("\\ud") < 0) return json;
    return json.replace(/(\\+)ud[89a-f][0-9a-f]{2}/g, function (m, bs) {
      return bs.length % 2 ? bs.slice(1) + "\\ufffd" : m;
    });
  }

  // utf8Length is the size of s as a request body: browsers count
  // keepalive bodies in bytes, and text outside ASCII takes 2 to 4 a
  // character.
  function utf8Length(s) {
    if (typeof TextEncoder === "function") return new TextEncoder().encode(s).length;
    return new Blob([s]).size;
  }

  function stop() {
    stopped = true;
    if (stopRecording) { try { stopRecording(); } catch (e) { /* ignore */ } }
    buffer = []; queue = []; bufferBytes = 0; queuedBytes = 0;
  }

  function consentElements(root) {
    return Array.prototype.slice.call((root || document).querySelectorAll("[data-consent]"));
  }

  // consentForms returns every form holding a consent element, else the
  // page's first form.
  function consentForms() {
    var forms = [];
    consentElements().forEach(function (el) {
      var f = el.closest("form");
      if (f && forms.indexOf(f) < 0) forms.push(f);
    });
    if (!forms.length && document.forms[0]) forms.push(document.forms[0]);
    return forms;
  }

  function hiddenInputOf(form) {
    var input = form.querySelector('input[name="consent_certificate_id"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = "consent_certificate_id";
      form.appendChild(input);
    }
    if (session) input.value = session.certificate_id;
    return input;
  }

  // Each form holding a consent has the hidden input from page load; it
  // gets its value as soon as the service has reserved the certificate.
  function hiddenInputs() { consentForms().forEach(hiddenInputOf); }

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
    post("/capture/sessions", stringify({ property_id: property, url: location.href }), { plain: true })
      .then(function (r) {
        if (r.status === 201) return r.json();
        if (retryable(r.status)) later(start); else stop();
        return null;
      }, function () { later(start); }) // the network failed: try again
      .then(safe(function (s) {
        if (!s) return;
        session = s;
        backoff = 500;
        hiddenInputs();
        pump();
      }));
  }

  function later(fn) {
    setTimeout(fn, backoff);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }

  // retryAfter is the wait in milliseconds that the answer's Retry-After
  // asks for (seconds or an HTTP date; readable when the service exposes
  // it), or 0.
  function retryAfter(r) {
    var v = null;
    try { v = r.headers.get("Retry-After"); } catch (e) { /* not readable */ }
    if (!v) return 0;
    var ms = /^\s*\d+\s*$/.test(v) ? parseInt(v, 10) * 1000 : Date.parse(v) - Date.now();
    return isFinite(ms) && ms > 0 ? Math.min(ms, MAX_RETRY_AFTER_MS) : 0;
  }

  // retryChunk waits before the next chunk: the backoff, or longer when
  // the service said when to come back. Nothing sends a chunk before then,
  // the flush every second included.
  function retryChunk(r) {
    var wait = Math.max(backoff, r ? retryAfter(r) : 0);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    retryAt = Date.now() + wait;
    setTimeout(safe(pump), wait);
  }

  function cut() {
    if (!buffer.length) return;
    queue.push({ seq: nextSeq, events: buffer, bytes: bufferBytes });
    queuedBytes += bufferBytes;
    nextSeq++;
    buffer = []; bufferBytes = 0;
  }

  function chunkBody(c) { return '{"seq":' + c.seq + ',"events":' + stringify(c.events) + "}"; }

  // One chunk in flight at a time, in order, so the service sees no gap.
  function pump() {
    if (sending || stopped || !session || consented || !queue.length || Date.now() < retryAt) return;
    sending = true;
    var c = queue[0];
    post("/capture/sessions/" + encodeURIComponent(session.session_id) + "/events", chunkBody(c))
      .then(function (r) {
        sending = false;
        if (r.ok) { queuedBytes -= queue.shift().bytes; backoff = 500; retryAt = 0; pump(); return; }
        if (retryable(r.status)) { retryChunk(r); return; }
        stop();
      }, function () { sending = false; retryChunk(null); });
  }

  function record(event) {
    if (stopped || consented) return;
    var size = JSON.stringify(event).length;
    buffer.push(event); bufferBytes += size;
    if (bufferBytes >= CHUNK_BYTES) { cut(); pump(); }
    if (bufferBytes + queuedBytes > MAX_BUFFER) stop();
  }

  // masked is what the recording keeps of an input's value. A password
  // field stays one when a "show password" button makes it a text field:
  // rrweb marks it data-rr-is-password when it sees the type change, and
  // the snippet remembers every input it saw of type password.
  function masked(text, element) {
    if (!element) return text;
    var password = element.type === "password";
    if (password && passwords) passwords.add(element);
    if (password || (passwords && passwords.has(element)) ||
        (element.hasAttribute && (element.hasAttribute("data-rr-is-password") || element.hasAttribute("data-consent-mask")))) {
      return "*".repeat(text.length);
    }
    return text;
  }

  // notePasswords remembers the page's password inputs, before a script
  // can turn one into a text field.
  function notePasswords() {
    if (!passwords) return;
    var list = document.querySelectorAll('input[type="password"]');
    for (var i = 0; i < list.length; i++) passwords.add(list[i]);
  }

  // loadRecorder loads rrweb's recorder. The service serves it wrapped
  // (capture.RecorderScript) so that it binds to no name of the page's,
  // whatever the page defines (an AMD define, an exports object, its own
  // window.rrweb), and hands it to its script element. A bundle served
  // bare sets window.rrweb: a page's own is put back.
  function loadRecorder() {
    var s = document.createElement("script");
    var had = Object.prototype.hasOwnProperty.call(window, "rrweb"), prev = had ? window.rrweb : undefined;
    s.src = base + "/capture/rrweb.js";
    s.async = true;
    s.onload = safe(function () {
      var lib = s.consentkitRecorder;
      if (!lib) {
        lib = window.rrweb;
        if (had && lib !== prev) {
          try { window.rrweb = prev; } catch (e) { /* the page's is lost */ }
        }
      }
      var r = lib && lib.record;
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
        maskInputFn: masked,
        // Each input event says whether a person caused it (D50).
        userTriggeredOnInput: true
      });
      recorder = r;
    });
    s.onerror = stop;
    (document.head || document.documentElement).appendChild(s);
  }

  // ---- How the consumer opted in (D37) ----
  //
  // The consent's checkbox is the input[type=checkbox] inside the consent
  // element; else the one inside its nearest label ancestor (or, failing
  // that, the label's control when it is a checkbox); else the checkbox
  // whose id the element names in data-consent-checkbox. From the snippet's
  // start, listeners in the capture phase on the document note each
  // checkbox's click and change events and whether the browser says a
  // person caused them (event.isTrusted). A change is the person's when it
  // is trusted and so was the click before it, since a script's el.click()
  // fires both. At submit, opt_in_method is:
  //   none          no checkbox for the consent;
  //   unchecked     the checkbox is not checked;
  //   manual        checked, and its last change event was the person's
  //                 and left it checked;
  //   pre_selected  checked, checked at load (its checked attribute, or
  //                 checked when the snippet started or the document was
  //                 parsed) and never changed by the person;
  //   scripted      checked otherwise: no change of the person's left it
  //                 checked, so a script did (set .checked, or click()).
  // Setting .checked fires no event: a script that does so after the
  // person's last change, ending as the person left it, cannot be told.
  var boxes = typeof WeakMap === "function" ? new WeakMap() : null;

  function isBox(n) { return !!n && n.nodeName === "INPUT" && n.type === "checkbox"; }

  function boxState(input) {
    var s = boxes.get(input);
    if (!s) { s = { initial: null, click: null, last: null, person: false }; boxes.set(input, s); }
    return s;
  }

  function noteLoaded() {
    if (!boxes) return;
    var list = document.querySelectorAll('input[type="checkbox"]');
    for (var i = 0; i < list.length; i++) {
      var s = boxState(list[i]);
      if (s.initial === null) s.initial = list[i].checked || list[i].defaultChecked;
    }
  }

  function onBox(e) {
    var t = e.composedPath ? e.composedPath()[0] : e.target;
    if (!boxes || !isBox(t)) return;
    var s = boxState(t);
    if (s.initial === null) s.initial = t.defaultChecked; // added to the page after load
    if (e.type === "click") { s.click = e.isTrusted; return; }
    var person = e.isTrusted && s.click !== false;
    s.click = null;
    s.last = { person: person, checked: t.checked };
    if (person) s.person = true;
  }

  function checkboxOf(el) {
    var box = el.querySelector('input[type="checkbox"]');
    var label = box ? null : el.closest("label");
    if (label) box = label.querySelector('input[type="checkbox"]') || (isBox(label.control) ? label.control : null);
    var id = box ? null : el.getAttribute("data-consent-checkbox");
    if (id) box = document.getElementById(id);
    return isBox(box) ? box : null;
  }

  function optIn(el) {
    var box = checkboxOf(el);
    if (!box) return "none";
    if (!box.checked) return "unchecked";
    var s = (boxes && boxes.get(box)) || { initial: null, last: null, person: false };
    if (s.last && s.last.person && s.last.checked) return "manual";
    var initial = s.initial === null ? box.defaultChecked : s.initial;
    return initial && !s.person ? "pre_selected" : "scripted";
  }

  // nodeId returns the recorder's id of el (rrweb's record.mirror), by
  // which a replay of the recording finds the element, or 0 when the
  // recorder does not know it (or past the 32-bit ids the service takes).
  function nodeId(el) {
    var mirror = recorder && recorder.mirror;
    var id = mirror && typeof mirror.getId === "function" ? mirror.getId(el) : 0;
    return typeof id === "number" && id > 0 && id <= 0x7fffffff && id % 1 === 0 ? id : 0;
  }

  // cleanText makes a space of each control character that the service
  // refuses in text (all of C0 but tab, line feed and carriage return, and
  // DEL): a vertical tab pasted from a word processor shows as nothing or
  // a space, and must not cost the consumer the certificate.
  function cleanText(t) {
    return typeof t === "string" ? t.replace(/[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]/g, " ") : t;
  }

  function cleanHidden(v) {
    if (v && Array.isArray(v.hidden_text)) v.hidden_text = v.hidden_text.map(cleanText);
    return v;
  }

  // consentsOf measures each consent element (consentkitMeasure, of
  // measure.js, which the service serves before this file's text); a failure
  // to measure one leaves its innerText, visible false, and no opt-in
  // method. node_id, the element's id in the recording, is left out when
  // the recorder does not know it. Control characters in the text become
  // spaces (cleanText).
  function consentsOf(els) {
    var page = {}; // the measures and budgets that the consents share
    return els.map(function (el) {
      var types = (el.getAttribute("data-consent-types") || "").split(",")
        .map(function (t) { return t.trim(); }).filter(Boolean);
      var m, method;
      try {
        m = consentkitMeasure(el, window, page);
      } catch (e) {
        m = { text: el.innerText || "", visibility: { in_viewport: false, visible: false, font_size_px: 0,
          text_color: "", background_color: "", contrast_ratio: 1, hidden_text: [] } };
      }
      try { method = optIn(el); } catch (e) { method = undefined; }
      var out = { text: cleanText(m.text), types: types, visibility: cleanHidden(m.visibility), opt_in_method: method };
      try { var id = nodeId(el); if (id) out.node_id = id; } catch (e) { /* no id: the replay cannot find it */ }
      return out;
    });
  }

  // ---- Behaviour signals (D50) ----
  //
  // Counts, never content. Per text field (input or textarea), keyed by its
  // name, else its id, else "#" and the recorder's id of it: keys, the key
  // presses the browser says a person made (trusted keydown events, not
  // auto-repeats) of printable keys, Backspace and Delete, and of the keys
  // that virtual keyboards and input methods report as "Unidentified" or
  // "Process"; a key held with Ctrl or Meta (a shortcut, not typing) is not
  // one, unless AltGr makes the character. pastes, the trusted paste events.
  // At submit the snippet adds them to the recording as one rrweb custom
  // event, tag "consentkit/signals", with navigator.webdriver, the viewport's
  // size, the time zone and language, whether the page is in a frame and the
  // parent's origin when the browser tells it, and page_age_ms, the page's
  // age at submit (performance.now(): milliseconds since its navigation
  // began), since the recording itself starts only once rrweb.js has
  // loaded.
  var MAX_FIELDS = 100, MAX_KEY = 128;
  var fields = typeof Object.create === "function" ? Object.create(null) : {};
  var fieldCount = 0;

  function fieldOf(e) {
    var t = e.composedPath ? e.composedPath()[0] : e.target;
    if (!t || (t.nodeName !== "INPUT" && t.nodeName !== "TEXTAREA")) return null;
    var id = t.name || t.id ? 0 : nodeId(t);
    var key = String(t.name || t.id || (id ? "#" + id : "")).slice(0, MAX_KEY);
    if (!key) return null;
    var f = Object.prototype.hasOwnProperty.call(fields, key) ? fields[key] : null;
    if (!f && fieldCount < MAX_FIELDS) { f = fields[key] = { keys: 0, pastes: 0 }; fieldCount++; }
    return f;
  }

  function onKey(e) {
    if (!e.isTrusted || e.repeat) return;
    var k = e.key;
    if (typeof k !== "string") return;
    var typing = k.length === 1 || (k.length === 2 && /^[\uD800-\uDBFF]/.test(k)) ||
      k === "Backspace" || k === "Delete" || k === "Unidentified" || k === "Process";
    if (!typing) return;
    if ((e.ctrlKey || e.metaKey) && !(e.getModifierState && e.getModifierState("AltGraph"))) return;
    var f = fieldOf(e);
    if (f) f.keys++;
  }

  function onPaste(e) {
    if (!e.isTrusted) return;
    var f = fieldOf(e);
    if (f) f.pastes++;
  }

  function parentOrigin() {
    try {
      var a = location.ancestorOrigins;
      if (a && a.length && a[0] && a[0] !== "null") return String(a[0]);
    } catch (e) { /* not told */ }
    try { if (document.referrer) return new URL(document.referrer).origin; } catch (e) { /* not told */ }
    return "";
  }

  // pageAge is the page's age in whole milliseconds, or undefined when the
  // browser does not tell it (then the event leaves it out).
  function pageAge() {
    try {
      var ms = window.performance && typeof performance.now === "function" ? performance.now() : NaN;
      return isFinite(ms) && ms >= 0 ? Math.round(ms) : undefined;
    } catch (e) { return undefined; }
  }

  // report adds the signals to the recording; it runs at submit, before the
  // last events are cut, so that they travel with the consent.
  function report() {
    try {
      if (!recorder || typeof recorder.addCustomEvent !== "function") return;
      var framed;
      try { framed = window.top !== window; } catch (e) { framed = true; }
      var tz = "";
      try { tz = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { /* not told */ }
      recorder.addCustomEvent("consentkit/signals", {
        v: 1,
        fields: fields,
        webdriver: navigator.webdriver === true,
        viewport: { width: window.innerWidth, height: window.innerHeight },
        time_zone: String(tz),
        language: String(navigator.language || ""),
        framed: framed,
        parent_origin: framed ? parentOrigin() : "",
        page_age_ms: pageAge()
      });
    } catch (e) { /* the consent goes without them */ }
  }

  function field(form, marker, type) {
    var el = (form || document).querySelector("[" + marker + "]") || (form && form.querySelector('input[type="' + type + '"]'));
    return el && el.value ? el.value : "";
  }

  // ---- Submission ----
  //
  // A submission is measured as it starts (a capture listener on the
  // document, before the page's own listeners can change the form) and
  // decided once the page's listeners have run (a bubble listener on the
  // window, or, when a listener stopped the event on its way, just after
  // it): a submission the page let go sends the consent. One the page
  // cancelled sends it only when it could be an AJAX form's, which cancels
  // every submission and sends the form itself: no control of the form is
  // invalid and no consent's checkbox is unticked. Otherwise the page
  // refused it, its own validation, and the consumer's next submission
  // sends the consent. form.submit(), which fires no submit event and
  // cannot be cancelled, sends it at once.
  function onSubmit(e) {
    var form = e.target;
    if (!form || form.nodeName !== "FORM" || consented || !session) return;
    var p = measure(form);
    if (!p) return;
    p.event = e;
    pending = p;
    setTimeout(safe(function () { decide(p); }), 0);
  }

  function onSubmitted(e) {
    if (pending && pending.event === e) decide(pending);
  }

  function onScriptSubmit(form) {
    if (consented || !session || !form || form.nodeName !== "FORM") return;
    var p = measure(form);
    if (p) { p.done = true; pending = null; send(p); }
  }

  // measure measures what a submission of form would consent to, or
  // returns null when the form holds no consent. It puts the reserved id
  // into the form too, should the page have added the form since.
  function measure(form) {
    var els = consentElements(form);
    if (!els.length) return null;
    hiddenInputOf(form);
    var invalid = false;
    try { invalid = form.matches(":invalid"); } catch (e) { /* not told */ }
    var p = {
      form: form, done: false, invalid: invalid,
      consents: consentsOf(els),
      email: field(form, "data-consent-email", "email"),
      mobile: field(form, "data-consent-mobile", "tel")
    };
    markMeasured();
    return p;
  }

  // markMeasured adds to the recording the moment the consents were
  // measured (an rrweb custom event, tag "consentkit/consent"), before the
  // page's own submit listeners run: the attestation's replay stops at the
  // last one (D49), so that what those listeners change afterwards (a
  // form hidden as it is sent) is not taken for what the consumer saw.
  function markMeasured() {
    try {
      if (recorder && typeof recorder.addCustomEvent === "function") recorder.addCustomEvent("consentkit/consent", {});
    } catch (e) { /* the replay then runs to the recording's end */ }
  }

  function decide(p) {
    if (p.done) return;
    p.done = true;
    if (pending === p) pending = null;
    if (consented || !session) return;
    if (p.event && p.event.defaultPrevented) {
      var unticked = p.consents.some(function (c) { return c.opt_in_method === "unchecked"; });
      if (p.invalid || unticked) return; // refused by the page: the next submission sends it
    }
    send(p);
  }

  // send sends the consent: the events not yet sent travel with it, in one
  // keepalive request that outlives the page, so nothing waits.
  function send(p) {
    report();
    consented = true;
    cut();
    // Every event the service has not acknowledged travels with the
    // consent, as one chunk of the first one's seq: the chunk in flight, if
    // any, then the rest. Should the chunk in flight reach the service
    // first, the consent's chunk extends it, and the service stores the
    // rest (D34); otherwise the chunk in flight comes too late, refused.
    var tail = null;
    if (queue.length) {
      var events = [];
      for (var i = 0; i < queue.length; i++) events = events.concat(queue[i].events);
      tail = { seq: queue[0].seq, events: events };
    }
    // visibility, the first consent's, is for services that know no
    // per-consent visibility yet.
    var body = {
      consents: p.consents,
      email: p.email,
      mobile: p.mobile,
      url: location.href,
      visibility: p.consents[0].visibility
    };
    if (tail) { body.seq = tail.seq; body.events = tail.events; }
    var json = stringify(body);
    if (tail && utf8Length(json) > KEEPALIVE_BYTES) { // too big to outlive the page: send what fits
      delete body.seq; delete body.events;
      json = stringify(body);
    }
    sendConsent(json, 0);
  }

  function sendConsent(json, attempt) {
    var keepalive = utf8Length(json) <= KEEPALIVE_BYTES;
    post("/capture/sessions/" + encodeURIComponent(session.session_id) + "/consent", json, { keepalive: keepalive })
      .then(function (r) {
        if (retryable(r.status) && attempt < 5) setTimeout(function () { sendConsent(json, attempt + 1); }, 500 << attempt);
      }, function () {
        if (attempt < 5) setTimeout(function () { sendConsent(json, attempt + 1); }, 500 << attempt);
      });
  }

  // patchSubmit makes form.submit() send the consent first: it fires no
  // submit event. requestSubmit() fires one, and is left alone.
  function patchSubmit() {
    var proto = window.HTMLFormElement && HTMLFormElement.prototype;
    var native = proto && proto.submit;
    if (typeof native !== "function") return;
    var submit = function submit() {
      try { onScriptSubmit(this); } catch (e) { /* the form goes all the same */ }
      return native.apply(this, arguments);
    };
    try {
      Object.defineProperty(proto, "submit", { value: submit, writable: true, configurable: true, enumerable: true });
    } catch (e) { /* left as it is */ }
  }

  function onHide() {
    if (pending) decide(pending); // a submission whose page leaves before it was decided
    if (stopped || consented || !session) return;
    cut();
    if (sending || !queue.length) return;
    var c = queue[0];
    var body = chunkBody(c);
    if (utf8Length(body) > KEEPALIVE_BYTES) return;
    sending = true;
    post("/capture/sessions/" + encodeURIComponent(session.session_id) + "/events", body, { keepalive: true })
      .then(function (r) { sending = false; if (r.ok) { queuedBytes -= queue.shift().bytes; pump(); } }, function () { sending = false; });
  }

  safe(function () {
    if (!property || !window.fetch) return;
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", safe(hiddenInputs));
    else hiddenInputs();
    document.addEventListener("submit", safe(onSubmit), true);
    window.addEventListener("submit", safe(onSubmitted), false);
    patchSubmit();
    document.addEventListener("focusin", safe(function (e) {
      var t = e.target;
      if (passwords && t && t.nodeName === "INPUT" && t.type === "password") passwords.add(t);
    }), true);
    notePasswords();
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", safe(notePasswords));
    document.addEventListener("click", safe(onBox), true);
    document.addEventListener("change", safe(onBox), true);
    document.addEventListener("keydown", safe(onKey), true);
    document.addEventListener("paste", safe(onPaste), true);
    noteLoaded();
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", safe(noteLoaded));
    window.addEventListener("pagehide", safe(onHide));
    document.addEventListener("visibilitychange", safe(function () { if (document.visibilityState === "hidden") onHide(); }));
    setInterval(safe(function () { cut(); pump(); }), FLUSH_MS);
    loadRecorder();
    start();
  })();
})();
