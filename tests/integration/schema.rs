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

#[test]
fn every_key_in_the_schema_has_a_description() {
    fn walk(schema: &Value, at: &str, missing: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
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
            &crate::common::suite(
                "",
                "
                - id: a
                  prompt: x
                  grade: [{type: contains, value: x}]
                ",
            ),
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

#[test]
fn the_grader_and_step_examples_are_valid_and_typical_mistakes_are_not() {
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors = |suite: &Value| -> Vec<String> {
        validator.iter_errors(suite).map(|e| format!("{}: {e}", e.instance_path())).collect()
    };
    let task = |grade: Value, setup: Value| {
        json!({"evalgate": 1, "suite": "s", "agents": {"bot": {"command": ["./bot.sh", "{prompt}"]}},
               "tasks": [{"id": "a", "prompt": "x", "setup": setup, "grade": grade}]})
    };
    let graders = schema["$defs"]["RawGrader"]["examples"].as_array().expect("grader examples");
    let steps = schema["$defs"]["RawStep"]["examples"].as_array().expect("step examples");
    assert!(graders.len() >= 5 && steps.len() >= 5);
    for example in graders {
        let suite = task(json!([example]), json!([]));
        assert!(errors(&suite).is_empty(), "{example}: {:?}", errors(&suite));
    }
    for example in steps {
        let suite = task(json!([{"type": "contains", "value": "x"}]), json!([example]));
        assert!(errors(&suite).is_empty(), "{example}: {:?}", errors(&suite));
    }

    // What people write first, each refused by the schema (so the editor underlines it).
    let grade = |g: Value| task(json!([g]), json!([]));
    let step = |s: Value| task(json!([{"type": "contains", "value": "x"}]), json!([s]));
    let mistakes = [
        ("misspelt grader type", grade(json!({"type": "contain", "value": "x"}))),
        ("misspelt grader key", grade(json!({"type": "contains", "valeu": "x"}))),
        ("a key of another grader", grade(json!({"type": "contains", "pattern": "x"}))),
        ("weight as text", grade(json!({"type": "contains", "value": "x", "weight": "high"}))),
        ("a grader as a bare string", grade(json!("contains hello"))),
        ("a step with no action", step(json!({"timeout": "5s"}))),
        ("a misspelt step key", step(json!({"runn": "true"}))),
        ("an http step without url", step(json!({"http": {"method": "GET"}}))),
        ("a wrong http method", step(json!({"http": {"url": "http://x", "method": "FETCH"}}))),
        ("pass_score as a percentage", json!({"evalgate": 1, "suite": "s", "thresholds": {"pass_score": 80}})),
        (
            "repeat zero",
            json!({"evalgate": 1, "suite": "s", "tasks": [{"id": "a", "prompt": "x", "repeat": 0, "grade": [{"type": "contains", "value": "x"}]}]}),
        ),
        ("tasks as a map", json!({"evalgate": 1, "suite": "s", "tasks": {"a": {"prompt": "x"}}})),
        ("singular task key", json!({"evalgate": 1, "suite": "s", "task": []})),
        (
            "an unknown provider",
            json!({"evalgate": 1, "suite": "s", "agents": {"bot": {"provider": "openia", "model": "m"}}}),
        ),
        ("a string version", json!({"evalgate": "1", "suite": "s"})),
        ("no suite id", json!({"evalgate": 1})),
    ];
    for (what, suite) in mistakes {
        assert!(!errors(&suite).is_empty(), "{what} is accepted by the schema: {suite}");
    }
}

/// The schema editors fetch is the file committed at schema/evalgate.schema.json (read
/// at a release tag): it is exactly `evalgate schema`'s output. With
/// EVALGATE_UPDATE_SCHEMA=1 the test rewrites it (and docs/keys.md) instead.
#[test]
fn the_published_schema_and_the_key_reference_are_generated_from_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = Test::new().args(&["schema"]).run();
    run.expect_code(0);
    let keys = key_reference(&serde_json::from_str(&run.stdout).unwrap());
    let files = [(root.join("schema/evalgate.schema.json"), run.stdout.clone()), (root.join("docs/keys.md"), keys)];
    for (path, expected) in files {
        if std::env::var_os("EVALGATE_UPDATE_SCHEMA").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &expected).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == expected,
            "{} differs from the code's schema: run EVALGATE_UPDATE_SCHEMA=1 cargo nextest run -E 'test(the_published_schema)'",
            path.display()
        );
    }
}

/// docs/keys.md: every key of the suite format, one table a definition, with its type and
/// the description from the doc comment it is generated from.
fn key_reference(schema: &Value) -> String {
    fn kind(v: &Value) -> String {
        if let Some(r) = v.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or(r);
            return format!("[{name}](#{})", name.to_lowercase());
        }
        if let Some(values) = v.get("enum").and_then(Value::as_array) {
            return values.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(" \\| ");
        }
        if let Some(c) = v.get("const") {
            return format!("`{c}`");
        }
        let mut parts: Vec<String> = match v.get("type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        if let Some(items) = v.get("items") {
            parts = vec![format!("list of {}", kind(items))];
        } else if let Some(values) = v.get("additionalProperties").filter(|a| a.is_object()) {
            parts = vec![format!("map of {}", kind(values))];
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(choices) = v.get(key).and_then(Value::as_array) {
                parts.extend(choices.iter().map(kind));
            }
        }
        if parts.is_empty() { "any".into() } else { parts.join(" or ") }
    }
    fn table(out: &mut String, name: &str, def: &Value) {
        let description = def.get("description").and_then(Value::as_str).unwrap_or("");
        let mut rows = String::new();
        if let Some(properties) = def.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> = def
                .get("required")
                .and_then(Value::as_array)
                .map_or(Vec::new(), |r| r.iter().filter_map(Value::as_str).collect());
            for (key, property) in properties {
                let text = property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .replace('\n', " ")
                    .replace('|', "\\|");
                let mark = if required.contains(&key.as_str()) { " (required)" } else { "" };
                rows.push_str(&format!("| `{key}`{mark} | {} | {text} |\n", kind(property)));
            }
        }
        out.push_str(&format!("## {name}\n\n"));
        if !description.is_empty() {
            out.push_str(&format!("{}\n\n", description.replace('\n', " ")));
        }
        if rows.is_empty() {
            out.push_str(&format!("Type: {}\n\n", kind(def)));
        } else {
            out.push_str(&format!("| key | type | description |\n|---|---|---|\n{rows}\n"));
        }
    }
    let mut out = String::from(
        "# Suite keys\n\nGenerated from the doc comments of the suite format's types (the same text `evalgate schema` \
         gives editors) by tests/integration/schema.rs; do not edit. The behaviour behind the keys is in \
         [reference.md](reference.md).\n\n",
    );
    table(&mut out, "RawSuite", schema);
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for (name, def) in defs {
            table(&mut out, name, def);
        }
    }
    out
}
