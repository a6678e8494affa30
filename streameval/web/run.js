// One run: who it is and its numbers, the per-step coverage curves, each gold file as a
// strip of its lines, and the list of tool calls with what each was credited. Polled
// live (ETag / 304: nothing is sent or redrawn while the run does not move).
"use strict";

(function (SE) {
  const NUMBERS = [
    ["coverage", "share of the gold that was read"],
    ["precision", "share of what was read that is gold"],
    ["F1", "F1 of coverage and precision"],
    ["AUC", "AUC-coverage: the mean coverage over the steps (early reads count more)"],
    ["redundancy", "share of what the steps read that an earlier step had read already"],
  ];

  function numbers(run) {
    const head = SE.el("tr", null, SE.el("th", { text: "final, by granularity" }), NUMBERS.map(function (h) {
      return SE.el("th", { class: "num", title: h[1], text: h[0] });
    }));
    const rows = SE.GRANULARITIES.map(function (g) {
      const n = run.final && run.final[g];
      return SE.el("tr", { data: { granularity: g } }, SE.el("th", { text: g }), SE.ratioCell(n, "coverage"),
        SE.ratioCell(n, "precision"), SE.el("td", { class: "num", text: SE.fixed(n && n.f1) }),
        SE.el("td", { class: "num", text: SE.fixed(run.auc && run.auc[g]) }),
        SE.el("td", { class: "num redundancy", text: SE.fixed(run.redundancy && run.redundancy[g]) }));
    });
    return SE.el("table", { class: "numbers" }, SE.el("thead", null, head), SE.el("tbody", null, rows));
  }

  function editloc(run) {
    const e = run.editloc;
    if (run.error) return null;   // an unscored run has no EditLoc (its record has none)
    if (!e) return run.state === "finished" ? "no patch" : "no patch yet";
    return "recall " + SE.fixed(e.recall) + " (" + e.intersection + " of " + e.pred_size + " changed lines in init_ctx" +
      (e.final ? ")" : "; provisional: the edits seen so far)");
  }

  function facts(run) {
    const items = [
      ["state", (run.error ? "not scored" : run.state) + (run.record ? " (record written)" : "")],
      ["instance", run.instance, true], ["agent", run.agent, true], ["model", run.model, true],
      ["experiment", run.experiment, true], ["format", run.format, true], ["trace", run.trace, true],
      ["steps", run.steps === null ? null : SE.count(run.steps)], ["tool calls", SE.count(run.calls)],
      ["EditLoc", editloc(run)],
      ["problems", run.problems + " reads/edits not used, " + run.bad_lines + " bad lines"],
      ["aborts", run.aborts.length ? run.aborts.map(function (a) { return a[0] + " → " + a[1]; }).join(", ") : "none"],
      ["tokens", SE.count(run.tokens)], ["cost", SE.money(run.cost)],
      ["solved", run.resolved === null || run.resolved === undefined ? null : (run.resolved ? "yes" : "no")],
      ["no gold", run.gold_missing, true],
    ];
    return SE.el("dl", { class: "facts" }, items.filter(function (i) { return i[1] !== null && i[1] !== undefined && i[1] !== ""; })
      .map(function (i) { return [SE.el("dt", { text: i[0] }), SE.el("dd", i[2] ? { shown: i[1], max: 400 } : { text: i[1] })]; }));
  }

  // A run not scored says so once, at the top, instead of numbers: no table of zeros or
  // dashes, no curve that seems to wait for steps.
  function notScored(run) {
    return SE.el("p", { class: "not-scored", role: "alert" }, SE.el("strong", { text: "not scored: " }),
      SE.el("span", { shown: run.error, max: 600 }));
  }

  SE.runView = function (root, source, id, status) {
    let etag = null, timer = null, stopped = false, callsFrom = 0;
    const title = SE.el("h1", null, "Run ", SE.el("code", { id: "run-id", shown: id }));
    const top = SE.el("div", { class: "run-top" });
    const curve = SE.el("div", { id: "curve", class: "panel" });
    const strips = SE.el("div", { id: "strips", class: "panel" });
    const calls = SE.el("div", { id: "calls", class: "panel" });
    const notes = SE.el("ul", { class: "notes" });
    const missing = SE.el("p", { class: "empty missing v" });
    let found = null;
    // the panels when the run is there; the message alone when it is not (no empty panels)
    function layout(there) {
      if (found === there) return;
      found = there;
      if (there) {
        SE.replace(root, SE.el("p", null, SE.link({}, "← all runs")), title, top, notes,
          SE.el("h2", { text: "Coverage per step" }), curve,
          SE.el("h2", { text: "Gold files, line by line" }), strips,
          SE.el("h2", { text: "Tool calls" }), calls);
      } else SE.replace(root, SE.el("p", null, SE.link({}, "← all runs")), title, missing);
    }

    function draw(d) {
      layout(true);
      SE.replace(top, facts(d.run), d.run.error ? notScored(d.run) : numbers(d.run));
      SE.replace(notes, d.notes.map(function (n) { return SE.el("li", { shown: n, max: 600 }); }));
      SE.replace(curve, SE.curve(d.curve, d.run.error ? "not scored: no coverage to draw" : null));
      SE.replace(strips, SE.strips(d.gold, d.run.error));
      SE.replace(calls, SE.calls(d.calls, function (from) { callsFrom = from; etag = null; refresh(); }));
    }

    async function refresh() {
      clearTimeout(timer);
      try {
        const answer = await source.run(id, callsFrom, etag);
        if (answer.status === 404) {
          const c = SE.cut(answer.error || "no such run (it may have left the watcher's memory)", 600);
          missing.textContent = c.text;
          layout(false);
          etag = null;
        } else if (answer.status === 200) {
          etag = answer.etag;
          draw(answer.body);
        }
        status(source.live ? "live · updated " + new Date().toLocaleTimeString() : "recorded run");
      } catch (e) {
        status("cannot reach the watcher (" + e.message + "); trying again");
      }
      if (source.live && !stopped) timer = setTimeout(refresh, document.hidden ? 10000 : 1000);
    }

    refresh();
    return { stop: function () { stopped = true; clearTimeout(timer); } };
  };
})(window.SE);
