//! Issue 43, section 3: every file evalgate reads goes through one reader (`files::read`):
//! a FIFO is refused at once with the file named, never waited on, and a file past the
//! limit of its kind is refused with the limit named, from its size, unread.

use std::path::Path;

use crate::common::{ECHO_AGENT, Test, suite};

/// A hang is killed by `timeout` (the exit is then 137, or no code at all), never the refusal's.
const TIMEOUT: [&str; 4] = ["timeout", "-s", "KILL", "30"];

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

/// A test directory with a passing suite run once: `evalgate.yaml`, `agent.sh` and
/// `evalgate-out/results.json` (a results file every command accepts).
fn ran() -> Test {
    let tasks = "
        - id: a
          prompt: hello
          grade: [{type: contains, value: hello}]
        ";
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", tasks));
    let status = test.command().args(["run", "--no-github"]).output().unwrap().status;
    assert_eq!(status.code(), Some(0));
    test
}

/// What evalgate ended with.
struct Ended {
    code: i32,
    stderr: String,
}

/// Runs evalgate in `test`'s directory with `args`, under the timeout.
fn evalgate(test: &Test, args: &[&str]) -> Ended {
    let out = test.command_via(&TIMEOUT).args(args).output().unwrap();
    Ended { code: out.status.code().unwrap_or(-1), stderr: String::from_utf8_lossy(&out.stderr).into_owned() }
}

#[test]
fn every_file_input_that_is_a_fifo_is_refused_at_once_naming_it() {
    let test = ran();
    let judged = "
        judge: {provider: openai, model: m, api_key_env: EG_J_KEY, calibration: {file: calibration.fifo}}
        ";
    test_file(&test, "judged.yaml", &suite(judged, "- {id: a, prompt: hi, grade: [{type: llm, contains: ok}]}"));
    let schema = "- {id: a, prompt: hi, grade: [{type: json_schema, schema_file: schema.fifo}]}";
    test_file(&test, "schema.yaml", &suite("", schema));
    std::fs::create_dir(test.path().join("locked")).unwrap();
    let results = "evalgate-out/results.json";
    // (the FIFO, the command line naming it)
    let cases: [(&str, &[&str]); 16] = [
        ("evalgate.fifo", &["check", "evalgate.fifo"]),
        ("labels.fifo", &["judge", "calibrate", "evalgate.yaml", "--labels", "labels.fifo", "--results", results]),
        ("calibration.fifo", &["list", "judged.yaml"]),
        ("schema.fifo", &["list", "schema.yaml"]),
        ("report.fifo", &["report", "report.fifo", "--out", "again"]),
        ("compare.fifo", &["compare", "compare.fifo", results]),
        ("merge.fifo", &["merge", results, "merge.fifo", "-o", "merged.json"]),
        ("comment.fifo", &["comment", "comment.fifo", "--dry-run"]),
        ("sample.fifo", &["judge", "sample", "evalgate.yaml", "--results", "sample.fifo"]),
        ("prune.fifo", &["cassettes", "prune", "--results", "prune.fifo", "--dry-run"]),
        ("baseline.fifo", &["run", "--no-github", "--baseline", "baseline.fifo", "--out", "b"]),
        ("pricing.fifo", &["run", "--no-github", "--pricing", "pricing.fifo", "--out", "p"]),
        // Beyond the ten the issue found: the same reader, so the same answer.
        ("head.fifo", &["compare", results, "head.fifo"]),
        ("convert.fifo", &["convert", "convert.fifo"]),
        ("suite.fifo", &["report", results, "--suite", "suite.fifo", "--out", "s"]),
        // A write that would block as a read does: the out directory's lock (exit 4).
        ("locked/.evalgate.lock", &["run", "--no-github", "--out", "locked"]),
    ];
    // Every case is tried, and every one that fails is listed.
    let mut failed = Vec::new();
    for (fifo, args) in cases {
        mkfifo(&test.path().join(fifo));
        let run = evalgate(&test, args);
        // An error of the input (2; a run records it in its reports too), naming the file.
        let refused = format!("{fifo}: not a regular file (a FIFO)");
        let code = if fifo.starts_with("locked/") { 4 } else { 2 };
        if run.code != code || !run.stderr.contains(&refused) {
            let hung = if matches!(run.code, 137 | -1) { " (hung: killed by the timeout)" } else { "" };
            failed.push(format!("{args:?}: exit {}{hung}\n{}", run.code, run.stderr));
        }
    }
    assert!(failed.is_empty(), "{} of {} inputs:\n{}", failed.len(), cases.len(), failed.join("\n"));
}

fn test_file(test: &Test, name: &str, text: &str) {
    std::fs::write(test.path().join(name), text).unwrap();
}

/// Sparse files: their size says they are too large, and not a byte of them is read (a
/// 257 MiB file takes no room on the disk, nor time to refuse).
#[test]
fn a_file_past_the_limit_of_its_kind_is_refused_with_the_limit_named() {
    let test = ran();
    let big = |name: &str, size: u64| std::fs::File::create(test.path().join(name)).unwrap().set_len(size).unwrap();
    big("big-results.json", (256 << 20) + 1);
    big("big-labels.jsonl", (8 << 20) + 1);
    let run = evalgate(&test, &["report", "big-results.json", "--out", "again"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("big-results.json: larger than 256 MiB, the most evalgate reads of a results file"),
        "{}",
        run.stderr
    );
    let args = ["judge", "calibrate", "evalgate.yaml", "--labels", "big-labels.jsonl"];
    let run = evalgate(&test, &args);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("big-labels.jsonl: larger than 8 MiB, the most evalgate reads of a suite or another text input"),
        "{}",
        run.stderr
    );
}
