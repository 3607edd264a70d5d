//! `evalgate schema`: the JSON Schema editors use holds every example suite, rejects what
//! the loader rejects with the allowed values or the bound, and describes every key.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::Test;

fn schema() -> Value {
    let run = Test::new().args(&["schema"]).run();
    run.expect_code(0);
    serde_json::from_str(&run.stdout).unwrap()
}

/// Every native suite in the repository: the `.yaml` files under `examples/` and
/// `tests/fixtures/` with an `evalgate` key.
fn native_suites() -> Vec<(PathBuf, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut suites = Vec::new();
    let mut dirs = vec![root.join("examples"), root.join("tests/fixtures")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with("node_modules") {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let text = std::fs::read_to_string(&path).unwrap();
                let Ok(doc) = evalgate::yaml::from_str::<Value>(&text) else { continue };
                if doc.get("evalgate").is_some() {
                    suites.push((path, doc));
                }
            }
        }
    }
    suites
}

#[test]
fn schema_describes_the_format() {
    let schema = schema();
    assert_eq!(schema["title"], "evalgate suite");
    assert_eq!(schema["additionalProperties"], false);
    let required: Vec<&str> = schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(required, ["evalgate", "suite"], "`tasks` may all come from `imports`");
}

#[test]
fn every_example_suite_is_valid_against_the_schema() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let suites = native_suites();
    assert!(suites.len() >= 3, "{suites:?}");
    for (path, suite) in suites {
        let errors: Vec<String> =
            validator.iter_errors(&suite).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
}

#[test]
fn the_schema_rejects_bad_values_with_the_allowed_values_or_the_bound() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let errors = |suite: Value| -> Vec<String> {
        validator.iter_errors(&suite).map(|e| format!("{}: {e}", e.instance_path())).collect()
    };
    let task = json!({"id": "a", "prompt": "x", "level": "scenery", "grade": [{"type": "contains", "value": "x"}]});
    let suite = json!({"evalgate": 1, "suite": "s", "tasks": [task]});
    // jsonschema's message shows the first two values; the error holds them all.
    assert_eq!(
        errors(suite.clone()),
        [r#"/tasks/0/level: "scenery" is not one of "agent", "execution" or 2 other candidates"#]
    );
    let error = validator.iter_errors(&suite).next().unwrap();
    let jsonschema::error::ValidationErrorKind::Enum { options } = error.kind() else { panic!("{:?}", error.kind()) };
    assert_eq!(**options, json!(["agent", "execution", "invocation", "scenario"]));
    assert_eq!(
        errors(json!({"evalgate": 1, "suite": "s", "thresholds": {"pass_score": 1.5}})),
        ["/thresholds/pass_score: 1.5 is greater than the maximum of 1.0"]
    );
    let typo = json!({"evalgate": 1, "suite": "s", "tasks": [{"id": "a", "prompt": "x", "grade": [{"type": "contains", "valeu": "x"}]}]});
    assert!(!validator.is_valid(&typo));
}

/// The step kinds' keys (and the `http`, `file` and `mcp` graders, which share them): their
/// raw structs are moving to `src/step/` one kind a file, which documents them; then this
/// list goes.
const UNDOCUMENTED_STEP_KEYS: [&str; 18] = [
    "RawHooks",
    "RawStep",
    "RawOutput",
    "RawRunExpect",
    "RawTextExpect",
    "RawHttp",
    "RawHttpExpect",
    "RawBodyExpect",
    "RawJsonExpect",
    "RawMcpCall",
    "RawFileStep",
    "RawFileExpect",
    "RawWait",
    "RawForeach",
    "RawGroup",
    r#""http""#,
    r#""file""#,
    r#""mcp""#,
];

#[test]
fn every_key_in_the_schema_has_a_description() {
    fn walk(schema: &Value, at: &str, missing: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                let grader = map.get("properties").and_then(|p| p.pointer("/type/const")).map(Value::to_string);
                if UNDOCUMENTED_STEP_KEYS.iter().any(|d| at.ends_with(&format!("/{d}")) || grader.as_deref() == Some(d))
                {
                    return;
                }
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for (key, property) in properties {
                        if property.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
                            missing.push(format!("{at}/{key}"));
                        }
                    }
                }
                for (key, value) in map {
                    walk(value, &format!("{at}/{key}"), missing);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{at}/{i}"), missing);
                }
            }
            _ => {}
        }
    }
    let mut missing = Vec::new();
    walk(&schema(), "", &mut missing);
    assert!(missing.is_empty(), "{} keys without a description:\n{}", missing.len(), missing.join("\n"));
}

#[test]
fn the_results_schema_is_published_and_a_run_s_results_follow_it() {
    let run = crate::common::Test::new()
        .write("agent.sh", crate::common::ECHO_AGENT)
        .write(
            "evalgate.yaml",
            &crate::common::suite("", "  - id: a\n    prompt: x\n    grade: [{type: contains, value: x}]\n"),
        )
        .args(&["run"])
        .run();
    run.expect_code(0);
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).args(["schema", "--results"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["properties"]["format"]["const"], "evalgate-results/1");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut results = run.results();
    assert!(
        validator.is_valid(&results),
        "{:?}",
        validator.iter_errors(&results).map(|e| e.to_string()).collect::<Vec<_>>()
    );
    results["totals"]["pass_rate"] = 2.into();
    assert!(!validator.is_valid(&results));
}
