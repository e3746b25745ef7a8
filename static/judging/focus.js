// Instructions: the start button takes the focus, so that Enter or one Tab starts the work, without the
// browser scrolling to it (`autofocus` would): the page opens at its top, criterion 1 in view, on a phone too.
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  var first = document.querySelector("[data-focus-first]");
  if (first && (document.activeElement === document.body || !document.activeElement)) {
    first.focus({ preventScroll: true });
  }
});
