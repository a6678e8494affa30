// The page's entry: which data source (live API, or data embedded in this file), which
// view (the fleet at "/", a run at "/runs/<id>"; "#/runs/<id>" in a file), and links.
"use strict";

(function (SE) {
  const embedded = document.getElementById("se-data");
  SE.mode = embedded ? "file" : "live";

  // A run's page is /runs/<id>; an id that is a dot segment ("." or "..") would be
  // resolved away by the browser in a path, so it goes in a query: /runs?id=<id>.
  SE.pathTo = function (route) {
    let path = "/";
    if (route.run !== undefined) {
      path = route.run === "." || route.run === ".." ? "/runs?id=" + encodeURIComponent(route.run)
        : "/runs/" + encodeURIComponent(route.run);
    }
    return SE.mode === "file" ? "#" + path : path;
  };

  function routeNow() {
    const path = SE.mode === "file" ? (location.hash.slice(1) || "/") : location.pathname + location.search;
    const q = /^\/runs\?(.*)$/.exec(path);
    if (q) {
      const id = new URLSearchParams(q[1]).get("id");
      return id === null ? {} : { run: id };
    }
    const m = /^\/runs\/([^?]+)/.exec(path);
    if (!m) return {};
    try { return { run: decodeURIComponent(m[1]) }; } catch (e) { return { run: m[1] }; }
  }

  function start() {
    const source = embedded ? SE.embeddedSource(JSON.parse(embedded.textContent)) : SE.liveSource();
    const main = document.getElementById("main");
    const statusEl = document.getElementById("status");
    const status = function (text) { statusEl.textContent = text; };
    document.getElementById("home").setAttribute("href", SE.pathTo({}));
    let view = null;
    const show = function () {
      if (view) view.stop();
      const route = routeNow();
      view = route.run !== undefined ? SE.runView(main, source, route.run, status) : SE.fleetView(main, source, status);
      window.scrollTo(0, 0);
    };
    if (SE.mode === "file") window.addEventListener("hashchange", show);
    show();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})(window.SE);
