//! The one file manager: where reports go (checked before the run), claiming the out
//! directory so it never mixes two runs, and atomic writes (temp file + rename) so a crash
//! or a kill never leaves half a report.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::REPORTS;
pub use crate::files::{WriteError, write_atomic};
use crate::files::{
    check_writable, create_no_follow, link_below, parent, through_link, write_atomic_unsynced, write_error,
};
use crate::results::Results;

/// Holds the lock of `dir`; lists what this run writes there, so the next run can remove it.
const LOCK: &str = ".evalgate.lock";
const MANIFEST: &str = ".evalgate-files";

/// The flags that put a report somewhere other than `DIR/<its file>`, which `run` and
/// `report` share: the one place a flag is mapped to its report.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportFlags {
    /// Write the JUnit XML here instead of DIR/junit.xml.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Write the Markdown summary here instead of DIR/summary.md.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Write the results JSON here instead of DIR/results.json.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write the HTML report here instead of DIR/report.html.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
}

impl ReportFlags {
    /// The flags, as a message names them.
    pub const NAMES: &str = "--junit, --markdown, --json and --html";

    /// The path the command line gave the report written to `file_name` by default.
    fn path_of(&self, file_name: &str) -> Option<&PathBuf> {
        match file_name {
            "junit.xml" => self.junit.as_ref(),
            "summary.md" => self.markdown.as_ref(),
            "results.json" => self.json.as_ref(),
            "report.html" => self.html.as_ref(),
            _ => None,
        }
    }

    /// Whether any report was given a path.
    pub fn any(&self) -> bool {
        [&self.junit, &self.markdown, &self.json, &self.html].iter().any(|p| p.is_some())
    }
}

/// Where one suite's reports go: `dir/<file name>` unless the command line named a file.
/// Nothing below `root` (the out directory) is reached through a symbolic link.
#[derive(Debug, Clone)]
pub struct OutputPaths {
    root: PathBuf,
    pub dir: PathBuf,
    pub events: PathBuf,
    /// One path per entry of `REPORTS`, in order.
    reports: Vec<PathBuf>,
}

impl OutputPaths {
    /// Each report at the path `flags` give it, else in `dir`.
    pub fn new(dir: &Path, flags: &ReportFlags) -> Self {
        let reports = REPORTS
            .iter()
            .map(|r| flags.path_of(r.file_name()).cloned().unwrap_or_else(|| dir.join(r.file_name())))
            .collect();
        OutputPaths { root: dir.to_owned(), dir: dir.to_owned(), events: dir.join("events.jsonl"), reports }
    }

    /// The same paths, with `root` the out directory they are below (`OUT` of `OUT/SUITE/`).
    pub fn within(self, root: &Path) -> Self {
        OutputPaths { root: root.to_owned(), ..self }
    }

    /// Fails when `path` would be reached through a symbolic link below the out directory.
    pub fn unlinked(&self, path: &Path) -> Result<(), WriteError> {
        link_below(&self.root, path).map_or(Ok(()), |link| Err(write_error(path)(through_link(&link))))
    }

    /// The path of the report written to `file_name` by default (`"junit.xml"`, …).
    pub fn of(&self, file_name: &str) -> &Path {
        let i = REPORTS.iter().position(|r| r.file_name() == file_name).expect("a report of REPORTS");
        &self.reports[i]
    }

    fn all(&self) -> impl Iterator<Item = &PathBuf> {
        self.reports.iter().chain([&self.events])
    }

    /// Two reports named to one file (`--markdown out/results.json`): one would overwrite
    /// the other. Checked before anything runs; the message names both and the path.
    pub fn clash(&self) -> Option<String> {
        let names: Vec<&str> = REPORTS.iter().map(|r| r.file_name()).chain(["events.jsonl"]).collect();
        let paths: Vec<&PathBuf> = self.all().collect();
        let (i, j) = (0..paths.len()).find_map(|j| Some((same_file_before(&paths, j)?, j)))?;
        Some(format!(
            "{} and {} would both be written to {}: give each report its own path ({})",
            names[i],
            names[j],
            paths[j].display(),
            ReportFlags::NAMES
        ))
    }

    /// Creates the directories and proves each can take its file (a writable directory, no
    /// directory in the file's place), before anything runs.
    pub fn prepare(&self) -> Result<(), WriteError> {
        for path in self.all() {
            self.unlinked(path)?;
            let dir = parent(path);
            std::fs::create_dir_all(dir).map_err(write_error(dir))?;
            check_writable(path)?;
        }
        Ok(())
    }

    /// Renders every report of `REPORTS` and replaces its file atomically; one that cannot
    /// be written does not keep the others from being written (the first error is returned).
    pub fn write_reports(&self, results: &Results) -> Result<(), WriteError> {
        self.write_each(results, write_atomic, true)
    }

