// Researchers' tables on a narrow screen: a table wider than its box scrolls inside it (toppref.css keeps its
// first column in view); this says so in words above it, and marks the box so that its edge shows a shadow.
(function () {
  "use strict";
  function mark(box) {
    var scrolls = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("scrolls", scrolls);
    var hint = box.previousElementSibling;
    var hasHint = hint && hint.classList.contains("scroll-hint");
    if (scrolls && !hasHint) {
      hint = document.createElement("p");
      hint.className = "scroll-hint";
      hint.textContent = "This table scrolls sideways: more columns to the right \u2192";
      box.parentNode.insertBefore(hint, box);
    } else if (!scrolls && hasHint) {
      hint.remove();
    }
  }
  function markAll() { document.querySelectorAll(".table-scroll").forEach(mark); }
  markAll();
  window.addEventListener("resize", markAll);
  // a closed <details> has nothing to measure until it opens
  document.querySelectorAll("details").forEach(function (details) {
    details.addEventListener("toggle", markAll);
  });
})();
