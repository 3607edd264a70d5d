//! `variants:` through the binary: arms of command agents, of models against the stand-in
//! server and of two releases of an MCP server; the comparison with the control, the arms'
//! gates and the reports (docs/variants.md). The size and power of the comparison are
//! measured by the seeded simulation in `src/simulation/variant_arms.rs`.

use crate::common::server::Server;
use crate::common::{Test, indent, unindent};
use crate::mcp::{mcp_suite, python};
use serde_json::{Value, json};

/// A command agent that passes a task when its prompt, a number 0..99, is below `$P`: an
/// arm with `P: "90"` passes the tasks whose number is below 90. With `$SLOW` it first
/// sleeps that long.
const AGENT: &str =
    "#!/bin/sh\n[ -n \"$SLOW\" ] && sleep \"$SLOW\"\nif [ \"$1\" -lt \"$P\" ]; then echo pass; else echo fail; fi\n";

/// A suite of 40 tasks whose prompts are drawn (seeded) from 0..99, run by [`AGENT`] with
/// `P: "50"`, with the given `variants:` block.
fn suite(variants: &str) -> String {
    let mut rng = fastrand::Rng::with_seed(36);
    let tasks: String = (0..40)
        .map(|i| format!("- {{id: t{i}, prompt: '{}', grade: [{{type: contains, value: pass}}]}}\n", rng.u32(0..100)))
        .collect();
    let header = "
        evalgate: 1
        suite: variants
        agents:
          sh: {command: [./agent.sh, '{prompt}'], env: {P: '50'}}
        defaults: {agent: sh}
        thresholds: {pass_score: 0}
        ";
    unindent(header) + "variants:\n" + &indent(variants, 2) + "tasks:\n" + &indent(&tasks, 2)
}

#[track_caller]
fn run(variants: &str, args: &[&str]) -> crate::common::Run {
    let mut full = vec!["run", "-q"];
    full.extend(args);
    Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite(variants)).args(&full).run()
}

fn arm<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["variants"]["arms"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap()
}

fn check<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["verdict"]["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()
}