    /// The same while the run goes: atomic, but not synced to disk each time; `all: false`
    /// writes only the reports that are [streamed](super::Report::streamed).
    pub fn write_progress(&self, results: &Results, all: bool) -> Result<(), WriteError> {
        self.write_each(results, write_atomic_unsynced, all)
    }

    /// The reports (all, or the streamed ones), redacted, through `write`; the first error
    /// is returned after the rest. The HTML page, which costs as much as all the others,
    /// renders on a second thread beside them; they render one after another (side by
    /// side, their texts and the allocator's per-thread arenas added a third to a
    /// 10,000-task run's peak memory).
    fn write_each(
        &self,
        results: &Results,
        write: fn(&Path, &[u8]) -> Result<(), WriteError>,
        all: bool,
    ) -> Result<(), WriteError> {
        let results = crate::redact::data_ref(results);
        // With a clash (an invalid run's reports), the first report at a path is written.
        let paths: Vec<&PathBuf> = self.reports.iter().collect();
        let chosen = REPORTS
            .iter()
            .zip(&self.reports)
            .enumerate()
            .filter(|(j, (r, _))| (all || r.streamed()) && same_file_before(&paths, *j).is_none())
            .map(|(_, pair)| pair);
        let (aside, here): (Vec<_>, Vec<_>) = chosen.partition(|(r, _)| r.renders_aside());
        let write_all = |reports: Vec<(&&dyn super::Report, &PathBuf)>| {
            let mut first = None;
            for (report, path) in reports {
                // Checked at each write: an agent may have made a link since the last.
                let written = self.unlinked(path).and_then(|()| write(path, report.render(&results).as_bytes()));
                if let Err(e) = written {
                    first.get_or_insert(e);
                }
            }
            first
        };
        let (here, aside) = std::thread::scope(|scope| {
            let aside = (!aside.is_empty()).then(|| scope.spawn(|| write_all(aside)));
            let here = write_all(here);
            (here, aside.and_then(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))))
        });
        here.or(aside).map_or(Ok(()), Err)
    }
}

/// The out directory, held for one run: a second run into it is refused while this one
/// lives, and what the previous run wrote is gone before this one writes.
#[derive(Debug)]
pub struct ClaimedDir {
    dir: PathBuf,
    _lock: File,
}

impl ClaimedDir {
    /// Locks `dir` (created if needed) and removes the files the previous run listed, plus
    /// the default report names, so a failed run never sits beside an older green report.
    pub fn claim(dir: &Path) -> Result<ClaimedDir, ClaimError> {
        std::fs::create_dir_all(dir).map_err(|e| ClaimError::Write(write_error(dir)(e)))?;
        let lock_path = dir.join(LOCK);
        let lock = create_no_follow(&lock_path, false).map_err(|e| ClaimError::Write(write_error(&lock_path)(e)))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(ClaimError::Busy(dir.to_owned())),
            Err(std::fs::TryLockError::Error(e)) => return Err(ClaimError::Write(write_error(&lock_path)(e))),
        }
        let manifest = dir.join(MANIFEST);
        // Read as any file a pull request may have written (a FIFO, `/dev/zero`).
        let listed = crate::files::read::bytes(&manifest, crate::files::read::AGENT)
            .map(String::from_utf8)
            .ok()
            .and_then(Result::ok);
        let listed = listed.unwrap_or_default();
        let defaults = REPORTS.iter().map(|r| dir.join(r.file_name())).chain([dir.join("events.jsonl")]);
        // The manifest sits in a directory a pull request may have written: only plain
        // paths below `dir` are taken from it, and none reached through a symbolic link (a
        // link itself is removed, not followed), so it can never delete anything else.
        let inside = |line: &str| {
            let path = Path::new(line);
            let plain = !line.is_empty() && path.components().all(|c| matches!(c, std::path::Component::Normal(_)));
            let path = dir.join(path);
            (plain && link_below(dir, parent(&path)).is_none()).then_some(path)
        };
        for path in listed.lines().filter_map(inside).chain(defaults) {
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    // A per-suite directory of an earlier run goes when it is left empty.
                    if path.parent().is_some_and(|p| p != dir) {
                        let _ = std::fs::remove_dir(parent(&path));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(ClaimError::Write(write_error(&path)(e))),
            }
        }
        let _ = std::fs::remove_file(&manifest);
        Ok(ClaimedDir { dir: dir.to_owned(), _lock: lock })
    }

    /// Records the files this run will write below the directory (before writing them), for
    /// the next claim; a `--junit`/`--markdown`/`--json` file elsewhere is the user's to keep.
    pub fn record(&self, paths: &[&OutputPaths]) -> Result<(), WriteError> {
        let dir = absolute(&self.dir);
        let list: String = paths
            .iter()
            .flat_map(|p| p.all())
            .filter_map(|p| absolute(p).strip_prefix(&dir).ok().map(|r| format!("{}\n", r.display())))
            .collect();
        write_atomic(&self.dir.join(MANIFEST), list.as_bytes())
    }
}

