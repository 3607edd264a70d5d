//! Foreign text and names as a native suite writes them, and the placeholders a converted
//! suite stands on where the original does not say how to run something.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::llm::provider::Provider;

/// Escapes text for a template field: a foreign file's braces are literal, and its
/// `${…}` reaches the shell as written.
pub fn literal(text: &str) -> String {
    crate::template::escape(text)
}

/// A native task id for a foreign name: lowercase, other characters as `-`.
pub fn task_id(name: &str) -> String {
    name.to_lowercase().replace(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')), "-")
}

/// A model agent or judge for a converted suite to point at the user's own.
pub fn placeholder_model() -> Value {
    json!({"provider": Provider::OpenAi, "model": "gpt-4o-mini"})
}

/// The files `pattern` (a path or a glob such as `tasks/*/task.yaml`) matches under `dir`,
/// sorted.
pub fn glob_files(dir: &Path, pattern: &str) -> Result<Vec<PathBuf>, String> {
    let full = format!("{}/{pattern}", glob::Pattern::escape(&dir.to_string_lossy()));
    let paths = glob::glob(&full).map_err(|e| format!("invalid glob `{pattern}`: {e}"))?;
    let mut files: Vec<_> = paths.filter_map(Result::ok).filter(|p| p.is_file()).collect();
    files.sort();
    Ok(files)
}
