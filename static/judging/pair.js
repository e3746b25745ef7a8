// Pair page: answer with the buttons or a key (1 / ArrowLeft = left, 2 / ArrowRight = right) without a reload.
// The form works without this script (POST, then a 303 to the next pair). Here the same POST goes by fetch
// with `X-Toppref-Next: 1`: a server that knows it answers 200 with the next page and `X-Toppref-Location`
// (one request per answer); an older one answers 303 and fetch follows it. Either way the next page's #judge
// block replaces ours. Passages arrive escaped by the server and are inserted as parsed DOM nodes from a
// document that runs no script. For long sessions: U (or the undo button) takes the last answer back, the
// question's words are highlighted in the passages (text nodes and <mark> elements only, never parsed HTML:
// passages are untrusted), and a count of this sitting's answers suggests a break after a long stretch.
(function () {
  "use strict";
  var KEYS = "toppref.shortcuts";
  var HIGHLIGHT = "toppref.highlight";
  var SITTING = "toppref.sitting";
  // A pause this long ends a sitting; a sitting this long, or this many answers, earns a gentle suggestion
  // of a break (docs/judging-guide.md, "Long sessions").
  var PAUSE_MS = 15 * 60 * 1000;
  var BREAK_MS = 50 * 60 * 1000;
  var BREAK_ANSWERS = 200;
  // Words too common to be worth marking in a passage.
  var STOPWORDS = ("a about above after again all also am an and any are as at be because been before being "
    + "between both but by can could did do does doing down during each few for from further had has have "
    + "having he her here hers him his how i if in into is it its just me more most my no nor not now of off "
    + "on once only or other our out over own same she should so some such than that the their them then "
    + "there these they this those through to too under until up very was we were what when where which "
    + "while who whom why will with would you your tell know like get").split(" ");
  // Keys act on the page, on an answer button or on text, never on another control or a link (WCAG 2.1.4).
  var CONTROLS = "a, button, input, select, textarea, summary, [contenteditable], [tabindex]:not(#question)";
  var shownAt = performance.now();
  var busy = false;
  var native = false; // after a network failure, let the browser post the form itself

  function $(id) { return document.getElementById(id); }
  function form() { return $("pair-form"); }

  function stored(key) {
    try { return window.localStorage.getItem(key); } catch (e) { return null; /* storage blocked */ }
  }
  function store(key, value) {
    try { window.localStorage.setItem(key, value); } catch (e) { /* kept for this page */ }
  }
  var keys = stored(KEYS) !== "off"; // the toggles, kept in localStorage across pages and visits
  var highlight = stored(HIGHLIGHT) !== "off";

  // The toggles come with every pair (they are inside #judge): show them (they need this script), sync them.
  function setUp() {
    document.documentElement.classList.toggle("keys-off", !keys);
    [["shortcuts-toggle", keys], ["highlight-toggle", highlight]].forEach(function (pair) {
      var toggle = $(pair[0]);
      if (!toggle) return;
      toggle.checked = pair[1];
      toggle.closest(".shortcuts").hidden = false;
    });
    markPassages();
    showSitting();
  }

  // --- Highlighting: the question's words, marked where a passage's word starts with one of their stems.
  function stem(word) {
    var w = word.toLowerCase();
    [/ies$/, /(ing|ed|es|ly)$/, /s$/].some(function (suffix) {
      var cut = w.replace(suffix, "");
      if (cut !== w && cut.length >= 3) { w = cut; return true; }
      return false;
    });
    return w;
  }

  function termPattern() {
    var question = $("question");
    if (!question) return null;
    var seen = {};
    var stems = (question.textContent.match(/[\p{L}\p{N}]+/gu) || []).filter(function (word) {
      var w = word.toLowerCase();
      return (w.length >= 3 || /\p{N}/u.test(w)) && STOPWORDS.indexOf(w) < 0;
    }).map(stem).filter(function (w) { return !seen[w] && (seen[w] = true); });
    if (!stems.length) return null;
    // Longest first, so that a longer stem wins over a shorter one that starts it. Letters only reach the
    // expression escaped: a question is untrusted text too.
    stems.sort(function (a, b) { return b.length - a.length; });
    var escaped = stems.map(function (w) { return w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); });
    return new RegExp("(?<![\\p{L}\\p{N}])(?:" + escaped.join("|") + ")[\\p{L}\\p{N}]*", "giu");
  }

  function unmark(box) {
    box.querySelectorAll("mark.term").forEach(function (mark) {
      mark.replaceWith(document.createTextNode(mark.textContent));
    });
    box.normalize();
  }

  function markPassages() {
    var pattern = highlight ? termPattern() : null;
    ["left-text", "right-text"].forEach(function (id) {
      var box = $(id);
      if (!box) return;
      unmark(box);
      if (!pattern) return;
      // The passage's own text nodes, split around each match into text nodes and <mark> elements.
      Array.prototype.slice.call(box.childNodes).forEach(function (node) {
        if (node.nodeType !== Node.TEXT_NODE) return;
        var text = node.nodeValue, last = 0, parts = [], match;
        pattern.lastIndex = 0;
        while ((match = pattern.exec(text)) !== null) {
          if (match.index > last) parts.push(document.createTextNode(text.slice(last, match.index)));
          var mark = document.createElement("mark");
          mark.className = "term";
          mark.textContent = match[0];
          parts.push(mark);
          last = match.index + match[0].length;
        }
        if (!parts.length) return;
        if (last < text.length) parts.push(document.createTextNode(text.slice(last)));
        node.replaceWith.apply(node, parts);
      });
    });
  }

  // --- This sitting: answers since the last pause of PAUSE_MS, kept in sessionStorage (this tab).
  function sitting() {
    var now = Date.now(), value = null;
    try { value = JSON.parse(window.sessionStorage.getItem(SITTING) || "null"); } catch (e) { value = null; }
    if (!value || typeof value.count !== "number" || now - value.last > PAUSE_MS) {
      value = { count: 0, start: now, last: now, hinted: 0 };
    }
    return value;
  }

  function saveSitting(value) {
    try { window.sessionStorage.setItem(SITTING, JSON.stringify(value)); } catch (e) { /* not kept */ }
  }

  function countAnswer(step) {
    var value = sitting();
    value.count = Math.max(0, value.count + step);
    value.last = Date.now();
    saveSitting(value);
  }

  function showSitting() {
    var box = $("sitting");
    if (!box) return "";
    var value = sitting();
    var minutes = Math.round((Date.now() - value.start) / 60000);
    box.textContent = "This sitting: " + value.count + " answer" + (value.count === 1 ? "" : "s")
      + " in " + minutes + " minute" + (minutes === 1 ? "" : "s") + ".";
    box.hidden = value.count === 0;
    var hint = $("break-hint");
    var long = Date.now() - value.start >= BREAK_MS || value.count >= BREAK_ANSWERS;
    // Suggested once per stretch: again only after another BREAK_ANSWERS answers.
    var due = long && value.count >= value.hinted + (value.hinted ? BREAK_ANSWERS : 0);
    if (!hint || !due) { if (hint) hint.hidden = true; return ""; }
    hint.textContent = "You have judged " + value.count + " pairs in " + minutes + " minutes. A short break"
      + " of a few minutes keeps the answers careful: everything is saved, and this pair waits for you.";
    hint.hidden = false;
    value.hinted = value.count;
    saveSitting(value);
    return hint.textContent;
  }

  function compact() { return window.matchMedia("(max-width: 40rem), (max-height: 32rem)").matches; }

  function setBusy(value) {
    busy = value;
    var f = form();
    if (f) f.querySelectorAll("button.choice, #undo").forEach(function (b) { b.disabled = value; });
  }

  function answer(side) {
    var f = form();
    if (!f || busy) return;
    f.elements.ms.value = String(Math.round(performance.now() - shownAt));
    // Sent as the form itself would be (application/x-www-form-urlencoded), not as FormData's multipart body,
    // which costs the server several times more to parse on every answer.
    var data = new URLSearchParams(new FormData(f));
    data.set("side", side);
    post(f.action, data, f.querySelector("button[value=" + side + "]"), 1);
  }

  // Take the last answer back (the undo button posts the pair form to its own formaction).
  function undo() {
    var f = form(), button = $("undo");
    if (!f || !button || busy) return;
    var data = new URLSearchParams(new FormData(f));
    data.delete("side");
    data.set("judgment", button.value);
    post(button.formAction, data, button, -1);
  }

  function post(action, data, fallback, step) {
    var f = form();
    setBusy(true);
    fetch(action, {
      method: "POST", body: data, credentials: "same-origin", redirect: "follow",
      headers: { "X-Toppref-Next": "1" }
    }).then(function (response) {
      var next = response.status === 200 && response.headers.get("X-Toppref-Location");
      if (next) countAnswer(step);
      return response.text().then(function (html) {
        // Only the next page's URL is worth keeping in the address bar (an error page is the POST's own URL,
        // which a reload could not GET).
        swap(html, next ? new URL(next, window.location.href).href : response.redirected ? response.url : "");
      });
    }).catch(function () {
      setBusy(false);
      native = true;
      if (f && fallback) fallback.click();
    });
  }

  function swap(html, url) {
    var next = new DOMParser().parseFromString(html, "text/html");
    var block = next.getElementById("judge");
    if (!block) { window.location.assign(url || window.location.href); return; }
    var judge = $("judge");
    var before = $("question") && $("question").textContent;
    judge.replaceChildren.apply(judge, Array.prototype.map.call(block.childNodes, function (n) {
      return document.importNode(n, true);
    }));
    document.title = next.title;
    if (url && new URL(url).origin === window.location.origin) history.replaceState(null, "", url);
    setUp();
    // On a phone or zoomed in, skip the header: show the question, or the passages when the question stayed.
    // A word on how the last HIT or topic ended, or an undo, is shown too: then the view starts at it.
    var notice = judge.querySelector("[data-announce]");
    var same = $("question") && $("question").textContent === before;
    var place = notice || (same ? judge.querySelector(".passages") : judge);
    window.scrollTo(0, compact() && place ? place.getBoundingClientRect().top + window.scrollY : 0);
    shownAt = performance.now();
    busy = false;
    var focus = judge.querySelector("[autofocus]");
    if (focus) focus.focus({ preventScroll: true });
    // Screen readers hear the new pair even when the question and a passage are unchanged, after how the
    // last HIT or topic ended (or that the answer was taken back) and a break suggestion, if any.
    var f = form();
    var heading = judge.querySelector("h1");
    var pause = $("break-hint") && !$("break-hint").hidden ? $("break-hint").textContent : "";
    var ready = f ? f.dataset.pair + " ready" : heading ? heading.textContent : next.title;
    announce([notice ? notice.textContent : "", ready, pause].filter(Boolean).join(" "));
  }

  function announce(text) {
    var status = $("judge-status");
    if (!status) return;
    status.textContent = "";
    window.setTimeout(function () { status.textContent = text; }, 100);
  }

  document.addEventListener("submit", function (event) {
    if (event.target.id !== "pair-form" || native) return;
    event.preventDefault();
    if (event.submitter && event.submitter.id === "undo") { undo(); return; }
    var side = event.submitter && event.submitter.value;
    if (side === "left" || side === "right") answer(side);
  });

  document.addEventListener("change", function (event) {
    if (event.target.id === "shortcuts-toggle") {
      keys = event.target.checked;
      store(KEYS, keys ? "on" : "off");
      document.documentElement.classList.toggle("keys-off", !keys);
    } else if (event.target.id === "highlight-toggle") {
      highlight = event.target.checked;
      store(HIGHLIGHT, highlight ? "on" : "off");
      markPassages();
    }
  });

  document.addEventListener("keydown", function (event) {
    if (!keys || event.ctrlKey || event.metaKey || event.altKey || event.repeat || !form()) return;
    var target = event.target;
    if (target.closest && target.closest(CONTROLS) && !target.closest("button.choice")) return;
    if (event.key === "1" || event.key === "ArrowLeft") { event.preventDefault(); answer("left"); }
    else if (event.key === "2" || event.key === "ArrowRight") { event.preventDefault(); answer("right"); }
    else if ((event.key === "u" || event.key === "U") && $("undo")) { event.preventDefault(); undo(); }
  });

  setUp();
  var start = document.querySelector("#judge [autofocus]");
  if (start && document.activeElement === document.body) start.focus({ preventScroll: true });
  // Focus and the view start where the work is: on a phone or zoomed in, past the header.
  if (compact() && window.scrollY === 0) window.scrollTo(0, $("judge").getBoundingClientRect().top);
})();
