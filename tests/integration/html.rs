//! The HTML report opened in headless Chromium (tests/browser/check.mjs drives Debian's
//! chromium over CDP): every task id, the failing task's reason and tool calls, no console
//! error, no request leaving the file, hostile output inert, filtering by typing and
//! choosing, sorting by clicking, and the structure of a fixed report with its screenshot.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Test, suite};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a reader of `report` sees and does, as check.mjs reports it.
pub fn browse(report: &Path, extra: &[&str]) -> serde_json::Value {
    assert!(
        root().join("tests/browser/node_modules/playwright-core").exists(),
        "playwright-core is missing: run scripts/test.sh (npm ci in tests/browser)"
    );
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(Path::new(&chromium).exists(), "{chromium} is missing: run scripts/test.sh (installs Debian's chromium)");
    let out = Command::new("node")
        .arg(root().join("tests/browser/check.mjs"))
        .arg(report)
        .args(extra)
        .output()
        .expect("node runs");
    assert!(out.status.success(), "check.mjs failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The text of an HTML file as a reader gets it back from the escapes the report uses.
pub fn unescape(html: &str) -> String {
    html.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#x2f;", "/")
        .replace("&amp;", "&")
}

fn strings(value: &serde_json::Value) -> Vec<&str> {
    value.as_array().unwrap_or_else(|| panic!("a list: {value}")).iter().map(|v| v.as_str().unwrap()).collect()
}

/// An agent that answers, reports two tool calls for `lookup …` prompts, crashes on `crash`.
const TRACING_AGENT: &str = r#"#!/bin/sh
case "$1" in
  crash*) echo 'fatal: model unavailable' >&2; exit 2;;
  lookup*)
    echo 'Your order ships tomorrow.'
    cat > "$EVALGATE_TRACE" <<'EOF'
{"model": "fake-1", "usage": {"input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0021},
 "tool_calls": [
  {"name": "find_order", "server": "shop", "arguments": {"order_id": "A-1001"}, "result": {"content": [{"type": "text", "text": "status: packed"}]}, "duration_ms": 40},
  {"name": "eta_lookup", "server": "shop", "arguments": {"carrier": "ups"}, "result": {"content": [{"type": "text", "text": "eta: 2 days"}]}, "duration_ms": 25}
 ]}
EOF
    ;;
  *) printf '%s\n' "$1";;
esac
"#;

