//! `file` steps (and the `file` grader's check): create, remove or check a file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::text_expect::{ContentCheck, RawJsonChecks, content_checks, content_failures, content_templates};
use super::{CompileStep, Leaf, RunStep, StepEnv};
use crate::results::StepResult;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope, Template};
use crate::uses::Uses;

/// Create (`content`), remove (`absent: true`) or check (`expect`) a file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFileStep {
    /// The file, relative to the suite's directory (a template).
    pub path: String,
    /// Create the file (and its directories) with this text (a template).
    pub content: Option<String>,
    /// Octal permission bits for a created file, e.g. "0755".
    pub mode: Option<String>,
    /// Remove the file; a missing file is fine.
    #[serde(default)]
    pub absent: bool,
    /// Check the file.
    pub expect: Option<RawFileExpect>,
}

/// What a file must be.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFileExpect {
    /// Default true.
    pub exists: Option<bool>,
    /// A text its content contains (a template).
    pub contains: Option<String>,
    /// A regular expression its content matches.
    pub matches: Option<String>,
    /// Checks on its content parsed as JSON.
    pub json: Option<RawJsonChecks>,
}

#[derive(Debug)]
pub struct FileAction {
    pub path: Template,
    pub op: FileOp,
}

#[derive(Debug)]
pub enum FileOp {
    Create { content: Template, mode: Option<u32> },
    Remove,
    Check(FileExpect),
}

#[derive(Debug)]
pub struct FileExpect {
    pub exists: bool,
    pub content: Vec<ContentCheck>,
}

impl CompileStep for RawFileStep {
    type Action = FileAction;

    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<FileAction> {
        let file_path = cx.template(&self.path, scope, &path.key("path"));
        let op = match (&self.content, self.absent, &self.expect) {
            (Some(content), false, None) => {
                let mode = match &self.mode {
                    None => Some(None),
                    Some(m) => match u32::from_str_radix(m.trim_start_matches("0o"), 8) {
                        Ok(bits) if bits <= 0o7777 => Some(Some(bits)),
                        _ => {
                            cx.error(&path.key("mode"), format!("invalid mode `{m}`: use octal such as \"0644\""));
                            None
                        }
                    },
                };
                let content = cx.template(content, scope, &path.key("content"));
                Some(FileOp::Create { content: content?, mode: mode? })
            }
            (None, true, None) => Some(FileOp::Remove),
            (None, false, Some(e)) => e.compile(cx, &path.key("expect"), scope).map(FileOp::Check),
            _ => {
                cx.error(
                    path,
                    "a `file` step does one of: `content` (create), `absent: true` (remove), `expect` (check)",
                );
                None
            }
        };
        if self.mode.is_some() && self.content.is_none() {
            cx.error(&path.key("mode"), "`mode` applies to a file created with `content`");
        }
        Some(FileAction { path: file_path?, op: op? })
    }
}

impl RawFileExpect {
    pub fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<FileExpect> {
        let exists = self.exists.unwrap_or(true);
        let content =
            content_checks(cx, self.contains.as_ref(), self.matches.as_ref(), self.json.as_ref(), path, scope)?;
        if !exists && !content.is_empty() {
            cx.error(path, "a file expected not to exist has no content to check");
            return None;
        }
        Some(FileExpect { exists, content })
    }
}

impl FileExpect {
    pub fn uses(&self) -> Uses<'_> {
        Uses::templates(content_templates(&self.content))
    }
}

impl RunStep for FileAction {
    async fn execute(
        &self,
        _: Option<Duration>,
        env: StepEnv<'_>,
        bindings: &mut Bindings,
        _: &mut StepResult,
    ) -> Option<Leaf> {
        Some(file(self, env.dir, bindings).await)
    }

    fn uses(&self) -> Uses<'_> {
        Uses::templates([&self.path]).and(match &self.op {
            FileOp::Create { content, .. } => Uses::templates([content]),
            FileOp::Remove => Uses::default(),
            FileOp::Check(e) => e.uses(),
        })
    }
}

