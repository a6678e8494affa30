// The fleet: one row per run, sortable, filterable, updated live. The server sends only
// the rows that changed since the generation the page holds (and the runs that left),
// so a page open for a day holds one row per run the watcher holds, nothing more.
"use strict";

(function (SE) {
  const PAGE = 200;

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
    if (state !== "all" && SE.stateOf(r) !== state) return false;
    if (!text) return true;
    return [r.id, r.agent, r.model, r.experiment, r.instance, SE.stateOf(r)].some(function (v) {
      return v && String(v).toLowerCase().indexOf(text) >= 0;
    });
  }

  // the granularities whose coverage or precision is shown (line alone, as it comes)
  function shownGrans(cols) {
    return SE.GRANULARITIES.filter(function (g) {
      return cols.some(function (c) { return c.key === g + ".coverage" || c.key === g + ".precision"; });
    });
  }

  function means(rows, grans) {
    const scored = rows.filter(function (r) { return r.final; });
    if (!scored.length) return "no scored run among those shown";
    if (!grans.length) return scored.length + " scored run(s) shown";
    const parts = grans.map(function (g) {
      const m = function (k) { return scored.reduce(function (s, r) { return s + r.final[g][k]; }, 0) / scored.length; };
      return g + " cov " + SE.fixed(m("coverage")) + " prec " + SE.fixed(m("precision"));
    });
    return "mean over the " + scored.length + " scored run(s) shown: " + parts.join(" · ");
  }

  // Two header rows: a granularity over its numbers, the other columns across both.
  function header(cols, st, render) {
    const sortable = function (c, props) {
      const mark = c.key === st.sort.key ? (st.sort.dir > 0 ? " ▲" : " ▼") : "";
      return SE.el("th", Object.assign({ class: c.num ? "num sortable" : "sortable",
        data: { key: c.key }, title: c.about || null, text: c.label + mark, on: { click: function () {
          st.sort = { key: c.key, dir: st.sort.key === c.key ? -st.sort.dir : (c.num ? -1 : 1) };
          render();
        } } }, props));
    };
    const top = [], sub = [];
    cols.forEach(function (c, i) {
      if (!c.group) { top.push(sortable(c, { rowspan: 2 })); return; }
      if (i === 0 || cols[i - 1].group !== c.group) {
        const n = cols.filter(function (x) { return x.group === c.group; }).length;
        top.push(SE.el("th", { class: "group", colspan: n, data: { group: c.group }, title: c.group, text: c.group }));
      }
      sub.push(sortable(c));
    });
    return SE.el("thead", null, SE.el("tr", null, top), SE.el("tr", { class: "sub" }, sub));
  }

  // The pinned columns stick at the left, each after the ones before it.
  function pin(cols, row) {
    let left = 0;
    cols.forEach(function (c, i) {
      if (!c.pin) return;
      const cell = row.children[i];
      cell.classList.add("pin");
      cell.style.left = left + "px";
      left += c.width;
    });
    return row;
  }

  SE.fleetView = function (root, source, status) {
    const st = { rows: new Map(), gen: null, etag: null, sort: { key: "state", dir: -1 }, text: "", state: "all", page: 0 };
    const choice = SE.columnChoice();
    let timer = null, stopped = false, chooserKeys = null;
    const filter = SE.el("input", { type: "search", id: "filter", placeholder: "filter: run, agent, model, experiment, instance", "aria-label": "filter runs" });
    const stateSel = SE.el("select", { id: "state-filter", "aria-label": "state" },
      ["all", "running", "finished", "not scored"].map(function (s) { return SE.el("option", { value: s, text: s }); }));
    const chooser = SE.el("span", { class: "chooser-slot" });
    const summary = SE.el("p", { id: "fleet-summary", class: "summary" });
    const agg = SE.el("p", { id: "fleet-means", class: "summary" });
    const table = SE.el("table", { id: "fleet", class: "fleet" });
    const pager = SE.el("div", { class: "pager" });
    filter.addEventListener("input", function () { st.text = filter.value.trim().toLowerCase(); st.page = 0; render(); });
    stateSel.addEventListener("change", function () { st.state = stateSel.value; st.page = 0; render(); });
    SE.replace(root, SE.el("h1", { text: "Runs" }), SE.el("div", { class: "controls" }, filter, " ", stateSel, " ", chooser),
      summary, agg, SE.el("div", { class: "scroll" }, table), pager);

    function render() {
      const all = Array.from(st.rows.values());
      const every = SE.fleetColumns(all);
      const cols = every.filter(choice.shown);
      const keys = every.map(function (c) { return c.key; }).join(" ");
      if (keys !== chooserKeys) {   // drawn again only when the columns there are change
        const open = chooser.querySelector("details")?.open;
        SE.replace(chooser, SE.columnChooser(every, choice, function () { chooserKeys = null; render(); }));
        chooser.querySelector("details").open = !!open;
        chooserKeys = keys;
      }
      const col = cols.find(function (c) { return c.key === st.sort.key; }) || cols[0];
      const shown = all.filter(function (r) { return matches(r, st.text, st.state); }).sort(compare(col, st.sort.dir));
      const counts = { running: 0, finished: 0, "not scored": 0 };
      all.forEach(function (r) { counts[SE.stateOf(r)] += 1; });
      summary.textContent = all.length + " run(s): " + counts.running + " running, " + counts.finished + " finished, " +
        counts["not scored"] + " not scored; " + shown.length + " match";
      agg.textContent = means(shown, shownGrans(cols));
      const pages = Math.max(1, Math.ceil(shown.length / PAGE));
      st.page = Math.min(st.page, pages - 1);
      const widths = SE.el("colgroup", null, cols.map(function (c) {
        const el = SE.el("col", { data: { key: c.key } });
        if (c.width) el.style.width = c.width + "px";
        return el;
      }));
      // the last call takes what is left, and at least 6em when many columns are chosen
      table.style.minWidth = "calc(" + cols.reduce(function (s, c) { return s + (c.width || 0); }, 0) + "px + 6em)";
      const body = SE.el("tbody", null, shown.slice(st.page * PAGE, (st.page + 1) * PAGE).map(function (r) {
        return pin(cols, SE.el("tr", { data: { run: r.id } }, cols.map(function (c) { return c.cell(r); })));
      }));
      const head = header(cols, st, render);
      pin(cols, head.firstChild);   // the pinned columns are never under a granularity
      SE.replace(table, widths, head, body);
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
