// A page the grading service serves live (grader/service/pages.py): every data-live seconds (a little more or
// less, so a class's pages do not poll in step) it asks for its own address again. The service answers 304 when
// nothing it shows has changed (the ETag is the page's data-version), so a quiet page costs one small request;
// otherwise the part marked data-live is swapped for the new one, without a reload. A hidden tab does not poll;
// a page whose login ended stops.
(function () {
  "use strict";
  var part = document.querySelector("[data-live]");
  if (!part || !window.fetch || !window.DOMParser) return;
  var every = Math.max(2, Number(part.getAttribute("data-live")) || 10) * 1000;

  function later() { window.setTimeout(poll, every * (0.8 + 0.4 * Math.random())); }

  function swap(text) {
    var page = new DOMParser().parseFromString(text, "text/html");
    var fresh = page.querySelector("[data-live]");
    if (!fresh) return;
    part.replaceWith(document.adoptNode(fresh));
    part = fresh;
    document.title = page.title;
    document.dispatchEvent(new CustomEvent("live:updated"));
  }

  function poll() {
    if (document.hidden) { later(); return; }
    fetch(window.location.href, { cache: "no-cache", credentials: "same-origin", headers: { "X-Live": "1" } })
      .then(function (reply) {
        if (reply.status === 401 || reply.status === 403) return "stop";
        var tag = reply.headers.get("ETag");
        if (!reply.ok || tag === '"' + part.getAttribute("data-version") + '"') return null;
        return reply.text().then(swap);
      })
      .catch(function () { return null; })
      .then(function (result) { if (result !== "stop") later(); });
  }
  later();
})();
