//! Where a promptfoo config's tests are (`tests:` inline, a file or glob, or a list mixing
//! both; CSV, JSONL, YAML and JSON files), and `defaultTest` and var expansion applied as
//! promptfoo 0.123.1 applies them. Each test keeps its file and place, so a problem with it
//! points into the file that holds it.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::super::native_text::glob_files;
use super::super::{Origin, Problems};
use crate::yaml::Document;

/// One test, `defaultTest` merged in and its vars expanded to one combination.
pub(super) struct Row {
    pub test: Value,
    pub vars: Map<String, Value>,
    /// The JSON pointer its problems start with (`/tests/0`, `tests.csv#/3`).
    pub at: String,
    pub origin: Origin,
    /// Its place among the tests as promptfoo counts them (from 1), for its id.
    pub index: usize,
    /// Which combination of its expanded vars (from 1), when there are several.
    pub combination: Option<usize>,
}

/// The tests as written, each with where it is.
fn written(tests: &Value, file: &Path, problems: &mut Problems) -> Vec<(Value, String, Origin)> {
    let dir = file.parent().unwrap_or(Path::new(""));
    let mut out = Vec::new();
    let from_path = |path: &str, at: &str, out: &mut Vec<(Value, String, Origin)>, problems: &mut Problems| {
        let pattern = path.strip_prefix("file://").unwrap_or(path);
        match glob_files(dir, pattern) {
            Ok(files) if !files.is_empty() => {
                for f in files {
                    let shown = f.strip_prefix(dir).unwrap_or(&f).display().to_string();
                    out.extend(from_file(&f, &shown, at, problems));
                }
            }
            Ok(_) => problems.push((at.into(), format!("no file matches `{pattern}`"))),
            Err(e) => problems.push((at.into(), e)),
        }
    };
    match tests {
        Value::Null => {}
        Value::String(path) => from_path(path, "/tests", &mut out, problems),
        Value::Array(list) => {
            for (i, t) in list.iter().enumerate() {
                let at = format!("/tests/{i}");
                match t {
                    Value::String(path) => from_path(path, &at, &mut out, problems),
                    Value::Object(_) => out.push((
                        t.clone(),
                        at,
                        Origin { file: file.to_owned(), at: format!("tests[{i}]"), line: None },
                    )),
                    _ => problems.push((at, "a test is an object or the path of a file of tests".into())),
                }
            }
        }
        Value::Object(o) if o.contains_key("path") => {
            problems.push(("/tests".into(), "a test generator (`tests: {path: …}`) is not supported".into()))
        }
        _ => problems.push(("/tests".into(), "`tests` is a list of tests or the path of a file of tests".into())),
    }
    out
}

/// promptfoo's `scenarios` as tests, after `tests` (`buildTestsFromSuite`): each scenario's
/// every `config` entry under each of its `tests` (none when it has no `tests`: promptfoo
/// 0.123.1 runs no test of such a scenario), their
/// vars and options merged (the test's over the entry's) and their assertions joined (the
/// entry's first). Scenarios and their tests are written inline.
fn scenario_tests(scenarios: &Value, file: &Path, problems: &mut Problems) -> Vec<(Value, String, Origin)> {
    let mut out = Vec::new();
    let list = match scenarios {
        Value::Null => return out,
        Value::Array(list) => list,
        _ => {
            problems.push(("/scenarios".into(), "`scenarios` is a list of `{config, tests}`".into()));
            return out;
        }
    };
    let none = Vec::new();
    for (i, scenario) in list.iter().enumerate() {
        let (Some(config), tests) = (
            scenario.get("config").and_then(Value::as_array),
            scenario.get("tests").map_or(Some(&none), Value::as_array),
        ) else {
            problems.push((
                format!("/scenarios/{i}"),
                "a scenario is written inline as `{config: [...], tests: [...]}` (files are not supported)".into(),
            ));
            continue;
        };
        let Some(tests) = tests else {
            problems
                .push((format!("/scenarios/{i}/tests"), "a scenario's `tests` are written inline as a list".into()));
            continue;
        };
        for (j, data) in config.iter().enumerate() {
            for (k, test) in tests.iter().enumerate() {
                let (Some(d), Some(t)) = (data.as_object(), test.as_object()) else {
                    problems.push((
                        format!("/scenarios/{i}"),
                        "a scenario's `config` entries and `tests` are objects".into(),
                    ));
                    continue;
                };
                let mut merged: Map<String, Value> = d.clone();
                merged.extend(t.clone());
                for key in ["vars", "options"] {
                    let mut both = d.get(key).and_then(Value::as_object).cloned().unwrap_or_default();
                    both.extend(t.get(key).and_then(Value::as_object).cloned().unwrap_or_default());
                    merged.insert(key.into(), Value::Object(both));
                }
                let asserts =
                    [d.get("assert"), t.get("assert")].into_iter().flatten().filter_map(Value::as_array).flatten();
                merged.insert("assert".into(), Value::Array(asserts.cloned().collect()));
                let at = format!("/scenarios/{i}/tests/{k}");
                let origin = Origin { file: file.to_owned(), at: format!("scenarios[{i}].config[{j}]"), line: None };
                out.push((Value::Object(merged), at, origin));
            }
        }
    }
    out
}

