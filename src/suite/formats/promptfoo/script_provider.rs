//! promptfoo's script providers as command agents: `file://x.js` (`.cjs`, `.mjs`: the
//! module's export constructed with the provider's options, its `callApi` answering) and
//! `file://x.py[:FUNCTION]` / `python:x.py[:FUNCTION]` (`call_api(prompt, options, context)`
//! or the named function). The agent runs the module through the harness the `javascript` and
//! `python` assertions use (`crate::grade::PROMPTFOO_JS_HARNESS`, `PROMPTFOO_PY_HARNESS`),
//! given the provider and its options as an argument and the prompt on stdin; the harness
//! reports the answer in the agent's trace as promptfoo reads it. Being a command agent, it
//! runs through evalgate's process plumbing: its own process group killed at the task's
//! timeout, output bounded, evalgate's credentials stripped from its environment.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::super::Problems;
use super::super::native_text::literal;
use crate::grade::{PROMPTFOO_JS_HARNESS, PROMPTFOO_PY_HARNESS};

/// promptfoo's JavaScript and TypeScript extensions (`isJavascriptFile`); node runs the first three.
const JAVASCRIPT: [&str; 6] = [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"];

/// Whether promptfoo reads `id` as a script provider (its `python` factory: `python:` or a
/// `file://` `.py`; its JavaScript one: any path ending in a JavaScript extension, `file://`
/// or not), or names a provider config file (`file://x.yaml`).
pub(super) fn is_script(id: &str) -> bool {
    id.starts_with("python:") || id.starts_with("file://") || JAVASCRIPT.iter().any(|e| id.ends_with(e))
}

/// The command agent of a script provider; `None` (with the problem at `at`) for a file
/// that is missing or that evalgate does not run. `dir` is the config's directory.
pub(super) fn agent(
    id: &str,
    config: &Map<String, Value>,
    dir: &Path,
    at: &str,
    problems: &mut Problems,
) -> Option<Value> {
    let (reference, python_prefix) = match id.strip_prefix("python:") {
        Some(rest) => (rest, true),
        None => (id.strip_prefix("file://").unwrap_or(id), false),
    };
    let python = python_prefix || reference.ends_with(".py") || reference.contains(".py:");
    let (path, function) = if python {
        // promptfoo's `parsePathOrGlob`: a function after the last `:` following `.py`.
        match reference.rsplit_once(':').filter(|(p, _)| p.ends_with(".py")) {
            Some((p, f)) => (p, Some(f).filter(|f| !f.is_empty())),
            None => (reference, None),
        }
    } else {
        (reference, None)
    };
    let refuse = |why: String, problems: &mut Problems| {
        problems.push((at.to_owned(), format!("provider `{id}`: {why}")));
        None
    };
    if !python {
        let Some(ext) = JAVASCRIPT.iter().find(|e| path.ends_with(*e)) else {
            return refuse(
                "a `file://` provider evalgate runs is a JavaScript (`.js`, `.cjs`, `.mjs`) or Python (`.py`) script; a provider config file (`.yaml`, `.json`) and other files are not read".into(),
                problems,
            );
        };
        if ext.ends_with("ts") {
            return refuse("TypeScript is not run (node runs `.js`, `.cjs` and `.mjs`)".into(), problems);
        }
    }
    if !dir.join(path).is_file() {
        return refuse(format!("no script file `{path}` (beside the config)"), problems);
    }
    let program = match config.get("pythonExecutable") {
        Some(Value::String(p)) if python => p.clone(),
        _ if python => "python3".into(),
        _ => "node".into(),
    };
    let request = json!({"file": path, "function": function, "options": {"id": id, "config": config}});
    let (flag, harness) = if python { ("-c", PROMPTFOO_PY_HARNESS) } else { ("-e", PROMPTFOO_JS_HARNESS) };
    let argv = [program.as_str(), flag, harness, &request.to_string()];
    Some(json!({"command": argv.map(literal), "stdin": true}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_become_harness_agents_and_others_are_refused_at_their_entry() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["p.js", "p.py", "p.ts"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let mut problems = Problems::new();
        let config = Map::from_iter([("pythonExecutable".to_owned(), json!("python3.12"))]);
        let py = agent("python:p.py:answer", &config, dir.path(), "/providers/0", &mut problems).unwrap();
        assert_eq!(py["command"][0], "python3.12");
        // The request as written in the suite: template braces escaped.
        let request = py["command"][3].as_str().unwrap();
        for part in [r#""file":"p.py""#, r#""function":"answer""#, r#""id":"python:p.py:answer""#] {
            assert!(request.contains(part), "{request}");
        }
        let js = agent("file://p.js", &Map::new(), dir.path(), "/providers/1", &mut problems).unwrap();
        assert_eq!((js["command"][0].as_str(), js["stdin"].as_bool()), (Some("node"), Some(true)));
        assert!(is_script("p.js") && agent("p.js", &Map::new(), dir.path(), "/providers/1", &mut problems).is_some());
        assert!(!is_script("p.py") && !is_script("openai:chat:gpt-4o"));
        assert!(problems.is_empty(), "{problems:?}");
        for (id, why) in [
            ("file://p.ts", "TypeScript"),
            ("file://gone.py", "no script file `gone.py`"),
            ("file://providers.yaml", "provider config file"),
            ("file://p.js:fn", "provider config file"),
        ] {
            let mut problems = Problems::new();
            assert!(agent(id, &Map::new(), dir.path(), "/providers/2", &mut problems).is_none());
            assert_eq!(problems[0].0, "/providers/2");
            assert!(problems[0].1.contains(why), "{id}: {problems:?}");
        }
    }
}
