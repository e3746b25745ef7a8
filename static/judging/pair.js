// Pair page: answer by click or key (1 / ArrowLeft = left, 2 / ArrowRight = right) without a full reload.
// The form works without this script (POST, then a 303 to the next pair); here the same POST is sent with
// fetch, the redirected page is fetched the same way, and its #judge block replaces ours. Passages arrive
// escaped by the server and are inserted as parsed DOM nodes from a document that runs no script.
(function () {
  "use strict";
  var shownAt = performance.now();
  var busy = false;
  var native = false; // after a network failure, let the browser post the form itself

  function form() { return document.getElementById("pair-form"); }

  function setBusy(value) {
    busy = value;
    var f = form();
    if (!f) return;
    f.querySelectorAll("button.choice").forEach(function (b) { b.disabled = value; });
  }

  function answer(side) {
    var f = form();
    if (!f || busy) return;
    setBusy(true);
    f.elements.ms.value = String(Math.round(performance.now() - shownAt));
    var data = new FormData(f);
    data.set("side", side);
    fetch(f.action, { method: "POST", body: data, credentials: "same-origin", redirect: "follow" })
      .then(function (response) {
        return response.text().then(function (html) {
          // Only a redirected answer ends on a page worth keeping in the address bar (an error page is the
          // POST's own URL, which a reload could not GET).
          swap(html, response.redirected ? response.url : "");
        });
      })
      .catch(function () {
        setBusy(false);
        native = true;
        f.querySelector("button[value=" + side + "]").click();
      });
  }

  function swap(html, url) {
    var next = new DOMParser().parseFromString(html, "text/html");
    var block = next.getElementById("judge");
    if (!block) { window.location.assign(url || window.location.href); return; }
    document.getElementById("judge").replaceChildren.apply(document.getElementById("judge"),
      Array.prototype.map.call(block.childNodes, function (n) { return document.importNode(n, true); }));
    document.title = next.title;
    if (url && new URL(url).origin === window.location.origin) history.replaceState(null, "", url);
    window.scrollTo(0, 0);
    shownAt = performance.now();
    busy = false;
    var focus = document.querySelector("#judge [autofocus]");
    if (focus) focus.focus();
  }

  document.addEventListener("submit", function (event) {
    if (event.target.id !== "pair-form" || native) return;
    event.preventDefault();
    var side = event.submitter && event.submitter.value;
    if (side === "left" || side === "right") answer(side);
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    var tag = event.target && event.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    if (!form()) return;
    if (event.key === "1" || event.key === "ArrowLeft") { event.preventDefault(); answer("left"); }
    else if (event.key === "2" || event.key === "ArrowRight") { event.preventDefault(); answer("right"); }
  });
})();
