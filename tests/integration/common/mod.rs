//! A small builder for running the real binary in a temp directory (after `just`'s tests).
//!
//! YAML is written as it reads, an indented block that [`unindent`] takes back to column 0:
//! `Test::new().write("agent.sh", ECHO_AGENT).suite("\n    evalgate: 1\n    …").args(&["check"]).run()`,
//! then `run.expect_code(2).expect_stderr("…")` pins the whole of stderr (the test directory
//! shown as `[DIR]`) where the message is ours; `expect_stderr_contains` is left for text that
//! is not ours (a parser's, a duration, a live server's). A run whose test says nothing about
//! its stderr must have printed nothing but the run's progress (the terminal reporter's line a
//! task, its gate table and verdict line, whose timings and order vary): dropping a `Run`
//! asserts it (after `just`'s `Test`, whose expected stderr is empty unless given), so a new
//! warning or error cannot go unseen. `expect_messages` pins the rest exactly.

#![allow(dead_code)]

pub mod differential;
pub mod server;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Test {
    pub dir: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// What stderr holds besides progress, checked when it runs ([`Test::expect_messages`]).
    messages: Option<String>,
}

/// A finished run. Its stderr holds nothing but progress unless the test says what it expects
/// ([`Run::expect_stderr`], [`Run::expect_messages`], [`Run::expect_stderr_contains`],
/// [`Run::stderr_has`]): `Drop` checks.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    /// Read it for messages; a check of its text goes through the methods that say so.
    pub stderr: String,
    pub dir: PathBuf,
    /// The test said what it expects of stderr.
    stderr_expected: Cell<bool>,
    /// Where the test ran it, for `EVALGATE_BLESS_STDERR`.
    at: &'static std::panic::Location<'static>,
    _keep: tempfile::TempDir,
}

impl Test {
    pub fn new() -> Self {
        Test { dir: tempfile::tempdir().expect("temp dir"), args: Vec::new(), env: Vec::new(), messages: None }
    }

    /// A test whose directory is below `parent` rather than the system's temp directory
    /// (a sandbox gives an agent a `/tmp` of its own, which would hide the suite anyway).
    pub fn new_in(parent: &Path) -> Self {
        std::fs::create_dir_all(parent).unwrap();
        Test { dir: tempfile::tempdir_in(parent).expect("temp dir"), ..Test::new() }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file below the test directory; `.sh` and `.py` files are made executable.
    pub fn write(self, name: &str, contents: &str) -> Self {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        if name.ends_with(".sh") || name.ends_with(".py") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        self
    }

    /// Writes `text`, written in the test as an indented raw string, [`unindent`]ed.
    pub fn file(self, name: &str, text: &str) -> Self {
        self.write(name, &unindent(text))
    }

    /// Writes the suite `evalgate.yaml`, [`unindent`]ed.
    pub fn suite(self, text: &str) -> Self {
        self.file("evalgate.yaml", text)
    }

    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|s| s.to_string()));
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// What stderr must hold besides progress, asserted as it runs (as [`Run::expect_messages`]),
    /// for a run the test does not keep.
    pub fn expect_messages(mut self, expected: &str) -> Self {
        self.messages = Some(expected.to_owned());
        self
    }

    pub fn command(&self) -> Command {
        self.command_via(&[])
    }

    /// The command, started through `prefix` (`["nice", "-n", "8"]`, a shell with a `ulimit`
    /// whose script ends in `exec "$0" "$@"`).
    pub fn command_via(&self, prefix: &[&str]) -> Command {
        let bin = env!("CARGO_BIN_EXE_evalgate");
        let mut cmd = match prefix.split_first() {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(bin);
                cmd
            }
            None => Command::new(bin),
        };
        cmd.current_dir(self.dir.path()).args(&self.args);
        // Tests may themselves run under GitHub Actions: start from none of its variables.
        for (key, _) in std::env::vars() {
            if key.starts_with("GITHUB_") || key.starts_with("RUNNER_") || key.ends_with("_BASE_URL") {
                cmd.env_remove(key);
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    #[track_caller]
    pub fn run(self) -> Run {
        self.run_via(&[])
    }

    /// Runs evalgate through `prefix` (see `command_via`).
    #[track_caller]
    pub fn run_via(self, prefix: &[&str]) -> Run {
        let Output { status, stdout, stderr } = self.command_via(prefix).output().expect("run evalgate");
        let messages = self.messages.clone();
        let run = Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            dir: self.dir.path().to_owned(),
            stderr_expected: Cell::new(false),
            at: std::panic::Location::caller(),
            _keep: self.dir,
        };
        if let Some(expected) = messages {
            run.expect_messages(&expected);
        }
        run
    }
}

