//! The step language: http, file, wait, foreach, any_of, group, outputs, hooks.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::server::{Server, closed_port};
use crate::common::{ECHO_AGENT, Test, suite, unindent};
use serde_json::Value;

#[track_caller]
fn run_suite(extra: &str, tasks: &str) -> crate::common::Run {
    Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite(extra, tasks))
        .args(&["run", "-j", "1"])
        .run()
}

fn graders(task: &Value) -> Vec<(String, String)> {
    task["trials"][0]["graders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["status"].as_str().unwrap().to_owned(), g["reason"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn http_graders_check_status_and_json_and_report_a_down_server_as_an_error() {
    let server = Server::start(|r| match r.path.as_str() {
        "/orders/42" => (200, r#"{"state": "done", "items": [{"sku": "a"}]}"#.into()),
        _ => (404, r#"{"error": "not found"}"#.into()),
    });
    let url = server.url();
    let down = closed_port();
    let tasks = unindent(
        "
        - id: t
          prompt: x
          grade:
            - {type: http, url: '<url>/orders/42', expect: {status: 200, body: {json: {path: state, equals: done}}}}
            - {type: http, url: '<url>/orders/7', expect: {status: 200}}
            - {type: http, url: '<url>/orders/42', expect: {body: {json: {path: 'items[0].sku', equals: b}}}}
            - {type: http, url: 'http://127.0.0.1:<down>/'}
        ",
    )
    .replace("<url>", &url.to_string())
    .replace("<down>", &down.to_string());
    let run = run_suite("", &tasks);
    let task = run.task("t");
    let g = graders(&task);
    assert_eq!(g[0].0, "passed");
    assert_eq!(
        g[1],
        (
            "failed".into(),
            format!("GET {url}/orders/7: status 404, expected 200: \"{{\\\"error\\\": \\\"not found\\\"}}\"")
        )
    );
    assert_eq!(
        g[2],
        ("failed".into(), format!("GET {url}/orders/42: the body: `items[0].sku`: expected \"b\", got \"a\""))
    );
    assert_eq!(g[3].0, "error");
    assert!(g[3].1.contains("request failed"), "{}", g[3].1);
    assert_eq!(task["status"], "error", "a grader that cannot reach the world is an error");
}

#[test]
fn file_steps_create_check_and_remove() {
    let tasks = r#"
        - id: t
          prompt: x
          setup:
            - file: {path: out/config.json, content: "{{\"k\": 1}}", mode: "0600"}
            - file: {path: out/config.json, expect: {contains: k, json: {path: k, equals: 1}}}
            - file: {path: stale.txt, content: old}
            - file: {path: stale.txt, absent: true}
            - file: {path: stale.txt, expect: {exists: false}}
          grade:
            - {type: file, path: out/config.json, expect: {json: {path: k, type: integer}}}
            - {type: file, path: out/config.json, expect: {matches: '"k": 2'}}
        "#;
    let run = run_suite("", tasks);
    let task = run.task("t");
    let g = graders(&task);
    assert_eq!(g[0].0, "passed");
    assert_eq!(g[1].0, "failed");
    assert!(g[1].1.ends_with("does not match /\"k\": 2/"), "{}", g[1].1);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(run.dir.join("out/config.json")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!run.dir.join("stale.txt").exists());
}

#[test]
fn wait_polls_until_the_third_attempt_and_times_out_otherwise() {
    let polls = Arc::new(AtomicU32::new(0));
    let counter = polls.clone();
    let server = Server::start(move |r| match r.path.as_str() {
        "/ready" if counter.fetch_add(1, Ordering::SeqCst) >= 2 => (200, "{}".into()),
        "/ready" => (503, "{}".into()),
        _ => (503, "{}".into()),
    });
    let url = server.url();
    let tasks = unindent(
        "
        - id: ready
          prompt: x
          setup:
            - wait: {interval: 50ms, timeout: 10s, step: {http: {url: '<url>/ready'}}}
          grade: [{type: contains, value: x}]
        - id: never
          prompt: x
          setup:
            - wait: {interval: 50ms, timeout: 300ms, step: {http: {url: '<url>/never'}}}
          grade: [{type: contains, value: x}]
        ",
    )
    .replace("<url>", &url.to_string());
    let run = run_suite("", &tasks);
    assert_eq!(run.task("ready")["status"], "passed");
    assert_eq!(polls.load(Ordering::SeqCst), 3);
    let step = &run.task("ready")["trials"][0]["steps"][0];
    assert!(step["action"].as_str().unwrap().ends_with("(passed on attempt 3)"), "{step}");
    let never = run.task("never");
    assert_eq!(never["status"], "error");
    let reason = never["reason"].as_str().unwrap();
    assert!(reason.starts_with("setup step 1 failed: still failing after"), "{reason}");
    assert!(reason.contains("status 503, expected 2xx"), "{reason}");
}

#[test]
fn stable_for_fails_when_the_value_changes() {
    let polls = Arc::new(AtomicU32::new(0));
    let counter = polls.clone();
    let server = Server::start(move |_| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        (200, format!(r#"{{"restarts": {}}}"#, if n < 3 { 0 } else { 1 }))
    });
    let url = server.url();
    let tasks = unindent(
        "
        - id: t
          prompt: x
          setup:
            - wait: {interval: 50ms, timeout: 5s, stable_for: 2s, step: {http: {url: '<url>/pod', expect: {body: {json: {path: restarts, equals: 0}}}}}}
          grade: [{type: contains, value: x}]
        ",
    )
        .replace("<url>", &url.to_string());
    let run = run_suite("", &tasks);
    let task = run.task("t");
    assert_eq!(task["status"], "error");
    let reason = task["reason"].as_str().unwrap();
    assert!(reason.contains("passed, then failed after"), "{reason}");
    assert!(reason.contains("of the required 2s"), "{reason}");
    assert!(reason.contains("`restarts`: expected 0, got 1"), "{reason}");
}

#[test]
fn foreach_over_a_list_and_over_a_json_array_output() {
    let tasks = r#"
        - id: t
          prompt: x
          setup:
            - foreach: {var: user, in: [alice, bob], steps: [{run: 'echo {user} >> users.txt'}]}
            - id: list
              run: "echo '[\"carol\", \"dave\"]'"
              outputs: {names: '{stdout}'}
            - foreach: {var: name, in: '{steps.list.outputs.names}', steps: [{run: 'echo {name} >> users.txt'}]}
          grade: [{type: contains, value: x}]
        "#;
    let run = run_suite("", tasks);
    run.expect_code(0);
    assert_eq!(run.read("users.txt"), "alice\nbob\ncarol\ndave\n");
}

#[test]
fn any_of_passes_on_one_branch_and_reports_every_failure() {
    let tasks = "
        - id: one
          prompt: x
          setup:
            - any_of:
                - run: exit 1
                - run: echo second > chosen
                - run: echo third > chosen
          grade: [{type: contains, value: x}]
        - id: none
          prompt: x
          setup:
            - any_of:
                - run: echo v1 missing >&2; exit 1
                - run: echo v2 missing >&2; exit 2
          grade: [{type: contains, value: x}]
        ";
    let run = run_suite("", tasks);
    assert_eq!(run.task("one")["status"], "passed");
    assert_eq!(run.read("chosen"), "second\n");
    let reason = run.task("none")["reason"].as_str().unwrap().to_owned();
    assert_eq!(
        reason,
        "setup step 1 failed: no branch passed: 1) exit 1, expected exit 0: v1 missing; 2) exit 2, expected exit 0: v2 missing"
    );
}

#[test]
fn a_group_runs_its_cleanup_after_its_step_fails() {
    let tasks = "
        - id: t
          prompt: x
          setup:
            - group: {setup: [{run: echo start >> log}], steps: [{run: exit 3}], cleanup: [{run: echo stop >> log}]}
          grade: [{type: contains, value: x}]
        ";
    let run = run_suite("", tasks);
    let task = run.task("t");
    assert_eq!(task["status"], "error");
    assert_eq!(run.read("log"), "start\nstop\n");
    let children = task["trials"][0]["steps"][0]["children"].as_array().unwrap();
    assert_eq!(
        children.iter().map(|c| c["phase"].as_str().unwrap()).collect::<Vec<_>>(),
        ["setup", "setup", "cleanup"]
    );
}

#[test]
fn a_setup_output_reaches_the_prompt_graders_and_cleanup() {
    let received = Arc::new(Mutex::new(Vec::new()));
    let seen = received.clone();
    let server = Server::start(move |r| {
        seen.lock().unwrap().push(format!("{} {} {}", r.method, r.path, r.body));
        (200, r#"{"id": "ns-17", "status": {"ready": true}}"#.into())
    });
    let url = server.url();
    let tasks = unindent(
        r#"
        - id: t
          prompt: 'namespace {steps.ns.outputs.name}'
          setup:
            - id: ns
              http: {url: '<url>/namespaces', method: post, json: {owner: '{task.id}'}}
              outputs: {name: '{response.json.id}', request: '{response.headers.x-request-id}'}
            - id: info
              run: "echo '{{\"status\": {{\"ready\": true}}}}'"
              outputs: {ready: {from: stdout, json_path: status.ready}}
          grade:
            - {type: equals, value: 'namespace {steps.ns.outputs.name}'}
            - {type: contains, value: '{steps.info.outputs.ready}', name: never}
            - {type: http, url: '<url>/namespaces/{steps.ns.outputs.name}'}
          cleanup:
            - http: {url: '<url>/namespaces/{steps.ns.outputs.name}', method: delete}
        "#,
    )
    .replace("<url>", &url.to_string());
    let run = run_suite("", &tasks);
    let task = run.task("t");
    assert_eq!(graders(&task)[0].0, "passed", "{task}");
    assert_eq!(graders(&task)[1], ("failed".into(), "output does not contain \"true\"".into()));
    let received = received.lock().unwrap().clone();
    assert_eq!(received, ["POST /namespaces {\"owner\":\"t\"}", "GET /namespaces/ns-17 ", "DELETE /namespaces/ns-17 "]);
}

#[test]
fn cleanup_skips_nothing_but_never_runs_a_command_with_a_missing_output() {
    let tasks = "
        - id: t
          prompt: x
          setup:
            - {run: exit 1, continue_on_error: true}
            - id: ns
              run: exit 2
              outputs: {name: '{stdout}'}
          grade: [{type: contains, value: x}]
          cleanup:
            - run: touch ran-first
            - run: 'echo delete {steps.ns.outputs.name} > deleted'
        ";
    let run = run_suite("", tasks);
    let task = run.task("t");
    assert_eq!(task["reason"], "setup step 2 (`ns`) failed: exit 2, expected exit 0");
    assert!(run.dir.join("ran-first").exists());
    assert!(!run.dir.join("deleted").exists(), "a cleanup step ran with an empty output");
    let steps = task["trials"][0]["steps"].as_array().unwrap();
    let last = steps.iter().find(|s| s["phase"] == "cleanup" && s["index"] == 1).unwrap();
    assert_eq!(last["failure"], "{steps.ns.outputs.name} was not captured (its step did not run or failed)");
}

/// A render that asks for a step output that was not captured fails where it is used, and
/// only there: the prompt, one grader (not the next), a file step's content (not written).
#[test]
fn a_missing_step_output_fails_the_render_that_uses_it() {
    let setup = "
          setup:
            - {id: ns, run: exit 2, outputs: {name: '{stdout}'}, continue_on_error: true}";
    let tasks = unindent(
        &"
        - id: prompt
          prompt: 'hi {steps.ns.outputs.name}'
          grade: [{type: contains, value: x}]<setup>
        - id: grader
          prompt: x<setup>
          grade:
            - {type: contains, value: 'x{steps.ns.outputs.name}{steps.ns.outputs.name}', name: uses}
            - {type: contains, value: x, name: plain}
        - id: file
          prompt: x
          grade: [{type: contains, value: x}]<setup>
            - file: {path: written.txt, content: 'name {steps.ns.outputs.name}'}
        "
        .replace("<setup>", setup),
    );
    let run = run_suite("", &tasks);
    let missing = "{steps.ns.outputs.name} was not captured (its step did not run or failed)";
    assert_eq!(run.task("prompt")["reason"], format!("the prompt uses {missing}"));
    let task = run.task("grader");
    assert_eq!(
        graders(&task),
        [("error".into(), format!("uses {missing}")), ("passed".into(), "output contains \"x\"".into())]
    );
    assert_eq!(run.task("file")["reason"], format!("setup step 2 failed: {missing}"));
    assert!(!run.dir.join("written.txt").exists(), "a file was written with an empty value");
}

#[test]
fn random_port_is_free() {
    let tasks = r#"
        - id: t
          prompt: x
          setup:
            - run: "python3 -c 'import os, socket; s = socket.socket(); s.bind((\"127.0.0.1\", int(os.environ[\"EVALGATE_RANDOM_PORT\"]))); print(\"bound\")'"
              id: bind
              outputs: {said: '{stdout}'}
          grade: [{type: contains, value: x}]
        "#;
    let run = run_suite("", tasks);
    run.expect_code(0);
}

#[test]
fn hooks_run_once_share_outputs_and_after_all_always_runs() {
    let extra = "hooks:\n  before_all:\n    - id: env\n      run: echo staging\n      outputs: {name: '{stdout}'}\n  after_all:\n    - run: 'echo done {steps.env.outputs.name} >> hooks.log'\n";
    let tasks = "
        - id: a
          prompt: 'on {steps.env.outputs.name}'
          grade: [{type: equals, value: on staging}]
        - id: b
          prompt: x
          grade: [{type: contains, value: y}]
        ";
    let run = run_suite(extra, tasks);
    run.expect_code(1);
    assert_eq!(run.task("a")["status"], "passed");
    assert_eq!(run.read("hooks.log"), "done staging\n");
    assert_eq!(run.results()["hooks"].as_array().unwrap().len(), 2);
}

#[test]
fn a_failing_before_all_hook_errors_every_task_or_fails_preflight() {
    let failing = "hooks:\n  before_all: [{run: 'echo no cluster >&2; exit 1'}]\n  after_all: [{run: touch after}]\n";
    let tasks = "
        - id: a
          prompt: x
          grade: [{type: contains, value: x}]
        ";
    let run = run_suite(failing, tasks);
    run.expect_code(1);
    assert_eq!(run.task("a")["status"], "error");
    assert_eq!(run.task("a")["reason"], "before_all step 1 failed: exit 1, expected exit 0: no cluster");
    assert!(run.dir.join("after").exists());

    let preflight = "hooks:\n  before_all: [{run: 'exit 1', preflight: true}]\n  after_all: [{run: touch after}]\n";
    let run = run_suite(preflight, tasks);
    run.expect_code(3);
    assert_eq!(run.task("a")["status"], "skipped");
    assert_eq!(run.task("a")["not_run"], "preflight");
    assert!(run.stderr_has("PREFLIGHT FAILED test.evals.demo"), "{}", run.stderr);
    assert!(run.stderr_has("\n  before_all step 1 failed: exit 1"), "{}", run.stderr);
    assert_eq!(run.results()["verdict"]["outcome"]["status"], "preflight_failed");
    assert!(run.dir.join("after").exists());
}

#[test]
fn step_mistakes_are_load_errors() {
    let tasks = "
        - id: t
          prompt: '{steps.nss.outputs.name}'
          setup:
            - id: ns
              run: echo hi
              outputs: {name: '{stdout}', bad: '{response.status}'}
            - {run: echo, http: {url: 'http://x'}}
            - {http: {url: 'http://x'}, expect: {exit_code: 0}}
            - {file: {path: a, content: b, absent: true}}
            - {run: 'echo {steps.ns.outputs.nmae}'}
            - {foreach: {var: user, in: [a], steps: [{run: 'echo {usr}'}]}}
          grade: [{type: contains, value: x}]
        ";
    let run = run_suite("", tasks);
    run.expect_code(2);
    for expected in [
        "tasks[0].setup[0].outputs.bad: a `run` step cannot capture this output",
        "tasks[0].setup[1]: a step does one thing, but this one has run and http",
        "tasks[0].setup[2].expect: `expect` belongs to `run` steps; put it inside `http`",
        "tasks[0].setup[3].file: a `file` step does one of",
        "tasks[0].setup[4].run: step `ns` has no output `nmae`",
        "tasks[0].setup[5].foreach.steps[0].run: unknown variable `{usr}`",
        "tasks[0].prompt: `{steps.nss.outputs.name}` refers to no earlier step `nss`",
        "help: did you mean `{steps.ns.outputs.name}`?",
    ] {
        assert!(run.stderr_has(expected), "missing {expected:?} in:\n{}", run.stderr);
    }
}

#[test]
fn the_rollout_example_passes_and_catches_a_sloppy_agent() {
    // One test runs both, in turn: they share the example's pid file.
    let example = std::fs::canonicalize("examples/rollout/evalgate.yaml").unwrap();
    let run = Test::new().args(&["run", example.to_str().unwrap()]).run();
    // The group id varies from run to run.
    run.expect_stderr_contains(&["killed 1 background process(es) left behind: process group "]);
    run.expect_code(0);
    let sloppy = Test::new().args(&["run", example.to_str().unwrap(), "--agent", "sloppy"]).run();
    // The group id varies from run to run.
    sloppy.expect_stderr_contains(&["killed 1 background process(es) left behind: process group "]);
    sloppy.expect_code(1);
    assert_eq!(
        sloppy.task("deploy-web")["reason"],
        "required grader `rollout` failed: verify step 2 failed: the body: `spec.image`: expected \"nginx:1.27\", got \"nginx:latest\""
    );
    assert!(sloppy.read("evalgate-out/summary.md").contains("verify step 2 failed"));
}

#[test]
fn an_http_method_is_one_of_the_known_ones_in_any_case() {
    let suite = |method: &str| {
        suite(
            "",
            &unindent(
                "
                - id: a
                  prompt: x
                  setup:
                    - http: {url: 'http://127.0.0.1:9/x', method: <method>}
                  grade: [{type: contains, value: x}]
                ",
            )
            .replace("<method>", method),
        )
    };
    let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("fetch")).args(&["check"]).run();
    run.expect_messages(
        r#"
            error: evalgate.yaml:10:53: tasks[0].setup[0].http.method: unknown method `fetch`
               |
            10 |       - http: {url: 'http://127.0.0.1:9/x', method: fetch}
               |                                                     ^
              help: expected one of: GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS
            1 error in the suite; nothing ran
        "#,
    );
    run.expect_code(2);
    assert_eq!(
        run.stderr,
        "error: evalgate.yaml:10:53: tasks[0].setup[0].http.method: unknown method `fetch`\n   |\n10 |       - http: {url: 'http://127.0.0.1:9/x', method: fetch}\n   |                                                     ^\n  help: expected one of: GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS\n\n1 error in the suite; nothing ran\n"
    );
    Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("post"))
        .args(&["check"])
        .expect_messages("ok: test.evals.demo (evalgate.yaml): 1 task(s), 1 agent(s); preflight passed\n")
        .run()
        .expect_code(0);
}
