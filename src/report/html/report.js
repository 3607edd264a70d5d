"use strict";
(function () {
  var table = document.getElementById("tasks");
  if (!table) return;
  var bodies = Array.prototype.slice.call(table.querySelectorAll(".task"));
  var q = document.getElementById("q");
  var status = document.getElementById("status");
  var tag = document.getElementById("tag");
  var shown = document.getElementById("shown");
  var order = { error: 0, failed: 1, passed: 2, skipped: 3 };

  function filter() {
    var text = q.value.trim().toLowerCase(), s = status.value, t = tag.value ? "|" + tag.value + "|" : "", n = 0;
    for (var i = 0; i < bodies.length; i++) {
      var d = bodies[i].dataset;
      var ok = (!s || d.status === s) && (!t || d.tags.indexOf(t) >= 0) && (!text || d.search.indexOf(text) >= 0);
      if (bodies[i].hidden === ok) bodies[i].hidden = !ok;
      if (ok) n++;
    }
    shown.textContent = n;
  }
  q.addEventListener("input", filter);
  status.addEventListener("change", filter);
  tag.addEventListener("change", filter);

  function detail(body) {
    return body.querySelector(".detail");
  }
  function open(body, yes) {
    var button = body.querySelector("button.toggle");
    detail(body).hidden = !yes;
    button.setAttribute("aria-expanded", yes ? "true" : "false");
  }
  table.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button.toggle");
    if (button) {
      var body = button.closest(".task");
      open(body, detail(body).hidden);
    }
  });
  document.getElementById("expand-failing").addEventListener("click", function () {
    bodies.forEach(function (b) { if (!b.hidden) open(b, b.dataset.status === "failed" || b.dataset.status === "error"); });
  });
  document.getElementById("collapse-all").addEventListener("click", function () {
    bodies.forEach(function (b) { open(b, false); });
  });

  var heads = table.querySelectorAll(".head [data-key]");
  Array.prototype.forEach.call(heads, function (th) {
    th.addEventListener("click", function () {
      var key = th.dataset.key, numeric = th.dataset.type === "num";
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      Array.prototype.forEach.call(heads, function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
      function value(b) {
        var v = b.dataset[key];
        if (key === "status") return order[v];
        if (numeric) return v === "" ? null : parseFloat(v);
        return v;
      }
      bodies.sort(function (a, b) {
        var x = value(a), y = value(b);
        if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
        return (x < y ? -1 : x > y ? 1 : 0) * dir;
      });
      var frag = document.createDocumentFragment();
      bodies.forEach(function (b) { frag.appendChild(b); });
      table.appendChild(frag);
    });
  });

  function follow() {
    var id = decodeURIComponent(location.hash.slice(1));
    var body = id && document.getElementById(id);
    if (body && body.classList.contains("task")) {
      body.hidden = false;
      open(body, true);
      body.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", follow);
  follow();

  // Labelling mode: a verdict per judged item, exported as a labels file (JSON lines) that
  // `evalgate judge calibrate` reads. Nothing leaves the page but the download.
  var labelling = document.getElementById("labelling");
  if (!labelling) return;
  var rows = Array.prototype.slice.call(table.querySelectorAll("tr.label"));
  var labelled = document.getElementById("labelled"), msg = document.getElementById("label-msg");
  var labeller = document.getElementById("labeller");
  table.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("button.lab");
    if (!b) return;
    var row = b.closest("tr.label");
    if (row.dataset.verdict === b.dataset.v) delete row.dataset.verdict;
    else row.dataset.verdict = b.dataset.v;
    row.querySelectorAll("button.lab").forEach(function (x) {
      x.setAttribute("aria-pressed", x.dataset.v === row.dataset.verdict ? "true" : "false");
    });
    labelled.textContent = rows.filter(function (r) { return r.dataset.verdict; }).length;
  });
  document.getElementById("export-labels").addEventListener("click", function () {
    var who = labeller.value.trim();
    if (!who) {
      msg.textContent = "Type your name first: every label records its labeller.";
      labeller.focus();
      return;
    }
    var date = new Date().toISOString().slice(0, 10);
    var lines = rows.filter(function (r) { return r.dataset.verdict; }).map(function (r) {
      var d = r.dataset, label = { task: d.task, grader: d.grader };
      if (d.criterion !== undefined) label.criterion = d.criterion;
      label.trial = Number(d.trial);
      if (d.sha) label.output_sha256 = d.sha;
      label.judge = d.judge;
      label.verdict = d.verdict;
      label.labeller = who;
      label.date = date;
      label.note = r.querySelector("input.note").value;
      return JSON.stringify(label);
    });
    if (!lines.length) {
      msg.textContent = "Nothing labelled yet.";
      return;
    }
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "application/x-ndjson" }));
    a.download = "labels.jsonl";
    document.body.appendChild(a);
    a.click();
    a.remove();
    msg.textContent = lines.length + " labels exported.";
  });
})();