async fn file(action: &FileAction, dir: &Path, bindings: &Bindings) -> Leaf {
    let mut leaf = Leaf::default();
    let path = match bindings.render(&action.path) {
        Ok(path) => resolve(dir, &path),
        Err(missing) => {
            leaf.action = format!("file {}", resolve(dir, &missing.partial).display());
            leaf.failure = Some(missing.to_string());
            leaf.error = true;
            return leaf;
        }
    };
    let shown = path.display().to_string();
    match &action.op {
        FileOp::Create { content, mode } => {
            leaf.action = format!("create {shown}");
            let content = match bindings.render(content) {
                Ok(content) => content,
                Err(missing) => {
                    leaf.failure = Some(missing.to_string());
                    leaf.error = true;
                    return leaf;
                }
            };
            let result = (|| {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, content)?;
                if let Some(mode) = mode {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))?;
                }
                Ok::<(), std::io::Error>(())
            })();
            if let Err(e) = result {
                leaf.failure = Some(format!("cannot write {shown}: {e}"));
                leaf.error = true;
            }
        }
        FileOp::Remove => {
            leaf.action = format!("remove {shown}");
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    leaf.failure = Some(format!("cannot remove {shown}: {e}"));
                    leaf.error = true;
                }
            }
        }
        FileOp::Check(expect) => {
            leaf.action = format!("check {shown}");
            if let Err(miss) = check_file(&path, expect, bindings).await {
                leaf.error = matches!(miss, FileMiss::Unreadable(_));
                leaf.failure = Some(miss.into_reason());
            }
        }
    }
    leaf
}

/// Why a file did not meet its expectations.
#[derive(Debug, PartialEq)]
pub enum FileMiss {
    /// Every unmet expectation: the file was looked at and is not what it should be.
    Unmet(String),
    /// A JSON expectation of a file that is not JSON: a fail, but not one `negate` inverts.
    Unobserved(String),
    /// The file could not be looked at (a directory in the way, no permission, not text):
    /// nothing is known of it, so a check of it is an error, never a fail that `negate`
    /// could turn into a pass.
    Unreadable(String),
}

impl FileMiss {
    pub fn into_reason(self) -> String {
        match self {
            FileMiss::Unmet(reason) | FileMiss::Unobserved(reason) | FileMiss::Unreadable(reason) => reason,
        }
    }
}

/// The file is the agent's: it is read bounded and off the runtime thread
/// (`files::read`, its `AGENT` limit), so a FIFO or `/dev/zero` is unreadable, not a hang.
pub async fn check_file(path: &Path, expect: &FileExpect, bindings: &Bindings) -> Result<(), FileMiss> {
    let shown = path.display();
    // `exists()` says "no" when it cannot tell (a directory it may not search); a file
    // where a directory of the path should be does tell.
    let exists = match path.try_exists() {
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => false,
        found => found.map_err(|e| FileMiss::Unreadable(format!("cannot tell whether {shown} exists: {e}")))?,
    };
    // Absence is an observation of whether the file exists, and of nothing else: a check
    // of its content saw no content, so `negate` cannot make "it does not contain X" of a
    // file that was never written.
    match (exists, expect.exists) {
        (false, true) if !expect.content.is_empty() => {
            return Err(FileMiss::Unobserved(format!("{shown} does not exist: its content was never there to check")));
        }
        (false, true) => return Err(FileMiss::Unmet(format!("{shown} does not exist"))),
        (true, false) => return Err(FileMiss::Unmet(format!("{shown} exists"))),
        (false, false) => return Ok(()),
        (true, true) => {}
    }
    if expect.content.is_empty() {
        return Ok(());
    }
    let owned = path.to_owned();
    let read = tokio::task::spawn_blocking(move || crate::files::read::bytes(&owned, crate::files::read::AGENT))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
        .and_then(|bytes| String::from_utf8(bytes).map_err(|_| std::io::Error::other("it is not UTF-8 text")));
    let text = read.map_err(|e| FileMiss::Unreadable(format!("cannot read {shown}: {e}")))?;
    let unmet = content_failures(&expect.content, &text, &shown.to_string(), bindings)
        .map_err(|missing| FileMiss::Unreadable(format!("uses {missing}")))?;
    match (unmet.failures.is_empty(), unmet.unobserved) {
        (true, _) => Ok(()),
        (false, false) => Err(FileMiss::Unmet(unmet.failures.join("; "))),
        (false, true) => Err(FileMiss::Unobserved(unmet.failures.join("; "))),
    }
}

fn resolve(dir: &Path, path: &str) -> PathBuf {
    dir.join(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a file exists is an observation only when it could be looked for.
    #[tokio::test]
    async fn a_file_that_cannot_be_looked_for_is_unreadable_not_absent() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plain"), "x").unwrap();
        let absent = FileExpect { exists: false, content: Vec::new() };
        let bindings = Bindings::new(Default::default(), "t");
        assert_eq!(check_file(&dir.path().join("plain/inside"), &absent, &bindings).await, Ok(()));
        let too_long = dir.path().join("n".repeat(5000));
        let Err(FileMiss::Unreadable(why)) = check_file(&too_long, &absent, &bindings).await else { panic!("read as absent") };
        assert!(why.starts_with("cannot tell whether "), "{why}");
        let text = FileExpect { exists: true, content: vec![ContentCheck::Contains(Template::literal("x"))] };
        let Err(FileMiss::Unreadable(why)) = check_file(dir.path(), &text, &bindings).await else { panic!("read a directory") };
        assert!(why.starts_with("cannot read "), "{why}");
    }
}
