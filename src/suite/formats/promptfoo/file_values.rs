//! What promptfoo reads from `file://` in a test, read at conversion as promptfoo 0.123.1
//! reads it when the test runs: an assertion's `value` (`processFileReference`: `.txt`
//! trimmed, `.json` / `.yaml` / `.yml` parsed as YAML; never rendered with the vars) and a
//! grading prompt (`loadRubricPrompt`: the file's text as it is). A script computing the
//! value is refused, as is a file that is missing or of another kind.

use std::path::Path;

use serde_json::Value;

use super::super::Problems;

/// Script extensions: promptfoo runs the file to compute the value, evalgate does not.
const SCRIPTS: [&str; 8] = ["js", "cjs", "mjs", "ts", "cts", "mts", "py", "rb"];

/// The extension of `path`, lowercased.
fn extension(path: &str) -> String {
    Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or_default().to_lowercase()
}

/// The text of `dir/path`, or why not.
fn text(dir: &Path, path: &str) -> Result<String, String> {
    crate::yaml::read(&dir.join(path)).map_err(|e| format!("cannot read `{path}` (beside the config): {e}"))
}

/// An assertion value `file://PATH` as promptfoo loads it.
fn assertion_value(reference: &str, dir: &Path) -> Result<Value, String> {
    let path = reference.strip_prefix("file://").unwrap_or(reference);
    let ext = extension(path.split_once(':').map_or(path, |(p, _)| p));
    if SCRIPTS.contains(&ext.as_str()) {
        return Err(format!(
            "an assertion value computed by a script (`{reference}`) is not supported: write the value, or use a `javascript` or `python` assertion"
        ));
    }
    match ext.as_str() {
        "json" | "yaml" | "yml" => {
            let doc =
                crate::yaml::Document::parse(&text(dir, path)?).map_err(|e| format!("`{path}`: {}", e.message))?;
            serde::Deserialize::deserialize(doc.de(doc.root())).map_err(|e| format!("`{path}`: {e}"))
        }
        // JavaScript's `trim` also drops a byte-order mark.
        "txt" => {
            Ok(Value::String(text(dir, path)?.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}').to_owned()))
        }
        _ => Err(format!(
            "an assertion value from `{path}`: promptfoo reads `.txt`, `.json`, `.yaml` and `.yml` files only"
        )),
    }
}

/// Each `file://` value of assertion `a` (and of its set's assertions) replaced by what
/// promptfoo loads from it; a script assertion's file is its code and stays. Problems are
/// at `at` (the assertion's pointer).
pub(super) fn load_values(a: &mut Value, dir: &Path, at: &str, problems: &mut Problems) {
    let script = a
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| matches!(t.trim_start_matches("not-"), "javascript" | "python" | "ruby"));
    let mut load = |v: &mut Value, at: String| {
        if let Some(reference) = v.as_str().filter(|s| s.starts_with("file://")) {
            match assertion_value(reference, dir) {
                Ok(loaded) => *v = loaded,
                Err(why) => problems.push((at, why)),
            }
        }
    };
    if !script && let Some(value) = a.get_mut("value") {
        match value {
            Value::Array(list) => {
                for (i, item) in list.iter_mut().enumerate() {
                    load(item, format!("{at}/value/{i}"));
                }
            }
            one => load(one, format!("{at}/value")),
        }
    }
    for (i, inner) in a.get_mut("assert").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
        load_values(inner, dir, &format!("{at}/assert/{i}"), problems);
    }
}

/// A grading prompt `file://PATH` as promptfoo loads it: the file's text (a chat in JSON or
/// YAML is then read from it as from an inline one); a JavaScript file is refused.
pub(super) fn rubric_prompt(reference: &str, dir: &Path) -> Result<Value, String> {
    let path = reference.strip_prefix("file://").unwrap_or(reference);
    if SCRIPTS[..6].contains(&extension(path.split_once(':').map_or(path, |(p, _)| p)).as_str()) {
        return Err(format!(
            "a grading prompt made by a script (`{reference}`) is not supported: write it in a text file"
        ));
    }
    text(dir, path).map(Value::String)
}

/// A test's `options.transform`: inline code as it is; `file://PATH[:FUNCTION]` (a
/// JavaScript or Python file beside the config, promptfoo's `getFileTransformFunction`)
/// made relative to the suite (`rel_dir`).
pub(super) fn transform(code: &str, rel_dir: &Path, dir: &Path) -> Result<String, String> {
    let Some((path, function)) = crate::grade::promptfoo_transform_file(code) else { return Ok(code.to_owned()) };
    if !matches!(extension(path).as_str(), "js" | "cjs" | "mjs" | "py") {
        return Err(format!(
            "a transform file runs as JavaScript (`.js`, `.cjs`, `.mjs`) or Python (`.py`), not `{path}`"
        ));
    }
    if !dir.join(path).is_file() {
        return Err(format!("no transform file `{path}` (beside the config)"));
    }
    let rebased = rel_dir.join(path).display().to_string();
    Ok(format!("file://{rebased}{}", function.map(|f| format!(":{f}")).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_values_load_as_promptfoo_loads_them_and_scripts_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "\u{feff}  Paris {{ x }}\n\n").unwrap();
        std::fs::write(dir.path().join("s.yaml"), "type: object\nrequired: [a]\n").unwrap();
        std::fs::write(dir.path().join("r.txt"), "Grade {{ output }}\n").unwrap();
        let mut a = json!({"type": "assert-set", "assert": [
            {"type": "contains", "value": "file://a.txt"},
            {"type": "is-json", "value": "file://s.yaml"},
            {"type": "contains-any", "value": ["file://a.txt", "Lyon"]},
            {"type": "javascript", "value": "file://check.js"},
            {"type": "equals", "value": "file://make.py"},
            {"type": "equals", "value": "file://gone.txt"},
            {"type": "equals", "value": "file://a.csv"}
        ]});
        let mut problems = Problems::new();
        load_values(&mut a, dir.path(), "/tests/0/assert/0", &mut problems);
        assert_eq!(a["assert"][0]["value"], "Paris {{ x }}");
        assert_eq!(a["assert"][1]["value"], json!({"type": "object", "required": ["a"]}));
        assert_eq!(a["assert"][2]["value"], json!(["Paris {{ x }}", "Lyon"]));
        assert_eq!(a["assert"][3]["value"], "file://check.js");
        let at: Vec<&str> = problems.iter().map(|(at, _)| at.as_str()).collect();
        assert_eq!(
            at,
            [
                "/tests/0/assert/0/assert/4/value",
                "/tests/0/assert/0/assert/5/value",
                "/tests/0/assert/0/assert/6/value"
            ]
        );
        assert!(problems[0].1.contains("computed by a script") && problems[1].1.contains("gone.txt"), "{problems:?}");
        assert_eq!(rubric_prompt("file://r.txt", dir.path()).unwrap(), "Grade {{ output }}\n");
        std::fs::write(dir.path().join("t.py"), "").unwrap();
        assert_eq!(transform("file://t.py:shout", Path::new("pf"), dir.path()).unwrap(), "file://pf/t.py:shout");
        assert_eq!(transform("output.trim()", Path::new("pf"), dir.path()).unwrap(), "output.trim()");
        assert!(transform("file://gone.js", Path::new(""), dir.path()).unwrap_err().contains("no transform file"));
        assert!(transform("file://t.ts", Path::new(""), dir.path()).unwrap_err().contains("not `t.ts`"));
        assert!(rubric_prompt("file://r.js", dir.path()).unwrap_err().contains("script"));
    }
}
