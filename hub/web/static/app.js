// Argosy dashboard: the API calls of the write buttons and of the
// placements page, the CSRF header of every htmx request, and the report
// chart. No framework; htmx does the
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

  // api calls the hub's API as the signed-in user: the session cookie and
  // the CSRF header, as the write buttons do. It resolves to the status and
  // the decoded answer.
  function api(method, url, body) {
    var init = { method: method, credentials: "same-origin", headers: { "X-Argosy-CSRF": csrf } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (r) {
      return r.json().then(function (j) { return { ok: r.ok, status: r.status, body: j }; });
    });
  }

  function cell(tr, text) {
    var td = document.createElement("td");
    td.textContent = text;
    tr.appendChild(td);
    return td;
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
    api("POST", b.dataset.url, body).then(function (r) {
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
    // The axes take the page's colours, light or dark.
    var css = getComputedStyle(document.documentElement);
    var axis = { stroke: css.getPropertyValue("--fg").trim(), grid: { stroke: css.getPropertyValue("--line").trim() },
      ticks: { stroke: css.getPropertyValue("--line").trim() } };
    var opts = {
      width: Math.min(el.clientWidth || 900, 1100), height: 260,
      // From the first bucket the records cover to the report's end, so that
      // the buckets sit where they are. Too few for a chart, the server
      // writes a note in its place.
      scales: { x: { time: true, range: [d.from, d.to] }, y: { range: function (u, lo, hi) { return [0, Math.max(hi, 1) * 1.1]; } } },
      series: [{}, { label: "Deployments", stroke: "#2f6fde", fill: "rgba(47,111,222,0.12)", points: { show: true, size: 7 } },
        { label: "Failures", stroke: "#c9372c", points: { show: true, size: 7 } }],
      axes: [axis, Object.assign({ label: "per bucket" }, axis)]
    };
    new uPlot(opts, [d.x, d.deployments, d.failures], el);
  }
  // The placements page: the list from GET /api/v1/placements (their
  // clusters counted by state, not listed: a fleet has thousands), and, for
  // those who may write, a form that POSTs a placement with the generation
  // its edit started from.
  function placements() {
    var table = document.getElementById("placements");
    if (!table) { return; }
    var form = document.getElementById("placement-form");
    var body = table.querySelector("tbody");
    var items = {};
    function edit(p) {
      document.getElementById("placement-title").textContent = "Edit " + p.namespace + "/" + p.name + " (generation " + p.generation + ")";
      document.getElementById("p-selector").value = p.selector;
      document.getElementById("p-prune").value = p.prune;
      document.getElementById("p-generation").value = String(p.generation);
      document.getElementById("p-manifest").value = JSON.stringify(p.manifest, null, 2);
      form.scrollIntoView();
    }
    function load() {
      return api("GET", "/api/v1/placements?clusters=false").then(function (r) {
        if (!r.ok) { toast("listing placements refused (" + r.status + "): " + (r.body.error || ""), false); return; }
        body.textContent = "";
        items = {};
        (r.body.items || []).forEach(function (p) {
          var key = p.namespace + "/" + p.name;
          items[key] = p;
          var tr = document.createElement("tr");
          tr.dataset.placement = key;
          var a = document.createElement("a");
          a.href = "/apps/" + encodeURIComponent(p.namespace) + "/" + encodeURIComponent(p.name);
          a.textContent = key;
          cell(tr, "").appendChild(a);
          cell(tr, String(p.generation) + (p.deleted ? " (deleted)" : ""));
          cell(tr, p.selector || "(every cluster)");
          cell(tr, p.prune);
          cell(tr, p.project);
          var states = p.states || {};
          cell(tr, Object.keys(states).sort().map(function (s) { return states[s] + " " + s; }).join(", ") || "none");
          if (form) {
            var td = cell(tr, "");
            if (!p.deleted) {
              var b = document.createElement("button");
              b.type = "button";
              b.className = "p-edit";
              b.textContent = "Edit";
              b.setAttribute("aria-label", "Edit placement " + key);
              b.addEventListener("click", function () { edit(items[key]); });
              td.appendChild(b);
            }
          }
          body.appendChild(tr);
        });
        if (!body.firstChild) {
          var tr = document.createElement("tr");
          cell(tr, "No placement yet.").colSpan = 7;
          body.appendChild(tr);
        }
      });
    }
    // The live stream patches the list's version when the hub's
    // placements change: the list is read again.
    document.body.addEventListener("argosy:live", function (e) {
      if (e.detail.id === "placements-version") { load(); }
    });
    load();
    if (!form) { return; }
    document.getElementById("p-new").addEventListener("click", function () {
      form.reset();
      document.getElementById("p-generation").value = "0";
      document.getElementById("placement-title").textContent = "New placement";
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var manifest;
      try {
        manifest = JSON.parse(document.getElementById("p-manifest").value);
      } catch (err) {
        toast("the manifest is not JSON: " + err.message, false);
        return;
      }
      var save = document.getElementById("p-save");
      save.disabled = true;
      api("POST", "/api/v1/placements", {
        selector: document.getElementById("p-selector").value.trim(),
        prune: document.getElementById("p-prune").value,
        manifest: manifest,
        expectedGeneration: Number(document.getElementById("p-generation").value)
      }).then(function (r) {
        if (r.ok) {
          var w = (r.body.events || [])[0] || {};
          toast("placement " + w.namespace + "/" + w.name + " saved: generation " + w.generation, true);
          document.getElementById("p-generation").value = String(w.generation);
          document.getElementById("placement-title").textContent = "Edit " + w.namespace + "/" + w.name + " (generation " + w.generation + ")";
          return load();
        }
        toast("saving refused (" + r.status + "): " + (r.body.error || "") + (r.body.hint ? " (" + r.body.hint + ")" : ""), false);
      }).catch(function (err) {
        toast("saving failed: " + err, false);
      }).finally(function () { save.disabled = false; });
    });
  }

  // Deferred scripts run in document order, before DOMContentLoaded: the
  // page's own (uPlot on the reports page) come after this one.
  // ageText writes a seconds count as the server does: humanAge for an
  // "ago", Go's duration format for a Stale badge.
  function ageText(fmt, s) {
    s = Math.max(0, Math.floor(s));
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, d = Math.floor(h / 24);
    if (fmt === "stale") {
      return "Stale " + (h ? h + "h" + m + "m" + (s % 60) + "s" : m ? m + "m" + (s % 60) + "s" : s + "s");
    }
    if (s < 60) { return s + "s ago"; }
    if (s < 3600) { return Math.floor(s / 60) + "m ago"; }
    if (s < 48 * 3600) { return h + "h" + m + "m ago"; }
    return d + "d" + (h % 24) + "h ago";
  }

  // The server's clock, as of the page's rendering, less the browser's.
  var skew = (Number(document.body.dataset.now) || Date.now() / 1000) - Date.now() / 1000;

  // tick keeps the ages of [data-at] elements (Unix seconds) current.
  function tick() {
    var now = Date.now() / 1000 + skew;
    document.querySelectorAll("[data-at]").forEach(function (el) {
      el.textContent = ageText(el.dataset.fmt, now - Number(el.dataset.at));
    });
  }

  // live follows the page over server-sent events (web/live.go): each
  // patch replaces one region by id, keeping the focus on the element of
  // the same id. It follows the page's new URL after a filter changes it.
  // Opened again (after the stream's five minutes), it sends the versions
  // the patches brought.
  function live() {
    if (!window.EventSource || !document.querySelector("[data-live]")) { return; }
    var path = location.pathname + location.search;
    // The versions of the regions shown: the stream sends first only
    // those that changed since.
    var shown = Array.prototype.map.call(document.querySelectorAll("[data-live][data-k]"), function (el) {
      return el.id + ":" + el.dataset.k;
    }).join(",");
    var es = new EventSource("/live?path=" + encodeURIComponent(path) + "&k=" + encodeURIComponent(shown));
    es.addEventListener("patch", function (e) {
      var p = JSON.parse(e.data), old = document.getElementById(p.id);
      if (!old) { return; }
      var focus = document.activeElement && old.contains(document.activeElement) ? document.activeElement.id : "";
      var t = document.createElement("template");
      t.innerHTML = p.html;
      var el = t.content.firstElementChild;
      old.replaceWith(el);
      if (window.htmx) { window.htmx.process(el); }
      if (focus && document.getElementById(focus)) { document.getElementById(focus).focus(); }
      tick();
      document.body.dispatchEvent(new CustomEvent("argosy:live", { detail: { id: p.id } }));
    });
    es.addEventListener("gone", function () { es.close(); });
    function follow() {
      if (location.pathname + location.search !== path) { es.close(); live(); }
    }
    document.body.addEventListener("htmx:pushedIntoHistory", follow, { once: true });
    window.addEventListener("popstate", follow, { once: true });
  }

  document.addEventListener("DOMContentLoaded", chart);
  document.addEventListener("DOMContentLoaded", placements);
  document.addEventListener("DOMContentLoaded", live);
  document.addEventListener("DOMContentLoaded", function () { tick(); setInterval(tick, 5000); });
})();
