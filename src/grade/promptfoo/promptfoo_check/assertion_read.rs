//! Reading one promptfoo assertion as written (`type`, `value`, `threshold`, `weight`, an
//! `assert-set`'s members) into an [`Assertion`], or a located problem: promptfoo's own
//! value forms (comma-separated lists, JavaScript's `String(v)`, schemas as YAML text) and
//! why each type evalgate does not run is refused.

use serde::Deserialize;
use serde_json::Value;

use super::super::model_graded::{Graded as ModelKind, ModelGraded};
use super::super::script_assertion::{Language, Script};
use super::super::similarity::Similar;
use super::{Assertion, Kind, Problem, SUPPORTED};

/// JavaScript's `String(v)` of a scalar.
pub fn js_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{}", f as i64),
            Some(f) => format!("{f}"),
            None => n.to_string(),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Array(list) => list.iter().map(|x| if x.is_null() { String::new() } else { js_string(x) }).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// promptfoo's `parseCommaSeparatedValues`: fields split at commas, trimmed; a quoted field
/// keeps its commas (`\"`, `\\` and `""` escapes).
fn comma_separated(text: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        if chars[i] == '"' {
            let mut field = String::new();
            let mut terminated = false;
            i += 1;
            while i < chars.len() {
                match (chars[i], chars.get(i + 1)) {
                    ('\\', Some(&n)) if n == '"' || n == '\\' => {
                        field.push(n);
                        i += 2;
                    }
                    ('"', Some('"')) => {
                        field.push('"');
                        i += 2;
                    }
                    ('"', _) => {
                        i += 1;
                        terminated = true;
                        break;
                    }
                    (c, _) => {
                        field.push(c);
                        i += 1;
                    }
                }
            }
            if !terminated {
                return Err("an unterminated quoted field".into());
            }
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            if i < chars.len() && chars[i] != ',' {
                return Err("a quoted field not followed by a comma".into());
            }
            out.push(field);
        } else {
            let start = i;
            while i < chars.len() && chars[i] != ',' {
                i += 1;
            }
            out.push(chars[start..i].iter().collect::<String>().trim().to_owned());
        }
    }
    Ok(out)
}

/// A JSON schema given as an object, or as YAML text (promptfoo's `loadYaml`).
fn schema(value: &Value) -> Result<Option<Box<jsonschema::Validator>>, Problem> {
    let schema = match value {
        Value::Null => return Ok(None),
        Value::String(s) if s.is_empty() => return Ok(None),
        Value::String(text) => {
            let doc = crate::yaml::Document::parse(text).map_err(|e| ("/value".to_owned(), format!("the schema is not YAML: {}", e.message)))?;
            Value::deserialize(doc.de(doc.root())).map_err(|e| ("/value".to_owned(), format!("the schema: {e}")))?
        }
        Value::Object(_) => value.clone(),
        _ => return Err(("/value".into(), "a JSON schema is an object or YAML text".into())),
    };
    jsonschema::validator_for(&schema)
        .map(|v| Some(Box::new(v)))
        .map_err(|e| ("/value".into(), format!("not a JSON schema: {e}")))
}

/// Why promptfoo's types evalgate does not run are refused, by base type.
fn refusal(base: &str) -> String {
    match base {
        "webhook" => "a `webhook` assertion sends the output to a server evalgate does not call; run it as a `command` grader".into(),
        "ruby" => "a `ruby` assertion is not supported: write it as a native `command` grader".into(),
        "select-best"
        | "model-graded-factuality" | "context-faithfulness" | "context-recall" | "context-relevance" | "moderation" => {
            format!("the model-graded `{base}` assertion is not supported yet: write it as a native `rubric` grader")
        }
        other => format!("assertion type `{other}` is not supported (supported: {}; each with `not-`)", SUPPORTED.join(", ")),
    }
}

