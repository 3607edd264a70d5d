//! The AgentV differential test: the files of tests/fixtures/agentv-diff (probes of each
//! grading rule evalgate follows for AgentV, and rewritten excerpts of upstream files) run
//! through evalgate with the same scripted agent AgentV ran them with; each verdict is
//! compared with AgentV 4.42.4's own, recorded in VERDICTS.tsv by
//! scripts/agentv-diff-record.sh (CI reads the record and never needs AgentV). At least
//! 99 % of the verdicts agree, and evalgate never passes a test AgentV fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::Test;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agentv-diff")
}

/// AgentV's verdicts: (file, test) → `passed` / `failed`.
fn recorded() -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(fixtures().join("VERDICTS.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            ((cols[0].to_owned(), cols[1].to_owned()), cols[2].to_owned())
        })
        .collect()
}

/// evalgate's verdict on each test of `file`, imported into a suite whose agent is the
/// scripted one AgentV ran.
fn evalgate_verdicts(file: &str) -> BTreeMap<String, String> {
    let mut test = Test::new();
    copy_dir(&fixtures(), test.path());
    test = test.suite(&format!(
        "
        evalgate: 1
        suite: agentv-diff
        agents:
          scripted: {{command: [python3, agent.py, '{{prompt}}']}}
        imports:
          - {{format: agentv, path: {file}, agent: scripted}}
        "
    ));
    let run = test.args(&["run", "-j", "2"]).run();
    assert!(run.code == 0 || run.code == 1, "{file}: exit {}\n{}", run.code, run.stderr);
    let results = run.results();
    let tasks = results["tasks"].as_array().unwrap();
    tasks.iter().map(|t| (t["id"].as_str().unwrap().to_owned(), t["status"].as_str().unwrap().to_owned())).collect()
}

#[test]
fn evalgate_gives_agentv_s_verdicts_and_never_passes_what_agentv_fails() {
    let expected = recorded();
    let files: std::collections::BTreeSet<&String> = expected.keys().map(|(f, _)| f).collect();
    assert!(files.len() >= 4 && expected.len() >= 50, "{} verdicts in {} files", expected.len(), files.len());
    let mut agree = 0;
    let mut differ = Vec::new();
    let mut false_greens = Vec::new();
    for file in files {
        let got = evalgate_verdicts(file);
        for ((f, id), agentv) in expected.iter().filter(|((f, _), _)| f == file) {
            let evalgate = got.get(id).unwrap_or_else(|| panic!("{f}: evalgate ran no task `{id}`: {got:?}"));
            if evalgate == agentv {
                agree += 1;
                continue;
            }
            differ.push(format!("{f} {id}: AgentV {agentv}, evalgate {evalgate}"));
            if evalgate == "passed" {
                false_greens.push(format!("{f} {id}"));
            }
        }
    }
    let share = agree as f64 / expected.len() as f64;
    assert!(false_greens.is_empty(), "evalgate passes what AgentV fails: {false_greens:#?}");
    assert!(share >= 0.99, "{agree} of {} verdicts agree ({:.1} %): {differ:#?}", expected.len(), share * 100.0);
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