/// The tests of one file: CSV (a row a test), JSONL (an object a line), YAML or JSON (a list).
fn from_file(file: &Path, shown: &str, at: &str, problems: &mut Problems) -> Vec<(Value, String, Origin)> {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or_default().to_lowercase();
    let text = match crate::yaml::read(file) {
        Ok(text) => text,
        Err(e) => {
            problems.push((at.into(), format!("cannot read `{shown}`: {e}")));
            return Vec::new();
        }
    };
    // A CSV row's problems point at its line (a CSV file is not a tree to look pointers up in).
    let csv = ext == "csv";
    let item = |test: Value, i: usize, line: Option<usize>| {
        let at = match line {
            Some(l) if csv => format!("{shown}#/{i}:{l}"),
            _ => format!("{shown}#/{i}"),
        };
        (test, at, Origin { file: file.to_owned(), at: format!("[{i}]"), line })
    };
    match ext.as_str() {
        "csv" => match csv_rows(&text) {
            Ok(rows) => rows
                .into_iter()
                .enumerate()
                .filter_map(|(i, (line, row))| match csv_test(&row) {
                    Ok(t) => Some(item(t, i, Some(line))),
                    Err(e) => {
                        problems.push((format!("{shown}#/{i}:{line}"), e));
                        None
                    }
                })
                .collect(),
            Err(e) => {
                problems.push((at.into(), format!("`{shown}`: {e}")));
                Vec::new()
            }
        },
        "jsonl" => {
            let mut out = Vec::new();
            for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let i = out.len();
                match serde_json::from_str::<Value>(line) {
                    Ok(t @ Value::Object(_)) => out.push(item(t, i, Some(n + 1))),
                    _ => {
                        problems.push((format!("{shown}#/{i}"), "expected a JSON object (a test) on this line".into()))
                    }
                }
            }
            out
        }
        "yaml" | "yml" | "json" => {
            let list = Document::parse(&text)
                .map_err(|e| e.message)
                .and_then(|d| Value::deserialize(d.de(d.root())).map_err(|e| e.to_string()));
            match list {
                Ok(Value::Array(list)) => list.into_iter().enumerate().map(|(i, t)| item(t, i, None)).collect(),
                Ok(t @ Value::Object(_)) => vec![item(t, 0, None)],
                Ok(_) => {
                    problems.push((format!("{shown}#"), "a file of tests holds a list of tests".into()));
                    Vec::new()
                }
                Err(e) => {
                    problems.push((at.into(), format!("`{shown}` is not YAML: {e}")));
                    Vec::new()
                }
            }
        }
        other => {
            problems.push((
                at.into(),
                format!("`{shown}`: tests from a `.{other}` file are not supported (CSV, JSONL, YAML and JSON are)"),
            ));
            Vec::new()
        }
    }
}

/// A CSV row: the line it starts on, and its cells by the header's names.
type CsvRow = (usize, Map<String, Value>);

