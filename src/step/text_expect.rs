//! Checks on a text that steps and graders share: a response body, an MCP result or a
//! file's content must contain a text, match a pattern or hold JSON values.

use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::excerpt::excerpt;
use crate::json::{JsonKind, JsonPath, PathExpect};
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Missing, Scope, Template};

/// Checks on a text: all that are set must hold.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBodyExpect {
    /// A text it contains (a template).
    pub contains: Option<String>,
    /// A regular expression it matches.
    pub matches: Option<String>,
    /// Checks on it parsed as JSON.
    pub json: Option<RawJsonChecks>,
}

/// One JSON check, or a list that must all hold.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawJsonChecks {
    One(RawJsonExpect),
    All(Vec<RawJsonExpect>),
}

impl RawJsonChecks {
    pub fn as_slice(&self) -> &[RawJsonExpect] {
        match self {
            RawJsonChecks::One(one) => std::slice::from_ref(one),
            RawJsonChecks::All(all) => all,
        }
    }
}

/// A check on one value of a JSON document.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawJsonExpect {
    /// `a.b[0].c`; default the whole document.
    pub path: Option<String>,
    /// The value equals this.
    pub equals: Option<Value>,
    /// The value (as text) matches this regular expression.
    pub matches: Option<String>,
    /// The value exists (or, with false, does not); the default check.
    pub exists: Option<bool>,
    /// The value has this JSON type.
    #[serde(rename = "type")]
    pub kind: Option<JsonKind>,
}

/// A check on a body or file content.
#[derive(Debug)]
pub enum ContentCheck {
    Contains(Template),
    Matches(Regex),
    Json(JsonExpect),
}

#[derive(Debug)]
pub struct JsonExpect {
    pub path: Option<JsonPath>,
    pub expect: PathExpect,
}

impl RawBodyExpect {
    pub fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<Vec<ContentCheck>> {
        content_checks(cx, self.contains.as_ref(), self.matches.as_ref(), self.json.as_ref(), path, scope)
    }
}

/// Compiles the content checks set at `path`.
pub fn content_checks(
    cx: &mut ValidateCx,
    contains: Option<&String>,
    matches: Option<&String>,
    json: Option<&RawJsonChecks>,
    path: &KeyPath,
    scope: Scope,
) -> Option<Vec<ContentCheck>> {
    let mut checks = Vec::new();
    let mut ok = true;
    if let Some(c) = contains {
        match cx.template(c, scope, &path.key("contains")) {
            Some(t) => checks.push(ContentCheck::Contains(t)),
            None => ok = false,
        }
    }
    if let Some(m) = matches {
        match regex(cx, m, &path.key("matches")) {
            Some(re) => checks.push(ContentCheck::Matches(re)),
            None => ok = false,
        }
    }
    let json = json.map(RawJsonChecks::as_slice).unwrap_or_default();
    for (i, j) in json.iter().enumerate() {
        let at = if json.len() == 1 { path.key("json") } else { path.key("json").index(i) };
        match j.compile(cx, &at) {
            Some(e) => checks.push(ContentCheck::Json(e)),
            None => ok = false,
        }
    }
    ok.then_some(checks)
}

impl RawJsonExpect {
    pub fn compile(&self, cx: &mut ValidateCx, path: &KeyPath) -> Option<JsonExpect> {
        let json_path = match &self.path {
            None => None,
            Some(p) => match JsonPath::parse(p) {
                Ok(p) => Some(p),
                Err(e) => {
                    cx.error(&path.key("path"), e);
                    return None;
                }
            },
        };
        let expect = match (&self.equals, &self.matches, self.exists, self.kind) {
            (Some(v), None, None, None) => PathExpect::Equals(v.clone()),
            (None, Some(m), None, None) => PathExpect::Matches(regex(cx, m, &path.key("matches"))?),
            (None, None, Some(e), None) => PathExpect::Exists(e),
            (None, None, None, Some(k)) => PathExpect::Kind(k),
            (None, None, None, None) => PathExpect::Exists(true),
            _ => {
                cx.error(path, "use one of `equals`, `matches`, `exists` or `type`");
                return None;
            }
        };
        Some(JsonExpect { path: json_path, expect })
    }
}

pub fn regex(cx: &mut ValidateCx, pattern: &str, path: &KeyPath) -> Option<Regex> {
    cx.regex(path, pattern, false)
}

/// Why `text` fails `checks`, as [`Unmet`] (no failure when it passes); `what` names the
/// text. `Err` when a check uses a step output that was not captured: it cannot be checked.
pub fn content_failures(
    checks: &[ContentCheck],
    text: &str,
    what: &str,
    bindings: &Bindings,
) -> Result<Unmet, Missing> {
    let mut unmet = Unmet::default();
    let failures = &mut unmet.failures;
    for check in checks {
        match check {
            ContentCheck::Contains(t) => {
                let needle = bindings.render(t)?;
                if !text.contains(&needle) {
                    failures.push(format!("{what} does not contain {needle:?}"));
                }
            }
            ContentCheck::Matches(re) => {
                if !re.is_match(text) {
                    failures.push(format!("{what} does not match /{}/", re.as_str()));
                }
            }
            ContentCheck::Json(expect) => match serde_json::from_str::<Value>(text.trim()) {
                Err(e) => {
                    failures.push(format!("{what} is not JSON ({e}): {:?}", excerpt(text, 80)));
                    unmet.unobserved = true;
                }
                Ok(doc) => {
                    let at = expect.path.as_ref().map_or_else(|| "$".to_owned(), ToString::to_string);
                    let found = match &expect.path {
                        Some(p) => p.get(&doc),
                        None => Some(&doc),
                    };
                    if let Err(reason) = expect.expect.check(&at, found) {
                        failures.push(format!("{what}: {reason}"));
                    }
                }
            },
        }
    }
    Ok(unmet)
}

/// The checks a text failed, and whether one of them had nothing to look at (a JSON check of
/// a text that is not JSON): `negate` must not turn that into a pass.
#[derive(Debug, Default)]
pub struct Unmet {
    pub failures: Vec<String>,
    pub unobserved: bool,
}

/// The templates `checks` render.
pub fn content_templates(checks: &[ContentCheck]) -> impl Iterator<Item = &Template> {
    checks.iter().filter_map(|c| match c {
        ContentCheck::Contains(t) => Some(t),
        _ => None,
    })
}
