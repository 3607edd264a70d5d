//! Running under GitHub Actions: step summary, outputs, annotations, masks; the action's
//! scripts and its action.yml.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{ECHO_AGENT, Test, suite};

/// Parses `$GITHUB_OUTPUT` (`name<<DELIM` … `DELIM`, or `name=value`).
fn outputs(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            out.insert(name.to_owned(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            out.insert(name.to_owned(), value.to_owned());
        }
    }
    out
}

#[test]
fn under_github_actions_the_run_publishes_summary_outputs_annotations_and_masks() {
    let tasks = "  - id: good\n    prompt: hello\n    grade: [{type: contains, value: hello}]\n  - id: bad\n    prompt: 'a: b, 50%'\n    grade: [{type: contains, value: zzz}]\n";
    let test = Test::new()
        .write("evals/agent.sh", ECHO_AGENT)
        .write("evals/evalgate.yaml", &suite("env: {required_env: [EVALGATE_TEST_SECRET]}", tasks))
        .write("summary.md", "previous step's summary\n")
        .write("output.txt", "");
    let dir = test.path().to_owned();
    let run = test
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", dir.join("summary.md").to_str().unwrap())
        .env("GITHUB_OUTPUT", dir.join("output.txt").to_str().unwrap())
        .env("GITHUB_WORKSPACE", dir.to_str().unwrap())
        .env("EVALGATE_TEST_SECRET", "hunter2-very-secret")
        .args(&["run", "evals/evalgate.yaml"]);
    let mut cmd = run.command();
    cmd.env("GITHUB_ACTIONS", "true");
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.lines().next().unwrap().starts_with("::add-mask::hunter2-very-secret"), "{stdout}");
    assert!(stdout.contains("::group::evalgate: tasks of test.evals.demo") && stdout.contains("::endgroup::"));
    let annotation = stdout.lines().find(|l| l.starts_with("::error ")).expect("an annotation");
    assert_eq!(
        annotation,
        "::error file=evals/evalgate.yaml,line=10,title=bad (failed)::`contains` failed: output does not contain \"zzz\""
    );

    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(summary.starts_with("previous step's summary\n## ❌ evalgate: `test.evals.demo` failed"), "{summary}");
    let outputs = outputs(&std::fs::read_to_string(dir.join("output.txt")).unwrap());
    assert_eq!(outputs["passed"], "false");
    assert_eq!(outputs["score"], "0.5000");
    assert_eq!(outputs["pass-rate"], "0.5000");
    assert_eq!(outputs["results-path"], "evalgate-out/results.json");
    assert_eq!(outputs["junit-path"], "evalgate-out/junit.xml");
    assert_eq!(outputs["summary-path"], "evalgate-out/summary.md");
}

#[test]
fn annotations_are_capped_at_ten_then_counted() {
    let tasks: String =
        (0..12).map(|i| format!("  - id: t{i}\n    prompt: x\n    grade: [{{type: contains, value: y}}]\n")).collect();
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", &tasks))
        .args(&["run", "--github"])
        .run();
    run.expect_code(1);
    assert_eq!(run.stdout.lines().filter(|l| l.starts_with("::error ")).count(), 10);
    assert!(
        run.stdout.contains("::notice::2 more failing tasks are not annotated; see the step summary"),
        "{}",
        run.stdout
    );
    let quiet = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", &tasks))
        .env("GITHUB_ACTIONS", "true")
        .args(&["run", "--no-github"])
        .run();
    assert!(!quiet.stdout.contains("::error"));
}

#[test]
fn action_yml_maps_every_output_and_never_interpolates_inputs_in_run() {
    let action: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string("action.yml").unwrap()).unwrap();
    let step_ids: Vec<&str> =
        action["runs"]["steps"].as_sequence().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    for (name, output) in action["outputs"].as_mapping().unwrap() {
        let value = output["value"].as_str().unwrap();
        let name = name.as_str().unwrap();
        assert_eq!(value, format!("${{{{ steps.run.outputs.{name} }}}}"), "output {name}");
        assert!(step_ids.contains(&"run"));
    }
    for step in action["runs"]["steps"].as_sequence().unwrap() {
        let run = step["run"].as_str().unwrap_or_default();
        assert!(!run.contains("${{"), "a run: interpolates an expression: {run}");
    }
    assert_eq!(action["runs"]["using"], "composite");
}

#[test]
fn the_action_scripts_install_a_given_binary_and_run_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output.txt");
    let summary = dir.path().join("summary.md");
    std::fs::write(&output, "").unwrap();
    let root = std::fs::canonicalize(".").unwrap();
    let bin = env!("CARGO_BIN_EXE_evalgate");
    let script = |name: &str| root.join("scripts").join(name);

    let install = Command::new(script("action-install.sh"))
        .env("INPUT_BINARY_PATH", bin)
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_ACTION_PATH", &root)
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    assert_eq!(outputs(&std::fs::read_to_string(&output).unwrap())["bin"], bin);

    let missing = Command::new(script("action-install.sh"))
        .env("INPUT_BINARY_PATH", "/no/such/evalgate")
        .env("GITHUB_OUTPUT", &output)
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stdout)
            .contains("::error title=evalgate::binary-path /no/such/evalgate is not an executable file")
    );

    std::fs::write(&output, "").unwrap();
    let run = Command::new(script("action-run.sh"))
        .current_dir(dir.path())
        .env("EVALGATE_BIN", bin)
        .env("INPUT_SUITE", root.join("examples/quickstart/evalgate.yaml"))
        .env("INPUT_ARGS", "-j 2 --tag billing")
        .env("INPUT_OUT", "reports")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let outputs = outputs(&std::fs::read_to_string(&output).unwrap());
    assert_eq!(outputs["passed"], "true");
    assert_eq!(outputs["results-path"], "reports/results.json");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("reports/results.json")).unwrap()).unwrap();
    assert_eq!(results["tasks"].as_array().unwrap().len(), 1, "--tag billing reached evalgate");
    assert!(Path::new(&summary).exists());
}

#[test]
fn init_writes_a_working_suite_and_a_workflow_once() {
    let test = Test::new();
    let dir = test.path().to_owned();
    let init = test.args(&["init"]).run();
    init.expect_code(0);
    for f in ["evalgate.yaml", "evals/agent.sh", ".github/workflows/evalgate.yml"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let evalgate =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap();
    assert_eq!(evalgate(&["check"]).status.code(), Some(0));
    assert_eq!(evalgate(&["run"]).status.code(), Some(0));
    let again = evalgate(&["init"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains("not overwriting evalgate.yaml, evals/agent.sh, .github/workflows/evalgate.yml")
    );
}
