//! Text graders: equals, contains, not_contains, regex, starts_with, ends_with. They share
//! one check type: how the output is folded, rendered and shown.

use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;

use super::needle::{Needle, pattern};
use super::{CompileGrader, Grade, OutputRead, GradeInput, GradeResult, Graded, JudgeCall};
use crate::excerpt::excerpt;
use crate::source::{KeyPath, ValidateCx};
use crate::uses::Uses;

/// The output equals `value` (surrounding whitespace ignored).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEquals {
    /// The expected text (a template).
    pub value: String,
    /// Compare without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
}

/// The output contains `value`, or any of `any`, or all of `all`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawContains {
    /// One text that must appear (a template).
    pub value: Option<String>,
    /// Texts of which at least one must appear.
    pub any: Option<Vec<String>>,
    /// Texts that must all appear; the score is the share found.
    pub all: Option<Vec<String>>,
    /// Compare without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
    /// AgentV 4.42.4's semantics (set by the AgentV converter): `all` scores 0 unless every
    /// text appears.
    #[serde(default)]
    pub agentv: bool,
}

/// The output contains neither `value` nor any of `any`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawNotContains {
    /// A text that must not appear (a template).
    pub value: Option<String>,
    /// Texts none of which may appear.
    pub any: Option<Vec<String>>,
    /// Compare without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
}

/// The output matches the regular expression `pattern` (not templated).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRegex {
    /// A regular expression (Rust `regex` syntax), matched against the trimmed output.
    pub pattern: String,
    /// Match without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
    /// AgentV 4.42.4's semantics (set by the AgentV converter): `pattern` is a JavaScript
    /// regex with JavaScript's `flags`, matched against the untrimmed output; what Rust
    /// cannot match as JavaScript does (back-references, look-around) is refused.
    #[serde(default)]
    pub agentv: bool,
    /// JavaScript `RegExp` flags (`i`, `m`, `s`, `u`, `y`, `g`, `d`), with `agentv`.
    pub flags: Option<String>,
}

/// The output (leading whitespace ignored) starts with `value`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStartsWith {
    /// The expected beginning (a template).
    pub value: String,
    /// Compare without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
}

/// The output (trailing whitespace ignored) ends with `value`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEndsWith {
    /// The expected ending (a template).
    pub value: String,
    /// Compare without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
}

#[derive(Debug)]
pub enum TextCheck {
    Equals { value: Needle, ignore_case: bool },
    Contains { values: Vec<Needle>, all: bool, ignore_case: bool, all_or_nothing: bool },
    NotContains { values: Vec<Needle>, ignore_case: bool },
    /// `written`: the pattern as the suite wrote it, `/…/flags` (a JavaScript one is translated);
    /// `untrimmed`: matched against the output as it is (AgentV), not trimmed.
    Regex { pattern: Regex, written: String, untrimmed: bool },
    StartsWith { value: Needle, ignore_case: bool },
    EndsWith { value: Needle, ignore_case: bool },
}

fn one(cx: &mut ValidateCx, value: &str, path: &KeyPath) -> Option<Needle> {
    Needle::compile(cx, value, &path.key("value"))
}

impl CompileGrader for RawEquals {
    type Check = TextCheck;
    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<TextCheck> {
        Some(TextCheck::Equals { value: one(cx, &self.value, path)?, ignore_case: self.ignore_case })
    }
}

impl CompileGrader for RawStartsWith {
    type Check = TextCheck;
    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<TextCheck> {
        Some(TextCheck::StartsWith { value: one(cx, &self.value, path)?, ignore_case: self.ignore_case })
    }
}

impl CompileGrader for RawEndsWith {
    type Check = TextCheck;
    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<TextCheck> {
        Some(TextCheck::EndsWith { value: one(cx, &self.value, path)?, ignore_case: self.ignore_case })
    }
}

