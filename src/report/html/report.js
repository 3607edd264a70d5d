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
  // `evalgate judge calibrate` reads. The stratified sample `evalgate judge sample` picks is
  // offered first. Labels are kept in this browser (localStorage, keyed by the suite and the
  // run) so a reload resumes, and a labels file can be imported. Nothing leaves the page but
  // the download; what storage or a file holds is read as data, never as markup.
  var labelling = document.getElementById("labelling");
  if (!labelling) return;
  var rows = Array.prototype.slice.call(table.querySelectorAll("tr.label"));
  var labelled = document.getElementById("labelled"), msg = document.getElementById("label-msg");
  var labeller = document.getElementById("labeller"), every = document.getElementById("label-every");
  var offeredCount = document.getElementById("labelable");
  var store = "evalgate-labels|" + labelling.dataset.store;
  var VERDICTS = { agree: true, disagree: true, unsure: true };

  function itemKey(d) {
    return [d.task, d.grader, d.criterion === undefined ? "" : d.criterion, d.trial].join("\u001f");
  }
  function note(row) {
    return row.querySelector("input.note");
  }
  function offered(row) {
    return every.checked || row.dataset.sample !== undefined;
  }
  function count() {
    var shown = rows.filter(offered);
    offeredCount.textContent = shown.length;
    labelled.textContent = shown.filter(function (r) { return r.dataset.verdict; }).length;
  }
  function show() {
    rows.forEach(function (r) { r.hidden = !offered(r); });
    table.querySelectorAll(".labels-block").forEach(function (b) {
      b.hidden = !b.querySelector("tr.label:not([hidden])");
    });
    count();
  }
  function set(row, verdict) {
    if (verdict) row.dataset.verdict = verdict;
    else delete row.dataset.verdict;
    row.querySelectorAll("button.lab").forEach(function (x) {
      x.setAttribute("aria-pressed", x.dataset.v === row.dataset.verdict ? "true" : "false");
    });
  }
  function save() {
    var saved = { labeller: labeller.value, items: {} };
    rows.forEach(function (r) {
      if (r.dataset.verdict || note(r).value) saved.items[itemKey(r.dataset)] = { verdict: r.dataset.verdict || "", note: note(r).value };
    });
    try {
      localStorage.setItem(store, JSON.stringify(saved));
    } catch (e) {
      msg.textContent = "This browser keeps no labels: export them before closing the page.";
    }
  }
  function resume() {
    var saved = null;
    try {
      saved = JSON.parse(localStorage.getItem(store) || "null");
    } catch (e) {}
    if (!saved || typeof saved !== "object") return;
    if (typeof saved.labeller === "string") labeller.value = saved.labeller;
    var items = saved.items && typeof saved.items === "object" ? saved.items : {}, n = 0;
    rows.forEach(function (r) {
      var s = Object.prototype.hasOwnProperty.call(items, itemKey(r.dataset)) ? items[itemKey(r.dataset)] : null;
      if (!s || typeof s !== "object") return;
      if (VERDICTS[s.verdict] === true) {
        set(r, s.verdict);
        n++;
      }
      if (typeof s.note === "string") note(r).value = s.note;
    });
    if (n) msg.textContent = n + " labels resumed from this browser.";
  }

  table.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("button.lab");
    if (!b) return;
    var row = b.closest("tr.label");
    set(row, row.dataset.verdict === b.dataset.v ? null : b.dataset.v);
    save();
    count();
  });
  table.addEventListener("input", function (e) {
    if (e.target.classList.contains("note")) save();
  });
  labeller.addEventListener("input", save);
  every.addEventListener("change", show);
  document.getElementById("open-to-label").addEventListener("click", function () {
    bodies.forEach(function (b) {
      var todo = Array.prototype.some.call(b.querySelectorAll("tr.label"), function (r) { return offered(r) && !r.dataset.verdict; });
      if (todo) {
        b.hidden = false;
        open(b, true);
      }
    });
  });

  // A labels file (as exported here or filled from `judge sample`): each line's verdict goes
  // to the items it names (by output hash, else by trial), as agree or disagree with the
  // verdict the judge gave each.
  var importer = document.getElementById("import-labels");
  importer.addEventListener("change", function () {
    var file = importer.files[0];
    if (!file) return;
    var reader = new FileReader();
    reader.onload = function () {
      var applied = 0, unmatched = 0, unreadable = 0, blank = 0;
      String(reader.result).split("\n").forEach(function (line) {
        if (!line.trim()) return;
        var l = null;
        try {
          l = JSON.parse(line);
        } catch (e) {}
        if (!l || typeof l !== "object" || typeof l.verdict !== "string") return unreadable++;
        if (!l.verdict) return blank++;
        var matches = rows.filter(function (r) {
          var d = r.dataset;
          var same = d.task === l.task && d.grader === l.grader && (d.criterion === undefined ? l.criterion == null : d.criterion === l.criterion);
          return same && (l.output_sha256 ? d.sha === l.output_sha256 : l.trial != null && String(l.trial) === d.trial);
        });
        if (!matches.length) return unmatched++;
        // The human's verdict, then agree or disagree with each item's own judge verdict
        // (one output judged twice may have been given both).
        var human = l.verdict === "agree" || l.verdict === "disagree"
          ? (l.judge === "pass" || l.judge === "fail" ? ((l.judge === "pass") === (l.verdict === "agree") ? "pass" : "fail") : null)
          : l.verdict;
        if (human !== "pass" && human !== "fail" && human !== "unsure") return unreadable++;
        matches.forEach(function (r) {
          set(r, human === "unsure" ? "unsure" : human === r.dataset.judge ? "agree" : "disagree");
          if (typeof l.note === "string") note(r).value = l.note;
        });
        applied++;
        if (!labeller.value && typeof l.labeller === "string") labeller.value = l.labeller;
      });
      save();
      count();
      var parts = [applied + " labels imported"];
      if (unmatched) parts.push(unmatched + " match no item of this report");
      if (blank) parts.push(blank + " not labelled yet");
      if (unreadable) parts.push(unreadable + " unreadable");
      msg.textContent = parts.join(", ") + ".";
    };
    reader.readAsText(file);
    importer.value = "";
  });

  resume();
  show();
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