/// RFC 4180 rows as maps of the header's names, each with the line it starts on.
fn csv_rows(text: &str) -> Result<Vec<CsvRow>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut records: Vec<(usize, Vec<String>)> = Vec::new();
    let (mut field, mut record, mut quoted, mut line, mut start) = (String::new(), Vec::new(), false, 1, 1);
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => record.push(std::mem::take(&mut field)),
            ('\r', false) if chars.peek() == Some(&'\n') => {}
            ('\n', false) => {
                record.push(std::mem::take(&mut field));
                records.push((start, std::mem::take(&mut record)));
                line += 1;
                start = line;
                any = false;
            }
            (c, _) => {
                if c == '\n' {
                    line += 1;
                }
                field.push(c)
            }
        }
    }
    if quoted {
        return Err("a quoted field is not closed".into());
    }
    if any {
        record.push(field);
        records.push((start, record));
    }
    records.retain(|(_, r)| !(r.len() == 1 && r[0].trim().is_empty()));
    let mut records = records.into_iter();
    let Some((_, header)) = records.next() else { return Ok(Vec::new()) };
    let header: Vec<String> = header.iter().map(|h| h.trim().to_owned()).collect();
    records
        .map(|(line, r)| {
            if r.len() != header.len() {
                return Err(format!("line {line} has {} fields, the header {}", r.len(), header.len()));
            }
            Ok((line, header.iter().cloned().zip(r.into_iter().map(Value::String)).collect()))
        })
        .collect()
}

/// A CSV row as a test (promptfoo's `testCaseFromCsvRow`): columns are vars, except
/// `__expected…` (an assertion each), `__description`, `__threshold`, `__metric`,
/// `__prefix`, `__suffix` and `__metadata:…` (ignored).
fn csv_test(row: &Map<String, Value>) -> Result<Value, String> {
    let mut vars = Map::new();
    let mut asserts = Vec::new();
    let mut test = json!({"options": {}});
    let mut metric = None;
    for (key, value) in row {
        let text = value.as_str().unwrap_or_default();
        if !key.starts_with("__") {
            vars.insert(key.clone(), value.clone());
        } else if key.starts_with("__expected") {
            if !text.trim().is_empty() {
                asserts.push(expected_assertion(text)?);
            }
        } else if key == "__description" {
            test["description"] = json!(text);
        } else if key == "__threshold" {
            // promptfoo's `parseFiniteNumber`: a blank or non-numeric cell leaves it unset.
            if let Some(t) = text.trim().parse::<f64>().ok().filter(|t| t.is_finite()) {
                test["threshold"] = json!(t);
            }
        } else if key == "__metric" {
            metric = Some(text.to_owned());
        } else if key == "__prefix" || key == "__suffix" {
            test["options"][&key[2..]] = json!(text);
        } else if key.starts_with("__metadata") {
            // Metadata labels results in promptfoo's viewer; nothing here reads it.
        } else {
            return Err(format!(
                "the CSV column `{key}` is not supported (`__expected…`, `__description`, `__threshold`, `__metric`, `__prefix`, `__suffix` and `__metadata:…` are)"
            ));
        }
    }
    if let Some(m) = metric {
        for a in &mut asserts {
            a["metric"] = json!(m);
        }
    }
    if test["options"].as_object().is_some_and(Map::is_empty) {
        test.as_object_mut().expect("an object").remove("options");
    }
    test["vars"] = Value::Object(vars);
    test["assert"] = Value::Array(asserts);
    Ok(test)
}

/// promptfoo 0.123.1's assertion types (`BaseAssertionTypesSchema`), which an
/// `__expected` cell may name.
const ASSERTION_TYPES: [&str; 66] = [
    "agent-rubric",
    "answer-relevance",
    "bleu",
    "classifier",
    "contains",
    "contains-all",
    "contains-any",
    "contains-html",
    "contains-json",
    "contains-sql",
    "contains-xml",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "cost",
    "equals",
    "factuality",
    "finish-reason",
    "g-eval",
    "gleu",
    "guardrails",
    "icontains",
    "icontains-all",
    "icontains-any",
    "is-html",
    "is-json",
    "is-refusal",
    "is-sql",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "is-xml",
    "javascript",
    "latency",
    "levenshtein",
    "llm-rubric",
    "pi",
    "meteor",
    "model-graded-closedqa",
    "model-graded-factuality",
    "moderation",
    "perplexity",
    "perplexity-score",
    "python",
    "regex",
    "rouge-n",
    "ruby",
    "similar",
    "similar:cosine",
    "similar:dot",
    "similar:euclidean",
    "starts-with",
    "tool-call-f1",
    "skill-used",
    "trajectory:goal-success",
    "trajectory:tool-args-match",
    "trajectory:step-count",
    "trajectory:tool-sequence",
    "trajectory:tool-used",
    "trace-error-spans",
    "trace-span-count",
    "trace-span-duration",
    "search-rubric",
    "webhook",
    "word-count",
];

