//! A path as a message shows it: relative to the working directory when it is below it.

use std::path::{Path, PathBuf};

/// `path` relative to the working directory when below it, else as given: how every message
/// and report names a file.
pub fn display_path(path: &Path) -> String {
    // evalgate never changes directory: the working directory is read once, not per task.
    static CWD: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let cwd = CWD.get_or_init(|| std::env::current_dir().ok());
    let abs = match cwd {
        Some(cwd) if path.is_relative() => cwd.join(path),
        _ => std::path::absolute(path).unwrap_or_else(|_| path.to_owned()),
    };
    match cwd.as_deref().and_then(|c| abs.strip_prefix(c).ok()) {
        Some(rel) => rel.display().to_string(),
        None => path.display().to_string(),
    }
}
