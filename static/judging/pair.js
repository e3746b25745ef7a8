// Pair page: answer with the buttons or a key (1 / ArrowLeft = left, 2 / ArrowRight = right) without a reload.
// The form works without this script (POST, then a 303 to the next pair). Here the same POST goes by fetch
// with `X-Toppref-Next: 1`: a server that knows it answers 200 with the next page and `X-Toppref-Location`
// (one request per answer); an older one answers 303 and fetch follows it. Either way the next page's #judge
// block replaces ours. Passages arrive escaped by the server and are inserted as parsed DOM nodes from a
// document that runs no script.
(function () {
  "use strict";
  var KEYS = "toppref.shortcuts";
  // Keys act on the page, on an answer button or on text, never on another control or a link (WCAG 2.1.4).
  var CONTROLS = "a, button, input, select, textarea, summary, [contenteditable], [tabindex]:not(#question)";
  var shownAt = performance.now();
  var busy = false;
  var native = false; // after a network failure, let the browser post the form itself

  function $(id) { return document.getElementById(id); }
  function form() { return $("pair-form"); }

  var keys = true; // the shortcuts toggle, kept in localStorage across pages and visits
  try { keys = window.localStorage.getItem(KEYS) !== "off"; } catch (e) { /* storage blocked: keys on */ }

  // The toggle comes with every pair (it is inside #judge): show it (it needs this script) and sync it.
  function setUp() {
    var toggle = $("shortcuts-toggle");
    document.documentElement.classList.toggle("keys-off", !keys);
    if (!toggle) return;
    toggle.checked = keys;
    toggle.closest(".shortcuts").hidden = false;
  }

  function compact() { return window.matchMedia("(max-width: 40rem), (max-height: 32rem)").matches; }

  function setBusy(value) {
    busy = value;
    var f = form();
    if (f) f.querySelectorAll("button.choice").forEach(function (b) { b.disabled = value; });
  }

  function answer(side) {
    var f = form();
    if (!f || busy) return;
    setBusy(true);
    f.elements.ms.value = String(Math.round(performance.now() - shownAt));
    // Sent as the form itself would be (application/x-www-form-urlencoded), not as FormData's multipart body,
    // which costs the server several times more to parse on every answer.
    var data = new URLSearchParams(new FormData(f));
    data.set("side", side);
    fetch(f.action, {
      method: "POST", body: data, credentials: "same-origin", redirect: "follow",
      headers: { "X-Toppref-Next": "1" }
    }).then(function (response) {
      var next = response.status === 200 && response.headers.get("X-Toppref-Location");
      return response.text().then(function (html) {
        // Only the next page's URL is worth keeping in the address bar (an error page is the POST's own URL,
        // which a reload could not GET).
        swap(html, next ? new URL(next, window.location.href).href : response.redirected ? response.url : "");
      });
    }).catch(function () {
      setBusy(false);
      native = true;
      f.querySelector("button[value=" + side + "]").click();
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
    var place = $("question") && $("question").textContent === before ? judge.querySelector(".passages") : judge;
    window.scrollTo(0, compact() && place ? place.getBoundingClientRect().top + window.scrollY : 0);
    shownAt = performance.now();
    busy = false;
    var focus = judge.querySelector("[autofocus]");
    if (focus) focus.focus({ preventScroll: true });
    // Screen readers hear the new pair even when the question and a passage are unchanged.
    var f = form();
    var heading = judge.querySelector("h1");
    announce(f ? f.dataset.pair + " ready" : heading ? heading.textContent : next.title);
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
    var side = event.submitter && event.submitter.value;
    if (side === "left" || side === "right") answer(side);
  });

  document.addEventListener("change", function (event) {
    if (event.target.id !== "shortcuts-toggle") return;
    keys = event.target.checked;
    try { window.localStorage.setItem(KEYS, keys ? "on" : "off"); } catch (e) { /* kept for this page */ }
    document.documentElement.classList.toggle("keys-off", !keys);
  });

  document.addEventListener("keydown", function (event) {
    if (!keys || event.ctrlKey || event.metaKey || event.altKey || event.repeat || !form()) return;
    var target = event.target;
    if (target.closest && target.closest(CONTROLS) && !target.closest("button.choice")) return;
    if (event.key === "1" || event.key === "ArrowLeft") { event.preventDefault(); answer("left"); }
    else if (event.key === "2" || event.key === "ArrowRight") { event.preventDefault(); answer("right"); }
  });

  setUp();
  var start = document.querySelector("#judge [autofocus]");
  if (start && document.activeElement === document.body) start.focus({ preventScroll: true });
  // Focus and the view start where the work is: on a phone or zoomed in, past the header.
  if (compact() && window.scrollY === 0) window.scrollTo(0, $("judge").getBoundingClientRect().top);
})();
