//! `--changed-since`: a mutation table through the binary (each kind of edit runs exactly
//! the tasks it affects), a docs-only change that runs nothing and is green only on the
//! base's evidence, a base that is gone or stale, and a stale carry the audit catches.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::cassettes::openai;
use crate::common::server::Server;
use crate::common::unindent;
use crate::mcp::python;

const KEY: &str = "sk-changed-test-4f1e9a";

/// A command agent that echoes its prompt, unless a file `broken` is there (an input it
/// reads that no key names).
const AGENT: &str = "#!/bin/sh\nif [ -f broken ]; then echo wrong; else echo \"$1\"; fi\n";
/// Another command agent, answering JSON.
const AGENT2: &str = "#!/bin/sh\nprintf '{\"answer\": \"%s\"}\\n' \"$*\"\n";
const GRADER: &str = "#!/bin/sh\nexit 0\n";

const SUITE: &str = "
    evalgate: 1
    suite: changed
    vars: {greeting: hello}
    agents:
      cmd: {command: [./agent.sh, '{prompt}']}
      cmd2: {command: [./agent2.sh, --mode, fast, '{prompt}']}
      model: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}
      model2: {provider: openai, model: gpt-4o, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}
    mcp_servers:
      fx: {command: [<python>, fx_server.py, --release=1]}
      fy: {command: [<python>, fy_server.py]}
    tasks:
      - {id: c1, agent: cmd, prompt: '{vars.greeting} one', grade: [{type: contains, value: one}]}
      - {id: c2, agent: cmd, prompt: two, grade: [{type: command, run: ./grade.sh}]}
      - {id: c3, agent: cmd2, prompt: three, grade: [{type: json_schema, schema_file: schema.json}]}
      - {id: c4, agent: cmd2, prompt: four, inputs: ['data/*.txt'], grade: [{type: contains, value: four}]}
      - {id: m1, agent: model, prompt: Capital of France?, grade: [{type: contains, value: Paris}]}
      - {id: m2, agent: model2, prompt: Capital of France?, grade: [{type: contains, value: Paris}]}
      - {id: x1, level: execution, call: {server: fx, tool: add, arguments: {a: 2, b: 3}}, grade: [{type: contains, value: '5'}]}
      - {id: y1, level: execution, call: {server: fy, tool: add, arguments: {a: 2, b: 3}}, grade: [{type: contains, value: '5'}]}
    ";

const ALL: [&str; 8] = ["c1", "c2", "c3", "c4", "m1", "m2", "x1", "y1"];

