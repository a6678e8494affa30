// Each gold file as a strip of its lines: the gold ranges (init_ctx solid, add_ctx pale),
// the base lines credited, coloured by the step that first credited them (by the step
// number itself, the legend says which: early dark, late yellow), and the lines the
// patch changes. Below, every gold range not credited and why.
"use strict";

(function (SE) {
  const W = 1000, LABEL = 64, ROW = 16, GAP = 4;
  const ROWS = ["gold", "read", "edited"];

  function band(svg, row, ranges, scale, cls, decorate) {
    const y = row * (ROW + GAP);
    ranges.forEach(function (r) {
      const x0 = scale(r[0] - 1), x1 = scale(r[1]);
      const rect = SE.svg("rect", { x: x0.toFixed(2), y: y, width: Math.max(1.5, x1 - x0).toFixed(2),
        height: ROW, class: cls, data: { from: r[0], to: r[1] } });
      if (decorate) decorate(rect, r);
      svg.appendChild(rect);
    });
  }

  function strip(file) {
    const ends = [].concat(file.init, file.add, file.read, file.edited).map(function (r) { return r[1]; });
    const total = file.lines || Math.max.apply(null, ends.concat([1]));
    const scale = function (line) { return LABEL + (W - LABEL) * Math.min(line, total) / total; };
    const height = ROWS.length * (ROW + GAP);
    const svg = SE.svg("svg", { viewBox: "0 0 " + W + " " + height, class: "strip-svg",
      preserveAspectRatio: "none", role: "img", "aria-label": "lines of " + SE.visible(file.file) });
    ROWS.forEach(function (name, i) {
      svg.appendChild(SE.svg("rect", { x: LABEL, y: i * (ROW + GAP), width: W - LABEL, height: ROW, class: "lane" }));
      svg.appendChild(SE.svg("text", { x: 0, y: i * (ROW + GAP) + ROW - 4, class: "lane-label", text: name }));
    });
    band(svg, 0, file.add, scale, "gold-add", function (rect, r) { SE.tip(rect, "add_ctx lines " + SE.ranges([r])); });
    band(svg, 0, file.init, scale, "gold-init", function (rect, r) { SE.tip(rect, "init_ctx lines " + SE.ranges([r])); });
    band(svg, 1, file.read, scale, "read", function (rect, r) {
      rect.setAttribute("fill", SE.stepColour(r[2]));
      rect.dataset.step = String(r[2]);
      rect.dataset.bin = String(SE.stepBin(r[2]));
      SE.tip(rect, "lines " + SE.ranges([r]) + " first credited at step " + r[2]);
    });
    band(svg, 2, file.edited, scale, "edited", function (rect, r) { SE.tip(rect, "lines " + SE.ranges([r]) + " changed"); });

    const facts = [];
    facts.push(file.lines ? SE.count(file.lines) + " lines" : "length not known (drawn to the last line named)");
    if (file.first_read_call !== null) facts.push("first read at call " + file.first_read_call);
    else if (file.listed_at !== null) facts.push("only listed (call " + file.listed_at + ")");
    else facts.push("never read");
    if (file.edited_at.length) facts.push("edited at call " + file.edited_at.join(", "));
    const list = SE.el("ul", { class: "uncredited" }, file.uncredited.map(function (u) {
      return SE.el("li", null, SE.el("span", { class: "lines", text: "lines " + SE.ranges([u.lines]) }), " ", u.why);
    }));
    return SE.el("section", { class: "strip", data: { file: file.file } },
      SE.el("h3", null, SE.el("code", { shown: file.file, max: 300 }), " ", SE.el("span", { class: "facts", text: facts.join(" · ") })),
      svg,
      file.uncredited.length ? SE.el("p", { class: "sub", text: "gold not credited:" }) : SE.el("p", { class: "sub", text: "every gold line credited" }),
      list);
  }

  // The legend: a swatch per step bin with its steps, the bins this run reached marked.
  function legend(gold) {
    const last = Math.max.apply(null, [0].concat(...gold.map(function (f) { return f.read.map(function (r) { return r[2]; }); })));
    return SE.el("p", { class: "legend" }, "first credited at step: ",
      SE.el("span", { class: "bins" }, SE.STEP_BINS.map(function (b, i) {
        const sw = SE.el("span", { class: "swatch bin" + (SE.binIsLight(i) ? " light" : "") + (b[0] > last ? " unused" : ""),
          data: { bin: i, colour: SE.binColour(i) }, text: SE.binLabel(b) });
        sw.style.backgroundColor = SE.binColour(i);
        return sw;
      })),
      "; gold: ", SE.el("span", { class: "swatch init", text: "init_ctx" }), " ", SE.el("span", { class: "swatch add", text: "add_ctx" }),
      "; ", SE.el("span", { class: "swatch edited", text: "edited" }));
  }

  // error: the run is not scored; the strips still show what its calls showed, said so
  SE.strips = function (gold, error) {
    if (!gold) return SE.el("p", { class: "empty", text: "no gold for this run (or no repository): nothing to draw" });
    return SE.el("div", { class: "strips" }, legend(gold),
      error ? SE.el("p", { class: "sub not-scored-strips", text: "the run is not scored: these strips show what its calls " +
        "showed, credited as they would be; no number counts them" }) : null,
      gold.map(strip));
  };
})(window.SE);
