//! Files written whole or not at all: a temp file beside the target, synced, then renamed,
//! so a crash never leaves half a report, baseline or cache entry.

use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

pub fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError { path: path.to_owned(), source }
}

/// The directory `path` is in (`.` for a bare file name).
pub fn parent(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Replaces `path` with `bytes`, synced to disk first: it survives a power cut.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    replace(path, bytes, true)
}

/// Replaces `path` with `bytes` without waiting for the disk: a kill of evalgate never
/// leaves half a file, a power cut may. For reports rewritten while a run goes.
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], sync: bool) -> Result<(), WriteError> {
    let dir = parent(path);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(write_error(path))?;
    tmp.write_all(bytes).map_err(write_error(path))?;
    if sync {
        tmp.as_file().sync_all().map_err(write_error(path))?;
    }
    tmp.persist(path).map_err(|e| write_error(path)(e.error))?;
    Ok(())
}
