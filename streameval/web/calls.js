// The run's tool calls as `streameval inspect` lists them: what each asked, what it was
// credited with (proposed window -> base lines), the agent's own lines, problems, and the
// per-step coverage after each step.
"use strict";

(function (SE) {
  function readLine(r) {
    if (!r.in_repo) return [SE.el("code", { shown: r.file, max: 300 }), " (not in the repository)"];
    const shown = r.current.length ? SE.ranges(r.current) : "?";
    const base = r.base.length ? SE.ranges(r.base) : "-";
    const notes = [];
    if (r.agent) notes.push(r.agent + " shown line(s) the agent's own");
    if (r.unaligned) notes.push("window as asked, text not checked");
    else if (!r.base.length && r.by_text && !r.agent) notes.push("text matched no line");
    return [SE.el("code", { shown: r.file, max: 300 }), " lines " + shown + (base !== shown ? " → base " + base : ""),
      notes.length ? SE.el("span", { class: "note", text: " (" + notes.join("; ") + ")" }) : null];
  }

  function credited(row) {
    const items = row.reads.map(function (r) { return SE.el("li", { class: "read" }, "read ", readLine(r)); });
    if (row.listed) {
      const more = row.listed > row.listed_names.length ? ", …" : "";
      items.push(SE.el("li", { class: "list" }, "list " + row.listed + " name(s): ",
        SE.el("code", { shown: row.listed_names.join(", ") + more, max: 600 })));
    }
    row.edits.forEach(function (p) { items.push(SE.el("li", { class: "edit" }, "edit ", SE.el("code", { shown: p, max: 300 }))); });
    row.problems.forEach(function (p) {
      items.push(SE.el("li", { class: "problem" }, "note " + p[0] + ": ", SE.el("span", { shown: p[1], max: 600 })));
    });
    return SE.el("ul", { class: "credited" }, items);
  }

  // the coverage after the step, one labelled cell per granularity
  function coverage(row) {
    return SE.GRANULARITIES.map(function (g, i) {
      if (!row.coverage) return SE.el("td", { class: "cov", data: { granularity: g } });
      return SE.el("td", { class: "cov num", data: { granularity: g }, title: g + " coverage after step " + row.step,
        text: SE.fixed(row.coverage[i]) });
    });
  }

  function pager(calls, onPage) {
    const last = calls.from + calls.rows.length;
    const parts = ["calls " + (calls.rows.length ? calls.from + 1 : 0) + "-" + last + " of " + SE.count(calls.kept) + " kept"];
    if (calls.total !== null && calls.total > calls.kept) parts.push(SE.count(calls.total) + " in all; the first " + SE.count(calls.kept) + " are kept");
    const prev = SE.el("button", { type: "button", class: "prev", text: "‹ earlier", on: { click: function () { onPage(Math.max(0, calls.from - SE.CALLS_PAGE)); } } });
    const next = SE.el("button", { type: "button", class: "next", text: "later ›", on: { click: function () { onPage(calls.from + SE.CALLS_PAGE); } } });
    prev.disabled = calls.from <= 0;
    next.disabled = last >= calls.kept;
    return SE.el("div", { class: "pager" }, prev, " ", next, " ", parts.join("; "));
  }

  SE.calls = function (calls, onPage) {
    if (calls.forgotten) return SE.el("p", { class: "empty", text: "the call list of this finished run is no longer kept in memory" });
    if (!calls.rows.length) return SE.el("p", { class: "empty", text: "no tool calls yet" });
    const head = [
      SE.el("tr", null, ["#", "S", "tool", "category", "input", "credited"].map(function (h) {
        return SE.el("th", { text: h, rowspan: 2, title: h === "S" ? "the step, for a call that showed repository code" : null });
      }), SE.el("th", { class: "group", colspan: SE.GRANULARITIES.length, text: "coverage after the step" })),
      SE.el("tr", { class: "sub" }, SE.GRANULARITIES.map(function (g) { return SE.el("th", { class: "num", text: g }); })),
    ];
    const body = SE.el("tbody", null, calls.rows.map(function (row) {
      return SE.el("tr", { class: row.step ? "call step" : "call", data: { n: row.n } },
        SE.el("td", { class: "num", text: row.n }),
        SE.el("td", { text: row.step ? "S" + row.step : "" }),
        SE.el("td", { shown: row.tool, max: 60 }),
        SE.el("td", { text: row.category }),
        SE.el("td", { class: "input" }, SE.el("code", { shown: row.input, max: 2000 })),
        SE.el("td", null, credited(row)),
        coverage(row));
    }));
    return SE.el("div", { class: "calls" }, pager(calls, onPage),
      SE.el("table", { class: "calls-table" }, SE.el("thead", null, head), body));
  };
})(window.SE);