impl Assertion {
    /// An assertion as written; problems point below it.
    pub fn read(a: &Value) -> Result<Assertion, Problem> {
        let Some(kind_name) = a.get("type").and_then(Value::as_str) else {
            return Err(("/type".into(), "an assertion needs `type`".into()));
        };
        let (inverse, base) = match kind_name.strip_prefix("not-") {
            Some(base) => (true, base),
            None => (false, kind_name),
        };
        let value = a.get("value").unwrap_or(&Value::Null);
        let script = matches!(base, "javascript" | "python");
        if let Some(v) = value.as_str().filter(|v| !script && (v.starts_with("file://") || v.starts_with("package:"))) {
            return Err(("/value".into(), format!("an assertion value from a file or package (`{v}`) is not supported")));
        }
        let weight = match a.get("weight") {
            None | Some(Value::Null) => 1.0,
            Some(w) => w.as_f64().filter(|w| *w >= 0.0).ok_or(("/weight".to_owned(), "`weight` is a number of 0 or more".to_owned()))?,
        };
        let threshold = match a.get("threshold") {
            None | Some(Value::Null) => None,
            Some(t) => Some(t.as_f64().ok_or(("/threshold".to_owned(), "`threshold` is a number".to_owned()))?),
        };
        let text = || -> Result<String, Problem> {
            match value {
                Value::String(s) => Ok(s.clone()),
                _ => Err(("/value".into(), format!("a `{kind_name}` assertion needs a string `value`"))),
            }
        };
        let contains_value = || -> Result<String, Problem> {
            match value {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                Value::Number(_) => Ok(js_string(value)),
                _ => Err(("/value".into(), format!("a `{kind_name}` assertion needs a string or number `value`"))),
            }
        };
        let list = || -> Result<Vec<String>, Problem> {
            match value {
                Value::String(s) if !s.is_empty() => comma_separated(s).map_err(|e| ("/value".into(), e)),
                Value::Array(items) if !items.is_empty() => Ok(items.iter().map(js_string).collect()),
                _ => Err(("/value".into(), format!("a `{kind_name}` assertion needs a list `value`"))),
            }
        };
        let ignore_case = base.starts_with('i');
        let kind = match base {
            "equals" => match value {
                Value::Null => return Err(("/value".into(), "an `equals` assertion needs `value`".into())),
                v => Kind::Equals(v.clone()),
            },
            "contains" | "icontains" => Kind::Contains { value: contains_value()?, ignore_case },
            "contains-any" | "icontains-any" => Kind::ContainsAny { values: list()?, ignore_case },
            "contains-all" | "icontains-all" => Kind::ContainsAll { values: list()?, ignore_case },
            "starts-with" => match text()? {
                s if s.is_empty() => return Err(("/value".into(), "a `starts-with` assertion needs a non-empty `value`".into())),
                s => Kind::StartsWith(s),
            },
            "regex" => {
                let pattern = text()?;
                if pattern.is_empty() {
                    return Err(("/value".into(), "a `regex` assertion needs a non-empty `value`".into()));
                }
                match crate::grade::js_regex::translate(&pattern, "") {
                    Ok(rust) => Kind::Regex(regex::Regex::new(&rust).ok()),
                    Err(why) => {
                        return Err(("/value".into(), format!("the JavaScript regex /{pattern}/ cannot be matched as promptfoo matches it: {why}")));
                    }
                }
            }
            "is-json" => Kind::IsJson(schema(value)?),
            "contains-json" => Kind::ContainsJson(schema(value)?),
            "levenshtein" => Kind::Levenshtein(text()?),
            "rouge-n" => Kind::Rouge(text()?),
            "bleu" => match value {
                Value::String(s) => Kind::Bleu(vec![s.clone()]),
                Value::Array(l) if !l.is_empty() && l.iter().all(Value::is_string) => Kind::Bleu(l.iter().map(js_string).collect()),
                _ => return Err(("/value".into(), "a `bleu` assertion needs a string or a list of strings".into())),
            },
            "cost" | "latency" => {
                if threshold.is_none() {
                    return Err(("/threshold".into(), format!("a `{base}` assertion needs `threshold`")));
                }
                if base == "cost" { Kind::Cost } else { Kind::Latency }
            }
            "assert-set" if !inverse => {
                let items = a.get("assert").and_then(Value::as_array).ok_or(("/assert".to_owned(), "an `assert-set` needs a list `assert`".to_owned()))?;
                let mut set = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if item.get("type").and_then(Value::as_str) == Some("assert-set") {
                        return Err((format!("/assert/{i}/type"), "an `assert-set` inside an `assert-set` is not run by promptfoo".into()));
                    }
                    set.push(Assertion::read(item).map_err(|(at, m)| (format!("/assert/{i}{at}"), m))?);
                }
                Kind::Set(set)
            }
            "llm-rubric" => match value {
                Value::String(s) if !s.is_empty() => Kind::LlmRubric(s.clone(), a.get("rubricPrompt").cloned().filter(|p| !p.is_null())),
                _ => return Err(("/value".into(), "an `llm-rubric` assertion needs its rubric as a string `value`".into())),
            },
            "javascript" => Kind::Script(Script::read(Language::Javascript, value).map_err(|e| ("/value".to_owned(), e))?),
            "python" => Kind::Script(Script::read(Language::Python, value).map_err(|e| ("/value".to_owned(), e))?),
            "model-graded-closedqa" | "factuality" | "g-eval" => {
                let kind = match base {
                    "factuality" => ModelKind::Factuality,
                    "g-eval" => ModelKind::GEval,
                    _ => ModelKind::ClosedQa,
                };
                let value = match value {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(l) if kind == ModelKind::GEval && l.iter().all(Value::is_string) => {
                        l.iter().map(js_string).collect()
                    }
                    _ => return Err(("/value".into(), format!("a `{base}` assertion needs a string `value`"))),
                };
                let rubric_prompt = a.get("rubricPrompt").cloned().filter(|p| !p.is_null());
                Kind::ModelGraded(ModelGraded { kind, value, rubric_prompt })
            }
            "is-valid-openai-tools-call" => Kind::ToolsCall,
            "is-valid-openai-function-call" | "is-valid-function-call" => Kind::FunctionCall,
            "similar" | "similar:cosine" | "similar:dot" | "similar:euclidean" => {
                Kind::Similar(Similar::read(base, value).map_err(|e| ("/value".to_owned(), e))?)
            }
            "answer-relevance" => Kind::AnswerRelevance(a.get("rubricPrompt").cloned().filter(|p| !p.is_null())),
            other => return Err(("/type".into(), refusal(other))),
        };
        Ok(Assertion { kind, inverse, uncounted: weight == 0.0, weight, threshold })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn comma_separated_values_as_promptfoo_splits_them() {
        assert_eq!(comma_separated(r#"a, b ,"c, d", "e""f""#).unwrap(), ["a", "b", "c, d", "e\"f"]);
        assert!(comma_separated(r#""open"#).is_err());
    }

    #[test]
    fn js_string_writes_numbers_as_javascript_does() {
        assert_eq!(js_string(&json!(42)), "42");
        assert_eq!(js_string(&json!(1.0)), "1");
        assert_eq!(js_string(&json!(1.5)), "1.5");
        assert_eq!(js_string(&json!([1, "a"])), "1,a");
    }

    #[test]
    fn unsupported_types_are_refused_with_a_reason() {
        let err = |a: Value| Assertion::read(&a).unwrap_err();
        assert_eq!(err(json!({"type": "webhook", "value": "http://x"})).0, "/type");
        assert!(err(json!({"type": "not-assert-set", "assert": []})).1.contains("not supported"));
        assert_eq!(err(json!({"type": "contains"})).0, "/value");
        assert_eq!(err(json!({"type": "assert-set", "assert": [{"type": "nope"}]})).0, "/assert/0/type");
    }
}
