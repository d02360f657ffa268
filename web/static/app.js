// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";
  var FINISHED = ["succeeded", "failed", "error", "cancelled", "timeout"];
  var POLL_MS = 1500;

  // Timestamps in the viewer's local time (the server writes UTC text as the fallback).
  function localiseTimes(root) {
    var opts = {month: "short", day: "numeric", hour: "2-digit", minute: "2-digit"};
    var thisYear = new Intl.DateTimeFormat(undefined, opts);
    var otherYear = new Intl.DateTimeFormat(undefined, Object.assign({year: "numeric"}, opts));
    var now = new Date();
    root.querySelectorAll("time[data-local]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) { return; }
      el.title = el.textContent;  // the UTC text stays one hover away
      el.textContent = (d.getFullYear() === now.getFullYear() ? thisYear : otherYear).format(d);
    });
    // An <option> cannot hold a <time>: its UTC text is swapped in place, so a menu and the page agree.
    root.querySelectorAll("option[data-local]").forEach(function (el) {
      var d = new Date(el.getAttribute("data-local"));
      var utc = el.getAttribute("data-utc-text");
      if (isNaN(d) || !utc) { return; }
      el.textContent = el.textContent.replace(utc, (d.getFullYear() === now.getFullYear() ? thisYear : otherYear).format(d));
    });
  }

  function getJob(id) {
    return fetch("/api/v1/jobs/" + id, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); });
  }

  function describe(job) {
    if (job.status === "queued") {
      return "queued" + (job.queue_position ? " · position " + job.queue_position + " in the " + job.queue + " queue" : "");
    }
    if (job.status === "awaiting_npu") {
      return "awaiting an NPU worker" + (job.queue_position ? " · position " + job.queue_position + " in the npu queue" : "");
    }
    if (job.status === "running") {
      var p = job.progress || {};
      return "running" + (p.total ? " · case " + (p.done || 0) + "/" + p.total + (p.case ? " (" + p.case + ")" : "") : "");
    }
    return job.status;
  }

  // Job page: follow the job until it finishes, then show the results.
  function followJobPage(live) {
    var id = live.getAttribute("data-job");
    var text = document.getElementById("live-text");
    var bar = document.getElementById("live-progress");
    var status = document.getElementById("job-status");
    function tick() {
      getJob(id).then(function (job) {
        if (FINISHED.indexOf(job.status) >= 0) { window.location.reload(); return; }
        text.textContent = describe(job).replace(/^./, function (c) { return c.toUpperCase(); }) + ". This page updates by itself.";
        status.textContent = job.status === "awaiting_npu" ? "awaiting an NPU worker" : job.status;  // as web/format.py words it
        status.className = "status st-" + job.status;
        var p = job.progress || {};
        if (p.total) { bar.max = p.total; bar.value = p.done || 0; }
        setTimeout(tick, POLL_MS);
      }).catch(function () { setTimeout(tick, POLL_MS * 4); });
    }
    setTimeout(tick, POLL_MS);
  }

  // Submit page: post through the API, then watch each job live; open the results when all finish.
  function enhanceSubmit(form) {
    var panel = document.getElementById("submit-progress");
    var message = document.getElementById("submit-message");
    var list = document.getElementById("submit-jobs");
    var button = document.getElementById("submit-button");
    var file = document.getElementById("s-file");
    var folder = document.getElementById("s-folder");
    document.getElementById("s-folder-field").hidden = false;  // a folder needs this script to send it
    folder.addEventListener("change", function () { file.required = !folder.files.length; });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      button.disabled = true;
      panel.hidden = false;
      message.textContent = "Uploading…";
      list.innerHTML = "";
      var useFolder = folder.files.length && !file.files.length;
      (useFolder ? folderBody(folder.files) : Promise.resolve({body: new FormData(form), headers: {}}))
        .then(function (req) {
          return fetch("/api/v1/submissions", {method: "POST", body: req.body, credentials: "same-origin",
                                               headers: Object.assign({"Accept": "application/json"}, req.headers)});
        })
        .then(function (r) {
          return r.json().then(function (body) { return {ok: r.ok, status: r.status, body: body}; },
                               function () { return {ok: r.ok, status: r.status, body: {}}; });
        })
        .then(function (res) {
          if (!res.ok) {
            message.textContent = "Not submitted: " + (res.body.detail || ("HTTP " + res.status));
            message.className = "alert"; button.disabled = false; return;
          }
          message.className = "";
          message.textContent = "Submission #" + res.body.submission_id + " accepted. Watching its jobs…";
          watch(res.body.jobs || []);
        })
        .catch(function () { form.submit(); });  // no API reachable from JS: fall back to the plain POST
    });

    // A chosen folder goes as the JSON form of POST /api/v1/submissions: {files: {path: text}, ...},
    // paths relative to the folder itself, as `crosscheck submit FOLDER` zips them.
    var SKIP = /(^|\/)(__pycache__|\.git|output|\.pytest_cache)(\/|$)|\.pyc$/;
    function folderBody(fileList) {
      var picked = Array.prototype.filter.call(fileList, function (f) {
        var rel = f.webkitRelativePath.split("/").slice(1).join("/");
        return rel && !SKIP.test(rel);
      });
      return Promise.all(picked.map(function (f) { return f.text(); })).then(function (texts) {
        var files = {};
        picked.forEach(function (f, i) { files[f.webkitRelativePath.split("/").slice(1).join("/")] = texts[i]; });
        var data = new FormData(form);
        var labels = {};
        ["branch", "commit", "author"].forEach(function (k) { if (data.get(k)) { labels[k] = data.get(k); } });
        var body = {files: files, modes: data.getAll("modes"), labels: labels,
                    cases: String(data.get("cases") || "").split(",").map(function (c) { return c.trim(); })
                      .filter(Boolean)};
        if (data.get("operator")) { body.name = data.get("operator"); }
        return {body: JSON.stringify(body), headers: {"Content-Type": "application/json"}};
      });
    }

    function watch(jobs) {
      var items = {};
      jobs.forEach(function (job) {
        var li = document.createElement("li");
        var a = document.createElement("a");
        a.href = "/jobs/" + job.id; a.textContent = "Job #" + job.id + " " + job.mode.toUpperCase();
        var s = document.createElement("span");
        s.className = "job-state"; s.textContent = " · " + job.status;
        li.appendChild(a); li.appendChild(s); list.appendChild(li);
        items[job.id] = {state: s, done: false};
      });
      function tick() {
        var pending = jobs.filter(function (j) { return !items[j.id].done; });
        if (!pending.length) {
          message.textContent = "Finished. Opening the results…";
          window.location.href = "/jobs/" + jobs[0].id;
          return;
        }
        Promise.all(pending.map(function (j) {
          return getJob(j.id).then(function (job) {
            items[j.id].state.textContent = " · " + describe(job);
            items[j.id].done = FINISHED.indexOf(job.status) >= 0;
          });
        })).then(function () { setTimeout(tick, POLL_MS); }, function () { setTimeout(tick, POLL_MS * 4); });
      }
      tick();
    }
  }

  // Overview: reload while jobs run, unless the reader is busy with the page (typing, an open row).
  function refreshOverview(live) {
    var ms = 1000 * Number(live.getAttribute("data-refresh-s") || 10);
    setTimeout(function again() {
      var busy = document.activeElement && /INPUT|SELECT|TEXTAREA/.test(document.activeElement.tagName);
      if (busy || document.querySelector("tbody.op details[open]")) { setTimeout(again, ms); return; }
      window.location.reload();
    }, ms);
  }

  // Overview: a row's case table is fetched when the row is first opened, from the page its link
  // names (/cases?operator=...), so the overview itself reads one row per operator (docs/dashboard.md §6).
  function lazyCases(details) {
    details.addEventListener("toggle", function () {
      if (!details.open || details.getAttribute("data-loaded")) { return; }
      details.setAttribute("data-loaded", "loading");
      fetch(details.getAttribute("data-cases"), {credentials: "same-origin", headers: {"Accept": "text/html"}})
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
        .then(function (html) {
          var table = new DOMParser().parseFromString(html, "text/html").getElementById("op-cases");
          if (!table) { throw new Error("no case table"); }
          table.removeAttribute("id");
          var link = details.querySelector(".cases-link");
          details.insertBefore(document.importNode(table, true), link);
          link.remove();
          localiseTimes(details);
          details.setAttribute("data-loaded", "yes");
        })
        .catch(function () { details.removeAttribute("data-loaded"); });  // the link stays: it still works
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (window.fetch && window.DOMParser) { document.querySelectorAll("details[data-cases]").forEach(lazyCases); }
    localiseTimes(document);
    var overviewLive = document.getElementById("overview-live");
    if (overviewLive) { refreshOverview(overviewLive); }
    var live = document.getElementById("live");
    if (live) { followJobPage(live); }
    var form = document.getElementById("submit-form");
    if (form && window.fetch && window.FormData) { enhanceSubmit(form); }
  });
})();
