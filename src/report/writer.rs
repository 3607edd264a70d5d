//! Where reports go, checked before the run, and atomic writes (temp file + rename) so a
//! crash never leaves half a report.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct OutputPaths {
    pub dir: PathBuf,
    pub results: PathBuf,
    pub summary: PathBuf,
    pub events: PathBuf,
    pub junit: PathBuf,
    pub markdown: PathBuf,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl OutputPaths {
    pub fn new(dir: &Path, junit: Option<PathBuf>, markdown: Option<PathBuf>, json: Option<PathBuf>) -> Self {
        OutputPaths {
            dir: dir.to_owned(),
            results: json.unwrap_or_else(|| dir.join("results.json")),
            summary: dir.join("summary.json"),
            events: dir.join("events.jsonl"),
            junit: junit.unwrap_or_else(|| dir.join("junit.xml")),
            markdown: markdown.unwrap_or_else(|| dir.join("summary.md")),
        }
    }

    /// Creates the directories and proves each can take a file, before anything runs.
    pub fn prepare(&self) -> Result<(), WriteError> {
        for path in [&self.results, &self.summary, &self.events, &self.junit, &self.markdown] {
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).map_err(|source| WriteError { path: dir.to_owned(), source })?;
            tempfile::NamedTempFile::new_in(dir).map_err(|source| WriteError { path: path.clone(), source })?;
        }
        Ok(())
    }
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_owned(), source };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// `events.jsonl`, one line flushed per event so a crash keeps every finished task.
pub struct EventLog {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EventLog {
    pub fn create(path: &Path) -> Result<Self, WriteError> {
        let file = File::create(path).map_err(|source| WriteError { path: path.to_owned(), source })?;
        Ok(EventLog { path: path.to_owned(), out: BufWriter::new(file) })
    }

    pub fn append(&mut self, event: &serde_json::Value) -> Result<(), WriteError> {
        let err = |source| WriteError { path: self.path.clone(), source };
        serde_json::to_writer(&mut self.out, event).map_err(|e| err(e.into()))?;
        self.out.write_all(b"\n").map_err(err)?;
        self.out.flush().map_err(err)
    }
}
