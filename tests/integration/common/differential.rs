//! The differential harnesses' one comparison: evalgate's verdicts on the files a peer's
//! verdicts were recorded for (`VERDICTS.tsv`: file, task, status), never a pass the peer
//! failed, every disagreement listed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The peer's recorded verdicts, by (file, task).
pub fn recorded(verdicts: &Path) -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(verdicts).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            ((cols[0].to_owned(), cols[1].to_owned()), cols[2].to_owned())
        })
        .collect()
}

/// How evalgate's verdicts compare with the peer's.
pub struct Compared {
    pub agree: usize,
    /// `FILE TASK: PEER x, evalgate y`, one a disagreement.
    pub differ: Vec<String>,
    /// `FILE TASK` where evalgate passes what the peer fails.
    pub false_greens: Vec<String>,
}

impl Compared {
    pub fn share(&self, of: usize) -> f64 {
        self.agree as f64 / of as f64
    }
}

/// Runs `evalgate` on each file of `expected` and compares its verdicts with `peer`'s; a task
/// only one side has fails the test (a test the peer's run lost, as AgentV crashed on one,
/// is missing from the record, never counted as agreed).
pub fn compare(
    peer: &str,
    expected: &BTreeMap<(String, String), String>,
    evalgate: impl Fn(&str) -> BTreeMap<String, String>,
) -> Compared {
    let files: BTreeSet<&String> = expected.keys().map(|(f, _)| f).collect();
    let mut compared = Compared { agree: 0, differ: Vec::new(), false_greens: Vec::new() };
    for file in files {
        let got = evalgate(file);
        let unrecorded: Vec<&String> =
            got.keys().filter(|id| !expected.contains_key(&(file.clone(), (*id).clone()))).collect();
        assert!(unrecorded.is_empty(), "{file}: tasks with no recorded {peer} verdict: {unrecorded:?}");
        for ((f, id), theirs) in expected.iter().filter(|((f, _), _)| f == file) {
            let ours = got.get(id).unwrap_or_else(|| panic!("{f}: evalgate ran no task `{id}`: {got:?}"));
            if ours == theirs {
                compared.agree += 1;
                continue;
            }
            compared.differ.push(format!("{f} {id}: {peer} {theirs}, evalgate {ours}"));
            if ours == "passed" {
                compared.false_greens.push(format!("{f} {id}"));
            }
        }
    }
    compared
}
