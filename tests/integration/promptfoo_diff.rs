//! The promptfoo differential test: the configs of tests/fixtures/promptfoo-diff (written
//! by scripts/promptfoo-diff-gen.py: every assertion evalgate runs, `not-` forms, weights,
//! thresholds, sets, `defaultTest`, tests from CSV / JSONL / YAML files, var expansion, two
//! providers as arms; answers good, bad, partial and hostile) run through `evalgate run`;
//! each test × prompt × provider verdict is compared with promptfoo 0.123.1's own, recorded
//! in VERDICTS.tsv by scripts/promptfoo-diff-record.sh (CI reads the record and never needs
//! promptfoo). At least 99 % of at least 1,000 verdicts agree, and evalgate never passes a
//! run promptfoo fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::common::{Test, copy_dir};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/promptfoo-diff")
}

/// promptfoo's verdicts: (file, task) → `passed` / `failed` / `error`.
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

/// evalgate's verdict on each task of `file`, run on its own (`evalgate run FILE`).
fn evalgate_verdicts(file: &str) -> BTreeMap<String, String> {
    let test = Test::new();
    copy_dir(&fixtures(), test.path());
    let run = test.args(&["run", file, "-j", "2"]).run();
    assert!(run.code == 0 || run.code == 1, "{file}: exit {}\n{}", run.code, run.stderr);
    let results = run.results();
    let tasks = results["tasks"].as_array().unwrap();
    tasks.iter().map(|t| (t["id"].as_str().unwrap().to_owned(), t["status"].as_str().unwrap().to_owned())).collect()
}

#[test]
fn evalgate_gives_promptfoo_s_verdicts_and_never_passes_what_promptfoo_fails() {
    let expected = recorded();
    let files: BTreeSet<&String> = expected.keys().map(|(f, _)| f).collect();
    assert!(files.len() >= 5 && expected.len() >= 1000, "{} verdicts in {} files", expected.len(), files.len());
    let mut agree = 0;
    let mut differ = Vec::new();
    let mut false_greens = Vec::new();
    for file in files {
        let got = evalgate_verdicts(file);
        let unrecorded: Vec<&String> =
            got.keys().filter(|id| !expected.contains_key(&(file.clone(), (*id).clone()))).collect();
        assert!(unrecorded.is_empty(), "{file}: tasks with no recorded promptfoo verdict: {unrecorded:?}");
        for ((f, id), promptfoo) in expected.iter().filter(|((f, _), _)| f == file) {
            let evalgate = got.get(id).unwrap_or_else(|| panic!("{f}: evalgate ran no task `{id}`"));
            if evalgate == promptfoo {
                agree += 1;
                continue;
            }
            differ.push(format!("{f} {id}: promptfoo {promptfoo}, evalgate {evalgate}"));
            if evalgate == "passed" {
                false_greens.push(format!("{f} {id}"));
            }
        }
    }
    let share = agree as f64 / expected.len() as f64;
    assert!(false_greens.is_empty(), "evalgate passes what promptfoo fails: {false_greens:#?}");
    assert!(share >= 0.99, "{agree} of {} verdicts agree ({:.1} %): {differ:#?}", expected.len(), share * 100.0);
}