/// An `__expected` cell (trimmed) as an assertion, as promptfoo's `assertionFromString`
/// reads it: `javascript:`/`fn:`/`eval:`, `grade:`/`llm-rubric:`, `python:`, then
/// `[not-]TYPE[(THRESHOLD)][:VALUE]` (the types that take a threshold get 0.75 without
/// one), else `equals` the cell.
fn expected_assertion(cell: &str) -> Result<Value, String> {
    static FORM: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let types = ASSERTION_TYPES.map(regex::escape).join("|");
        regex::Regex::new(&format!(r"^(not-)?({types})(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")).expect("valid")
    });
    let cell = cell.trim();
    for (prefix, kind) in
        [("javascript:", "javascript"), ("fn:", "javascript"), ("eval:", "javascript"), ("python:", "python")]
    {
        if let Some(rest) = cell.strip_prefix(prefix) {
            return Ok(json!({"type": kind, "value": rest.trim()}));
        }
    }
    for prefix in ["grade:", "llm-rubric:"] {
        if let Some(rest) = cell.strip_prefix(prefix) {
            return Ok(json!({"type": "llm-rubric", "value": rest}));
        }
    }
    if cell.starts_with("file://") {
        return Err("an `__expected` cell naming a file is not supported".into());
    }
    // The regex's alternation takes the first type that lets the whole cell match, as
    // JavaScript's does; Rust's leftmost-first alternation agrees.
    let Some(c) = FORM.captures(cell) else { return Ok(json!({"type": "equals", "value": cell})) };
    let kind = &c[2];
    let name = if c.get(1).is_some() { format!("not-{kind}") } else { kind.to_owned() };
    let value = c.get(4).map(|m| m.as_str());
    let threshold = c.get(3).and_then(|m| m.as_str().parse::<f64>().ok());
    let mut a = json!({"type": name});
    match kind {
        "contains-all" | "contains-any" | "icontains-all" | "icontains-any" | "contains-json" | "is-json" => {
            if let Some(v) = value {
                a["value"] = json!(v);
            }
        }
        "answer-relevance"
        | "classifier"
        | "context-faithfulness"
        | "context-recall"
        | "context-relevance"
        | "cost"
        | "latency"
        | "levenshtein"
        | "perplexity-score"
        | "perplexity"
        | "rouge-n"
        | "similar"
        | "starts-with" => {
            if let Some(v) = value {
                a["value"] = json!(v.trim());
            }
            a["threshold"] = json!(threshold.unwrap_or(if kind == "similar" { 0.8 } else { 0.75 }));
        }
        _ => {
            if let Some(v) = value {
                a["value"] = json!(v.trim());
            }
        }
    }
    Ok(a)
}

/// Every test, with `defaultTest` applied and its vars expanded (promptfoo's
/// `generateVarCombinations`: a var holding a list of strings takes each in turn; other
/// lists are one value).
pub(super) fn rows(doc: &Value, file: &Path, problems: &mut Problems) -> Vec<Row> {
    let default = match doc.get("defaultTest") {
        None => Value::Null,
        Some(Value::String(s)) => {
            problems.push(("/defaultTest".into(), format!("a `defaultTest` from a file (`{s}`) is not supported")));
            Value::Null
        }
        Some(d) => d.clone(),
    };
    // The keys `merged` applies (and `description`, `metadata`, which change no verdict);
    // any other would be dropped silently.
    for (key, value) in default.as_object().into_iter().flatten() {
        let why = match key.as_str() {
            "vars" | "assert" | "threshold" | "options" | "description" | "metadata" => continue,
            "provider" => super::provider_agents::test_provider_refusal(value),
            _ => format!("the `defaultTest` key `{key}` is not supported"),
        };
        problems.push((format!("/defaultTest/{key}"), why));
    }
    let default_vars = default.get("vars").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut rows = Vec::new();
    let mut tests = written(doc.get("tests").unwrap_or(&Value::Null), file, problems);
    tests.extend(scenario_tests(doc.get("scenarios").unwrap_or(&Value::Null), file, problems));
    for (n, (test, at, origin)) in tests.into_iter().enumerate() {
        if let Some(Value::String(_)) = test.get("vars") {
            problems.push((format!("{at}/vars"), "vars from a file are not supported".into()));
            continue;
        }
        let mut vars = default_vars.clone();
        vars.extend(test.get("vars").and_then(Value::as_object).cloned().unwrap_or_default());
        let expand = test.pointer("/options/disableVarExpansion").and_then(Value::as_bool) != Some(true);
        let combos = if expand { combinations(&vars) } else { vec![vars] };
        let several = combos.len() > 1;
        for (k, vars) in combos.into_iter().enumerate() {
            rows.push(Row {
                test: merged(&default, &test),
                vars,
                at: at.clone(),
                origin: Origin { file: origin.file.clone(), at: origin.at.clone(), line: origin.line },
                index: n + 1,
                combination: several.then_some(k + 1),
            });
        }
    }
    rows
}

