// Where the page's data comes from: the live API (polled with ETag / 304, one request
// at a time), or the data embedded in a self-contained file (streameval view --html).
// Both answer the same shapes (docs/page.md, "The API").
"use strict";

(function (SE) {
  SE.CALLS_PAGE = 200;

  async function get(url, etag) {
    const headers = etag ? { "If-None-Match": etag } : {};
    const resp = await fetch(url, { headers: headers, cache: "no-store", credentials: "same-origin" });
    if (resp.status === 304) return { status: 304, etag: etag };
    if (resp.status === 404) {   // the server says why (its JSON "error"), when it does
      const body = await resp.json().catch(function () { return {}; });
      return { status: 404, error: body && typeof body.error === "string" ? body.error : null };
    }
    if (!resp.ok) throw new Error("HTTP " + resp.status + " from " + url);
    return { status: 200, etag: resp.headers.get("ETag"), body: await resp.json() };
  }

  SE.liveSource = function () {
    return {
      live: true,
      fleet: function (since, etag) {
        return get("/api/runs" + (since ? "?since=" + encodeURIComponent(since) : ""), etag);
      },
      run: function (id, from, etag) {
        // by a query: an id such as "." or ".." would be resolved away in a path
        return get("/api/run?id=" + encodeURIComponent(id) + "&calls_from=" + (from || 0), etag);
      },
    };
  };

  // data: {fleet: <the /api/runs answer>, runs: [[id, <the /api/runs/ID answer>], ...]}
  SE.embeddedSource = function (data) {
    const runs = new Map(data.runs);
    return {
      live: false,
      fleet: function () { return Promise.resolve({ status: 200, body: data.fleet }); },
      run: function (id, from) {
        const detail = runs.get(id);
        if (!detail) return Promise.resolve({ status: 404 });
        const all = detail.calls.rows;
        const start = Math.max(0, Math.min(from || 0, Math.max(all.length - 1, 0)));
        const calls = Object.assign({}, detail.calls, { rows: all.slice(start, start + SE.CALLS_PAGE), from: start });
        return Promise.resolve({ status: 200, body: Object.assign({}, detail, { calls: calls }) });
      },
    };
  };
})(window.SE);