const TASKS: &str = "  - id: greets
    tags: [smalltalk]
    prompt: hello there
    grade: [{type: contains, value: hello}]
  - id: order-eta
    description: Gives the delivery date
    tags: [orders, billing]
    prompt: lookup order A-1001
    setup:
      - run: echo prepared-order-fixture
    grade:
      - {type: contains, value: \"Wednesday\"}
      - {type: tool_called, tool: find_order}
  - id: crashes
    tags: [orders]
    prompt: crash now
    grade: [{type: contains, value: x}]
";

#[test]
fn a_reader_sees_every_task_the_failing_reason_and_its_trace_and_can_filter_and_sort() {
    let run = Test::new()
        .write("agent.sh", TRACING_AGENT)
        .write("evalgate.yaml", &suite("", TASKS))
        .args(&["run", "-j", "1", "--html", "custom/eval-report.html"])
        .run();
    run.expect_code(1);
    let report = run.dir.join("custom/eval-report.html");
    assert!(!run.dir.join("evalgate-out/report.html").exists(), "--html names the file instead");
    let seen = browse(&report, &["--search", "ETA"]);

    assert_eq!(seen["consoleErrors"], serde_json::json!([]), "{seen:#}");
    assert_eq!(seen["pageErrors"], serde_json::json!([]), "{seen:#}");
    assert_eq!(seen["requests"], serde_json::json!([]), "no request leaves the file");
    assert_eq!(seen["title"], "evalgate: test.evals.demo failed");
    assert_eq!(seen["verdict"], "verdict fail");
    assert_eq!(strings(&seen["taskIds"]), ["greets", "order-eta", "crashes"]);
    assert_eq!(strings(&seen["charts"]), ["chart-tags", "chart-latency", "chart-cost"]);

    // "Open failing" opens the failed and the errored task, with the reason, the prompt,
    // both tool calls with their arguments and results, the output, the graders and the setup.
    let drill = &seen["drill"];
    let opened: Vec<&String> = drill.as_object().unwrap().keys().collect();
    assert_eq!(opened, ["order-eta", "crashes"]);
    let eta = drill["order-eta"]["text"].as_str().unwrap();
    assert_eq!(strings(&drill["order-eta"]["tools"]), ["shop.find_order", "shop.eta_lookup"]);
    for expected in [
        "`contains` failed: output does not contain \"Wednesday\"",
        "lookup order A-1001",
        "\"order_id\": \"A-1001\"",
        "status: packed",
        "40 ms",
        "eta: 2 days",
        "Your order ships tomorrow.",
        "prepared-order-fixture",
        "model fake-1",
        "120 in / 30 out tokens",
    ] {
        assert!(eta.contains(expected), "{expected:?} not in the drill-down:\n{eta}");
    }
    assert_eq!(drill["order-eta"]["graders"], 2);
    let crash = drill["crashes"]["text"].as_str().unwrap();
    assert!(crash.contains("fatal: model unavailable"), "the errored task shows its stderr:\n{crash}");

    // Typing "ETA" finds the task by its id (case-insensitive); "failed" keeps the failed one.
    assert_eq!(seen["search"]["shown"], "1");
    assert_eq!(strings(&seen["search"]["visible"]), ["order-eta"]);
    assert_eq!(strings(&seen["statusFailed"]["visible"]), ["order-eta"]);
    assert_eq!(seen["reset"]["shown"], "3");
    // Scores 1, 0, 0: ascending puts the passing task last, descending first.
    assert_eq!(strings(&seen["sortAscending"]).last(), Some(&"greets"));
    assert_eq!(strings(&seen["sortDescending"]).first(), Some(&"greets"));
    assert_eq!(seen["clickOpened"], true);

    // `evalgate report` renders the same report again from results.json.
    let again =
        Test::new().args(&["report", run.dir.join("evalgate-out/results.json").to_str().unwrap(), "--out", "re"]).run();
    again.expect_code(0);
    let seen = browse(&again.dir.join("re/report.html"), &[]);
    assert_eq!(strings(&seen["taskIds"]), ["greets", "order-eta", "crashes"]);
    assert_eq!(seen["consoleErrors"], serde_json::json!([]));
}

/// Output that would run code if it were pasted into the page: a script end tag, an image
/// with `onerror`, a `javascript:` link, an SVG `onload`, an attribute break-out.
const HOSTILE: &str = r#"</script><script>window.__pwned='script';document.title='pwned'</script>
<img src=x onerror="window.__pwned='img';document.title='pwned'">
<a href="javascript:window.__pwned='link';document.title='pwned'">click me</a>
<svg onload="window.__pwned='svg'"></svg>" onmouseover="window.__pwned='attr'
<style>body{display:none}</style><meta http-equiv="refresh" content="0;url=https://example.com/">"#;

#[test]
fn hostile_output_tags_and_tool_results_do_not_run_in_the_browser() {
    let agent = format!(
        "#!/bin/sh\ncat <<'OUT'\n{HOSTILE}\nOUT\ncat > \"$EVALGATE_TRACE\" <<'EOF'\n{}\nEOF\n",
        serde_json::json!({"tool_calls": [{"name": "</script><img src=x onerror=alert(1)>", "arguments": {"q": HOSTILE}, "result": HOSTILE}]})
    );
    let tasks = r#"
        - id: hostile
          description: "<img src=x onerror=alert(1)>"
          prompt: "<script>window.__pwned='prompt'</script>"
          grade: [{type: contains, value: never-there}]
        "#;
    let run = Test::new().write("agent.sh", &agent).write("evalgate.yaml", &suite("", tasks)).args(&["run"]).run();
    run.expect_code(1);
    let report = run.dir.join("evalgate-out/report.html");
    let seen = browse(&report, &[]);

    assert_eq!(seen["pwned"], serde_json::Value::Null, "{seen:#}");
    assert_eq!(seen["pwnedAfter"], serde_json::Value::Null, "after opening the task and clicking its links");
    assert_eq!(seen["titleAfter"], "evalgate: test.evals.demo failed");
    assert_eq!(seen["dialogs"], serde_json::Value::Null, "no alert()");
    assert_eq!(seen["scripts"], 1, "the report's own script only");
    assert_eq!(seen["images"], 0);
    assert_eq!(seen["javascriptLinks"], 0);
    assert_eq!(seen["eventHandlers"], 0, "no element carries an on* attribute");
    assert_eq!(seen["requests"], serde_json::json!([]), "no image, no refresh, no request");
    assert_eq!(seen["consoleErrors"], serde_json::json!([]), "nothing was even attempted");
    // The hostile text is there, as text, for the reader.
    let text = seen["drill"]["hostile"]["text"].as_str().unwrap();
    assert!(text.contains("<img src=x onerror=\"window.__pwned='img';document.title='pwned'\">"), "{text}");
    assert!(text.contains("</script><script>"), "{text}");
    assert!(text.contains("<script>window.__pwned='prompt'</script>"), "the prompt, as text: {text}");
}

/// A fixed report (a committed results.json with a baseline comparison, a scorecard, hooks,
/// repeated trials): its structure, and a screenshot that is a real image of it. Pixels are
/// not compared; docs/reports.md shows the picture this renders.
#[test]
fn a_fixed_report_has_its_sections_in_order_and_renders_a_screenshot() {
    let fixture = root().join("tests/fixtures/html/results.json");
    let run = Test::new().args(&["report", fixture.to_str().unwrap(), "--out", "out"]).run();
    run.expect_code(0);
    let shot = run.dir.join("shot.png");
    let seen = browse(&run.dir.join("out/report.html"), &["--screenshot", shot.to_str().unwrap()]);
    assert_eq!(seen["consoleErrors"], serde_json::json!([]), "{seen:#}");
    assert_eq!(seen["requests"], serde_json::json!([]));
    insta::assert_json_snapshot!(
        "html_fixed_report_structure",
        serde_json::json!({
            "title": seen["title"],
            "verdict": seen["verdict"],
            "sections": seen["sections"],
            "headings": seen["headings"],
            "charts": seen["charts"],
            "gate": seen["gate"],
            "taskIds": seen["taskIds"],
            "opened": seen["drill"].as_object().unwrap().keys().collect::<Vec<_>>(),
        })
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    // IHDR: the viewport's size.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 900));
    assert!(png.len() > 20_000, "a blank page compresses to far less: {} bytes", png.len());
}

/// With `EVALGATE_REPORT_URL` (the action sets it to the uploaded artifact's URL), the step
/// summary and the PR comment link to the HTML report; a URL that is not plain http(s) is
/// not pasted into Markdown.
#[test]
fn the_step_summary_and_the_comment_link_to_the_report_when_its_url_is_given() {
    let url = "https://github.com/acme/bot/actions/runs/42/artifacts/7";
    let link = format!("📊 [Open the HTML report]({url}): traces, diffs and charts of this run");
    let api = crate::github::github(5, Vec::new());
    let files = [(
        "evalgate.yaml",
        suite(
            "",
            "
        - id: a
          prompt: x
          grade: [{type: contains, value: y}]
        ",
        ),
    )];
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let run = crate::github::action_run_with(&api, &files, &[], &[("EVALGATE_REPORT_URL", url)]);
    run.run.expect_messages("evalgate: commented on pull request #5\n");
    run.run.expect_code(1);
    assert!(run.summary.contains(&link), "{}", run.summary);
    let body = crate::github::last_body(&api);
    assert!(body.contains(&link), "{body}");

    let api = crate::github::github(5, Vec::new());
    let run = crate::github::action_run_with(&api, &files, &[], &[("EVALGATE_REPORT_URL", "javascript:alert(1)")]);
    run.run.expect_messages("evalgate: commented on pull request #5\n");
    assert!(!run.summary.contains("HTML report") && !run.summary.contains("javascript:"), "{}", run.summary);
    assert!(!crate::github::last_body(&api).contains("javascript:"));
}
