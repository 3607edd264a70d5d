//! Text graders: equals, contains, not_contains, regex, starts_with.

use regex::{Regex, RegexBuilder};

use super::{GradeInput, Graded};
use crate::excerpt::excerpt;
use crate::source::ValidateCx;
use crate::suite::raw::RawGraderKind;
use crate::template::{Scope, Template};

#[derive(Debug)]
pub enum TextCheck {
    Equals { value: Template, ignore_case: bool },
    Contains { values: Vec<Template>, all: bool, ignore_case: bool },
    NotContains { values: Vec<Template>, ignore_case: bool },
    Regex { pattern: Regex },
    StartsWith { value: Template, ignore_case: bool },
    EndsWith { value: Template, ignore_case: bool },
}

impl TextCheck {
    pub fn from_raw(cx: &mut ValidateCx, raw: RawGraderKind, path: &str) -> Option<Self> {
        let one = |cx: &mut ValidateCx, v: &str| cx.template(v, Scope::AfterAgent, &format!("{path}.value"));
        match raw {
            RawGraderKind::Equals { value, ignore_case } => {
                Some(TextCheck::Equals { value: one(cx, &value)?, ignore_case })
            }
            RawGraderKind::StartsWith { value, ignore_case } => {
                Some(TextCheck::StartsWith { value: one(cx, &value)?, ignore_case })
            }
            RawGraderKind::EndsWith { value, ignore_case } => {
                Some(TextCheck::EndsWith { value: one(cx, &value)?, ignore_case })
            }
            RawGraderKind::Contains { value, any, all, ignore_case } => {
                let (key, list, is_all) = match (value, any, all) {
                    (Some(v), None, None) => ("value", vec![v], true),
                    (None, Some(any), None) => ("any", any, false),
                    (None, None, Some(all)) => ("all", all, true),
                    _ => {
                        cx.error(path, "a `contains` grader needs exactly one of `value`, `any` or `all`");
                        return None;
                    }
                };
                let values = values(cx, key, &list, path)?;
                Some(TextCheck::Contains { values, all: is_all, ignore_case })
            }
            RawGraderKind::NotContains { value, any, ignore_case } => {
                let (key, list) = match (value, any) {
                    (Some(v), None) => ("value", vec![v]),
                    (None, Some(any)) => ("any", any),
                    _ => {
                        cx.error(path, "a `not_contains` grader needs exactly one of `value` or `any`");
                        return None;
                    }
                };
                Some(TextCheck::NotContains { values: values(cx, key, &list, path)?, ignore_case })
            }
            RawGraderKind::Regex { pattern, ignore_case } => {
                match RegexBuilder::new(&pattern).case_insensitive(ignore_case).build() {
                    Ok(pattern) => Some(TextCheck::Regex { pattern }),
                    Err(e) => {
                        cx.error(&format!("{path}.pattern"), format!("invalid regular expression: {e}"));
                        None
                    }
                }
            }
            _ => unreachable!("only text graders are routed here"),
        }
    }

    pub fn grade(&self, input: &GradeInput<'_>) -> Graded {
        let output = input.output;
        let fold = |s: &str, ic: bool| if ic { s.to_lowercase() } else { s.to_owned() };
        let shown = || excerpt(output, 120);
        match self {
            TextCheck::Equals { .. } if input.tool_error.is_some() => Graded::fail(format!(
                "the tool returned an error: {}",
                excerpt(input.tool_error.unwrap_or_default(), 160)
            )),
            TextCheck::Equals { value, ignore_case } => {
                let expected = input.bindings.render(value);
                let ok = fold(output.trim(), *ignore_case) == fold(expected.trim(), *ignore_case);
                Graded::of(
                    ok,
                    "output equals the expected text",
                    format!("expected {:?}, got {:?}", excerpt(&expected, 120), shown()),
                )
            }
            TextCheck::StartsWith { value, ignore_case } => {
                let expected = input.bindings.render(value);
                let ok = fold(output.trim_start(), *ignore_case).starts_with(&fold(&expected, *ignore_case));
                Graded::of(
                    ok,
                    format!("output starts with {expected:?}"),
                    format!("expected the output to start with {expected:?}, got {:?}", shown()),
                )
            }
            TextCheck::EndsWith { value, ignore_case } => {
                let expected = input.bindings.render(value);
                let ok = fold(output.trim_end(), *ignore_case).ends_with(&fold(&expected, *ignore_case));
                Graded::of(
                    ok,
                    format!("output ends with {expected:?}"),
                    format!("expected the output to end with {expected:?}, got {:?}", shown()),
                )
            }
            TextCheck::Contains { values, all, ignore_case } => {
                let haystack = fold(output, *ignore_case);
                let rendered: Vec<String> = values.iter().map(|v| input.bindings.render(v)).collect();
                let (found, missing): (Vec<&String>, Vec<&String>) =
                    rendered.iter().partition(|v| haystack.contains(&fold(v, *ignore_case)));
                if *all {
                    let score = found.len() as f64 / rendered.len().max(1) as f64;
                    let reason = if missing.is_empty() {
                        format!("output contains {}", list(&found))
                    } else {
                        format!("output does not contain {}", list(&missing))
                    };
                    Graded { score, passed: missing.is_empty(), reason, evidence: None }
                } else {
                    Graded::of(
                        !found.is_empty(),
                        format!("output contains {}", list(&found)),
                        format!("output contains none of {}", list(&missing)),
                    )
                }
            }
            TextCheck::NotContains { values, ignore_case } => {
                let haystack = fold(output, *ignore_case);
                let rendered: Vec<String> = values.iter().map(|v| input.bindings.render(v)).collect();
                let present: Vec<&String> =
                    rendered.iter().filter(|v| haystack.contains(&fold(v, *ignore_case))).collect();
                Graded::of(
                    present.is_empty(),
                    format!("output does not contain {}", list(&rendered.iter().collect::<Vec<_>>())),
                    format!("output contains {}", list(&present)),
                )
            }
            // Trimmed, so `^…$` anchor to the answer rather than to a trailing newline.
            TextCheck::Regex { pattern } => Graded::of(
                pattern.is_match(output.trim()),
                format!("output matches /{}/", pattern.as_str()),
                format!("output does not match /{}/: {:?}", pattern.as_str(), shown()),
            ),
        }
    }
}

fn values(cx: &mut ValidateCx, key: &str, list: &[String], path: &str) -> Option<Vec<Template>> {
    if list.is_empty() {
        cx.error(&format!("{path}.{key}"), "the list is empty");
        return None;
    }
    if key == "value" {
        return cx.template(&list[0], Scope::AfterAgent, &format!("{path}.value")).map(|t| vec![t]);
    }
    cx.templates(list, Scope::AfterAgent, &format!("{path}.{key}"))
}

fn list(items: &[&String]) -> String {
    items.iter().map(|s| format!("{:?}", excerpt(s, 60))).collect::<Vec<_>>().join(", ")
}