/// A test with `defaultTest` under it: its assertions first (unless
/// `options.disableDefaultAsserts`), its `threshold` and `options` where the test sets none.
fn merged(default: &Value, test: &Value) -> Value {
    let mut t = test.clone();
    let own = test.get("assert").and_then(Value::as_array).cloned().unwrap_or_default();
    let skip = test.pointer("/options/disableDefaultAsserts").and_then(Value::as_bool) == Some(true);
    let inherited =
        if skip { Vec::new() } else { default.get("assert").and_then(Value::as_array).cloned().unwrap_or_default() };
    // Where each came from, for problems: `defaultTest` or the test.
    t["__inherited"] = json!(inherited.len());
    t["assert"] = Value::Array(inherited.into_iter().chain(own).collect());
    if t.get("threshold").is_none()
        && let Some(th) = default.get("threshold")
    {
        t["threshold"] = th.clone();
    }
    let mut options = default.get("options").and_then(Value::as_object).cloned().unwrap_or_default();
    // `defaultTest`'s grading provider is the suite's judge.
    options.remove("provider");
    options.extend(test.get("options").and_then(Value::as_object).cloned().unwrap_or_default());
    if !options.is_empty() {
        t["options"] = Value::Object(options);
    }
    t
}

fn combinations(vars: &Map<String, Value>) -> Vec<Map<String, Value>> {
    let mut out = vec![Map::new()];
    for (key, value) in vars {
        let values = match value {
            Value::Array(list) if list.first().is_some_and(Value::is_string) => list.clone(),
            other => vec![other.clone()],
        };
        out = out
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(key.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_with_quotes_newlines_and_expectations() {
        let rows = csv_rows("q,__expected\n\"a, \"\"b\"\"\",contains: x\nc,\"multi\nline\"\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].1["q"], "a, \"b\"");
        assert_eq!((rows[1].0, rows[1].1["__expected"].as_str().unwrap()), (3, "multi\nline"));
        let t = csv_test(&rows[0].1).unwrap();
        assert_eq!(t["assert"][0], json!({"type": "contains", "value": "x"}));
        assert_eq!(expected_assertion("plain text").unwrap(), json!({"type": "equals", "value": "plain text"}));
        assert_eq!(expected_assertion("not-icontains: Y").unwrap(), json!({"type": "not-icontains", "value": "Y"}));
        assert_eq!(
            expected_assertion("levenshtein(2): abc").unwrap(),
            json!({"type": "levenshtein", "value": "abc", "threshold": 2.0})
        );
        assert_eq!(
            expected_assertion("rouge-n: abc").unwrap(),
            json!({"type": "rouge-n", "value": "abc", "threshold": 0.75})
        );
        assert_eq!(
            expected_assertion("contains-any: a, b").unwrap(),
            json!({"type": "contains-any", "value": " a, b"})
        );
    }

    #[test]
    fn a_list_of_strings_expands() {
        let v = json!({"a": ["x", "y"], "b": [1, 2], "c": "z"});
        let c = combinations(v.as_object().unwrap());
        assert_eq!(c.len(), 2);
        assert_eq!(c[1]["a"], "y");
        assert_eq!(c[1]["b"], json!([1, 2]));
    }
}
