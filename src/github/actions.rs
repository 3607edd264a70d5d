//! Whether evalgate acts as a GitHub Action, and the runner's files it appends to
//! (`$GITHUB_STEP_SUMMARY`, `$GITHUB_OUTPUT`).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::report::writer::WriteError;

/// `--no-github` wins, then `--github`, else `GITHUB_ACTIONS=true` (set by the runner).
pub fn enabled(github: bool, no_github: bool) -> bool {
    if no_github {
        return false;
    }
    github || std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

/// The file a runner variable names; unset or empty means "not on a runner", so skip.
pub fn runner_file(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Appends, never replaces: earlier steps' content in the same file must survive.
pub fn append(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_owned(), source };
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(err)?;
    file.write_all(bytes).map_err(err)
}
