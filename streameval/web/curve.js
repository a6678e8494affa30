// The per-step coverage curves of one run, one line per granularity, as SVG.
// curve: {n: steps, every: spacing of the points sent, points: [[step, file, symbol, span, line]]}
"use strict";

(function (SE) {
  const W = 720, H = 300, LEFT = 44, RIGHT = 150, TOP = 14, BOTTOM = 36;
  const PW = W - LEFT - RIGHT, PH = H - TOP - BOTTOM;
  const DOTS = 120;   // a dot (with its tooltip) per point up to this many points

  function ticks(n) {
    if (n <= 1) return [1];
    const raw = n / 6, pow = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = Math.max(1, [1, 2, 5, 10].map(function (m) { return m * pow; }).find(function (s) { return s >= raw; }));
    const out = [1];
    for (let t = step; t < n; t += step) if (t > 1) out.push(t);
    out.push(n);
    return out;
  }

  // empty: what to say when there is no point (a run not scored says so, not "no steps yet")
  SE.curve = function (curve, empty) {
    const n = Math.max(curve.n, 1);
    const x = function (step) { return LEFT + (n > 1 ? PW * (step - 1) / (n - 1) : PW / 2); };
    const y = function (v) { return TOP + PH * (1 - v); };
    const svg = SE.svg("svg", { class: "curve", viewBox: "0 0 " + W + " " + H, role: "img",
      "aria-label": "coverage per step by granularity", data: { steps: curve.n } });
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      svg.appendChild(SE.svg("line", { x1: LEFT, x2: LEFT + PW, y1: y(v), y2: y(v), class: "grid" }));
      svg.appendChild(SE.svg("text", { x: LEFT - 6, y: y(v) + 4, "text-anchor": "end", text: String(v) }));
    });
    if (curve.n) {
      ticks(curve.n).forEach(function (t) {
        svg.appendChild(SE.svg("text", { x: x(t), y: TOP + PH + 16, "text-anchor": "middle", text: String(t) }));
      });
    }
    svg.appendChild(SE.svg("text", { x: LEFT + PW / 2, y: H - 4, "text-anchor": "middle",
      text: curve.every > 1 ? "step (every " + curve.every + "th of " + curve.n + " drawn)" : "step" }));
    if (!curve.n) {
      svg.appendChild(SE.svg("text", { x: LEFT + PW / 2, y: TOP + PH / 2, "text-anchor": "middle",
        class: "empty", text: empty || "no steps yet" }));
    }
    SE.GRANULARITIES.forEach(function (g, k) {
      const pts = curve.points.map(function (p) { return x(p[0]).toFixed(1) + "," + y(p[k + 1]).toFixed(1); });
      const line = SE.svg("polyline", { points: pts.join(" "), fill: "none", stroke: SE.GRAN_COLOURS[g],
        "stroke-width": 2, class: "series", data: { granularity: g, points: curve.points.length } });
      svg.appendChild(line);
      if (curve.points.length <= DOTS) {
        curve.points.forEach(function (p) {
          svg.appendChild(SE.tip(SE.svg("circle", { cx: x(p[0]), cy: y(p[k + 1]), r: 2.5,
            fill: SE.GRAN_COLOURS[g] }), "step " + p[0] + ": " + g + " coverage " + SE.fixed(p[k + 1])));
        });
      }
      const last = curve.points.length ? curve.points[curve.points.length - 1][k + 1] : null;
      const ly = TOP + 10 + 18 * k;
      svg.appendChild(SE.svg("line", { x1: LEFT + PW + 12, x2: LEFT + PW + 30, y1: ly, y2: ly,
        stroke: SE.GRAN_COLOURS[g], "stroke-width": 2 }));
      svg.appendChild(SE.svg("text", { x: LEFT + PW + 34, y: ly + 4, text: g + " " + SE.fixed(last) }));
    });
    return svg;
  };
})(window.SE);