#[test]
fn a_better_arm_is_found_better_and_an_identical_one_no_different() {
    let variants = "
        control: base
        arms:
          base: {}
          same: {gate: {not_worse_than: control, margin: 0.2}}
          better: {env: {P: '90'}, gate: {better_than: control}}
          worse: {env: {P: '20'}}
        ";
    let run = run(variants, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = run.results();
    let better = &arm(&results, "better")["comparison"];
    assert_eq!(
        (better["verdict"].as_str(), better["pairs"].as_u64(), better["worse"].as_u64()),
        (Some("better"), Some(40), Some(0))
    );
    assert!(better["ci_low"].as_f64().unwrap() > 0.0, "{better}");
    assert!(better["mde"].as_f64().is_some() && better["latency_ms"]["pairs"] == 40, "{better}");
    assert_eq!(arm(&results, "worse")["comparison"]["verdict"], "worse");
    let same = &arm(&results, "same")["comparison"];
    assert_eq!((same["verdict"].as_str(), same["delta"].as_f64()), (Some("no_detectable_difference"), Some(0.0)));
    assert!(arm(&results, "base").get("comparison").is_none(), "the control is not compared with itself");
    // Each task on each arm, as TASK@ARM with the arm as a field; arms side by side.
    let tasks = results["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 160);
    let first: Vec<(&str, &str)> =
        tasks[..4].iter().map(|t| (t["id"].as_str().unwrap(), t["variant"].as_str().unwrap())).collect();
    assert_eq!(first, [("t0@base", "base"), ("t0@better", "better"), ("t0@same", "same"), ("t0@worse", "worse")]);
    assert_eq!(check(&results, "variant better vs base")["passed"], true);
    assert_eq!(check(&results, "variant same vs base")["passed"], true);
    // The reports: the matrix, the arm as a JUnit property, the side-by-side.
    let summary = run.read("evalgate-out/summary.md");
    assert!(summary.contains("### Variants against the control `base`"), "{summary}");
    assert!(summary.contains("| task | `base` | `better` | `same` | `worse` |"), "{summary}");
    let junit = run.read("evalgate-out/junit.xml");
    assert!(junit.contains(r#"<property name="variant" value="better"/>"#), "{junit}");
    let html = run.read("evalgate-out/report.html");
    assert!(html.contains(r#"<section id="variants">"#) && html.contains(r##"href="#task-t0@better""##));
    assert!(html.contains(r#"id="chart-arms""#) && html.contains(r#"class="whisker""#));
}

#[test]
fn non_inferiority_passes_and_fails_where_it_should() {
    // 30 points worse, 5 allowed: fails, naming the arm.
    let worse =
        run("control: a\narms:\n  a: {}\n  b: {env: {P: '20'}, gate: {not_worse_than: control, margin: 0.05}}\n", &[]);
    assert_eq!(worse.code, 1, "{}", worse.stderr);
    let results = worse.results();
    assert_eq!(results["verdict"]["outcome"]["failed_checks"], json!(["variant b vs a"]));
    // The arms chart: in points as the tables are, its margin drawn, each figure written past
    // its interval (not over it), the axis spanning what is drawn.
    let html = worse.read("evalgate-out/report.html");
    let chart = &html[html.find(r#"id="chart-arms""#).unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    assert!(chart.contains(r#"class="mark margin""#) && chart.contains("<title>margin −5.0 points</title>"), "{chart}");
    assert!(chart.contains("dashed: a `not_worse_than` gate"), "{chart}");
    let delta = results["variants"]["arms"][1]["comparison"]["delta"].as_f64().unwrap();
    assert!(chart.contains(&format!(r#"class="value">−{:.1}</text>"#, -delta * 100.0)), "{delta} {chart}");
    let number = |attr: &str, from: &str| -> f64 {
        let at = from.find(attr).unwrap() + attr.len();
        from[at..].split('"').next().unwrap().parse().unwrap()
    };
    let whisker_end = number(r#"x2=""#, &chart[chart.find(r#"class="whisker""#).unwrap()..]);
    let value_x = number(r#"x=""#, &chart[chart.find(r#"class="value""#).unwrap() - 40..]);
    assert!(value_x > whisker_end, "the figure {value_x} is over the interval ending at {whisker_end}");
    assert!(
        chart.contains("points</text>") && !chart.contains("−100.0 points"),
        "the axis spans what is drawn: {chart}"
    );
    // The same agent: no worse by 20 points, shown; by 2 points, 40 tasks cannot show it.
    let same = "control: a\narms:\n  a: {}\n  b: {gate: {not_worse_than: control, margin: MARGIN}}\n";
    let wide = run(&same.replace("MARGIN", "0.2"), &[]);
    assert_eq!(wide.code, 0, "{}", wide.stderr);
    let narrow = run(&same.replace("MARGIN", "0.02"), &[]);
    assert_eq!(narrow.code, 1, "{}", narrow.stderr);
    // What would settle it: the difference seen holds, the interval is too wide.
    let results = narrow.results();
    let check =
        results["verdict"]["checks"].as_array().unwrap().iter().find(|c| c["name"] == "variant b vs a").unwrap();
    let actual = check["actual"].as_str().unwrap();
    let todo = regex::Regex::new(r"; the difference seen would hold, but the interval is too wide: about (\d+) tasks \(now 40\) would narrow it enough, or more trials a task \(`--repeat`\), or a margin wider than \d+\.\d points$").unwrap();
    let tasks: usize = todo.captures(actual).unwrap_or_else(|| panic!("{actual}"))[1].parse().unwrap();
    assert!(tasks > 40, "{actual}");
    // A better arm that is not: `better_than` fails on an identical arm.
    let not_better = run("control: a\narms:\n  a: {}\n  b: {gate: {better_than: control}}\n", &[]);
    assert_eq!(not_better.code, 1, "{}", not_better.stderr);
}

#[test]
fn variant_selects_arms_beside_the_control_and_an_unknown_one_is_refused() {
    let variants = "control: a\narms:\n  a: {}\n  b: {env: {P: '90'}}\n  c: {env: {P: '10'}}\n";
    let only_b = run(variants, &["--variant", "b"]);
    assert_eq!(only_b.code, 0, "{}", only_b.stderr);
    let results = only_b.results();
    let ran: std::collections::BTreeSet<&str> =
        results["tasks"].as_array().unwrap().iter().map(|t| t["variant"].as_str().unwrap()).collect();
    assert_eq!(ran.into_iter().collect::<Vec<_>>(), ["a", "b"]);
    assert!(arm(&results, "c").get("comparison").is_none());
    let unknown = run(variants, &["--variant", "bb"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr_has("--variant bb: no such arm in evalgate.yaml (`variants.arms`); did you mean `b`?"),
        "{}",
        unknown.stderr
    );
    let bad = run("control: z\narms:\n  a: {}\n  b: {vars: {nope: x}}\n", &[]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr_has("variants.control") && bad.stderr_has("the control `z` is not one of the arms"),
        "{}",
        bad.stderr
    );
    assert!(bad.stderr_has("variants.arms.b.vars.nope"), "{}", bad.stderr);
}

#[test]
fn two_model_arms_ask_their_own_model() {
    // The stand-in answers right for one model and wrong for the other.
    let server = Server::start(|r| {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        let answer = if body["model"] == "good-model" { "Paris" } else { "Lyon" };
        let reply = json!({"id": "c", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}});
        (200, reply.to_string())
    });
    let yaml = format!(
        "evalgate: 1
suite: models
agents:
  bot: {{provider: openai, model: good-model, base_url: '{}/v1', api_key_env: EVALGATE_TEST_KEY, timeout: 5s}}
pricing: {{good-model: {{input_per_mtok: 1000, output_per_mtok: 1000}}, cheap-model: {{input_per_mtok: 100, output_per_mtok: 100}}}}
defaults: {{agent: bot}}
thresholds: {{pass_score: 0}}
variants:
  control: good
  arms:
    good: {{}}
    cheap: {{model: {{model: cheap-model, temperature: 0}}, gate: {{max_cost_increase_pct: 0}}}}
tasks:
  - {{id: capital, prompt: Capital of France?, grade: [{{type: contains, value: Paris}}]}}
  - {{id: again, prompt: Capital of France again?, grade: [{{type: contains, value: Paris}}]}}
",
        server.url()
    );
    let run = Test::new().write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", "sk-test").args(&["run", "-q"]).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = run.results();
    let status =
        |id: &str| results["tasks"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap()["status"].clone();
    assert_eq!((status("capital@good"), status("capital@cheap")), (json!("passed"), json!("failed")));
    let mut models: Vec<String> = server
        .received()
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.body).unwrap()["model"].as_str().unwrap().to_owned())
        .collect();
    models.sort();
    assert_eq!(models, ["cheap-model", "cheap-model", "good-model", "good-model"]);
    // A tenth of the price: the cost budget (no increase at all) holds.
    assert_eq!(check(&results, "variant cheap vs good: cost")["passed"], true);
    // In the budget's unit: a percentage of the control's cost, not USD beside a % budget.
    let actual = check(&results, "variant cheap vs good: cost")["actual"].as_str().unwrap().to_owned();
    assert!(actual.starts_with("-90.0% (interval up to ") && actual.contains("%) of the control's "), "{actual}");
    let cheap = &arm(&results, "cheap")["comparison"];
    assert!(cheap["cost_usd"]["delta"].as_f64().unwrap() < 0.0, "{cheap}");
    assert_eq!(cheap["verdict"], "inconclusive", "one task is below min_tasks");
}

#[test]
fn two_releases_of_an_mcp_server_are_compared() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: releases
        mcp_servers:
          fx: {command: [<python>, fixture_server.py]}
        thresholds: {pass_score: 0}
        variants:
          control: current
          arms:
            current: {}
            next: {mcp_servers: {fx: {command: [<python>, fixture_server.py, --release=2]}}}
        tasks:
          - {id: add, level: execution, call: {server: fx, tool: add, arguments: {a: 2, b: 3}}, grade: [{type: equals, value: '{\"result\":5}'}]}
        ",
    );
    let _ = python();
    let run = Test::new()
        .write("fixture_server.py", include_str!("../fixtures/mcp/fixture_server.py"))
        .write("evalgate.yaml", &yaml)
        .args(&["run", "-q"])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = run.results();
    let task = |id: &str| results["tasks"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap().clone();
    assert_eq!(task("add@current")["status"], "passed", "{}", task("add@current"));
    assert_eq!(task("add@next")["status"], "failed");
    assert_eq!(task("add@next")["trials"][0]["output"], r#"{"result":6}"#);
    let servers: Vec<&String> = results["mcp_servers"].as_object().unwrap().keys().collect();
    assert_eq!(servers, ["fx", "fx@next"]);
}

/// `examples/variants/` runs offline and says what its comments say: the cited prompt is
/// better and passes its non-inferiority gate, last year's release is worse.
#[test]
fn the_example_runs_offline_and_reads_as_documented() {
    let example = std::fs::canonicalize("examples/variants/evalgate.yaml").unwrap();
    let run = Test::new().args(&["run", "-q", example.to_str().unwrap()]).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = run.results();
    assert_eq!(arm(&results, "cited")["comparison"]["verdict"], "better");
    assert_eq!(arm(&results, "old-release")["comparison"]["verdict"], "worse");
    assert_eq!(check(&results, "variant cited vs brief")["passed"], true);
}

#[test]
fn cost_and_latency_gates_hold_only_on_what_was_measured() {
    let variants = "
        control: a
        arms:
          a: {}
          slow: {env: {SLOW: '0.5'}, gate: {max_p95_latency_increase_pct: 50}}
          same: {gate: {max_cost_increase_pct: 10, max_p95_latency_increase_pct: 100000}}
        ";
    let run = run(variants, &["--filter", "t[0-4]"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let results = run.results();
    // A command agent reports no cost: a cost budget cannot be shown to hold.
    assert_eq!(
        results["verdict"]["outcome"]["failed_checks"],
        json!(["variant same vs a: cost", "variant slow vs a: p95 latency"])
    );
    assert!(check(&results, "variant same vs a: cost")["actual"].as_str().unwrap().starts_with("unknown"));
    assert_eq!(check(&results, "variant same vs a: p95 latency")["passed"], true);
    let p95 = &arm(&results, "slow")["comparison"]["p95_latency_ms"];
    assert!(p95["arm"].as_u64().unwrap() >= 500, "{p95}");
}

/// `--variant` leaves a gated arm out on purpose: its gate is named in every report as not
/// checked, never dropped and never counted as held.
#[test]
fn the_gate_of_an_arm_left_out_is_reported_not_checked() {
    let variants = "control: a\narms:\n  a: {}\n  b: {env: {P: '20'}, gate: {not_worse_than: control, margin: 0.05}}\n";
    let only_a = run(variants, &["--variant", "a"]);
    assert_eq!(only_a.code, 0, "left out on purpose fails nothing: {}", only_a.stderr);
    let results = only_a.results();
    let gate = check(&results, "variant b vs a");
    assert_eq!((&gate["checked"], &gate["passed"]), (&json!(false), &json!(false)), "{gate}");
    assert_eq!(gate["actual"], "not checked: no task ran on arm `b` (`--variant` left it out)");
    let summary = only_a.read("evalgate-out/summary.md");
    assert!(
        summary.contains("| variant b vs a | {\"not\\_worse\\_than\":\"control\",\"margin\":0.05} | not checked: no task ran on arm \\`b\\` (\\`--variant\\` left it out) | ➖ not checked |"),
        "{summary}"
    );
    let gated = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(&only_a.dir)
        .args(["report", "evalgate-out/results.json", "--out", "again", "--gate"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&gated.stderr);
    assert!(stderr.contains("---- variant b vs a"), "{stderr}");
    assert!(only_a.read("evalgate-out/report.html").contains("not checked"));
    // Run, the arm's gate is checked (and fails: 30 points worse).
    let both = run(variants, &[]);
    assert_eq!(both.code, 1, "{}", both.stderr);
    assert!(check(&both.results(), "variant b vs a").get("checked").is_none());
}

/// An arm name with a line break and a runner command in it is refused at its key, and no
/// line evalgate prints starts a runner command: not the error on stderr, not an annotation.
#[test]
fn a_hostile_arm_name_is_refused_without_starting_a_runner_command() {
    let variants = "control: a\narms:\n  a: {}\n  \"b\\n::error::forged\\r::warning::forged too\": {}\n";
    let test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite(variants));
    let run = test.env("GITHUB_ACTIONS", "true").args(&["run", "-q"]).run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr_has("variants.arms"), "located: {}", run.stderr);
    assert!(run.stderr_has("forged"), "the name is shown, as text: {}", run.stderr);
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        for line in text.split(['\n', '\r']) {
            let line = line.trim_start();
            assert!(
                !line.starts_with("::") || line.starts_with("::error file=") || line.starts_with("::error title="),
                "{stream} starts a command: {line:?}\n{text}"
            );
        }
    }
    // The annotation holds the name escaped, on one line.
    assert!(
        run.stdout.lines().any(|l| l.starts_with("::error file=evalgate.yaml") && l.contains("%0A: :error")
            || l.starts_with("::error file=evalgate.yaml") && l.contains("%0A::error::forged")),
        "{}",
        run.stdout
    );
}
