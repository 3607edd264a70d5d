//! What a grader looks for in the output: texts (`equals`, `contains`, `not_contains`,
//! `starts_with`, `ends_with`, canaries) and regular expressions. An empty one is found in
//! every output, so a check with it cannot tell one answer from another: refused at load
//! when written empty, and an error of the grader when a template renders it empty.

use regex::Regex;

use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope, Template};

/// A text a grader looks for: a template that must not be empty, as written or rendered.
#[derive(Debug, Clone)]
pub struct Needle(Template);

/// Only whitespace counts as empty: `equals`, `starts_with` and `ends_with` compare the
/// trimmed output, and spaces alone say nothing about an answer.
fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

impl Needle {
    /// Compiles the text at `path`, refusing an empty one.
    pub fn compile(cx: &mut ValidateCx, text: &str, path: &KeyPath) -> Option<Needle> {
        if is_blank(text) {
            let what = if text.is_empty() { "empty: every output contains it" } else { "only whitespace" };
            cx.error(path, format!("is {what}, so the check would not test the agent"));
            return None;
        }
        cx.template(text, Scope::AfterAgent, path).map(Needle)
    }

    /// Compiles each text of a list at `path[i]`, reporting every empty or invalid one.
    pub fn compile_all(cx: &mut ValidateCx, texts: &[String], path: &KeyPath) -> Option<Vec<Needle>> {
        let compiled: Vec<_> = texts.iter().enumerate().map(|(i, t)| Needle::compile(cx, t, &path.index(i))).collect();
        compiled.into_iter().collect()
    }

    /// The text to look for. `Err` when it renders empty (an `{env.X}` set to ""), which
    /// would pass `contains` whatever the agent said.
    pub fn render(&self, bindings: &Bindings) -> Result<String, String> {
        let text = bindings.render(&self.0).map_err(|m| format!("uses {m}"))?;
        if is_blank(&text) {
            Err(format!(
                "`{}` renders empty, and every output contains an empty text, so the check would not test the agent",
                self.0.source()
            ))
        } else {
            Ok(text)
        }
    }

    pub fn template(&self) -> &Template {
        &self.0
    }
}

/// Compiles a regular expression a grader searches the output with, refusing an empty one
/// (it matches every output).
pub fn pattern(cx: &mut ValidateCx, text: &str, ignore_case: bool, path: &KeyPath) -> Option<Regex> {
    if text.is_empty() {
        cx.error(path, "is empty: an empty pattern matches every output, so the check would not test the agent");
        return None;
    }
    cx.regex(path, text, ignore_case)
}