/// The index of an earlier path among `paths` naming the same file as `paths[j]`
/// (`out/../out/r.json` and `./out/r.json` name `out/r.json`).
fn same_file_before(paths: &[&PathBuf], j: usize) -> Option<usize> {
    let lexical = |p: &Path| {
        let mut normal = PathBuf::new();
        for c in absolute(p).components() {
            match c {
                std::path::Component::ParentDir => {
                    normal.pop();
                }
                std::path::Component::CurDir => {}
                c => normal.push(c),
            }
        }
        normal
    };
    paths[..j].iter().position(|p| lexical(p) == lexical(paths[j]))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(
        "{} is in use by another evalgate run; wait for it, or give this run its own --out",
        .0.display()
    )]
    Busy(PathBuf),
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// `events.jsonl`, one line flushed per event so a crash keeps every finished task.
pub struct EventLog {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EventLog {
    pub fn create(path: &Path) -> Result<Self, WriteError> {
        let file = create_no_follow(path, true).map_err(write_error(path))?;
        Ok(EventLog { path: path.to_owned(), out: BufWriter::new(file) })
    }

    pub fn append(&mut self, event: &serde_json::Value) -> Result<(), WriteError> {
        let path = self.path.clone();
        let event = crate::redact::data_ref(event);
        serde_json::to_writer(&mut self.out, &*event).map_err(|e| write_error(&path)(e.into()))?;
        self.out.write_all(b"\n").map_err(write_error(&path))?;
        self.out.flush().map_err(write_error(&path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_report_but_the_openwop_summary_can_be_put_elsewhere_by_a_flag() {
        let at = |name: &str| Some(PathBuf::from(name));
        let flags = ReportFlags { junit: at("j"), markdown: at("m"), json: at("r"), html: at("h") };
        let placed: Vec<&str> = REPORTS.iter().map(|r| r.file_name()).filter(|f| flags.path_of(f).is_some()).collect();
        assert_eq!(placed, ["results.json", "junit.xml", "summary.md", "report.html"]);
        let unplaced: Vec<&str> = REPORTS.iter().map(|r| r.file_name()).filter(|f| !placed.contains(f)).collect();
        assert_eq!(unplaced, ["summary.json"], "a new report needs a flag, or a reason to have none");
        let paths = OutputPaths::new(Path::new("out"), &flags);
        let files: Vec<&Path> =
            ["results.json", "junit.xml", "summary.md", "report.html"].map(|f| paths.of(f)).to_vec();
        assert_eq!(files, [Path::new("r"), Path::new("j"), Path::new("m"), Path::new("h")]);
    }

    #[test]
    fn a_claim_removes_the_previous_runs_files_and_keeps_others() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let elsewhere = dir.path().join("junit-elsewhere.xml");
        {
            let claimed = ClaimedDir::claim(&out).unwrap();
            let paths = OutputPaths::new(
                &out.join("suite-a"),
                &ReportFlags { junit: Some(elsewhere.clone()), ..ReportFlags::default() },
            );
            paths.prepare().unwrap();
            claimed.record(&[&paths]).unwrap();
            paths.write_reports(&crate::results::testing::results(Vec::new())).unwrap();
            std::fs::write(out.join("summary.md"), "old green").unwrap();
            std::fs::write(out.join("notes.txt"), "the user's").unwrap();
        }
        assert!(elsewhere.exists());
        // A manifest edited to point outside the directory deletes nothing there.
        let manifest = std::fs::read_to_string(out.join(MANIFEST)).unwrap();
        let outside = dir.path().join("precious.txt");
        std::fs::write(&outside, "keep").unwrap();
        std::fs::write(out.join(MANIFEST), format!("{manifest}../precious.txt\n{}\n", outside.display())).unwrap();
        let _claimed = ClaimedDir::claim(&out).unwrap();
        assert!(outside.exists(), "a manifest can never delete a file outside the directory");
        assert!(elsewhere.exists(), "a report written elsewhere on request is the user's");
        assert!(!out.join("suite-a").exists(), "the last run's per-suite directory is removed");
        assert!(!out.join("summary.md").exists());
        assert!(out.join("notes.txt").exists(), "files evalgate did not write stay");
    }

    #[test]
    fn a_second_claim_is_refused_while_the_first_lives() {
        let dir = tempfile::tempdir().unwrap();
        let first = ClaimedDir::claim(dir.path()).unwrap();
        let err = ClaimedDir::claim(dir.path()).unwrap_err();
        assert!(matches!(err, ClaimError::Busy(_)), "{err}");
        assert!(err.to_string().contains("in use by another evalgate run"));
        drop(first);
        ClaimedDir::claim(dir.path()).unwrap();
    }
}
