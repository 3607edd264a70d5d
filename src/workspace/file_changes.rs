//! `file_changes`: what the agent changed in its workspace (each path added, modified or
//! deleted, with a unified diff where both sides are text), bounded in size.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::tree::{Node, Tree};

/// The most diff text kept for one trial, in bytes; the list of paths is kept whole.
pub const DIFF_LIMIT: usize = 64 * 1024;
/// Files larger than this are listed without a diff.
const DIFF_FILE_LIMIT: u64 = 256 * 1024;

/// What happened to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Modified,
    Deleted,
}

/// One changed path of the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileChange {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    pub change: Change,
}

/// Every change the agent made, and the diff of them as far as it fits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileChanges {
    pub files: Vec<FileChange>,
    /// A unified diff (`--- a/PATH`, `+++ b/PATH`) of the changed text files, cut at
    /// `DIFF_LIMIT` bytes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub diff: String,
    /// The diff was cut, or some changed files had none (binary, too large, or their
    /// earlier content unknown).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub diff_partial: bool,
}

impl FileChanges {
    /// The changes from `base` (the workspace as the agent got it) to `after` (as it left
    /// it). `earlier`: the text a path of `base` held, when known, for the diff's earlier
    /// side; where it is not, the change is listed without its old lines.
    pub fn between(
        base: &Tree,
        after: &Tree,
        workspace: &Path,
        earlier: &dyn Fn(&str, &Node) -> Option<String>,
    ) -> FileChanges {
        let mut out = FileChanges::default();
        let paths: std::collections::BTreeSet<&String> = base.keys().chain(after.keys()).collect();
        for path in paths {
            let change = match (base.get(path), after.get(path)) {
                (Some(a), Some(b)) if a == b => continue,
                (Some(Node::Dir), Some(Node::Dir)) => continue,
                (None, Some(Node::Dir)) | (Some(Node::Dir), None) => continue,
                (Some(_), Some(_)) => Change::Modified,
                (None, Some(_)) => Change::Added,
                (Some(_), None) => Change::Deleted,
                (None, None) => unreachable!("a path of one side"),
            };
            let old = match base.get(path) {
                None => Some(String::new()),
                Some(node) => earlier(path, node),
            };
            let new = match after.get(path) {
                None => Some(String::new()),
                Some(node) => text_of(&workspace.join(path), node),
            };
            match (old, new) {
                (Some(old), Some(new)) if out.diff.len() < DIFF_LIMIT => {
                    let diff = similar::TextDiff::from_lines(&old, &new);
                    let text =
                        git_header(path, change, base.get(path), after.get(path)) + &diff.unified_diff().to_string();
                    let room = DIFF_LIMIT - out.diff.len();
                    if text.len() > room {
                        let mut cut = room;
                        while !text.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        out.diff.push_str(&text[..cut]);
                        out.diff_partial = true;
                    } else {
                        out.diff.push_str(&text);
                    }
                }
                _ => out.diff_partial = true,
            }
            out.files.push(FileChange { path: path.clone(), change });
        }
        out
    }
}

/// The lines git's `diff` starts a file's diff with (its `index` line aside: no blob
/// hashes here), so a grader written for AgentV's `git diff` reads the same shape.
fn git_header(path: &str, change: Change, old: Option<&Node>, new: Option<&Node>) -> String {
    let mode = |node: Option<&Node>| match node {
        Some(Node::File { mode, .. }) if mode & 0o111 != 0 => "100755",
        Some(Node::Link(_)) => "120000",
        _ => "100644",
    };
    let (from, to) = match change {
        Change::Added => (format!("new file mode {}\n--- /dev/null", mode(new)), format!("+++ b/{path}")),
        Change::Deleted => (format!("deleted file mode {}\n--- a/{path}", mode(old)), "+++ /dev/null".to_owned()),
        Change::Modified => (format!("--- a/{path}"), format!("+++ b/{path}")),
    };
    format!("diff --git a/{path} b/{path}\n{from}\n{to}\n")
}

/// The text of a file whose scan found `node`, when it is a small UTF-8 file (the diff's
/// limit) and still that.
pub(super) fn text_of(path: &Path, node: &Node) -> Option<String> {
    let Node::File { len, .. } = node else { return None };
    if *len > DIFF_FILE_LIMIT {
        return None;
    }
    let limit = crate::files::read::Limit { max: DIFF_FILE_LIMIT, what: "a file of a workspace diff" };
    crate::files::read::text(path, limit).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_an_addition_and_a_deletion_are_listed_with_their_diff() {
        let (pristine, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for dir in [pristine.path(), ws.path()] {
            std::fs::write(dir.join("keep.txt"), "same\n").unwrap();
            std::fs::write(dir.join("gone.txt"), "bye\n").unwrap();
            std::fs::write(dir.join("edit.txt"), "one\ntwo\n").unwrap();
        }
        let base = super::super::tree::scan(ws.path(), None).unwrap();
        std::fs::write(ws.path().join("edit.txt"), "one\nthree\n").unwrap();
        std::fs::remove_file(ws.path().join("gone.txt")).unwrap();
        std::fs::write(ws.path().join("new.txt"), "hi\n").unwrap();
        let after = super::super::tree::scan(ws.path(), None).unwrap();
        let earlier = |path: &str, node: &Node| text_of(&pristine.path().join(path), node);
        let changes = FileChanges::between(&base, &after, ws.path(), &earlier);
        let listed: Vec<(&str, Change)> = changes.files.iter().map(|f| (f.path.as_str(), f.change)).collect();
        assert_eq!(listed, [("edit.txt", Change::Modified), ("gone.txt", Change::Deleted), ("new.txt", Change::Added)]);
        assert!(
            changes.diff.contains(
                "diff --git a/edit.txt b/edit.txt\n--- a/edit.txt\n+++ b/edit.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n"
            ),
            "{}",
            changes.diff
        );
        assert!(changes.diff.contains("new file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n"));
        assert!(
            changes.diff.contains("deleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n")
        );
        assert!(!changes.diff_partial);
    }
}
