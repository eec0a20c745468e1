// Evaluated by fixtures_test.go in a page after rrweb's bundle: starts
// rrweb's recorder with every feature the fixtures exercise switched on,
// keeps the events, and tells the test where on screen to point.
(function () {
  'use strict';
  const events = [];
  let stop = null;

  // find walks a path of CSS selectors: each selector after the first is
  // looked up inside the shadow root or the iframe document of the element
  // the previous one found. It also returns the offset of that document's
  // viewport in the top window.
  function find(path) {
    let scope = document, el = null, dx = 0, dy = 0;
    for (const sel of path) {
      if (el) {
        if (el.shadowRoot) {
          scope = el.shadowRoot;
        } else if (el.contentDocument) {
          const r = el.getBoundingClientRect();
          dx += r.left + el.clientLeft;
          dy += r.top + el.clientTop;
          scope = el.contentDocument;
        } else {
          throw new Error('no shadow root or document to search for ' + sel);
        }
      }
      el = scope.querySelector(sel);
      if (!el) throw new Error('no element at ' + path.join(' / '));
    }
    return { el, dx, dy };
  }

  window.__fixture = {
    start() {
      stop = rrweb.record({
        emit(e) { events.push(e); },
        recordCanvas: true,
        inlineStylesheet: true,
        inlineImages: true,
        collectFonts: true,
      });
      return true;
    },
    // peek returns the events so far, the recording going on.
    peek() {
      return JSON.stringify(events);
    },
    // stop ends the recording with a custom event, so that it lasts until
    // now rather than until the last change, as a session that stays open
    // a little after its last action does.
    stop() {
      rrweb.record.addCustomEvent('fixture-end', {});
      if (stop) stop();
      stop = null;
      return JSON.stringify(events);
    },
    // center returns the middle of the element at path, in the top
    // window's viewport.
    center(path) {
      const { el, dx, dy } = find(path);
      const r = el.getBoundingClientRect();
      return { x: dx + r.left + r.width / 2, y: dy + r.top + r.height / 2 };
    },
    // char returns the middle of the character at offset in the first text
    // node of the element at path.
    char(path, offset) {
      const { el, dx, dy } = find(path);
      const text = Array.from(el.childNodes).find((n) => n.nodeType === Node.TEXT_NODE && n.data.trim());
      if (!text) throw new Error('no text in ' + path.join(' / '));
      const range = el.ownerDocument.createRange();
      range.setStart(text, offset);
      range.setEnd(text, offset + 1);
      const r = range.getBoundingClientRect();
      return { x: dx + r.left + r.width / 2, y: dy + r.top + r.height / 2 };
    },
  };
})();
