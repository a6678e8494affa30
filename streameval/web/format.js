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

  // Step -> colour by the step itself, never by how long the run is so far: a line first
  // credited at step 4 keeps its colour while the run goes on. Bins double (1, 2, 3-4,
  // 5-8, ... 129+), so short and long runs both spread over the scale; viridis, dark early.
  SE.STEP_BINS = [[1, 1], [2, 2], [3, 4], [5, 8], [9, 16], [17, 32], [33, 64], [65, 128], [129, Infinity]];
  const BIN_COLOURS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"];
  SE.stepBin = function (step) {
    const i = SE.STEP_BINS.findIndex(function (b) { return step <= b[1]; });
    return i < 0 ? SE.STEP_BINS.length - 1 : i;
  };
  SE.stepColour = function (step) { return BIN_COLOURS[SE.stepBin(step)]; };
  SE.binColour = function (i) { return BIN_COLOURS[i]; };
  SE.binIsLight = function (i) { return i >= 6; };   // dark text on the last three
  SE.binLabel = function (b) { return b[1] === Infinity ? b[0] + "+" : b[0] === b[1] ? String(b[0]) : b[0] + "-" + b[1]; };

  // Text from a trace as the page shows it: control characters and the bidi controls
  // (U+202E and kin) as visible escapes, so none reorders or hides what follows, and cut
  // to `max` characters. {text, title}: the title is the whole value (escaped) when the
  // text is not all of it, or not as given.
  const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  SE.MAX_SHOWN = 160;
  SE.visible = function (v) {
    return String(v).replace(CONTROLS, function (c) { return "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"); });
  };
  SE.cut = function (v, max) {
    const raw = String(v), all = SE.visible(raw), n = max || SE.MAX_SHOWN;
    if (all.length <= n) return { text: all, title: all !== raw ? all : null };
    let end = n - 1;
    if (/[\ud800-\udbff]/.test(all[end - 1])) end -= 1;   // not half a character
    return { text: all.slice(0, end) + "…", title: all };
  };

  SE.GRAN_COLOURS = { file: "#1f77b4", symbol: "#ff7f0e", span: "#2ca02c", line: "#d62728" };
})(window.SE);