impl CompileGrader for RawContains {
    type Check = TextCheck;
    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<TextCheck> {
        let (key, list, is_all) = match (self.value, self.any, self.all) {
            (Some(v), None, None) => ("value", vec![v], true),
            (None, Some(any), None) => ("any", any, false),
            (None, None, Some(all)) => ("all", all, true),
            _ => {
                cx.error(path, "a `contains` grader needs exactly one of `value`, `any` or `all`");
                return None;
            }
        };
        let values = values(cx, key, &list, path)?;
        Some(TextCheck::Contains { values, all: is_all, ignore_case: self.ignore_case, all_or_nothing: self.agentv })
    }
}

impl CompileGrader for RawNotContains {
    type Check = TextCheck;
    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<TextCheck> {
        let (key, list) = match (self.value, self.any) {
            (Some(v), None) => ("value", vec![v]),
            (None, Some(any)) => ("any", any),
            _ => {
                cx.error(path, "a `not_contains` grader needs exactly one of `value` or `any`");
                return None;
            }
        };
        Some(TextCheck::NotContains { values: values(cx, key, &list, path)?, ignore_case: self.ignore_case })
    }
}

impl CompileGrader for RawRegex {
    type Check = TextCheck;
    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<TextCheck> {
        if !self.agentv {
            if self.flags.is_some() {
                cx.error(&path.key("flags"), "`flags` (JavaScript regex flags) go with `agentv: true`; write `ignore_case` or inline flags such as `(?m)`");
                return None;
            }
            return pattern(cx, &self.pattern, self.ignore_case, &path.key("pattern"))
                .map(|pattern| TextCheck::Regex { written: format!("/{}/", pattern.as_str()), pattern, untrimmed: false });
        }
        let flags = format!("{}{}", self.flags.unwrap_or_default(), if self.ignore_case { "i" } else { "" });
        match super::js_regex::translate(&self.pattern, &flags) {
            Ok(rust) => pattern(cx, &rust, false, &path.key("pattern")).map(|pattern| TextCheck::Regex {
                pattern,
                written: format!("/{}/{flags}", self.pattern),
                untrimmed: true,
            }),
            Err(why) => {
                cx.error(&path.key("pattern"), format!("the JavaScript regex /{}/{flags} cannot be matched as AgentV matches it: {why}", self.pattern));
                None
            }
        }
    }
}

impl Grade for TextCheck {
    async fn grade(&self, input: &GradeInput<'_>, _: &mut Vec<JudgeCall>) -> GradeResult {
        self.verdict(input)
    }

    fn uses(&self) -> Uses<'_> {
        match self {
            TextCheck::Equals { value, .. } => Uses::needles([value.template()], "an `equals` value"),
            TextCheck::StartsWith { value, .. } => Uses::needles([value.template()], "a `starts_with` value"),
            TextCheck::EndsWith { value, .. } => Uses::needles([value.template()], "an `ends_with` value"),
            TextCheck::Contains { values, .. } => Uses::needles(values.iter().map(Needle::template), "a `contains` value"),
            TextCheck::NotContains { values, .. } => Uses::templates(values.iter().map(Needle::template)),
            TextCheck::Regex { .. } => Uses::default(),
        }
    }

    fn reads_output(&self) -> OutputRead {
        match self {
            TextCheck::StartsWith { .. } => OutputRead::Start,
            TextCheck::Contains { .. } => OutputRead::Find,
            // On cut output only a match that ends before the cut counts (`verdict`).
            TextCheck::Regex { .. } => OutputRead::Find,
            TextCheck::NotContains { .. } => OutputRead::Absence,
            TextCheck::Equals { .. } | TextCheck::EndsWith { .. } => OutputRead::Whole,
        }
    }
}

