// The fleet: one row per run, sortable, filterable, updated live. The server sends only
// the rows that changed since the generation the page holds (and the runs that left),
// so a page open for a day holds one row per run the watcher holds, nothing more.
"use strict";

(function (SE) {
  const PAGE = 200;

  function stateOf(r) { return r.error ? "not scored" : r.state; }

  function baseColumns(rows) {
    const cols = [
      { key: "state", label: "state", value: stateOf, cell: function (r) {
        return SE.el("td", { class: "state " + stateOf(r).replace(" ", "-"), title: r.error || (r.record ? "record written" : null),
          text: stateOf(r) + (r.record ? " ✓" : "") });
      } },
      { key: "id", label: "run", value: function (r) { return r.id; }, cell: function (r) {
        return SE.el("td", { class: "run" }, SE.link({ run: r.id }, r.id, { class: "run-link" }));
      } },
      { key: "agent", label: "agent" }, { key: "model", label: "model" },
    ];
    if (rows.some(function (r) { return r.experiment; })) cols.push({ key: "experiment", label: "experiment" });
    cols.push({ key: "instance", label: "instance" }, { key: "steps", label: "steps", num: true },
      { key: "calls", label: "calls", num: true });
    if (rows.some(function (r) { return r.resolved === true || r.resolved === false; })) {
      cols.push({ key: "resolved", label: "solved", value: function (r) { return r.resolved === null || r.resolved === undefined ? null : (r.resolved ? 1 : 0); },
        cell: function (r) { return SE.el("td", { class: "solved", text: r.resolved === true ? "yes" : r.resolved === false ? "no" : "–" }); } });
    }
    return cols;
  }

  function granColumns(rows, grans) {
    const withF1 = rows.some(function (r) { return r.final && r.final.line && r.final.line.f1 !== null && r.final.line.f1 !== undefined; });
    const cols = [];
    grans.forEach(function (g) {
      ["coverage", "precision"].concat(withF1 ? ["f1"] : []).forEach(function (k) {
        cols.push({ key: g + "." + k, label: g + " " + (k === "coverage" ? "cov" : k === "precision" ? "prec" : "F1"), num: true,
          value: function (r) { return r.final ? r.final[g][k] : null; },
          cell: function (r) { return SE.ratioCell(r.final && r.final[g], k); } });
      });
      cols.push({ key: g + ".auc", label: g + " AUC", num: true, value: function (r) { return r.auc ? r.auc[g] : null; },
        cell: function (r) { return SE.el("td", { class: "num", text: SE.fixed(r.auc && r.auc[g]) }); } });
    });
    return cols;
  }

  function tailColumns() {
    return [
      { key: "editloc", label: "EditLoc", num: true, value: function (r) { return r.editloc ? r.editloc.recall : null; },
        cell: function (r) {
          const e = r.editloc;
          return SE.el("td", { class: "num", title: e ? (e.final ? "on the patch" : "provisional: the edits seen so far") : null,
            text: e ? SE.fixed(e.recall) + (e.final ? "" : "~") : "–" });
        } },
      { key: "problems", label: "problems", num: true, value: function (r) { return r.problems + r.bad_lines; },
        cell: function (r) {
          return SE.el("td", { class: "num", title: r.problems + " reads/edits not used, " + r.bad_lines + " bad lines", text: r.problems + r.bad_lines });
        } },
      { key: "aborts", label: "aborts", value: function (r) { return r.aborts.length; }, cell: function (r) {
        return SE.el("td", { text: r.aborts.map(function (a) { return a[0] + "→" + a[1]; }).join(", ") });
      } },
      { key: "last", label: "last tool call", cell: function (r) { return SE.el("td", { class: "last" }, SE.el("code", { text: r.last })); } },
    ];
  }

  function valueOf(col, r) { return col.value ? col.value(r) : r[col.key]; }

  function compare(col, dir) {
    return function (a, b) {
      const x = valueOf(col, a), y = valueOf(col, b);
      if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;
      if (y === null || y === undefined) return -1;
      return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
    };
  }

  function matches(r, text, state) {
    if (state !== "all" && stateOf(r) !== state) return false;
    if (!text) return true;
    return [r.id, r.agent, r.model, r.experiment, r.instance, stateOf(r)].some(function (v) {
      return v && String(v).toLowerCase().indexOf(text) >= 0;
    });
  }

  function means(rows, grans) {
    const scored = rows.filter(function (r) { return r.final; });
    if (!scored.length) return "no scored run among those shown";
    const parts = grans.map(function (g) {
      const m = function (k) { return scored.reduce(function (s, r) { return s + r.final[g][k]; }, 0) / scored.length; };
      return g + " cov " + SE.fixed(m("coverage")) + " prec " + SE.fixed(m("precision"));
    });
    return "mean over the " + scored.length + " scored run(s) shown: " + parts.join(" · ");
  }

  SE.fleetView = function (root, source, status) {
    const st = { rows: new Map(), gen: null, etag: null, sort: { key: "state", dir: -1 }, text: "", state: "all",
      grans: SE.GRANULARITIES.slice(), page: 0 };
    let timer = null, stopped = false;
    const filter = SE.el("input", { type: "search", id: "filter", placeholder: "filter: run, agent, model, experiment, instance", "aria-label": "filter runs" });
    const stateSel = SE.el("select", { id: "state-filter", "aria-label": "state" },
      ["all", "running", "finished", "not scored"].map(function (s) { return SE.el("option", { value: s, text: s }); }));
    const grans = SE.el("span", { class: "grans" }, SE.GRANULARITIES.map(function (g) {
      const box = SE.el("input", { type: "checkbox", value: g, data: { granularity: g } });
      box.checked = true;
      box.addEventListener("change", function () {
        st.grans = SE.GRANULARITIES.filter(function (x) { return grans.querySelector("input[value=" + x + "]").checked; });
        render();
      });
      return SE.el("label", null, box, " " + g);
    }));
    const summary = SE.el("p", { id: "fleet-summary", class: "summary" });
    const agg = SE.el("p", { id: "fleet-means", class: "summary" });
    const table = SE.el("table", { id: "fleet", class: "fleet" });
    const pager = SE.el("div", { class: "pager" });
    filter.addEventListener("input", function () { st.text = filter.value.trim().toLowerCase(); st.page = 0; render(); });
    stateSel.addEventListener("change", function () { st.state = stateSel.value; st.page = 0; render(); });
    SE.replace(root, SE.el("h1", { text: "Runs" }), SE.el("div", { class: "controls" }, filter, " ", stateSel, " ", grans),
      summary, agg, SE.el("div", { class: "scroll" }, table), pager);

    function render() {
      const all = Array.from(st.rows.values());
      const cols = baseColumns(all).concat(granColumns(all, st.grans), tailColumns());
      const col = cols.find(function (c) { return c.key === st.sort.key; }) || cols[0];
      const shown = all.filter(function (r) { return matches(r, st.text, st.state); }).sort(compare(col, st.sort.dir));
      const counts = { running: 0, finished: 0, "not scored": 0 };
      all.forEach(function (r) { counts[stateOf(r)] += 1; });
      summary.textContent = all.length + " run(s): " + counts.running + " running, " + counts.finished + " finished, " +
        counts["not scored"] + " not scored; " + shown.length + " match";
      agg.textContent = means(shown, st.grans);
      const pages = Math.max(1, Math.ceil(shown.length / PAGE));
      st.page = Math.min(st.page, pages - 1);
      const head = SE.el("tr", null, cols.map(function (c) {
        const mark = c.key === st.sort.key ? (st.sort.dir > 0 ? " ▲" : " ▼") : "";
        return SE.el("th", { class: c.num ? "num sortable" : "sortable", data: { key: c.key }, text: c.label + mark, on: { click: function () {
          st.sort = { key: c.key, dir: st.sort.key === c.key ? -st.sort.dir : (c.num ? -1 : 1) };
          render();
        } } });
      }));
      const body = SE.el("tbody", null, shown.slice(st.page * PAGE, (st.page + 1) * PAGE).map(function (r) {
        return SE.el("tr", { data: { run: r.id } }, cols.map(function (c) {
          return c.cell ? c.cell(r) : SE.el("td", { class: c.num ? "num" : null, text: valueOf(c, r) === null || valueOf(c, r) === undefined ? "–" : valueOf(c, r) });
        }));
      }));
      SE.replace(table, SE.el("thead", null, head), body);
      const prev = SE.el("button", { type: "button", text: "‹", on: { click: function () { st.page -= 1; render(); } } });
      const next = SE.el("button", { type: "button", text: "›", on: { click: function () { st.page += 1; render(); } } });
      prev.disabled = st.page === 0;
      next.disabled = st.page >= pages - 1;
      SE.replace(pager, prev, " page " + (st.page + 1) + " of " + pages + " ", next);
    }

    function merge(body) {
      if (body.full) st.rows = new Map();
      body.runs.forEach(function (r) { st.rows.set(r.id, r); });
      body.removed.forEach(function (id) { st.rows.delete(id); });
      st.gen = body.gen;
    }

    async function poll() {
      try {
        const answer = await source.fleet(st.gen, st.etag);
        if (answer.status === 200) { merge(answer.body); st.etag = answer.etag; render(); }
        status(source.live ? "live · updated " + new Date().toLocaleTimeString() : "recorded runs");
      } catch (e) {
        status("cannot reach the watcher (" + e.message + "); trying again");
      }
      if (source.live && !stopped) timer = setTimeout(poll, document.hidden ? 10000 : 2000);
    }

    poll();
    return { stop: function () { stopped = true; clearTimeout(timer); } };
  };
})(window.SE);
