// Argosy dashboard: the API calls of the write buttons, the CSRF header of
// every htmx request, and the report chart. No framework; htmx does the
// partial page updates.
(function () {
  "use strict";
  var csrf = document.body.dataset.csrf || "";

  function toast(text, ok) {
    var t = document.getElementById("toast");
    t.textContent = text;
    t.className = ok ? "show ok" : "show bad";
    clearTimeout(toast.timer);
    toast.timer = setTimeout(function () { t.className = ""; }, 6000);
  }

  document.body.addEventListener("htmx:configRequest", function (e) {
    if (csrf) { e.detail.headers["X-Argosy-CSRF"] = csrf; }
  });

  // A write button calls the hub's API, which authorizes and audits it as
  // it does the CLI's call; the page shows the answer.
  document.addEventListener("click", function (e) {
    var b = e.target.closest("button[data-op]");
    if (!b) { return; }
    var body = { operation: b.dataset.op };
    if (b.dataset.history) { body.historyId = Number(b.dataset.history); }
    b.disabled = true;
    fetch(b.dataset.url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Argosy-CSRF": csrf },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (j) { return { ok: r.ok, status: r.status, body: j }; });
    }).then(function (r) {
      if (r.ok) {
        var ids = (r.body.events || []).map(function (ev) { return ev.id; }).join(", ");
        toast(body.operation + " requested: event " + ids, true);
      } else {
        toast(body.operation + " refused (" + r.status + "): " + (r.body.error || ""), false);
      }
    }).catch(function (err) {
      toast(body.operation + " failed: " + err, false);
    }).finally(function () { b.disabled = false; });
  });

  function chart() {
    var el = document.getElementById("chart");
    if (!el || typeof uPlot === "undefined") { return; }
    var d = JSON.parse(el.dataset.chart || "{}");
    if (!d.x || d.x.length === 0) { el.textContent = "No deployment in this range."; return; }
    var opts = {
      width: Math.min(el.clientWidth || 900, 1100), height: 260,
      // The report's whole range, so that a few buckets sit where they are.
      scales: { x: { time: true, range: [d.from, d.to] }, y: { range: function (u, lo, hi) { return [0, Math.max(hi, 1) * 1.1]; } } },
      series: [{}, { label: "Deployments", stroke: "#2f6fde", fill: "rgba(47,111,222,0.12)", points: { show: true, size: 7 } },
        { label: "Failures", stroke: "#c9372c", points: { show: true, size: 7 } }],
      axes: [{}, { label: "per bucket" }]
    };
    new uPlot(opts, [d.x, d.deployments, d.failures], el);
  }
  // Deferred scripts run in document order, before DOMContentLoaded: the
  // page's own (uPlot on the reports page) come after this one.
  document.addEventListener("DOMContentLoaded", chart);
})();
