//! The labels file: JSON lines, one human verdict on one judged item each, committed with
//! the suite. Read strictly, every problem named by file, line and key.
//!
//! ```json
//! {"task": "refund", "grader": "rubric", "criterion": "polite", "output_sha256": "…",
//!  "judge": "pass", "verdict": "agree", "labeller": "ana", "date": "2026-11-27", "note": ""}
//! ```

use std::path::Path;

use serde_json::{Map, Value};

/// The keys of a label, in the order `judge sample` writes them.
pub const KEYS: [&str; 11] =
    ["task", "grader", "criterion", "trial", "output_sha256", "output", "judge", "verdict", "labeller", "date", "note"];

/// One labelled item.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// 1-based line in the file.
    pub line: usize,
    pub task: String,
    pub grader: String,
    /// The rubric criterion (none for an `llm` grader: its verdict).
    pub criterion: Option<String>,
    /// The trial (1-based), when the item is one trial's.
    pub trial: Option<u32>,
    /// SHA-256 of the output judged (as results.json records it).
    pub output_sha256: Option<String>,
    /// The judge's verdict the labeller saw (needed by `agree` / `disagree`).
    pub judge: Option<bool>,
    /// The human's verdict; `None`: unsure, or not labelled yet (`verdict` empty).
    pub human: Option<bool>,
    /// The verdict as written (`agree`, `fail`, `unsure`, or empty).
    pub verdict: String,
    pub labeller: String,
    pub date: String,
    pub note: String,
}

impl Label {
    /// The label as a line of a labels file, with the output judged when given (to read
    /// while labelling).
    pub fn to_line(&self, output: Option<&str>) -> String {
        let word = |b: bool| if b { "pass" } else { "fail" };
        let mut map = Map::new();
        let mut put = |key: &str, value: Value| {
            map.insert(key.to_owned(), value);
        };
        put("task", self.task.clone().into());
        put("grader", self.grader.clone().into());
        if let Some(c) = &self.criterion {
            put("criterion", c.clone().into());
        }
        if let Some(t) = self.trial {
            put("trial", t.into());
        }
        if let Some(h) = &self.output_sha256 {
            put("output_sha256", h.clone().into());
        }
        if let Some(o) = output {
            put("output", o.into());
        }
        if let Some(j) = self.judge {
            put("judge", word(j).into());
        }
        put("verdict", self.verdict.clone().into());
        put("labeller", self.labeller.clone().into());
        put("date", self.date.clone().into());
        put("note", self.note.clone().into());
        Value::Object(map).to_string()
    }
}

pub use crate::results::judges::output_sha256;

/// Every label of `file`; an unlabelled line (`verdict` empty) is kept with `human: None`.
pub fn read(file: &Path) -> Result<Vec<Label>, String> {
    let text = crate::yaml::read(file).map_err(|e| format!("cannot read labels file {}: {e}", file.display()))?;
    let mut labels = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse(line, i + 1) {
            Ok(label) => labels.push(label),
            Err(e) => problems.push(format!("{}:{}: {e}", file.display(), i + 1)),
        }
    }
    if problems.is_empty() { Ok(labels) } else { Err(problems.join("\n")) }
}

fn parse(line: &str, number: usize) -> Result<Label, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    let Value::Object(map) = value else { return Err("not a JSON object".into()) };
    if let Some(key) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key `{key}` (a label has {})", KEYS.join(", ")));
    }
    let task = text(&map, "task")?.filter(|t| !t.is_empty()).ok_or("`task`: missing")?;
    let grader = text(&map, "grader")?.filter(|t| !t.is_empty()).ok_or("`grader`: missing")?;
    let judge = match text(&map, "judge")?.as_deref() {
        None => None,
        Some("pass") => Some(true),
        Some("fail") => Some(false),
        Some(other) => return Err(format!("`judge`: expected pass or fail, got `{other}`")),
    };
    let verdict = text(&map, "verdict")?.unwrap_or_default();
    let human = match verdict.as_str() {
        "pass" => Some(true),
        "fail" => Some(false),
        "agree" | "disagree" => {
            let judge =
                judge.ok_or_else(|| format!("`verdict`: `{verdict}` needs `judge` (the verdict agreed with)"))?;
            Some((verdict == "agree") == judge)
        }
        "unsure" | "" => None,
        other => return Err(format!("`verdict`: expected agree, disagree, unsure, pass or fail, got `{other}`")),
    };
    let labeller = text(&map, "labeller")?.unwrap_or_default();
    let date = text(&map, "date")?.unwrap_or_default();
    if !verdict.is_empty() {
        if labeller.trim().is_empty() {
            return Err("`labeller`: missing (who gave the verdict)".into());
        }
        if chrono::NaiveDate::parse_from_str(date.get(..10).unwrap_or(&date), "%Y-%m-%d").is_err() {
            return Err(format!("`date`: expected YYYY-MM-DD, got `{date}`"));
        }
    }
    let trial = match map.get("trial") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|t| (1..=u64::from(u32::MAX)).contains(t))
                .ok_or("`trial`: expected a trial number from 1")? as u32,
        ),
    };
    let output_sha256 = match (text(&map, "output_sha256")?, text(&map, "output")?) {
        (Some(h), _) if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            return Err("`output_sha256`: expected 64 hex digits".into());
        }
        (Some(h), _) => Some(h.to_ascii_lowercase()),
        (None, Some(output)) => Some(output_sha256(&output)),
        (None, None) => None,
    };
    Ok(Label {
        line: number,
        task,
        grader,
        criterion: text(&map, "criterion")?,
        trial,
        output_sha256,
        judge,
        human,
        verdict,
        labeller,
        date,
        note: text(&map, "note")?.unwrap_or_default(),
    })
}

/// The string at `key` (absent or null: `None`).
fn text(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}`: expected a string, got {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<Label, String> {
        parse(line, 1)
    }

    #[test]
    fn agree_and_disagree_are_read_against_the_judge() {
        let base = r#""task":"t","grader":"g","labeller":"ana","date":"2026-11-27""#;
        let human = |rest: &str| one(&format!("{{{base},{rest}}}")).unwrap().human;
        assert_eq!(human(r#""judge":"pass","verdict":"agree""#), Some(true));
        assert_eq!(human(r#""judge":"pass","verdict":"disagree""#), Some(false));
        assert_eq!(human(r#""judge":"fail","verdict":"disagree""#), Some(true));
        assert_eq!(human(r#""verdict":"fail""#), Some(false));
        assert_eq!(human(r#""verdict":"unsure""#), None);
    }

    #[test]
    fn problems_name_the_key() {
        let err = |line: &str| one(line).unwrap_err();
        assert!(err(r#"{"task":"t","grader":"g","verdict":"yes"}"#).starts_with("`verdict`: expected agree"));
        assert!(
            err(r#"{"task":"t","grader":"g","verdict":"agree","labeller":"a","date":"2026-01-01"}"#)
                .contains("needs `judge`")
        );
        assert!(
            err(r#"{"task":"t","grader":"g","verdict":"pass","labeller":"a","date":"yesterday"}"#)
                .starts_with("`date`")
        );
        assert!(err(r#"{"task":"t","grader":"g","colour":"red"}"#).starts_with("unknown key `colour`"));
        assert!(err(r#"{"grader":"g"}"#).starts_with("`task`"));
        assert!(err(r#"{"task":"t","grader":"g","trial":0}"#).starts_with("`trial`"));
    }
}
