// One run: who it is and its numbers, the per-step coverage curves, each gold file as a
// strip of its lines, and the list of tool calls with what each was credited. Polled
// live (ETag / 304: nothing is sent or redrawn while the run does not move).
"use strict";

(function (SE) {
  function numbers(run) {
    const head = SE.el("tr", null, ["", "coverage", "precision", "F1", "AUC"].map(function (h) { return SE.el("th", { text: h }); }));
    const rows = SE.GRANULARITIES.map(function (g) {
      const n = run.final && run.final[g];
      return SE.el("tr", { data: { granularity: g } }, SE.el("th", { text: g }), SE.ratioCell(n, "coverage"),
        SE.ratioCell(n, "precision"), SE.el("td", { class: "num", text: SE.fixed(n && n.f1) }),
        SE.el("td", { class: "num", text: SE.fixed(run.auc && run.auc[g]) }));
    });
    return SE.el("table", { class: "numbers" }, SE.el("thead", null, head), SE.el("tbody", null, rows));
  }

  function facts(run) {
    const e = run.editloc;
    const items = [
      ["state", (run.error ? "not scored" : run.state) + (run.record ? " (record written)" : "")],
      ["instance", run.instance], ["agent", run.agent], ["model", run.model],
      ["experiment", run.experiment], ["format", run.format], ["trace", run.trace],
      ["steps", SE.count(run.steps)], ["tool calls", SE.count(run.calls)],
      ["EditLoc", e ? "recall " + SE.fixed(e.recall) + " (" + e.intersection + " of " + e.pred_size + " changed lines in init_ctx" +
        (e.final ? ")" : "; provisional: the edits seen so far)") : "no patch yet"],
      ["problems", run.problems + " reads/edits not used, " + run.bad_lines + " bad lines"],
      ["aborts", run.aborts.length ? run.aborts.map(function (a) { return a[0] + " → " + a[1]; }).join(", ") : "none"],
      ["tokens", SE.count(run.tokens)], ["cost", SE.money(run.cost)],
      ["solved", run.resolved === null || run.resolved === undefined ? null : (run.resolved ? "yes" : "no")],
      ["no gold", run.gold_missing],
      ["not scored", run.error],
    ];
    return SE.el("dl", { class: "facts" }, items.filter(function (i) { return i[1] !== null && i[1] !== undefined && i[1] !== ""; })
      .map(function (i) { return [SE.el("dt", { text: i[0] }), SE.el("dd", { text: i[1] })]; }));
  }

  SE.runView = function (root, source, id, status) {
    let etag = null, timer = null, stopped = false, callsFrom = 0;
    const title = SE.el("h1", null, "Run ", SE.el("code", { id: "run-id", text: id }));
    const top = SE.el("div", { class: "run-top" });
    const curve = SE.el("div", { id: "curve", class: "panel" });
    const strips = SE.el("div", { id: "strips", class: "panel" });
    const calls = SE.el("div", { id: "calls", class: "panel" });
    const notes = SE.el("ul", { class: "notes" });
    SE.replace(root, SE.el("p", null, SE.link({}, "← all runs")), title, top, notes,
      SE.el("h2", { text: "Coverage per step" }), curve,
      SE.el("h2", { text: "Gold files, line by line" }), strips,
      SE.el("h2", { text: "Tool calls" }), calls);

    function draw(d) {
      SE.replace(top, facts(d.run), numbers(d.run));
      SE.replace(notes, d.notes.map(function (n) { return SE.el("li", { text: n }); }));
      SE.replace(curve, SE.curve(d.curve));
      SE.replace(strips, SE.strips(d.gold, d.curve.n));
      SE.replace(calls, SE.calls(d.calls, function (from) { callsFrom = from; etag = null; refresh(); }));
    }

    async function refresh() {
      clearTimeout(timer);
      try {
        const answer = await source.run(id, callsFrom, etag);
        if (answer.status === 404) {
          SE.replace(top, SE.el("p", { class: "empty", text: "no such run (it may have left the watcher's memory)" }));
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
