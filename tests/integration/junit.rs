//! junit.xml as its real consumers read it: Python's junitparser (what EnricoMi's
//! publish-unit-test-result-action parses with, following its per-case logic), GitLab's
//! parser semantics, junit2html, xunit-viewer (npm), dorny/test-reporter's java-junit
//! parsing logic under node with its XML library, and Maven Surefire's 3.0 schema for the
//! flaky and rerun elements (xmllint). scripts/test.sh installs them all, pinned.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::{Run, Test, suite};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> String {
    let path = root().join("tests/fixtures/junit").join(name);
    assert!(path.exists(), "{} is missing: run scripts/test.sh", path.display());
    path.display().to_string()
}

fn output(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e} (run scripts/test.sh, it installs the consumers)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Trials differ by a counter kept per prompt: `flaky` fails its first trial, `late` passes
/// only its last, `silent` exits 3 with no output at all (a body nothing would fill).
const AGENT: &str = r#"#!/bin/sh
n=$(cat "count-$1" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "count-$1"
case "$1" in
  pass) printf 'ok\tcolumn two\n' ;;
  fail) printf 'wrong \357\277\276\357\277\277\001\n' ;;
  silent) exit 3 ;;
  flaky) if [ "$n" = 1 ]; then echo "wrong $n"; else echo "ok $n"; fi ;;
  late) if [ "$n" = 3 ]; then echo "ok $n"; else echo "wrong $n"; fi ;;
esac
"#;

fn tasks() -> String {
    let grade = "    grade: [{type: contains, value: ok}]\n";
    [
        format!("  - id: passes\n    prompt: pass\n{grade}"),
        format!("  - id: fails\n    prompt: fail\n{grade}"),
        format!("  - id: silent\n    prompt: silent\n{grade}"),
        format!("  - id: flaky\n    prompt: flaky\n    repeat: 3\n    min_pass: 2\n{grade}"),
        format!("  - id: late\n    prompt: late\n    repeat: 3\n{grade}"),
    ]
    .concat()
}

/// The run, with the workspace one directory above the working directory.
fn run() -> (Run, String) {
    let test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite("", &tasks()));
    let dir = std::fs::canonicalize(test.path()).unwrap();
    let workspace = dir.parent().unwrap().display().to_string();
    let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
    let run = test.env("GITHUB_WORKSPACE", &workspace).args(&["run", "-j", "1", "--no-github"]).run();
    run.expect_code(1);
    (run, name)
}

fn case<'a>(cases: &'a [Value], name: &str) -> &'a Value {
    cases.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no case {name} in {cases:?}"))
}