impl Run {
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name))
            .unwrap_or_else(|e| panic!("read {name}: {e}\nstderr:\n{}", self.stderr))
    }

    pub fn json(&self, name: &str) -> serde_json::Value {
        serde_json::from_str(&self.read(name)).unwrap()
    }

    pub fn results(&self) -> serde_json::Value {
        self.json("evalgate-out/results.json")
    }

    /// The result of task `id` in `results.json`.
    pub fn task(&self, id: &str) -> serde_json::Value {
        let results = self.results();
        results["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no task {id}"))
    }

    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "exit code\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }

    /// Asserts the whole of stderr: `expected` is [`unindent`]ed, the test directory shows as `[DIR]`.
    #[track_caller]
    pub fn expect_stderr(&self, expected: &str) -> &Self {
        self.stderr_expected.set(true);
        expect_text("stderr", &self.normalized(&self.stderr), &unindent(expected));
        self
    }

    /// Asserts stderr without the run's progress lines ([`progress_line`]) exactly: the
    /// warnings and errors a run printed beside its progress. `expected` written as an indented
    /// block (starting with a newline) is [`unindent`]ed; a text whose every line is indented
    /// (a note under the verdict) is written as a plain string, taken as it is.
    #[track_caller]
    pub fn expect_messages(&self, expected: &str) -> &Self {
        self.stderr_expected.set(true);
        let expected = if expected.starts_with('\n') { unindent(expected) } else { expected.to_owned() };
        expect_text("stderr besides progress", &self.messages(), &expected);
        self
    }

    /// Stderr without the run's progress lines, the test directory as `[DIR]`.
    fn messages(&self) -> String {
        self.normalized(&self.stderr).split_inclusive('\n').filter(|line| !progress_line(line)).collect()
    }

    /// Asserts that stderr holds each of `needles`: for text that is not ours (a parser's, a
    /// live server's, a duration). Ours is pinned whole with [`Run::expect_stderr`].
    #[track_caller]
    pub fn expect_stderr_contains(&self, needles: &[&str]) -> &Self {
        self.stderr_expected.set(true);
        for needle in needles {
            assert!(self.normalized(&self.stderr).contains(needle), "stderr lacks {needle:?}:\n{}", self.stderr);
        }
        self
    }

    /// Whether stderr holds `needle`, for a test that asserts on it in its own way; it
    /// counts as saying what stderr holds.
    pub fn stderr_has(&self, needle: &str) -> bool {
        self.stderr_expected.set(true);
        self.stderr.contains(needle)
    }

    /// Whether stderr lacks `needle` (a secret, a key the user never wrote). Saying what stderr
    /// must not hold is not saying what it holds: the rest is still checked on drop.
    pub fn stderr_lacks(&self, needle: &str) -> bool {
        !self.stderr.contains(needle)
    }

    /// Stderr, for a test that checks it itself (a helper returning it to its callers).
    pub fn take_stderr(&self) -> String {
        self.stderr_expected.set(true);
        self.stderr.clone()
    }

    /// Stderr is left unchecked: for a run the test reads only for its side effects and whose
    /// stderr depends on the machine (a live server, timing). Say why at the call.
    pub fn any_stderr(&self) -> &Self {
        self.stderr_expected.set(true);
        self
    }

    /// Asserts the whole of stdout, as [`Run::expect_stderr`] does stderr.
    #[track_caller]
    pub fn expect_stdout(&self, expected: &str) -> &Self {
        expect_text("stdout", &self.normalized(&self.stdout), &unindent(expected));
        self
    }

    fn normalized(&self, text: &str) -> String {
        let canonical = self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone());
        text.replace(&canonical.display().to_string(), "[DIR]").replace(&self.dir.display().to_string(), "[DIR]")
    }
}