fn evalgate(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"));
    command.current_dir(dir).args(args).env("EVALGATE_TEST_KEY", KEY);
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("GITHUB_") || k.ends_with("_BASE_URL")) {
        command.env_remove(name);
    }
    command.output().unwrap()
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    if name.ends_with(".sh") {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json(dir: &Path, name: &str) -> Value {
    serde_json::from_str(&read(dir, name)).unwrap()
}

/// The suite's files, its cassette recorded against a stand-in, and a base run replayed
/// from it in `base/` (every task passed): the state every mutation starts from.
fn based() -> (tempfile::TempDir, Server) {
    let server = Server::start(|_| (200, openai("answer: Paris")));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let suite = unindent(SUITE).replace("<url>", &server.url()).replace("<python>", &python());
    write(d, "evalgate.yaml", &suite);
    write(d, "agent.sh", AGENT);
    write(d, "agent2.sh", AGENT2);
    write(d, "grade.sh", GRADER);
    write(d, "schema.json", r#"{"type": "object", "required": ["answer"]}"#);
    write(d, "data/one.txt", "one");
    write(d, "README.md", "# the evals\n");
    let server_py = include_str!("../fixtures/mcp/fixture_server.py");
    write(d, "fx_server.py", server_py);
    write(d, "fy_server.py", server_py);
    let recorded = evalgate(d, &["run", "--record", "--out", "recorded"]);
    assert_eq!(recorded.status.code(), Some(0), "{}", String::from_utf8_lossy(&recorded.stderr));
    let base = evalgate(d, &["run", "--replay", "--out", "base"]);
    assert_eq!(base.status.code(), Some(0), "{}", String::from_utf8_lossy(&base.stderr));
    (dir, server)
}

/// A run with `--changed-since base` and no audit: the tasks that ran, and the results.
fn changed_run(d: &Path, base: &str, extra: &[&str]) -> (BTreeSet<String>, Value, std::process::Output) {
    let out = format!("out-{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos());
    let mut args = vec!["run", "--replay", "--changed-since", base, "--out", &out];
    args.extend(extra);
    let output = evalgate(d, &args);
    let results = json(d, &format!("{out}/results.json"));
    let ran = results["changed_since"]["ran"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    (ran, results, output)
}

/// An edit: a file written (`Some`) or removed (`None`).
type Edit = (&'static str, Option<String>);

/// Each kind of edit runs exactly the tasks it affects: none more, none fewer.
#[test]
fn each_kind_of_edit_runs_exactly_the_tasks_it_affects() {
    let (dir, _server) = based();
    let d = dir.path();
    let suite = read(d, "evalgate.yaml");
    let with = |from: &str, to: &str| {
        assert!(suite.contains(from), "{from}");
        vec![("evalgate.yaml", Some(suite.replacen(from, to, 1)))]
    };
    let cassette = read(d, "cassettes/changed.jsonl");
    let gpt4o_entry = cassette.lines().find(|l| l.contains(r#""model":"gpt-4o""#)).expect("a gpt-4o entry").to_owned();
    let edited_entry = gpt4o_entry.replace("answer: Paris", "answer: Paris, France");
    assert_ne!(gpt4o_entry, edited_entry);
    let table: Vec<(&str, Vec<Edit>, &[&str])> = vec![
        ("a grader script", vec![("grade.sh", Some(format!("{GRADER}# v2\n")))], &["c2"]),
        ("a prompt", with("prompt: two", "prompt: two too"), &["c2"]),
        ("a declared input file (a fixture)", vec![("data/one.txt", Some("uno".into()))], &["c4"]),
        ("a file added under a declared glob", vec![("data/two.txt", Some("two".into()))], &["c4"]),
        ("a model id", with("model: gpt-4o,", "model: gpt-4.1,"), &["m2"]),
        ("an agent's argv", with("--mode, fast", "--mode, slow"), &["c3", "c4"]),
        ("an env var added to an agent", with("cmd: {command", "cmd: {env: {EXTRA: x}, command"), &["c1", "c2"]),
        ("an MCP server's version", with("--release=1", "--release=3"), &["x1"]),
        (
            "an MCP server's source",
            vec![("fx_server.py", Some(format!("{}\n# patched\n", read(d, "fx_server.py"))))],
            &["x1"],
        ),
        (
            "a cassette entry",
            vec![("cassettes/changed.jsonl", Some(cassette.replace(&gpt4o_entry, &edited_entry)))],
            &["m2"],
        ),
        ("a schema file", vec![("schema.json", Some(r#"{"type": "object"}"#.into()))], &["c3"]),
        ("a variable's value", with("greeting: hello", "greeting: hi"), &["c1"]),
        ("an agent's script", vec![("agent.sh", Some(format!("{AGENT}# v2\n")))], &["c1", "c2"]),
        ("a task's trials", with("id: c3, agent: cmd2,", "id: c3, repeat: 2, agent: cmd2,"), &["c3"]),
        ("an inline grader", with("value: '5'}]}\n  - {id: y1", "value: '5 '}]}\n  - {id: y1"), &["x1"]),
        (
            "a task added",
            vec![(
                "evalgate.yaml",
                Some(format!(
                    "{suite}  - {{id: c5, agent: cmd, prompt: five, grade: [{{type: contains, value: five}}]}}\n"
                )),
            )],
            &["c5"],
        ),
        ("docs only", vec![("README.md", Some("# the evals, reworded\n".into()))], &[]),
    ];
    let mut failures = Vec::new();
    for (kind, edits, expected) in &table {
        let before: Vec<(&str, Option<String>)> =
            edits.iter().map(|(f, _)| (*f, std::fs::read_to_string(d.join(f)).ok())).collect();
        for (file, text) in edits {
            match text {
                Some(text) => write(d, file, text),
                None => std::fs::remove_file(d.join(file)).unwrap(),
            }
        }
        let (ran, _, _) = changed_run(d, "base/results.json", &["--audit-rate", "0"]);
        let want: BTreeSet<String> = expected.iter().map(|s| (*s).to_owned()).collect();
        if ran != want {
            failures.push(format!("{kind}: ran {ran:?}, expected {want:?}"));
        }
        for (file, text) in before {
            match text {
                Some(text) => write(d, file, &text),
                None => std::fs::remove_file(d.join(file)).unwrap(),
            }
        }
    }
    // evalgate's own version: a base recorded by another version runs everything.
    let mut old = json(d, "base/results.json");
    for task in old["tasks"].as_array_mut().unwrap() {
        task["fingerprint"]["inputs"]["evalgate"] = "0.0.1".into();
    }
    write(d, "old-version.json", &old.to_string());
    let (ran, _, _) = changed_run(d, "old-version.json", &["--audit-rate", "0"]);
    if ran != ALL.iter().map(|s| (*s).to_owned()).collect() {
        failures.push(format!("evalgate's version: ran {ran:?}, expected every task"));
    }
    assert!(failures.is_empty(), "{} of {} kinds of edit:\n{}", failures.len(), table.len() + 1, failures.join("\n"));
}

/// Nothing changed: nothing runs, and the run is green on the base's evidence, each task
/// carried with where from; with the base gone, or unreadable, every task runs, saying why.
#[test]
fn a_docs_only_change_runs_nothing_and_a_missing_base_runs_everything() {
    let (dir, _server) = based();
    let d = dir.path();
    write(d, "README.md", "# reworded\n");
    let (ran, results, output) = changed_run(d, "base/results.json", &["--audit-rate", "0"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(ran.is_empty(), "{ran:?}");
    let base = json(d, "base/results.json");
    for task in results["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "passed");
        assert_eq!(task["carried"]["run_id"], base["run_id"], "{task}");
        assert_eq!(
            task["trials"],
            base["tasks"].as_array().unwrap().iter().find(|t| t["id"] == task["id"]).unwrap()["trials"]
        );
    }
    assert_eq!(results["changed_since"]["carried"].as_array().unwrap().len(), ALL.len());
    // Green only with the evidence: a carried pass whose trials show a failure runs.
    let mut lying = base.clone();
    lying["tasks"][0]["trials"][0]["status"] = "failed".into();
    write(d, "lying.json", &lying.to_string());
    let (ran, _, _) = changed_run(d, "lying.json", &["--audit-rate", "0"]);
    assert_eq!(ran, BTreeSet::from(["c1".to_owned()]));
    // A base that errored or was interrupted is never carried.
    let mut interrupted = base.clone();
    interrupted["interrupted"] = true.into();
    write(d, "interrupted.json", &interrupted.to_string());
    let (ran, results, _) = changed_run(d, "interrupted.json", &["--audit-rate", "0"]);
    assert_eq!(ran.len(), ALL.len());
    assert!(results["changed_since"]["ran"]["c1"].as_str().unwrap().contains("did not finish"), "{results}");
    // The base artifact gone: everything runs, and stderr says why.
    let (ran, results, output) = changed_run(d, "gone/results.json", &["--audit-rate", "0"]);
    assert_eq!(ran.len(), ALL.len());
    assert!(results["changed_since"]["everything"].as_str().unwrap().starts_with("cannot read the base run"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--changed-since: every task runs: cannot read the base run gone/results.json"),
        "{stderr}"
    );
    // Too old a base: everything runs.
    let (ran, results, _) = changed_run(d, "base/results.json", &["--max-carry-age", "1ns"]);
    assert_eq!(ran.len(), ALL.len());
    assert!(results["changed_since"]["everything"].as_str().unwrap().contains("--max-carry-age"));
    // The reports say what was carried, and from where.
    write(d, "README.md", "# reworded again\n");
    let out = "shown";
    let shown = evalgate(d, &["run", "--replay", "--changed-since", "base", "--audit-rate", "0", "--out", out, "-v"]);
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert!(stderr.contains("CARRY passed c1: from run"), "{stderr}");
    let junit = read(d, "shown/junit.xml");
    assert!(junit.contains("<property name=\"carried_run_id\""), "{junit}");
    let md = read(d, "shown/summary.md");
    assert!(md.contains("Carried forward (8), not run"), "{md}");
    assert!(read(d, "shown/report.html").contains("carried from run"));
}

/// The tasks a seed's audit at `rate` re-runs (as `fingerprint::changes::audit_sample`
/// ranks them), for a test that needs a given task among them.
fn audited(seed: u64, rate: f64) -> Vec<&'static str> {
    use sha2::{Digest, Sha256};
    let mut ranked: Vec<(u64, &str)> = ALL
        .iter()
        .map(|id| {
            let digest = Sha256::digest(format!("{seed}\0{id}").as_bytes());
            (u64::from_be_bytes(digest[..8].try_into().unwrap()), *id)
        })
        .collect();
    ranked.sort_unstable();
    ranked.into_iter().take((rate * ALL.len() as f64).ceil() as usize).map(|(_, id)| id).collect()
}

/// A carry gone stale (the agent reads a file no key names, and it changed): the audit
/// re-runs a carried task, finds its verdict changed, and every carried task runs.
#[test]
fn the_audit_catches_a_stale_carry_and_then_everything_runs() {
    let (dir, _server) = based();
    let d = dir.path();
    write(d, "broken", "");
    let seed = (0..).find(|&s| audited(s, 0.5).contains(&"c1")).unwrap();
    let seed = seed.to_string();
    let (ran, results, output) = changed_run(d, "base/results.json", &["--audit-rate", "0.5", "--audit-seed", &seed]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "--changed-since: the audit found a stale carry: c1 (passed carried, failed now); every carried task runs"
        ),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(1));
    let audited: BTreeSet<String> = audited(seed.parse().unwrap(), 0.5).iter().map(|s| (*s).to_owned()).collect();
    let recorded: BTreeSet<String> = results["changed_since"]["audited"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(recorded, audited);
    assert_eq!(ran.len(), ALL.len(), "{results}");
    assert!(results["tasks"].as_array().unwrap().iter().all(|t| t["carried"].is_null()));
    assert_eq!(results["tasks"].as_array().unwrap().len(), ALL.len());
    // Without the audit the stale carry goes unseen: why the audit's default is above 0.
    let (_, results, output) = changed_run(d, "base/results.json", &["--audit-rate", "0"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(results["changed_since"]["carried"].as_array().unwrap().len(), ALL.len());
}

/// The action's `changed-since` input reaches the run: a base that is not there runs
/// every task, saying why, and the run's results record it.
#[test]
fn the_action_input_passes_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    let quickstart = std::fs::canonicalize("examples/quickstart/evalgate.yaml").unwrap();
    let run = std::process::Command::new("bash")
        .arg(std::fs::canonicalize("scripts/action-run.sh").unwrap())
        .current_dir(dir.path())
        .env("EVALGATE_BIN", env!("CARGO_BIN_EXE_evalgate"))
        .env("INPUT_SUITE", &quickstart)
        .env("INPUT_OUT", "reports")
        .env("INPUT_CHANGED_SINCE", "no-base.json")
        .env("INPUT_COMMENT", "false")
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let results = json(dir.path(), "reports/results.json");
    assert!(results["changed_since"]["everything"].as_str().unwrap().contains("no-base.json"), "{results}");
}

/// `check -v` names each task whose fingerprint may miss an input (it starts a program and
/// declares no `inputs:`), with its line; a task that declares them is not listed.
#[test]
fn check_verbose_lists_the_tasks_whose_fingerprint_may_be_incomplete() {
    let run = crate::common::Test::new()
        .write("agent.sh", AGENT)
        .suite(
            "
            evalgate: 1
            suite: s
            agents:
              bot: {command: [./agent.sh, '{prompt}']}
            tasks:
              - {id: declared, agent: bot, prompt: x, inputs: ['*.sh'], grade: [{type: contains, value: x}]}
              - {id: undeclared, agent: bot, prompt: y, grade: [{type: contains, value: y}]}
              - id: scripted
                agent: bot
                prompt: z
                inputs: ['*.sh']
                grade: [{type: command, run: ./agent.sh}]
            ",
        )
        .args(&["check", "-v"])
        .run();
    run.expect_code(0).expect_messages(
        "
        ok: s (evalgate.yaml): 3 task(s), 1 agent(s); preflight passed
        fingerprints: s: 1 task(s) may have inputs evalgate cannot see; --changed-since carries them past a change to one unless the task lists them in `inputs:`
          undeclared (evalgate.yaml:7): agent command: what it reads is not declared (`inputs:`)
        ",
    );
}
