// The fleet table's columns and the chooser that picks them. The table fits a 1,280 px
// screen as it first comes: who the run is (state, run, agent, model, experiment,
// instance: always shown, the first two pinned when the table scrolls), steps, the
// line-level coverage, precision, F1 and redundancy, EditLoc, problems and the last call. Every other number is a tick away
// in the chooser, which the browser remembers. Names are cut to their column, whole in
// their title.
"use strict";

(function (SE) {
  const METRICS = [
    { k: "coverage", label: "cov", width: 52, about: "coverage: share of the gold read" },
    { k: "precision", label: "prec", width: 52, about: "precision: share of what was read that is gold" },
    { k: "f1", label: "F1", width: 48, about: "F1 of coverage and precision" },
    { k: "auc", label: "AUC", width: 52, about: "AUC-coverage: mean coverage over the steps" },
    { k: "redundancy", label: "redund.", width: 68, about: "redundancy: share of what the steps read that an earlier step had read" },
  ];
  const STORE = "streameval.fleet.columns";

  function stateOf(r) { return r.error ? "not scored" : r.state; }
  SE.stateOf = stateOf;

  function text(key, label, width) {
    return { key: key, label: label, width: width, cell: function (r) {
      return SE.el("td", { class: "cut", whole: true, shown: r[key] === null || r[key] === undefined ? "–" : r[key] });
    } };
  }

  function count(key, label, about, value, width) {
    return { key: key, label: label, about: about, num: true, width: width || 64, value: value,
      cell: function (r) { return SE.el("td", { class: "num", text: SE.count(value(r)) }); } };
  }

  function metric(g, m) {
    const col = { key: g + "." + m.k, group: g, label: m.label, about: g + " " + m.about, num: true, width: m.width };
    if (m.k === "auc" || m.k === "redundancy") {
      col.value = function (r) { return r[m.k] ? r[m.k][g] : null; };
      col.cell = function (r) { return SE.el("td", { class: "num", text: SE.fixed(col.value(r)) }); };
    } else {
      col.value = function (r) { return r.final ? r.final[g][m.k] : null; };
      col.cell = m.k === "f1" ? function (r) { return SE.el("td", { class: "num", text: SE.fixed(col.value(r)) }); }
        : function (r) { return SE.ratioCell(r.final && r.final[g], m.k); };
    }
    return col;
  }

  // Every column there is for these rows: {key, label, group, about, num, width, value, cell,
  // fixed (always shown), pin (kept in sight when the table scrolls; the first columns
  // only), on (shown until the chooser says otherwise)}.
  SE.fleetColumns = function (rows) {
    const withF1 = rows.some(function (r) { return r.final && r.final.line && typeof r.final.line.f1 === "number"; });
    const cols = [
      { key: "state", label: "state", fixed: true, pin: true, width: 92, value: stateOf, cell: function (r) {
        const title = r.error ? SE.visible(r.error) : r.record ? "record written" : null;
        return SE.el("td", { class: "state cut " + stateOf(r).replace(" ", "-"), title: title,
          text: stateOf(r) + (r.record ? " ✓" : "") });
      } },
      { key: "id", label: "run", fixed: true, pin: true, width: 140, value: function (r) { return r.id; }, cell: function (r) {
        return SE.el("td", { class: "run cut" }, SE.link({ run: r.id }, null, { class: "run-link", whole: true, shown: r.id }));
      } },
      text("agent", "agent", 100), text("model", "model", 160),
    ];
    if (rows.some(function (r) { return r.experiment; })) cols.push(text("experiment", "experiment", 90));
    cols.push(text("instance", "instance", 150));
    cols.forEach(function (c) { c.fixed = true; });
    cols.push(count("steps", "steps", "steps: tool calls that showed repository code", function (r) { return r.steps; }, 52),
      count("calls", "calls", "tool calls", function (r) { return r.calls; }));
    const known = function (r) { return r.resolved === true || r.resolved === false; };
    if (rows.some(known)) {
      cols.push({ key: "resolved", label: "solved", about: "solved its task (from --outcomes or meta.json)", width: 60, on: true,
        value: function (r) { return known(r) ? (r.resolved ? 1 : 0) : null; },
        cell: function (r) { return SE.el("td", { class: "solved", text: r.resolved === true ? "yes" : r.resolved === false ? "no" : "–" }); } });
    }
    SE.GRANULARITIES.forEach(function (g) {
      METRICS.forEach(function (m) { if (m.k !== "f1" || withF1) cols.push(metric(g, m)); });
    });
    cols.push(
      { key: "editloc", label: "EditLoc", about: "EditLoc recall: share of the lines the patch changes that are in the gold (~ provisional)",
        num: true, width: 68, value: function (r) { return r.editloc ? r.editloc.recall : null; }, cell: function (r) {
          const e = r.editloc;
          return SE.el("td", { class: "num", title: e ? (e.final ? "on the patch" : "provisional: the edits seen so far") : null,
            text: e ? SE.fixed(e.recall) + (e.final ? "" : "~") : "–" });
        } },
      { key: "problems", label: "problems", about: "reads and edits not used, and bad lines", num: true, width: 84,
        value: function (r) { return r.problems + r.bad_lines; }, cell: function (r) {
          return SE.el("td", { class: "num", title: r.problems + " reads/edits not used, " + r.bad_lines + " bad lines", text: r.problems + r.bad_lines });
        } },
      { key: "aborts", label: "aborts", width: 110, value: function (r) { return r.aborts.length; }, cell: function (r) {
        return SE.el("td", { class: "cut", whole: true, shown: r.aborts.map(function (a) { return a[0] + "→" + a[1]; }).join(", ") });
      } },
      count("tokens", "tokens", "tokens the trace reports", function (r) { return r.tokens; }),
      { key: "cost", label: "cost", num: true, width: 64, value: function (r) { return r.cost; },
        cell: function (r) { return SE.el("td", { class: "num", text: SE.money(r.cost) }); } },
      { key: "last", label: "last tool call", cell: function (r) {
        return SE.el("td", { class: "last cut" }, SE.el("code", { whole: true, shown: r.last || "" }));
      } });
    const anyAborts = rows.some(function (r) { return r.aborts.length; });
    const shown = ["steps", "line.coverage", "line.precision", "line.f1", "line.redundancy", "editloc", "problems", "last"];
    cols.forEach(function (c) { c.on = c.fixed || c.on || shown.indexOf(c.key) >= 0 || (c.key === "aborts" && anyAborts); });
    return cols;
  };

  // The chooser's state: keys ticked on and off by hand (remembered), over the defaults.
  SE.columnChoice = function () {
    let chosen = {};
    try { chosen = JSON.parse(window.localStorage.getItem(STORE) || "{}") || {}; } catch (e) { chosen = {}; }
    return {
      shown: function (col) { return col.fixed || (col.key in chosen ? chosen[col.key] : col.on); },
      set: function (key, on) {
        chosen[key] = on;
        try { window.localStorage.setItem(STORE, JSON.stringify(chosen)); } catch (e) { /* not kept: fine */ }
      },
      reset: function () {
        chosen = {};
        try { window.localStorage.removeItem(STORE); } catch (e) { /* nothing kept */ }
      },
    };
  };

  // <details> with a tick box per column that is not fixed: the numbers as a grid
  // (granularity x metric), the others in a row.
  SE.columnChooser = function (cols, choice, onChange) {
    const box = function (col) {
      const input = SE.el("input", { type: "checkbox", data: { column: col.key }, title: col.about || col.label,
        on: { change: function () { choice.set(col.key, input.checked); onChange(); } } });
      input.checked = choice.shown(col);
      return input;
    };
    const present = cols.filter(function (c) { return c.group; });
    const grid = SE.el("table", { class: "choose-grid" },
      SE.el("tr", null, SE.el("th"), METRICS.filter(function (m) {
        return present.some(function (c) { return c.key.endsWith("." + m.k); });
      }).map(function (m) { return SE.el("th", { text: m.label, title: m.about }); })),
      SE.GRANULARITIES.map(function (g) {
        return SE.el("tr", null, SE.el("th", { text: g }), present.filter(function (c) { return c.group === g; })
          .map(function (c) { return SE.el("td", null, box(c)); }));
      }));
    const others = cols.filter(function (c) { return !c.fixed && !c.group; }).map(function (c) {
      return SE.el("label", null, box(c), " " + c.label);
    });
    const reset = SE.el("button", { type: "button", text: "defaults", on: { click: function () { choice.reset(); onChange(); } } });
    return SE.el("details", { class: "chooser", id: "columns" }, SE.el("summary", { text: "columns" }),
      SE.el("div", { class: "choose" }, grid, SE.el("div", { class: "choose-others" }, others, reset)));
  };
})(window.SE);
