// Numbers and ranges as the page shows them. A ratio whose denominator is empty is 1.0
// by the rule (docs/metrics.md §3), not a result: it is shown as "1.00*", with why.
"use strict";

(function (SE) {
  SE.GRANULARITIES = ["file", "symbol", "span", "line"];

  SE.fixed = function (v, digits) {
    return typeof v === "number" && isFinite(v) ? v.toFixed(digits === undefined ? 2 : digits) : "–";
  };

  // {text, note}: note says why a value is marked
  SE.ratio = function (v, empty, why) {
    if (typeof v !== "number" || !isFinite(v)) return { text: "–", note: "not known" };
    if (empty) return { text: v.toFixed(2) + "*", note: why };
    return { text: v.toFixed(2), note: null };
  };

  SE.count = function (n) {
    return typeof n === "number" && isFinite(n) ? n.toLocaleString("en-US") : "–";
  };

  SE.money = function (v) {
    return typeof v === "number" && isFinite(v) ? "$" + v.toFixed(v < 1 ? 3 : 2) : "–";
  };

  SE.ranges = function (list) {
    if (!list || !list.length) return "–";
    return list.map(function (r) { return r[0] === r[1] ? String(r[0]) : r[0] + "-" + r[1]; }).join(",");
  };

  SE.PRED_EMPTY = "nothing predicted yet: precision is 1.0 by the rule (docs/metrics.md §3)";
  SE.GOLD_EMPTY = "empty gold: coverage is 1.0 by the rule (docs/metrics.md §3)";

  // A table cell for one granularity's ratio, marked when its denominator is empty.
  SE.ratioCell = function (numbers, key) {
    if (!numbers) return SE.el("td", { class: "num", text: "–" });
    const empty = key === "precision" ? numbers.pred_empty : key === "coverage" ? numbers.gold_empty : false;
    const shown = SE.ratio(numbers[key], empty, key === "precision" ? SE.PRED_EMPTY : SE.GOLD_EMPTY);
    return SE.el("td", { class: shown.note ? "num marked" : "num", title: shown.note, text: shown.text });
  };

  // Step -> colour, early (dark violet) to late (yellow): five stops, linear between.
  const STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  SE.stepColour = function (step, last) {
    const t = last > 1 ? Math.min(1, Math.max(0, (step - 1) / (last - 1))) : 0;
    const x = t * (STOPS.length - 1);
    const i = Math.min(STOPS.length - 2, Math.floor(x));
    const f = x - i;
    const c = STOPS[i].map(function (a, k) { return Math.round(a + (STOPS[i + 1][k] - a) * f); });
    return "rgb(" + c.join(",") + ")";
  };

  SE.GRAN_COLOURS = { file: "#1f77b4", symbol: "#ff7f0e", span: "#2ca02c", line: "#d62728" };
})(window.SE);
