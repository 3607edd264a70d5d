//! Where an AgentV file's tests are: inline, in an external list (`tests: ./cases.jsonl`
//! or `cases.yaml`), or spliced in from `file://` entries of the inline list, as AgentV
//! 4.x reads them (`loaders/case-file-loader.ts`). Each test keeps its own file and place,
//! so problems and task origins point into the file that holds it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::super::native_text::glob_files;
use super::super::{Origin, Problems};
use crate::yaml::Document;

/// One test and where it is.
pub(super) struct Case {
    pub test: Value,
    /// The JSON pointer problems with it start with (`/tests/0`, `cases.jsonl#/3`).
    pub at: String,
    pub origin: Origin,
}

/// The tests of `doc` (the file `file`), from wherever `tests_at` points.
pub(super) fn cases(tests: &Value, tests_at: &str, file: &Path, problems: &mut Problems) -> Vec<Case> {
    let dir = file.parent().unwrap_or(Path::new(""));
    match tests {
        Value::String(path) => from_file(dir, path, tests_at, problems),
        Value::Array(list) => {
            let mut cases = Vec::new();
            for (i, t) in list.iter().enumerate() {
                let at = format!("{tests_at}/{i}");
                match t.as_str().and_then(|s| s.strip_prefix("file://")) {
                    Some(path) => match glob_files(dir, path) {
                        Ok(files) if !files.is_empty() => {
                            for f in files {
                                let shown = f.strip_prefix(dir).unwrap_or(&f).display().to_string();
                                cases.extend(from_file(dir, &shown, &at, problems));
                            }
                        }
                        Ok(_) => problems.push((at, format!("no file matches `{path}`"))),
                        Err(e) => problems.push((at, e)),
                    },
                    None => cases.push(Case {
                        test: t.clone(),
                        origin: Origin { file: file.to_owned(), at: format!("{}[{i}]", &tests_at[1..]), line: None },
                        at,
                    }),
                }
            }
            cases
        }
        _ => {
            problems.push((tests_at.into(), "`tests` must be a list of tests or the path of a file of tests".into()));
            Vec::new()
        }
    }
}

/// The tests of an external file: a YAML list (`.yaml`, `.yml`) or one JSON object a line
/// (`.jsonl`); a directory of `case.yaml` files is refused.
fn from_file(dir: &Path, path: &str, at: &str, problems: &mut Problems) -> Vec<Case> {
    let file: PathBuf = dir.join(path);
    if file.is_dir() {
        problems.push((at.into(), format!("`{path}` is a directory: a directory of case.yaml files is not supported; list the tests in a .yaml or .jsonl file")));
        return Vec::new();
    }
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or_default().to_lowercase();
    if !matches!(ext.as_str(), "yaml" | "yml" | "jsonl") {
        problems.push((at.into(), format!("`{path}`: an external test file is .yaml, .yml or .jsonl, as in AgentV")));
        return Vec::new();
    }
    let text = match crate::yaml::read(&file) {
        Ok(text) => text,
        Err(e) => {
            problems.push((at.into(), format!("cannot read `{path}`: {e}")));
            return Vec::new();
        }
    };
    let case = |test: Value, i: usize, line: Option<usize>| Case {
        test,
        at: format!("{path}#/{i}"),
        origin: Origin { file: file.clone(), at: format!("[{i}]"), line },
    };
    if ext == "jsonl" {
        let mut cases = Vec::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let i = cases.len();
            match serde_json::from_str::<Value>(line) {
                Ok(test @ Value::Object(_)) => cases.push(case(test, i, Some(n + 1))),
                Ok(_) => problems.push((format!("{path}#/{i}"), "expected a JSON object (a test) on this line".into())),
                Err(e) => problems.push((format!("{path}#/{i}"), format!("not JSON: {e}"))),
            }
        }
        return cases;
    }
    let list = Document::parse(&text)
        .map_err(|e| e.message)
        .and_then(|d| Value::deserialize(d.de(d.root())).map_err(|e| e.to_string()));
    match list {
        Ok(Value::Array(list)) => list.into_iter().enumerate().map(|(i, t)| case(t, i, None)).collect(),
        Ok(_) => {
            problems.push((format!("{path}#"), "an external test file holds a list of tests".into()));
            Vec::new()
        }
        Err(e) => {
            problems.push((at.into(), format!("`{path}` is not YAML: {e}")));
            Vec::new()
        }
    }
}
