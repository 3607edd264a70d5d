//! Graders through the real binary, including the code-grader protocol.

use crate::common::{Test, indent, suite};
use serde_json::{Value, json};

/// Runs one task whose agent prints `output` (and writes `trace` when given) and returns
/// the task's result.
fn grade(output: &str, trace: Option<&str>, graders: &str, files: &[(&str, &str)]) -> (i32, Value) {
    let mut agent = format!("#!/bin/sh\ncat <<'EOF'\n{output}\nEOF\n");
    if let Some(trace) = trace {
        agent.push_str(&format!("cat > \"$EVALGATE_TRACE\" <<'EOF'\n{trace}\nEOF\n"));
    }
    let mut test = Test::new().write("agent.sh", &agent).write("evalgate.yaml", &suite("", &task_t("", graders)));
    for (name, contents) in files {
        test = test.write(name, contents);
    }
    let run = test.args(&["run"]).run();
    let task = run.task("t");
    (run.code, task)
}

/// Task `t`, prompted `x`, with the keys `keys` and the list `graders` (each a block of YAML).
fn task_t(keys: &str, graders: &str) -> String {
    format!("- id: t\n  prompt: x\n{}  grade:\n{}", indent(keys, 2), indent(graders, 4))
}

fn graders(task: &Value) -> Vec<(String, String, f64)> {
    task["trials"][0]["graders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["status"].as_str().unwrap().to_owned(),
                g["reason"].as_str().unwrap().to_owned(),
                g["score"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn one(task: &Value) -> (String, String, f64) {
    graders(task).remove(0)
}

const GRADER: &str = "- {type: command, run: ./grader.sh}";

#[test]
fn code_grader_score_and_assertions() {
    let script = "#!/bin/sh\ncat > /dev/null\necho '{\"score\": 0.75, \"assertions\": [{\"text\": \"cites policy\", \"passed\": true}, {\"text\": \"polite\", \"passed\": false}]}'\n";
    let (code, task) = grade("hi", None, GRADER, &[("grader.sh", script)]);
    assert_eq!(code, 1);
    assert_eq!(one(&task), ("failed".into(), "1 of 2 assertions failed: polite".into(), 0.75));
    assert_eq!(task["trials"][0]["graders"][0]["evidence"][1]["text"], "polite");
}

#[test]
fn code_grader_missing_score_is_passed_over_total() {
    let script = "#!/bin/sh\necho '{\"assertions\": [{\"text\": \"a\", \"passed\": true}, {\"text\": \"b\", \"passed\": true}, {\"text\": \"c\", \"passed\": false}, {\"text\": \"d\", \"passed\": true}]}'\n";
    let (_, task) = grade("hi", None, GRADER, &[("grader.sh", script)]);
    assert_eq!(one(&task), ("failed".into(), "1 of 4 assertions failed: c".into(), 0.75));
    let all = "#!/bin/sh\necho '{\"assertions\": [{\"text\": \"a\", \"passed\": true}]}'\n";
    let (code, task) = grade("hi", None, GRADER, &[("grader.sh", all)]);
    assert_eq!((code, one(&task)), (0, ("passed".into(), "all 1 assertions passed".into(), 1.0)));
}

#[test]
fn code_grader_passed_reason_checks() {
    let script = "#!/bin/sh\necho '{\"passed\": false, \"reason\": \"refund window missing\", \"checks\": [{\"name\": \"window\", \"passed\": false}]}'\n";
    let (_, task) = grade("hi", None, GRADER, &[("grader.sh", script)]);
    assert_eq!(one(&task), ("failed".into(), "refund window missing".into(), 0.0));
    assert_eq!(task["trials"][0]["graders"][0]["evidence"], json!([{"name": "window", "passed": false}]));
}

#[test]
fn code_grader_plain_output_is_judged_by_exit_code() {
    let ok = "#!/bin/sh\necho looks good\n";
    let (code, task) = grade("hi", None, GRADER, &[("grader.sh", ok)]);
    assert_eq!((code, one(&task)), (0, ("passed".into(), "looks good".into(), 1.0)));
    // A bare number is not the protocol: the exit code decides.
    let bare = "#!/bin/sh\necho 0.75\nexit 1\n";
    let (_, task) = grade("hi", None, GRADER, &[("grader.sh", bare)]);
    assert_eq!(one(&task), ("failed".into(), "0.75".into(), 0.0));
    let silent = "#!/bin/sh\nexit 4\n";
    let (_, task) = grade("hi", None, GRADER, &[("grader.sh", silent)]);
    assert_eq!(one(&task), ("failed".into(), "exit 4".into(), 0.0));
}

#[test]
fn code_grader_crash_with_stderr_is_a_grader_error() {
    let crash = "#!/bin/sh\necho 'Traceback (most recent call last): KeyError' >&2\nexit 1\n";
    let (code, task) = grade("hi", None, GRADER, &[("grader.sh", crash)]);
    assert_eq!(code, 1);
    assert_eq!(task["status"], "error");
    assert_eq!(one(&task).0, "error");
    assert_eq!(
        task["reason"],
        "grader `command` errored: command grader exit 1: Traceback (most recent call last): KeyError"
    );
}

#[test]
fn code_grader_gets_the_context_on_stdin() {
    let script = "#!/usr/bin/env python3\nimport json, sys\nc = json.load(sys.stdin)\nok = c['output'].strip() == 'the answer' and c['prompt'] == 'x' and c['task']['id'] == 't' and c['tool_calls'][0]['name'] == 'search' and c['usage']['input_tokens'] == 5\nprint(json.dumps({'passed': ok, 'reason': repr(sorted(c))}))\n";
    let trace = r#"{"tool_calls": [{"name": "search", "arguments": {"q": "a"}}], "usage": {"input_tokens": 5, "output_tokens": 2}}"#;
    let (code, task) =
        grade("the answer", Some(trace), GRADER.replace("grader.sh", "grader.py").as_str(), &[("grader.py", script)]);
    assert_eq!(code, 0, "{task}");
}

#[test]
fn json_graders() {
    let out = r#"{"order": {"id": "A-1", "items": [{"sku": "x", "qty": 2}, {"sku": "y", "qty": 1}]}, "total": 12.5}"#;
    let g = r#"
        - {type: json, subset: {order: {items: [{sku: y}]}}}
        - {type: json, path: 'order.items[0].qty', equals: 2}
        - {type: json, path: order.id, matches: '^A-\d+$'}
        - {type: json, path: total, kind: number}
        - {type: json, path: missing, exists: false}
        - {type: json, path: 'order.items[1].sku', equals: z}
        - {type: json, path: total, kind: string}
        "#;
    let (_, task) = grade(out, None, g, &[]);
    let results = graders(&task);
    let statuses: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(statuses, ["passed", "passed", "passed", "passed", "passed", "failed", "failed"]);
    assert_eq!(results[5].1, "`order.items[1].sku`: expected \"z\", got \"y\"");
    assert_eq!(results[6].1, "`total`: expected a string, got a number");
    let (_, task) = grade("not json", None, "- {type: json, equals: {a: 1}}", &[]);
    assert!(one(&task).1.starts_with("output is not JSON"));
}

#[test]
fn json_schema_grader_reads_a_schema_file() {
    let schema = r#"{"type": "object", "required": ["status"], "properties": {"status": {"enum": ["ok"]}}}"#;
    let (code, _) =
        grade(r#"{"status": "ok"}"#, None, "- {type: json_schema, schema_file: s.json}", &[("s.json", schema)]);
    assert_eq!(code, 0);
    let (_, task) =
        grade(r#"{"status": "bad"}"#, None, "- {type: json_schema, schema_file: s.json}", &[("s.json", schema)]);
    let (status, reason, _) = one(&task);
    assert_eq!(status, "failed");
    assert!(reason.starts_with("output does not match the schema: /status:"), "{reason}");
}

#[test]
fn tool_graders_read_the_trace() {
    let trace = r#"{"tool_calls": [{"name": "search", "arguments": {"q": "refund", "limit": 5}}, {"name": "kb.fetch", "arguments": {"id": 7}}, {"name": "search", "arguments": {"q": "policy"}}]}"#;
    let g = "
        - {type: tool_called, tool: search, arguments: {q: refund}}
        - {type: tool_called, tool: fetch, min: 1, max: 1}
        - {type: tool_not_called, tool: delete_all}
        - {type: tool_sequence, tools: [search, kb.fetch]}
        - {type: tool_sequence, order: exact, tools: [search, fetch, search]}
        - {type: tool_sequence, order: any_order, tools: [fetch, {tool: search, arguments: {q: policy}}]}
        - {type: tool_calls, min: 1, max: 3}
        - {type: tool_calls, tool: search, max: 1}
        - {type: tool_sequence, tools: [kb.fetch, {tool: search, arguments: {q: refund}}]}
        - {type: tool_not_called, tool: search, arguments: {q: policy}}
        ";
    let (_, task) = grade("ok", Some(trace), g, &[]);
    let statuses: Vec<String> = graders(&task).into_iter().map(|g| g.0).collect();
    assert_eq!(
        statuses,
        ["passed", "passed", "passed", "passed", "passed", "passed", "passed", "failed", "failed", "failed"]
    );
    assert_eq!(graders(&task)[7].1, "2 calls of search, expected at most 1; calls: search, kb.fetch, search");
}

#[test]
fn tool_graders_select_by_pattern_server_and_lists_and_catch_repeats() {
    let trace = r#"{"tool_calls": [{"name": "pods_list", "server": "k8s", "arguments": {"ns": "a"}}, {"name": "fs.read_file", "arguments": {"path": "x"}}, {"name": "pods_list", "server": "k8s", "arguments": {"ns": "a"}}]}"#;
    let g = "
        - {type: tool_called, server: k8s, pattern: 'pods_'}
        - {type: tool_called, server: fs, pattern: '^read'}
        - {type: tool_called, server: fs}
        - {type: tool_not_called, server: k8s, pattern: 'delete'}
        - {type: tool_calls, tools: [{server: fs, pattern: write}, k8s.pods_list], min: 2}
        - {type: tool_calls, max: 5}
        - {type: tool_called, server: fs, pattern: '^list'}
        - {type: tool_not_called, pattern: 'pods'}
        - {type: tool_calls, tools: [{server: fs, pattern: write}, {server: k8s, tool: pods_delete}], min: 1}
        - {type: tool_calls, unique: true}
        ";
    let (_, task) = grade("ok", Some(trace), g, &[]);
    let results = graders(&task);
    let statuses: Vec<&str> = results.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        statuses,
        ["passed", "passed", "passed", "passed", "passed", "passed", "failed", "failed", "failed", "failed"]
    );
    assert_eq!(results[9].1, r#"pods_list({"ns":"a"}) was called twice"#);
    assert_eq!(
        results[6].1,
        "/^list/ of fs called 0 time(s), expected at least 1; calls: pods_list, fs.read_file, pods_list"
    );

    let tasks = "
        - id: t
          prompt: x
          grade:
            - {type: tool_called, server: k8s, pattern: '('}
            - {type: tool_not_called}
            - {type: tool_called, tool: x, min: 0}
            - {type: tool_calls, min: 0}
        ";
    let run =
        Test::new().write("agent.sh", "#!/bin/sh\n").write("evalgate.yaml", &suite("", tasks)).args(&["list"]).run();
    // Checks that pass whatever the agent called are refused too.
    run.expect_code(2).expect_stderr(
        r"
        error: evalgate.yaml:10:51: tasks[0].grade[0].pattern: invalid regular expression: regex parse error:
            (
            ^
        error: unclosed group
           |
        10 |       - {type: tool_called, server: k8s, pattern: '('}
           |                                                   ^

        error: evalgate.yaml:11:9: tasks[0].grade[1]: name the tool with `tool`, `pattern` or `server`
           |
        11 |       - {type: tool_not_called}
           |         ^

        error: evalgate.yaml:12:43: tasks[0].grade[2].min: `min: 0` without `max` passes whatever the agent called
           |
        12 |       - {type: tool_called, tool: x, min: 0}
           |                                           ^
          help: to check that the tool was not called, use `tool_not_called`

        error: evalgate.yaml:13:9: tasks[0].grade[3]: a `tool_calls` grader needs `min` (above 0), `max` or `unique`
           |
        13 |       - {type: tool_calls, min: 0}
           |         ^

        4 errors in the suite; nothing ran
        ",
    );
}

#[test]
fn tool_graders_over_an_agent_that_reports_no_tool_calls_are_errors_never_passes() {
    let g = "
        - {type: tool_not_called, tool: delete_all}
        - {type: tool_calls, max: 3}
        - {type: tool_sequence, tools: [search]}
        - {type: tool_called, tool: search}
        - {type: tool_called, tool: search, negate: true}
        ";
    // No trace file, and a trace file that says nothing of tools: nothing reported them.
    for trace in [None, Some(r#"{"output": "done"}"#)] {
        let (code, task) = grade("done", trace, g, &[]);
        assert_eq!((code, task["status"].as_str()), (1, Some("error")), "{task}");
        for (status, reason, _) in graders(&task) {
            assert_eq!(status, "error");
            assert!(
                reason.starts_with("the agent reports no tool calls; have it write them to its trace file"),
                "{reason}"
            );
            assert!(reason.contains("mcp: [...]") && reason.contains("a model agent"), "{reason}");
        }
    }
    // `"tool_calls": []` reports that there were none: each grader judges.
    let (_, task) = grade("done", Some(r#"{"tool_calls": []}"#), g, &[]);
    let statuses: Vec<String> = graders(&task).into_iter().map(|g| g.0).collect();
    assert_eq!(statuses, ["passed", "passed", "failed", "failed", "passed"]);
}

#[test]
fn budget_graders_and_unknown_figures() {
    let trace = r#"{"usage": {"input_tokens": 100, "output_tokens": 50, "cost_usd": 0.02}}"#;
    let g = "
        - {type: cost, max_usd: 0.05}
        - {type: tokens, max_total: 120}
        - {type: latency, max_ms: 60000}
        ";
    let (_, task) = grade("ok", Some(trace), g, &[]);
    let results = graders(&task);
    assert_eq!(results[0].0, "passed");
    assert_eq!(results[1], ("failed".into(), "tokens over budget: total 150 > 120".into(), 0.0));
    assert_eq!(results[2].0, "passed");
    // A cost budget for an agent that reports no cost cannot be judged: an error, not a pass.
    let (_, task) = grade("ok", None, "- {type: cost, max_usd: 1}", &[]);
    assert_eq!(task["status"], "error");
    assert_eq!(one(&task).1, "the agent reported no cost (usage.cost_usd in its trace)");
}

/// A negative (or infinite) reported cost would pass every cost gate: the trace is invalid,
/// the task an error, and the run is not green even when errors are tolerated.
#[test]
fn a_negative_reported_cost_is_a_task_error_never_a_green_cost_gate() {
    for (cost, why) in [("-2.0", "`usage.cost_usd` must be 0 or more, got -2"), ("1e400", "number out of range")] {
        let agent =
            format!("#!/bin/sh\necho ok\necho '{{\"usage\": {{\"cost_usd\": {cost}}}}}' > \"$EVALGATE_TRACE\"\n");
        let run = Test::new()
            .write("agent.sh", &agent)
            .write(
                "evalgate.yaml",
                &suite(
                    "thresholds: {max_cost_usd: 1, max_errors: 1}",
                    "
                        - id: t
                          prompt: x
                          grade: [{type: contains, value: ok}, {type: cost, max_usd: 0.5}]
                        ",
                ),
            )
            .args(&["run"])
            .run();
        run.expect_code(1);
        let task = run.task("t");
        assert_eq!(task["status"], "error");
        let reason = task["reason"].as_str().unwrap();
        assert!(reason.starts_with("agent `bot` wrote an invalid trace to $EVALGATE_TRACE: "), "{reason}");
        assert!(reason.contains(why), "{reason}");
        let results = run.results();
        assert_eq!(results["totals"].get("cost_usd"), None, "{}", results["totals"]);
        assert_eq!(results["verdict"]["outcome"]["failed_checks"], json!(["total cost"]));
    }
}

#[test]
fn no_leak_checks_output_and_tool_arguments_without_repeating_the_secret() {
    let g = "- {type: no_leak, canaries: [CANARY-123, CANARY-456]}";
    let (code, _) =
        grade("all clean", Some(r#"{"tool_calls": [{"name": "send", "arguments": {"body": "hello"}}]}"#), g, &[]);
    assert_eq!(code, 0);
    let trace = r#"{"tool_calls": [{"name": "send", "arguments": {"to": ["x@y"], "body": "key CANARY-456"}}]}"#;
    let (_, task) = grade("leaking CANARY-123", Some(trace), g, &[]);
    let (status, reason, _) = one(&task);
    assert_eq!(status, "failed");
    assert_eq!(reason, "leaked: canary #1 in the output, canary #2 in the arguments of send");
}

#[test]
fn text_graders() {
    let g = r#"
        - {type: equals, value: 'Hello World', ignore_case: true}
        - {type: contains, any: [planet, world]}
        - {type: contains, all: [hello, World], ignore_case: true}
        - {type: not_contains, value: goodbye}
        - {type: regex, pattern: '^hello\s+\w+$', ignore_case: true}
        - {type: starts_with, value: hello}
        - {type: ends_with, value: WORLD, ignore_case: true}
        "#;
    let (code, task) = grade("  hello world  ", None, g, &[]);
    let statuses: Vec<String> = graders(&task).into_iter().map(|g| g.0).collect();
    assert_eq!(statuses, ["passed", "passed", "passed", "passed", "passed", "passed", "passed"]);
    assert_eq!(code, 0);
    let (code, task) = grade("hello world!", None, "- {type: ends_with, value: world}", &[]);
    assert_eq!((code, one(&task).1), (1, r#"expected the output to end with "world", got "hello world!""#.to_owned()));
}

#[test]
fn an_empty_text_to_look_for_is_a_load_error_at_its_line() {
    let g = "
        - {type: equals, value: ''}
        - {type: contains, all: [a, '']}
        - {type: starts_with, value: '  '}
        - {type: ends_with, value: ''}
        - {type: not_contains, any: ['']}
        - {type: no_leak, canaries: [SECRET-1, '']}
        - {type: regex, pattern: ''}
        - {type: safety, detected: false, action: allow, infer: {canaries: ['']}}
        - {type: safety, detected: true, action: block, infer: {refusal_pattern: ''}}
        - {type: llm, exact: ' '}
        - {type: contains, value: ok}
        ";
    let judge = "judge: {provider: openai, model: gpt-4o-mini}";
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\necho ok\n")
        .write("evalgate.yaml", &suite(judge, &task_t("", g)))
        .args(&["check"])
        .run();
    run.expect_code(2);
    let empty = "is empty: every output contains it, so the check would not test the agent";
    for line in [
        format!("evalgate.yaml:10:31: tasks[0].grade[0].value: {empty}"),
        format!("evalgate.yaml:11:35: tasks[0].grade[1].all[1]: {empty}"),
        "evalgate.yaml:12:36: tasks[0].grade[2].value: is only whitespace, so the check would not test the agent".into(),
        format!("evalgate.yaml:13:34: tasks[0].grade[3].value: {empty}"),
        format!("evalgate.yaml:14:36: tasks[0].grade[4].any[0]: {empty}"),
        format!("evalgate.yaml:15:46: tasks[0].grade[5].canaries[1]: {empty}"),
        "evalgate.yaml:16:32: tasks[0].grade[6].pattern: is empty: an empty pattern matches every output, so the check would not test the agent".into(),
        format!("evalgate.yaml:17:75: tasks[0].grade[7].infer.canaries[0]: {empty}"),
        "evalgate.yaml:18:80: tasks[0].grade[8].infer.refusal_pattern: is empty: an empty pattern matches every output, so the check would not test the agent".into(),
        "evalgate.yaml:19:28: tasks[0].grade[9].exact: is only whitespace, so the check would not test the agent".into(),
    ] {
        assert!(run.stderr_has(&format!("error: {line}\n")), "missing {line:?} in:\n{}", run.stderr);
    }
    assert!(run.stderr_has("10 errors in the suite"), "{}", run.stderr);
}

#[test]
fn a_text_to_look_for_that_renders_empty_is_a_grader_error() {
    let tasks = "
        - id: t
          prompt: x
          setup:
            - {id: s, run: 'true', outputs: {v: '{stdout}'}}
          grade:
            - {type: contains, value: '{steps.s.outputs.v}'}
            - {type: equals, value: '{vars.E}'}
            - {type: ends_with, value: ' {vars.E}'}
            - {type: no_leak, canaries: [SECRET-123456, '{vars.E}']}
            - {type: contains, value: ok}
        ";
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\necho ok\n")
        .write("evalgate.yaml", &suite("vars: {E: ''}", tasks))
        .args(&["run"])
        .run();
    run.expect_code(1);
    let task = run.task("t");
    assert_eq!(task["status"], "error");
    let why = "renders empty, and every output contains an empty text, so the check would not test the agent";
    let got = graders(&task);
    let expected = ["`{steps.s.outputs.v}`", "`{vars.E}`", "` {vars.E}`", "`{vars.E}`"];
    for ((status, reason, _), source) in got.iter().zip(expected) {
        assert_eq!((status.as_str(), reason.as_str()), ("error", format!("{source} {why}").as_str()));
    }
    assert_eq!(got[4].0, "passed");
}

#[test]
fn negate_inverts_the_verdict_but_never_an_error() {
    let g = "      - {type: contains, value: refund, negate: true}\n      - {type: contains, all: [a, b, c, d], negate: true}\n";
    let (code, task) = grade("a b: no refund here", None, g, &[]);
    assert_eq!(code, 1);
    let got = graders(&task);
    assert_eq!(got[0], ("failed".to_owned(), r#"negated: output contains "refund""#.to_owned(), 0.0));
    assert_eq!((got[1].0.as_str(), got[1].2), ("passed", 0.25), "{got:?}");
    let (code, task) = grade("x", None, "- {type: cost, max_usd: 1, negate: true}", &[]);
    assert_eq!((code, one(&task).0.as_str()), (1, "error"), "{task}");
    // A fail because there was nothing to look at is not inverted into a pass either.
    let g = "
        - {type: json, path: status, equals: error, negate: true}
        - {type: json_schema, schema: {type: object, required: [status]}, negate: true}
        ";
    let (code, task) = grade("Sorry, I cannot answer in JSON.", None, g, &[]);
    assert_eq!((code, task["status"].as_str()), (1, Some("error")), "{task}");
    for (status, reason, _) in graders(&task) {
        assert_eq!(status, "error");
        assert!(reason.starts_with("output is not JSON ("), "{reason}");
        assert!(reason.ends_with("; `negate` cannot invert a check that had nothing to look at"), "{reason}");
    }
    // "The output is JSON" (an empty schema, AgentV's `is-json`) looks at the output itself:
    // negated, it is "the output is not JSON".
    let (code, task) = grade("Sorry.", None, "- {type: json_schema, schema: {}, negate: true}", &[]);
    assert_eq!((code, one(&task).0.as_str()), (0, "passed"), "{task}");
    // Un-negated, the same is a graded fail; on JSON output, negate inverts as usual.
    let (_, task) = grade("Sorry.", None, "- {type: json, path: status, equals: error}", &[]);
    assert_eq!((task["status"].as_str(), one(&task).0.as_str()), (Some("failed"), "failed"));
    let (code, task) = grade(r#"{"state": "ok"}"#, None, g, &[]);
    assert_eq!(code, 0, "{task}");
}

/// `negate` inverts only a verdict that was observed: a command grader killed by a signal,
/// a `file` grader whose file cannot be read (a directory stands in its place: unreadable
/// even to root) and a verify step killed by a signal are errors, not fails turned into
/// passes. Un-negated they are errors too.
#[test]
fn negate_never_inverts_a_grader_that_could_not_judge() {
    let files = [("grader.sh", "#!/bin/sh\ncat > /dev/null\nkill -KILL $$\n"), ("out/keep", "")];
    let checks = [
        ("{type: command, run: [./grader.sh]", "command grader killed by signal 9"),
        ("{type: file, path: out, expect: {contains: x}", "cannot read "),
        ("{type: steps, steps: [{run: 'kill -KILL $$'}]", "verify step 1 failed: killed by signal 9"),
    ];
    for negate in [", negate: true}", "}"] {
        let g: String = checks.iter().map(|(grader, _)| format!("- {grader}{negate}\n")).collect();
        let (code, task) = grade("hi", None, &g, &files);
        assert_eq!((code, task["status"].as_str()), (1, Some("error")), "{task}");
        for ((status, reason, _), (grader, why)) in graders(&task).into_iter().zip(checks) {
            assert_eq!(status, "error", "{grader}{negate}: {reason}");
            assert!(reason.contains(why), "{grader}{negate}: {reason}");
        }
    }
}

/// A world grader's JSON check of content that is not JSON had nothing to look at: negated,
/// it is an error, not a pass ("the file's JSON is not this" is not "the file is not JSON").
/// Over JSON content, negate inverts as usual.
#[test]
fn negate_never_inverts_a_json_check_of_content_that_is_not_json() {
    let g = "- {type: file, path: out.json, expect: {json: {path: state, equals: done}}, negate: true}";
    let (code, task) = grade("hi", None, g, &[("out.json", "Sorry, no JSON here")]);
    assert_eq!((code, task["status"].as_str()), (1, Some("error")), "{task}");
    let (status, reason, _) = one(&task);
    assert_eq!(status, "error", "{reason}");
    assert!(reason.contains("is not JSON (") && reason.ends_with("nothing to look at"), "{reason}");
    let (code, task) = grade("hi", None, g, &[("out.json", r#"{"state": "pending"}"#)]);
    assert_eq!((code, one(&task).0.as_str()), (0, "passed"), "{task}");
}

#[test]
fn required_graders_and_thresholds() {
    // Score 2/3 ≥ 0.6 but the required grader failed.
    let g = "      - {type: contains, value: a}\n      - {type: contains, value: b}\n      - {type: contains, value: z, required: true}\n";
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\necho a b\n")
        .write("evalgate.yaml", &suite("", &task_t("threshold: 0.6", g)))
        .args(&["run"])
        .run();
    let task = run.task("t");
    assert_eq!(task["status"], "failed");
    assert_eq!(task["reason"], "required grader `contains` failed: output does not contain \"z\"");
    let g = "
        - {type: contains, value: a, weight: 3}
        - {type: contains, value: z}
        ";
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\necho a b\n")
        .write("evalgate.yaml", &suite("", &task_t("threshold: 0.75", g)))
        .args(&["run"])
        .run();
    let task = run.task("t");
    assert_eq!((task["status"].as_str(), task["score"].as_f64()), (Some("passed"), Some(0.75)));
}

#[test]
fn an_invalid_trace_is_an_error() {
    let (_, task) = grade("ok", Some("{not json"), "- {type: tool_calls, max: 0}", &[]);
    assert_eq!(task["status"], "error");
    assert!(task["reason"].as_str().unwrap().starts_with("agent `bot` wrote an invalid trace to $EVALGATE_TRACE:"));
}

#[test]
fn a_code_grader_verdict_that_cannot_be_read_is_an_error_never_a_pass() {
    let cases = [
        ("echo '{\"score\": 0.95}'; exit 1", "command grader exit 1 and printed a JSON verdict"),
        ("echo '{\"Passed\": false}'", "none of `passed`, `score` or `assertions`"),
        ("echo '[true]'", "printed a JSON array"),
        ("echo 'checking…'; echo '{\"passed\": false}'", "other text around what looks like a JSON verdict"),
        ("echo '{\"score\": NaN}'", "other text around what looks like a JSON verdict"),
    ];
    for (body, expected) in cases {
        let script = format!("#!/bin/sh\n{body}\n");
        let (code, task) = grade("hi", None, GRADER, &[("grader.sh", &script)]);
        assert_eq!((code, task["status"].as_str()), (1, Some("error")), "{body}: {task}");
        assert!(task["reason"].as_str().unwrap().contains(expected), "{body}: {}", task["reason"]);
    }
    // The exit code alone still decides when no verdict is printed.
    let (code, task) = grade("hi", None, GRADER, &[("grader.sh", "#!/bin/sh\necho looks fine\nexit 1\n")]);
    assert_eq!((code, task["status"].as_str()), (1, Some("failed")));
}

/// An agent printing past the 1 MiB capture cap: what is past it was never read, so a
/// verdict that needs it is an error (a canary or a forbidden word may be there), and one
/// that holds on the start alone (a `contains` that found its text) stands.
#[test]
fn a_verdict_on_output_cut_at_the_capture_cap_is_given_only_where_the_start_decides() {
    let agent = "#!/bin/sh\nprintf 'START %s\\n' \"$1\"\nhead -c 1100000 /dev/zero | tr '\\0' x\nprintf 'FORBIDDEN canary-past-the-cap-1f2e\\n'\n";
    let grader = "#!/bin/sh\nhead -c 1100000 /dev/zero | tr '\\0' y\n";
    let run = Test::new()
        .write("agent.sh", agent)
        .write("grader.sh", grader)
        .write(
            "evalgate.yaml",
            &suite(
                "  short: {command: [sh, -c, \"echo short\"]}\ndefaults: {agent: bot}",
                r#"  - id: cut
    prompt: canary-in-the-start-7d3c
    grade:
      - {type: contains, value: START}
      - {type: starts_with, value: START}
      - {type: no_leak, canaries: [canary-past-the-cap-1f2e]}
      - {type: not_contains, value: FORBIDDEN}
      - {type: equals, value: START, negate: true}
      - {type: contains, value: FORBIDDEN}
      - {type: command, run: [sh, -c, "exit 0"]}
  - id: leak-in-start
    prompt: canary-in-the-start-7d3c
    grade: [{type: no_leak, canaries: [canary-in-the-start-7d3c]}]
  - id: grader-cut
    prompt: short
    agent: short
    grade: [{type: command, run: [./grader.sh]}]
"#,
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    let cut = run.task("cut");
    let statuses: Vec<(String, String)> = graders(&cut).into_iter().map(|(s, r, _)| (s, r)).collect();
    let expected = ["passed", "passed", "error", "error", "error", "error", "error"];
    for (i, ((status, reason), want)) in statuses.iter().zip(expected).enumerate() {
        assert_eq!(status, want, "grader {i}: {reason}");
        if want == "error" {
            assert!(reason.contains("output was cut at 1 MiB"), "grader {i}: {reason}");
        }
    }
    assert_eq!(cut["status"], "error", "no verdict on what was not read: {cut}");
    assert_eq!(cut["trials"][0]["output_truncated"], true);
    // A canary found in the part read is a leak, whatever follows.
    let leak = run.task("leak-in-start");
    assert_eq!((leak["status"].as_str(), one(&leak).0.as_str()), (Some("failed"), "failed"), "{leak}");
    // A command grader whose own reply was cut is an error, not "text + exit 0 = pass".
    let (status, reason, _) = one(&run.task("grader-cut"));
    assert_eq!(status, "error", "{reason}");
    assert!(reason.contains("its reply was cut"), "{reason}");
}

/// A model's answer is attacker-influenced text: rendered into a `run:` string (a command
/// grader's, a cleanup step's) it is one word of text, never shell code.
#[test]
fn an_answer_in_a_run_string_is_text_never_shell_code() {
    let answer = "ok $(touch pwned1) `touch pwned2` '; touch pwned3; ' \"; touch pwned4; \"";
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\ncat expected\n")
        .write(
            "evalgate.yaml",
            &suite(
                "",
                r#"  - id: t
    prompt: x
    grade:
      - {type: command, run: "test {agent.output} = \"$(cat expected)\""}
      - {type: command, run: "test \"{agent.output}\" = \"$(cat expected)\""}
      - {type: command, run: "test '{agent.output}' = \"$(cat expected)\""}
    cleanup:
      - run: "printf '%s' {agent.output} > seen"
"#,
            ),
        )
        .write("expected", answer)
        .args(&["run"])
        .run();
    run.expect_code(0);
    for pwned in ["pwned1", "pwned2", "pwned3", "pwned4"] {
        assert!(!run.dir.join(pwned).exists(), "{pwned}: the answer ran as shell code");
    }
    assert_eq!(run.read("seen"), answer);
}

/// A `--var` (a workflow passes `--var branch=${{ github.head_ref }}`: a fork names its
/// branch) reaches every shell it is written in (a hook, setup, cleanup, a command grader,
/// and a script that names `$EVALGATE_VAR_branch`) as one word of text, never as code.
#[test]
fn a_var_from_the_command_line_is_text_in_every_shell_it_reaches() {
    let hostile = "x $(touch pwned1) `touch pwned2` '; touch pwned3; ' \"; touch pwned4; \"";
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\necho ok\n")
        .write(
            "evalgate.yaml",
            &suite(
                r#"
                vars: {branch: main}
                hooks:
                  before_all:
                    - run: "printf '%s' {vars.branch} > before"
                "#,
                r#"  - id: t
    prompt: x
    setup:
      - run: "printf '%s' \"{vars.branch}\" > setup"
    grade:
      - {type: command, run: "test '{vars.branch}' = \"$(cat before)\""}
      - {type: command, run: "test \"$EVALGATE_VAR_branch\" = \"$(cat setup)\""}
    cleanup:
      - run: "printf '%s' \"$EVALGATE_VAR_branch\" > cleanup"
"#,
            ),
        )
        .args(&["run", "--var", &format!("branch={hostile}")])
        .run();
    run.expect_code(0);
    for pwned in ["pwned1", "pwned2", "pwned3", "pwned4"] {
        assert!(!run.dir.join(pwned).exists(), "{pwned}: the --var ran as shell code");
    }
    for file in ["before", "setup", "cleanup"] {
        assert_eq!(run.read(file), hostile, "{file}");
    }
}

/// Where evalgate cannot be certain how a shell reads a placeholder (after a heredoc, in a
/// `$(…)`), or where it would be code (the script of `sh -c`, `eval`, a program's name, an
/// argv's `bash -c` script), the suite is refused at load, at the placeholder, with the
/// variable to write instead: never a guess, never the placeholder left as literal text.
#[test]
fn a_placeholder_a_shell_would_misread_or_run_is_refused_where_it_is_written() {
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\necho 'DROP TABLE users'\n")
        .write(
            "evalgate.yaml",
            &suite(
                "",
                r##"  - id: t
    prompt: x
    grade:
      - {type: command, run: "# it's fine\n! grep -q 'DROP TABLE' <<'EOF'\n{agent.output}\nEOF"}
      - {type: command, run: "x=\"$(echo 'it''s' {agent.output})\"; test -n \"$x\""}
      - {type: command, run: "sh -c \"echo {agent.output} | grep -qv DROP\""}
      - {type: command, run: "eval test {vars.word} = x"}
      - {type: command, run: [bash, -c, "echo {agent.output} | grep -qv DROP"]}
      - {type: command, run: "echo {agent.output} | tr -d x | sh"}
"##,
            ),
        )
        .args(&["check", "--var", "word=w"])
        .expect_messages("error: evalgate.yaml:10:30: tasks[0].grade[0].run: `{agent.output}` stands after a heredoc (`<<`), where evalgate cannot be certain how the shell reads it\n   |\n10 |       - {type: command, run: \"# it's fine\\n! grep -q 'DROP TABLE' <<'EOF'\\n{agent.output}\\nEOF\"}\n   |                              ^\n  help: write `\"$EVALGATE_AGENT_OUTPUT\"` instead\nerror: evalgate.yaml:11:30: tasks[0].grade[1].run: `{agent.output}` stands inside a `$(…)`, where evalgate does not place values\n   |\n11 |       - {type: command, run: \"x=\\\"$(echo 'it''s' {agent.output})\\\"; test -n \\\"$x\\\"\"}\n   |                              ^\n  help: write `$EVALGATE_AGENT_OUTPUT` instead\nerror: evalgate.yaml:12:30: tasks[0].grade[2].run: `{agent.output}` would be code here: it is the script `sh -c` runs\n   |\n12 |       - {type: command, run: \"sh -c \\\"echo {agent.output} | grep -qv DROP\\\"\"}\n   |                              ^\n  help: pass it as data: an argument after the code (`sh -c '… \"$1\" …' sh \"$EVALGATE_AGENT_OUTPUT\"`), or read `EVALGATE_AGENT_OUTPUT` from the environment inside the program (`os.environ`, `process.env`, a single-quoted `sh -c` script)\nerror: evalgate.yaml:13:41: tasks[0].grade[3].run: `{vars.word}` would be code here: `eval` runs its words as a command line\n   |\n13 |       - {type: command, run: \"eval test {vars.word} = x\"}\n   |                                         ^\n  help: pass it as data: an argument after the code (`sh -c '… \"$1\" …' sh \"$EVALGATE_VAR_word\"`), or read `EVALGATE_VAR_word` from the environment inside the program (`os.environ`, `process.env`, a single-quoted `sh -c` script)\nerror: evalgate.yaml:14:47: tasks[0].grade[4].run[2]: `{agent.output}` would be code here: it is the script `bash -c` runs\n   |\n14 |       - {type: command, run: [bash, -c, \"echo {agent.output} | grep -qv DROP\"]}\n   |                                               ^\n  help: pass it as data: an argument after the code ([sh, -c, '… \"$1\" …', sh, '{agent.output}']), or in `env` (`X: \"{agent.output}\"`) read from the environment inside the program\nerror: evalgate.yaml:15:36: tasks[0].grade[5].run: `{agent.output}` is piped into `sh`, which runs its input as code\n   |\n15 |       - {type: command, run: \"echo {agent.output} | tr -d x | sh\"}\n   |                                    ^\n  help: pass it as data: an argument after the code (`sh -c '… \"$1\" …' sh \"$EVALGATE_AGENT_OUTPUT\"`), or read `EVALGATE_AGENT_OUTPUT` from the environment inside the program (`os.environ`, `process.env`, a single-quoted `sh -c` script)\n6 errors in the suite; nothing ran\n").run();
    run.expect_code(2);
    let stderr = &run.stderr;
    for (line, message, write) in [
        ("tasks[0].grade[0].run", "stands after a heredoc (`<<`)", "write `\"$EVALGATE_AGENT_OUTPUT\"` instead"),
        ("tasks[0].grade[1].run", "stands inside a `$(…)`", "write `$EVALGATE_AGENT_OUTPUT` instead"),
        ("tasks[0].grade[2].run", "it is the script `sh -c` runs", "read `EVALGATE_AGENT_OUTPUT` from"),
        ("tasks[0].grade[3].run", "`eval` runs its words as a command line", "read `EVALGATE_VAR_word` from"),
        ("tasks[0].grade[4].run[2]", "it is the script `bash -c` runs", "[sh, -c, '… \"$1\" …', sh, '{agent.output}']"),
        (
            "tasks[0].grade[5].run",
            "is piped into `sh`, which runs its input as code",
            "read `EVALGATE_AGENT_OUTPUT` from",
        ),
    ] {
        let at = stderr.find(&format!("{line}: ")).unwrap_or_else(|| panic!("{line} not refused:\n{stderr}"));
        let rest = &stderr[at..];
        let end = rest[1..].find("\nerror: ").map_or(rest.len(), |i| i + 1);
        assert!(rest[..end].contains(message), "{line}: {message}\n{stderr}");
        assert!(rest[..end].contains(write), "{line}: {write}\n{stderr}");
    }
    assert!(stderr.contains("6 errors in the suite"), "{stderr}");
}
