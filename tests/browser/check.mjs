// Opens an evalgate report.html in headless Chromium (Debian's /usr/bin/chromium, or
// $CHROMIUM) over CDP and prints, as one JSON object, what a reader would see and do:
// the structure, every task id, the failing tasks' drill-downs, console errors, every
// request the page made, whether hostile output ran, and the result and time of typing
// a search, choosing a status, sorting and opening a task.
//
//   node check.mjs REPORT.html [--search TEXT] [--screenshot OUT.png [--open TASK] [--full-page]]
//                  [--width N --height N] [--label OUT.jsonl] [--offered] [--import FILE]
//
// --label: the labelling mode, as a labeller uses it: export refused before a name is typed;
// then every task opened by its button, the first judged item disagreed with (with a note),
// the second unsure, the rest agreed with, and "Export labels" clicked; the download is
// saved to OUT.jsonl; then the page is reloaded and what it resumed is read.
// --offered: the judged items offered (the stratified sample) after "Open tasks to label",
// and how many with "every judged item" ticked.
// --import: FILE chosen in "Import labels"; the message and the count after it.
//
// Used by tests/integration/html.rs and scripts/bench-html.sh; it never downloads a browser.
import { chromium } from "playwright-core";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const report = resolve(args[0]);
const url = pathToFileURL(report).href;