impl Drop for Run {
    /// A test that said nothing about stderr expects it empty.
    fn drop(&mut self) {
        if self.stderr_expected.get() || std::thread::panicking() {
            return;
        }
        // `EVALGATE_BLESS_STDERR=FILE`: note what was printed where, for pinning it.
        if let Some(file) = std::env::var_os("EVALGATE_BLESS_STDERR") {
            use std::io::Write;
            let line = serde_json::json!({"file": self.at.file(), "line": self.at.line(), "stderr": self.messages()});
            let mut out = std::fs::OpenOptions::new().create(true).append(true).open(file).unwrap();
            out.write_all(format!("{line}\n").as_bytes()).unwrap();
            return;
        }
        expect_text("stderr besides progress (the test expects none)", &self.messages(), "");
    }
}

/// A line of the run's progress on stderr, which a test need not pin: `Running SUITE: N
/// task(s)`, a task's `PASS  id [score] agent 5 ms · total 9 ms` (timings vary, and the order
/// tasks finish in), the gate table's `  ok   …` / `  FAIL …` rows, the verdict line (`PASSED`,
/// `FAILED`, `INCOMPLETE`, … `SUITE: 1/2 passed, …, score 0.50 in 0.1s`), and blank lines.
fn progress_line(line: &str) -> bool {
    static PROGRESS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^(Running .+: \d+ task\(s\)|(PASS|FAIL|ERROR|SKIP)\s+\S+ \[.*|  (ok|FAIL)\s+.*|[A-Z][A-Z ]* \S+: \d+/\d+ passed.*|)$",
        )
        .unwrap()
    });
    PROGRESS.is_match(line.trim_end_matches('\n'))
}

/// Fails showing both texts as they print and the first line where they part.
#[track_caller]
fn expect_text(stream: &str, have: &str, want: &str) {
    if have == want {
        return;
    }
    let line = have.lines().zip(want.lines()).take_while(|(a, b)| a == b).count() + 1;
    panic!("{stream} differs from line {line}\n--- have:\n{have}\n--- want:\n{want}\n--- (as strings) have: {have:?}");
}

/// A text written in a test as an indented raw string, as it is meant: the newline after the
/// opening quote and the indentation before the closing one dropped, then the indentation
/// common to the lines that are not blank (blank lines are left empty).
pub fn unindent(text: &str) -> String {
    let text = text.strip_prefix('\n').unwrap_or(text);
    let text = match text.rfind('\n') {
        Some(end) if text[end + 1..].trim().is_empty() => &text[..=end],
        _ => text,
    };
    let indent = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start_matches(' ').len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        out.push_str(if line.trim().is_empty() { line.trim_start_matches([' ', '\t']) } else { &line[indent..] });
    }
    out
}

#[test]
fn unindent_drops_the_raw_strings_edges_and_the_common_indent_only() {
    let text = "
        a:
          - b

            c
        d
        ";
    assert_eq!(unindent(text), "a:\n  - b\n\n    c\nd\n");
    assert_eq!(unindent("  x\n    y"), "x\n  y");
    assert_eq!(unindent("#!/bin/sh\necho $1\n"), "#!/bin/sh\necho $1\n");
    assert_eq!(unindent(""), "");
    assert_eq!(indent("\n    - a\n\n      b\n    ", 2), "  - a\n\n    b\n");
    assert_eq!(indent("- a", 4), "    - a\n");
}

/// A suite with one command agent `./agent.sh`, the top-level keys `extra` and the given tasks,
/// each an indented block or a string (the tasks then indented 2, as they land in the suite).
pub fn suite(extra: &str, tasks: &str) -> String {
    let header = r#"
        evalgate: 1
        suite: test.evals.demo
        agents:
          bot: {command: [./agent.sh, "{prompt}"], timeout: 10s}
        "#;
    unindent(header) + &unindent(extra) + "\ntasks:\n" + &indent(tasks, 2)
}

