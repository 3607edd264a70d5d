//! The cassette file: read bounded and checked line by line, written whole through the one
//! writer that refuses an entry holding a secret in any decoding, and the entries this
//! process last wrote to each file, which the next save of it starts from.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use serde_json::Value;

use super::entry::{Entry, canonical, key_of};

/// Per cassette file, the entries this process last saved to it: the next save of the file
/// (another suite of the run) starts from them.
pub(super) static WRITTEN: LazyLock<Mutex<HashMap<PathBuf, BTreeMap<String, Entry>>>> = LazyLock::new(Mutex::default);

/// `path` as one name of its file whatever the path that led to it: its directory resolved
/// when it exists (it does once the file was written).
pub(super) fn identity(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    match (absolute.parent().and_then(|dir| dir.canonicalize().ok()), absolute.file_name()) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => absolute,
    }
}

/// Why `entry` may not be kept, when it may not: its request or an answer holds a secret in
/// a decoding the redactor knows (`redact::hidden`), which no redaction of its text removes.
pub(super) fn refusal(entry: &Entry) -> Option<String> {
    let mut hidden = crate::redact::hidden(&entry.request);
    entry.responses.iter().for_each(|answer| hidden.extend(crate::redact::hidden(answer)));
    hidden.sort();
    hidden.dedup();
    let model = entry.model.as_deref().map(|m| format!(" (model {m})")).unwrap_or_default();
    (!hidden.is_empty()).then(|| {
        format!(
            "the {} request{model} with key {} is not recorded: it or its answer holds {} in a form no redaction \
             of the text removes (split across a stream's events, or encoded); a replay of it misses",
            entry.kind,
            entry.key,
            hidden.join(", ")
        )
    })
}

/// One line an entry, in key order, written whole or not at all: the one place entries reach
/// the file. An entry that may not be kept ([`refusal`]) is left out, said so; their keys.
pub(super) fn write(
    path: &Path,
    name: &str,
    entries: &BTreeMap<String, Entry>,
) -> Result<Vec<String>, crate::files::WriteError> {
    let mut text = String::new();
    let mut refused = Vec::new();
    for entry in entries.values() {
        if let Some(why) = refusal(entry) {
            crate::errln!("warning: cassette {name}: {why}");
            refused.push(entry.key.clone());
            continue;
        }
        text.push_str(&serde_json::to_string(entry).expect("an entry serializes"));
        text.push('\n');
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(crate::files::write_error(path))?;
    }
    crate::files::write_atomic(path, text.as_bytes())?;
    Ok(refused)
}

/// The cassette file's text: a regular file, at most `files::read::CASSETTE` bytes (a pull
/// request controls the file), UTF-8.
pub(super) fn read(path: &Path) -> std::io::Result<String> {
    let bytes = crate::files::read::bytes(path, crate::files::read::CASSETTE)?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The entries of a cassette file, each line checked.
pub(super) fn parse(text: &str) -> Result<BTreeMap<String, Entry>, String> {
    let mut entries = BTreeMap::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let entry: Entry = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        // Shown in the summary and the PR comment: a date, nothing else.
        let is_date = entry.recorded.len() == 10
            && entry.recorded.char_indices().all(|(i, c)| if i == 4 || i == 7 { c == '-' } else { c.is_ascii_digit() });
        if !is_date {
            return Err(format!("line {}: `recorded` is not a date (YYYY-MM-DD)", n + 1));
        }
        let key = key_of(&entry.kind, &canonical(&entry.request));
        if key != entry.key {
            return Err(format!(
                "line {}: key {} is not the key of its request ({key}): was the request edited by hand? record it again",
                n + 1,
                entry.key
            ));
        }
        if entries.insert(entry.key.clone(), entry).is_some() {
            return Err(format!("line {}: a second entry with key {}", n + 1, line_key(line)));
        }
    }
    Ok(entries)
}

pub(super) fn line_key(line: &str) -> String {
    serde_json::from_str::<Value>(line).ok().and_then(|v| v["key"].as_str().map(str::to_owned)).unwrap_or_default()
}