impl TextCheck {
    fn verdict(&self, input: &GradeInput<'_>) -> GradeResult {
        let output = input.output;
        let fold = |s: &str, ic: bool| if ic { s.to_lowercase() } else { s.to_owned() };
        let shown = || excerpt(output, 120);
        let render_all =
            |values: &[Needle]| values.iter().map(|v| v.render(input.bindings)).collect::<Result<Vec<_>, _>>();
        Ok(match self {
            TextCheck::Equals { .. } if input.tool_error.is_some() => Graded::unobserved(format!(
                "the tool returned an error: {}",
                excerpt(input.tool_error.unwrap_or_default(), 160)
            )),
            TextCheck::Equals { value, ignore_case } => {
                let expected = value.render(input.bindings)?;
                let ok = fold(output.trim(), *ignore_case) == fold(expected.trim(), *ignore_case);
                Graded::of(
                    ok,
                    "output equals the expected text",
                    format!("expected {:?}, got {:?}", excerpt(&expected, 120), shown()),
                )
            }
            TextCheck::StartsWith { value, ignore_case } => {
                let expected = value.render(input.bindings)?;
                let ok = fold(output.trim_start(), *ignore_case).starts_with(&fold(&expected, *ignore_case));
                Graded::of(
                    ok,
                    format!("output starts with {expected:?}"),
                    format!("expected the output to start with {expected:?}, got {:?}", shown()),
                )
            }
            TextCheck::EndsWith { value, ignore_case } => {
                let expected = value.render(input.bindings)?;
                let ok = fold(output.trim_end(), *ignore_case).ends_with(&fold(&expected, *ignore_case));
                Graded::of(
                    ok,
                    format!("output ends with {expected:?}"),
                    format!("expected the output to end with {expected:?}, got {:?}", shown()),
                )
            }
            TextCheck::Contains { values, all, ignore_case, all_or_nothing } => {
                let haystack = fold(output, *ignore_case);
                let rendered = render_all(values)?;
                let (found, missing): (Vec<&String>, Vec<&String>) =
                    rendered.iter().partition(|v| haystack.contains(&fold(v, *ignore_case)));
                if *all {
                    let score = match all_or_nothing {
                        true if missing.is_empty() => 1.0,
                        true => 0.0,
                        false => found.len() as f64 / rendered.len().max(1) as f64,
                    };
                    let reason = if missing.is_empty() {
                        format!("output contains {}", list(&found))
                    } else {
                        format!("output does not contain {}", list(&missing))
                    };
                    Graded { score, passed: missing.is_empty(), reason, evidence: None, unobserved: false }
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
                let rendered = render_all(values)?;
                let present: Vec<&String> =
                    rendered.iter().filter(|v| haystack.contains(&fold(v, *ignore_case))).collect();
                Graded::of(
                    present.is_empty(),
                    format!("output does not contain {}", list(&rendered.iter().collect::<Vec<_>>())),
                    format!("output contains {}", list(&present)),
                )
            }
            // Trimmed, so `^…$` anchor to the answer rather than to a trailing newline
            // (AgentV: untrimmed, so `^Dear` fails an answer that starts with a newline).
            TextCheck::Regex { pattern, written, untrimmed } => {
                let found = if input.output_cut {
                    // The capture cap cut the output: a match that reaches the end of what
                    // was kept may be none in the whole (`\b`, `$`, a repetition that goes
                    // on), so only one that ends before the cut counts, where every byte its
                    // assertions read is the output's own. Its end is not the output's end,
                    // so it is not trimmed.
                    let text = if *untrimmed { output } else { output.trim_start() };
                    pattern.find_iter(text).any(|m| m.end() < text.len())
                } else {
                    pattern.is_match(if *untrimmed { output } else { output.trim() })
                };
                Graded::of(
                    found,
                    format!("output matches {written}"),
                    format!("output does not match {written}: {:?}", shown()),
                )
            }
        })
    }
}

fn values(cx: &mut ValidateCx, key: &str, list: &[String], path: &KeyPath) -> Option<Vec<Needle>> {
    if list.is_empty() {
        cx.error(&path.key(key), "the list is empty");
        return None;
    }
    if key == "value" {
        return one(cx, &list[0], path).map(|t| vec![t]);
    }
    Needle::compile_all(cx, list, &path.key(key))
}

fn list(items: &[&String]) -> String {
    items.iter().map(|s| format!("{:?}", excerpt(s, 60))).collect::<Vec<_>>().join(", ")
}