/// `text` [`unindent`]ed, then indented `by` spaces (blank lines left empty), ending in a newline:
/// a block of YAML as it lands below a key.
pub fn indent(text: &str, by: usize) -> String {
    let mut out: String = unindent(text)
        .split_inclusive('\n')
        .map(|line| if line.trim().is_empty() { line.to_owned() } else { format!("{:by$}{line}", "") })
        .collect();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// An agent that echoes its prompt.
pub const ECHO_AGENT: &str = "#!/bin/sh\nprintf '%s\\n' \"$1\"\n";

/// Whether `pid` is a live process (a zombie waiting for its reaper counts as dead).
pub fn is_running(pid: i32) -> bool {
    // Give the kernel a moment to deliver a SIGKILL sent just before.
    for _ in 0..20 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return false,
            Ok(stat) => {
                let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
                if matches!(state, Some('Z' | 'X')) {
                    return false;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    true
}

/// `(task id, status)` of every task in a results file, sorted by id.
pub fn sorted_statuses(results: &serde_json::Value) -> Vec<(String, String)> {
    let mut list: Vec<_> = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_owned(), t["status"].as_str().unwrap().to_owned()))
        .collect();
    list.sort();
    list
}

pub fn owned_pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// A run that printed `stderr`, for the tests of the assertions themselves.
#[cfg(test)]
fn printed(stderr: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let stderr = stderr.replace("DIR", &dir.path().display().to_string());
    Run {
        code: 0,
        stdout: String::new(),
        stderr,
        dir: dir.path().to_owned(),
        stderr_expected: Cell::new(false),
        at: std::panic::Location::caller(),
        _keep: dir,
    }
}

#[test]
#[should_panic(expected = "stderr besides progress (the test expects none) differs from line 1")]
fn a_run_whose_test_says_nothing_of_stderr_expects_none() {
    let run = printed("warning: something new\n");
    assert_eq!(run.code, 0);
}

#[test]
fn a_run_that_printed_only_progress_needs_no_check() {
    printed("");
    printed(
        "Running t: 1 task(s)\nPASS  a [1.00] agent 5 ms · total 9 ms\n\n  ok   tasks run  budget ≥ 1  actual 1\nPASSED t: 1/1 passed, 0 failed\n",
    );
}

#[test]
#[should_panic(expected = "stderr besides progress (the test expects none) differs from line 1")]
fn a_warning_among_the_progress_is_not_progress() {
    printed("Running t: 1 task(s)\nwarning: the baseline is old\nPASS  a [1.00] agent 5 ms\n");
}

#[test]
fn expect_messages_pins_what_is_not_progress() {
    printed("Running t: 1 task(s)\nwarning: DIR/x is old\nPASS  a [1.00] agent 5 ms\n").expect_messages(
        "
        warning: [DIR]/x is old
        ",
    );
}

#[test]
#[should_panic(expected = "stderr lacks \"help\"")]
fn expect_stderr_contains_fails_on_a_missing_piece() {
    printed("error: x\n").expect_stderr_contains(&["error", "help"]);
}

#[test]
fn expect_stderr_passes_on_the_whole_text_with_the_test_directory_shown_as_dir() {
    printed("error: DIR/a.sh does not exist\nnothing ran\n").expect_stderr(
        "
        error: [DIR]/a.sh does not exist
        nothing ran
        ",
    );
}

#[test]
#[should_panic(expected = "stderr differs from line 2")]
fn expect_stderr_fails_on_a_line_more() {
    printed("error: x\nhelp: y\n").expect_stderr("error: x\n");
}

/// Copies the directory `from` into `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The block `text` ([`unindent`]ed) once for each `i` of `range`, its `<i>` replaced by `i`:
/// a suite's many tasks.
pub fn numbered(range: impl IntoIterator<Item = usize>, text: &str) -> String {
    let text = unindent(text);
    range.into_iter().map(|i| text.replace("<i>", &i.to_string())).collect()
}