// Headless, no sandbox (tests run as root), nothing that reaches the network; Playwright
// gives every launch a fresh profile directory of its own.
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const out = { consoleErrors: [], pageErrors: [], requests: [] };
try {
  const context = await browser.newContext({
    viewport: { width: Number(opt("--width", 1200)), height: Number(opt("--height", 900)) },
  });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") out.consoleErrors.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  // Every request but the file itself: there must be none.
  page.on("request", (r) => {
    if (r.url() !== url) out.requests.push(r.url());
  });
  page.on("dialog", (d) => {
    out.dialogs = (out.dialogs || 0) + 1;
    d.dismiss();
  });

  const started = Date.now();
  await page.goto(url, { waitUntil: "load" });
  out.loadMs = Date.now() - started;
  out.navigationMs = await page.evaluate(() => {
    const n = performance.getEntriesByType("navigation")[0];
    return Math.round(n.loadEventEnd - n.startTime);
  });

  const state = () =>
    page.evaluate(() => {
      const bodies = [...document.querySelectorAll("#tasks .task")];
      return {
        shown: document.getElementById("shown").textContent,
        visible: bodies.filter((b) => !b.hidden).map((b) => b.dataset.id),
      };
    });

  Object.assign(
    out,
    await page.evaluate(() => ({
      title: document.title,
      verdict: document.getElementById("verdict").className,
      sections: [...document.querySelectorAll("main > section")].map((s) => s.id),
      headings: [...document.querySelectorAll("main h2, main h3")].map((h) => h.textContent),
      charts: [...document.querySelectorAll("#charts figure")].map((f) => f.id),
      gate: [...document.querySelectorAll("#gate tbody tr")].map((r) => r.cells[0].textContent),
      taskIds: [...document.querySelectorAll("#tasks .task")].map((b) => b.dataset.id),
      scripts: document.scripts.length,
      images: document.images.length,
      iframes: document.querySelectorAll("iframe, object, embed").length,
      javascriptLinks: [...document.querySelectorAll("[href],[src],[action],[formaction]")]
        .map((e) => e.getAttribute("href") || e.getAttribute("src") || e.getAttribute("action") || e.getAttribute("formaction"))
        .filter((v) => /^\s*(javascript|data|vbscript):/i.test(v)).length,
      eventHandlers: [...document.querySelectorAll("*")].filter((e) =>
        [...e.attributes].some((a) => a.name.toLowerCase().startsWith("on"))
      ).length,
      pwned: window.__pwned === undefined ? null : String(window.__pwned),
      bytes: document.documentElement.outerHTML.length,
    }))
  );

  // Open the failing tasks with the page's own button, then every collapsed text in them.
  await page.click("#expand-failing");
  await page.evaluate(() => {
    for (const d of document.querySelectorAll(".task > .detail:not([hidden]) details")) d.open = true;
  });
  out.drill = await page.evaluate(() => {
    const open = {};
    for (const b of document.querySelectorAll("#tasks .task")) {
      const row = b.querySelector(".detail");
      if (!row.hidden) {
        open[b.dataset.id] = {
          text: row.innerText,
          tools: [...row.querySelectorAll("code.tool")].map((c) => c.textContent),
          graders: [...row.querySelectorAll("table.graders tbody tr")].length,
        };
      }
    }
    return open;
  });
  // Clicking every link in the opened drill-downs must run nothing either.
  for (const link of await page.$$(".task > .detail:not([hidden]) a")) await link.click().catch(() => {});
  await page.click("#collapse-all");

  // Typing in the search box, as a reader does.
  const search = opt("--search", out.taskIds[0] || "");
  await page.click("#q");
  await page.keyboard.type(search);
  out.search = { text: search, ...(await state()) };
  await page.fill("#q", "");
  await page.selectOption("#status", "failed");
  out.statusFailed = await state();
  await page.selectOption("#status", "");
  out.reset = await state();

  // The time one filter pass takes over the whole table (input event to layout done).
  out.filterMs = await page.evaluate(() => {
    const q = document.getElementById("q");
    const times = [];
    for (const text of ["zz-no-such-task", "", "a", ""]) {
      const t0 = performance.now();
      q.value = text;
      q.dispatchEvent(new Event("input"));
      void document.body.offsetHeight;
      times.push(performance.now() - t0);
    }
    return Math.max(...times);
  });

  // Sorting by score, ascending then descending.
  await page.click('#tasks .head [data-key="score"]');
  out.sortAscending = (await state()).visible;
  await page.click('#tasks .head [data-key="score"]');
  out.sortDescending = (await state()).visible;

  // Opening one task by clicking its id.
  const first = out.taskIds[0];
  if (first) {
    await page.click(`.task[data-id="${first}"] button.toggle`);
    out.clickOpened = await page.evaluate(
      (id) => !document.querySelector(`.task[data-id="${id}"]`).querySelector(".detail").hidden,
      first
    );
  }

  const labels = opt("--label");
  if (labels) {
    await page.reload({ waitUntil: "load" });
    const text = (id) => page.evaluate((i) => document.getElementById(i)?.textContent ?? null, id);
    out.labelling = { labelable: await text("labelable"), before: await text("labelled") };
    await page.click("#export-labels");
    out.labelling.refused = await text("label-msg");
    await page.fill("#labeller", "ana");
    for (const toggle of await page.$$("#tasks .task button.toggle")) await toggle.click();
    const rows = await page.$$("tr.label");
    out.labelling.rows = rows.length;
    for (let i = 0; i < rows.length; i++) {
      const verdict = i === 0 ? "disagree" : i === 1 ? "unsure" : "agree";
      await (await rows[i].$(`button.lab[data-v="${verdict}"]`)).click();
      if (i === 0) await (await rows[i].$("input.note")).fill("too lenient");
    }
    out.labelling.after = await text("labelled");
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export-labels")]);
    await download.saveAs(resolve(labels));
    out.labelling.message = await text("label-msg");
    // A reload resumes from this browser's storage.
    await page.reload({ waitUntil: "load" });
    out.labelling.resumed = {
      labelled: await text("labelled"),
      message: await text("label-msg"),
      labeller: await page.inputValue("#labeller"),
      verdicts: await page.$$eval("tr.label", (rs) => rs.map((r) => r.dataset.verdict || "")),
      notes: await page.$$eval("tr.label input.note", (ns) => ns.map((n) => n.value)),
    };
  }

  if (args.includes("--offered")) {
    await page.reload({ waitUntil: "load" });
    await page.click("#open-to-label");
    const offered = () =>
      page.$$eval("tr.label", (rs) =>
        rs
          .filter((r) => !r.hidden && !r.closest(".detail").hidden)
          .map((r) => [r.dataset.task, r.dataset.grader, r.dataset.criterion ?? null, Number(r.dataset.trial)])
      );
    out.offered = { items: await offered(), count: await page.textContent("#labelable") };
    await page.check("#label-every");
    out.offered.every = {
      count: await page.textContent("#labelable"),
      items: await page.$$eval("tr.label", (rs) => rs.filter((r) => !r.hidden).length),
    };
  }

  const imported = opt("--import");
  if (imported) {
    await page.reload({ waitUntil: "load" });
    const before = await page.textContent("#label-msg");
    await page.setInputFiles("#import-labels", resolve(imported));
    await page.waitForFunction((b) => document.getElementById("label-msg").textContent !== b, before);
    out.imported = {
      message: await page.textContent("#label-msg"),
      labelled: await page.textContent("#labelled"),
      labeller: await page.inputValue("#labeller"),
      rows: await page.$$eval("tr.label", (rs) =>
        rs.map((r) => [r.dataset.task, Number(r.dataset.trial), r.dataset.judge, r.dataset.verdict || ""])
      ),
    };
  }

  out.titleAfter = await page.title();
  out.pwnedAfter = await page.evaluate(() => (window.__pwned === undefined ? null : String(window.__pwned)));

  // The screenshot shows the page as opened (reloaded: unsorted, unfiltered), or with the
  // task `--open ID` open and scrolled to.
  const shot = opt("--screenshot");
  if (shot) {
    await page.reload({ waitUntil: "load" });
    const open = opt("--open");
    await page.evaluate(() => window.scrollTo(0, 0));
    if (open) {
      await page.click(`.task[data-id="${open}"] button.toggle`);
      await page.evaluate((id) => document.querySelector(`.task[data-id="${id}"]`).scrollIntoView(), open);
    }
    await page.screenshot({ path: shot, fullPage: args.includes("--full-page") });
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
