// Campaign page: confirm actions, and refresh the progress figures without reloading the page.
(function () {
  "use strict";
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) { event.preventDefault(); }
    });
  });
  var root = document.getElementById("campaign");
  if (!root) { return; }
  var url = root.dataset.progressUrl;
  function setText(scope, field, value) {
    var node = scope.querySelector('[data-field="' + field + '"]');
    if (node && value !== undefined && node.textContent !== String(value)) { node.textContent = String(value); }
  }
  function refresh() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        ["status", "topics_finished", "topics_total", "percent", "pairs_judged", "pairs_queued", "pairs_in_hits", "spent_usd",
         "hits_awaiting_confirmation", "judgments_unconfirmed"]
          .forEach(function (field) { setText(root, field, data[field]); });
        var bar = root.querySelector('[data-field="percent-bar"]');
        if (bar) { bar.value = data.percent; }
        Object.keys(data.topics).forEach(function (topic) {
          var row = root.querySelector('tr[data-topic="' + CSS.escape(topic) + '"]');
          if (!row) { return; }
          setText(row, "state", data.topics[topic].label || data.topics[topic].state);
          setText(row, "round", data.topics[topic].round);
          setText(row, "judged", data.topics[topic].judged);
        });
        Object.keys(data.runs).forEach(function (name) {
          var row = root.querySelector('tr[data-run="' + CSS.escape(name) + '"]');
          if (!row) { return; }
          setText(row, "run-status", data.runs[name].status);
          setText(row, "run-error", data.runs[name].error);
          var bar = row.querySelector("progress");
          if (bar) { bar.value = data.runs[name].progress; }
        });
        Object.keys(data.exports).forEach(function (pk) {
          var row = root.querySelector('tr[data-export="' + pk + '"]');
          if (row) { setText(row, "export-status", data.exports[pk].status); }
        });
        root.dataset.status = data.status;
      })
      .catch(function () { /* a missed refresh is retried on the next tick */ });
  }
  window.setInterval(refresh, 3000);
})();