#[test]
fn every_consumer_reads_the_junit_file() {
    let (run, dir_name) = run();
    let junit = run.dir.join("evalgate-out/junit.xml");
    let results = run.results();
    let reruns = run.dir.join("reruns.xml");

    // junitparser, EnricoMi's per-case logic, GitLab's semantics, junit2html.
    let python = root().join(".venv-test/bin/python");
    let seen: Value = serde_json::from_str(&output(
        Command::new(&python).arg(fixture("read_junit.py")).arg(&junit).arg("--reruns").arg(&reruns),
    ))
    .unwrap();
    let suite = &seen["suites"][0];
    assert_eq!(
        (suite["tests"].as_u64(), suite["failures"].as_u64(), suite["errors"].as_u64()),
        (Some(5), Some(2), Some(1))
    );
    assert!(suite["timestamp"].as_str().is_some_and(|t| t.starts_with("20")), "{suite}");
    let cases = suite["cases"].as_array().unwrap();
    for c in cases {
        // Relative to the repository root ($GITHUB_WORKSPACE), as the annotations are.
        assert_eq!(c["file"], format!("{dir_name}/evalgate.yaml"), "{c}");
        assert!(c["timestamp"].as_str().is_some_and(|t| t.starts_with("20")), "{c}");
        if c["state"] == "failure" || c["state"] == "error" {
            assert!(c["content"].as_str().is_some_and(|t| !t.trim().is_empty()), "empty body: {c}");
            assert!(c["message"].as_str().is_some_and(|t| !t.is_empty()), "{c}");
        }
        // A case's time is the sum of its trials' durations.
        let task = results["tasks"].as_array().unwrap().iter().find(|t| t["id"] == c["name"]).unwrap();
        let trials: u64 = task["trials"].as_array().unwrap().iter().map(|t| t["duration_ms"].as_u64().unwrap()).sum();
        let time = c["time"].as_f64().unwrap();
        assert!((time * 1000.0 - trials as f64).abs() < 1.5, "{}: time {time} s, trials {trials} ms", c["name"]);
    }
    assert_eq!(case(cases, "passes")["system_out"], "ok\tcolumn two\n", "TAB kept");
    assert_eq!(case(cases, "silent")["state"], "error");
    assert_eq!(case(cases, "silent")["content"], "agent `bot` exit 3");
    assert_eq!(case(cases, "flaky")["state"], "success");
    // `late` failed (1/3 passed): its body and output come from a failing trial, not the last.
    let late = case(cases, "late");
    assert_eq!(late["state"], "failure");
    assert_eq!(late["system_out"], "wrong 1\n");
    assert!(late["content"].as_str().unwrap().contains("[failed] contains score 0.00"), "{late}");
    let gitlab = seen["gitlab"].as_array().unwrap();
    assert_eq!(case(gitlab, "fails")["status"], "failed");
    assert_eq!(case(gitlab, "silent")["status"], "error");
    assert!(case(gitlab, "silent")["system_output"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(seen["junit2html_bytes"].as_u64().unwrap() > 1000);

    // Surefire 3.0: the flaky and rerun elements, each with its own trial's output.
    assert_eq!(seen["reruns"], 2, "flaky: trial 1 as flakyFailure; late: trial 2 as rerunFailure");
    output(Command::new("xmllint").args(["--noout", "--schema"]).arg(fixture("surefire-reruns-3.0.xsd")).arg(&reruns));
    let reruns = std::fs::read_to_string(&reruns).unwrap();
    let flaky = reruns.split("<flakyFailure").nth(1).expect("a flakyFailure");
    assert!(
        flaky.contains("type=\"graded-failure\"") && flaky.contains("<system-out>wrong 1\n</system-out>"),
        "{reruns}"
    );
    let rerun = reruns.split("<rerunFailure").nth(1).expect("a rerunFailure");
    assert!(
        rerun.contains("<stackTrace>[failed] contains") && rerun.contains("<system-out>wrong 2\n</system-out>"),
        "{reruns}"
    );

    // dorny/test-reporter's parsing (java-junit; jest-junit splits the same text).
    let node_modules = root().join("tests/fixtures/junit/node_modules");
    let dorny: Value = serde_json::from_str(&output(
        Command::new("node").arg(fixture("dorny.js")).arg(&junit).env("NODE_PATH", &node_modules),
    ))
    .unwrap();
    let cases = dorny["cases"].as_array().unwrap();
    assert_eq!(case(cases, "silent")["result"], "failed");
    assert_eq!(case(cases, "silent")["details"], "agent `bot` exit 3");
    assert_eq!(case(cases, "flaky")["result"], "success");

    // xunit-viewer renders it, in the console and as HTML.
    let viewer = node_modules.join("xunit-viewer/bin/xunit-viewer.js");
    // It writes index.html beside the console output: in the test directory.
    let console = output(
        Command::new("node").arg(&viewer).arg("-r").arg(&junit).args(["-c", "-n", "-C", "false"]).current_dir(&run.dir),
    );
    for name in ["passes", "fails", "silent", "flaky", "late"] {
        assert!(console.contains(name), "xunit-viewer did not show {name}:\n{console}");
    }
    let html = run.dir.join("viewer.html");
    output(Command::new("node").arg(&viewer).arg("-r").arg(&junit).arg("-o").arg(&html));
    assert!(std::fs::metadata(&html).is_ok_and(|m| m.len() > 1000));
}

#[test]
fn without_a_workspace_file_paths_are_relative_to_the_git_top_level() {
    let tasks = "
        - id: passes
          prompt: pass
          grade: [{type: contains, value: ok}]
        ";
    let test = Test::new().write("sub/agent.sh", AGENT).write("sub/evalgate.yaml", &suite("", tasks));
    output(Command::new("git").args(["init", "-q"]).arg(test.path()));
    // Run from `sub/`: the paths are the repository's, not the working directory's.
    let test = test.args(&["run", "evalgate.yaml", "--no-github"]);
    let mut cmd = test.command();
    let status = cmd.current_dir(test.path().join("sub")).status().unwrap();
    assert_eq!(status.code(), Some(0));
    let junit = std::fs::read_to_string(test.path().join("sub/evalgate-out/junit.xml")).unwrap();
    assert!(junit.contains("file=\"sub/evalgate.yaml\""), "{junit}");
}
