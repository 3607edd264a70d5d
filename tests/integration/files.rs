//! The out directory attacked through the binary: report paths that cannot be written are
//! found before any agent runs, a disk that fills up mid-run aborts it without leaving the
//! previous run's green reports, and reports are readable by other users (the umask's mode).

use std::os::unix::fs::PermissionsExt;

use crate::common::{Test, suite, unindent};

/// An agent that leaves `ran.marker` behind: the proof that something ran.
const MARKING_AGENT: &str = "#!/bin/sh\ntouch ran.marker\nprintf '%s\\n' \"$1\"\n";

fn tasks(n: usize) -> String {
    (1..=n)
        .map(|i| {
            unindent(
                "
            - {id: t<i>, prompt: hello <i>, grade: [{type: contains, value: hello}]}
            ",
            )
            .replace("<i>", &i.to_string())
        })
        .collect()
}

fn marking_test(n: usize) -> Test {
    Test::new().write("evalgate.yaml", &suite("", &tasks(n))).write("agent.sh", MARKING_AGENT)
}

#[test]
fn a_report_path_that_cannot_be_written_stops_the_run_before_any_agent() {
    // (what is in the way, the arguments, what the error names)
    let cases: [(&str, &[&str], &str); 4] = [
        ("junit-dir/keep", &["run", "--junit", "junit-dir"], "cannot write junit-dir: Is a directory"),
        ("md-dir/keep", &["run", "--markdown", "md-dir"], "cannot write md-dir: Is a directory"),
        // Left where the run's own report goes (`rmdir` fails, so the claim cannot remove it).
        ("evalgate-out/results.json/keep", &["run"], "cannot write evalgate-out/results.json: Is a directory"),
        ("a-file", &["run", "--out", "a-file/out"], "cannot write a-file/out: Not a directory"),
    ];
    for (in_the_way, args, message) in cases {
        let test = marking_test(2);
        let path = test.path().join(in_the_way);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "").unwrap();
        let run = test.args(args).run();
        run.expect_code(4);
        assert!(run.stderr_has(message), "{args:?}: expected {message:?} in\n{}", run.stderr);
        assert!(!run.dir.join("ran.marker").exists(), "{args:?}: an agent ran before the report path was checked");
    }
}

#[test]
fn reports_are_created_with_the_umasks_mode_for_other_users_to_read() {
    for (umask, mode) in [("022", 0o644), ("027", 0o640)] {
        let script = format!("umask {umask}; exec \"$0\" \"$@\"");
        let run = marking_test(1).args(&["run", "--junit", "elsewhere/junit.xml"]).run_via(&["sh", "-c", &script]);
        run.expect_code(0);
        for file in ["results.json", "summary.json", "summary.md", "events.jsonl"] {
            let path = run.dir.join("evalgate-out").join(file);
            let actual = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(actual, mode, "{file} under umask {umask}: {actual:o}");
        }
        let junit = std::fs::metadata(run.dir.join("elsewhere/junit.xml")).unwrap().permissions().mode() & 0o777;
        assert_eq!(junit, mode, "--junit under umask {umask}: {junit:o}");
    }
}

/// How the disk fills up: a real full file system (a 256 KiB tmpfs, mounted in a mount
/// namespace of its own, where `unshare -m` is allowed: root, as on CI), else the file-size
/// limit (`ulimit -f`, with SIGXFSZ ignored so writes fail with EFBIG instead of killing).
fn full_disk() -> (&'static str, &'static str, &'static str) {
    let can_mount = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs \"$d\" && umount \"$d\""])
        .output()
        .is_ok_and(|o| o.status.success());
    if can_mount {
        (
            "mkdir disk && mount -t tmpfs -o size=256k tmpfs disk && cp agent.sh evalgate.yaml disk/ && cd disk",
            // What is left after the first run's small reports: less than the second run's.
            "dd if=/dev/zero of=filler bs=1k count=200 2>/dev/null; \"$0\" run -q",
            "No space left on device",
        )
    } else {
        (
            "mkdir disk && cp agent.sh evalgate.yaml disk/ && cd disk",
            "(ulimit -f 16; trap '' XFSZ; exec \"$0\" run -q)",
            "File too large",
        )
    }
}

#[test]
fn a_disk_that_fills_up_mid_run_aborts_it_and_leaves_no_green_report() {
    let (prepare, second_run, reason) = full_disk();
    // The first run (one task) leaves green reports; the second (all 60) fills the disk.
    let script = format!(
        "set -u; {prepare} || exit 99\n\
         \"$0\" run -q --filter t1 >../first.out 2>&1; echo $? >../first.code\n\
         cp evalgate-out/summary.md ../first-summary.md\n\
         rm -f ran.marker\n\
         {second_run} >../second.out 2>../second.err; echo $? >../second.code\n\
         cp -r evalgate-out ../after; ls ran.marker >/dev/null 2>&1 && touch ../second-ran"
    );
    let prefix: Vec<&str> = if reason == "No space left on device" {
        vec!["unshare", "-m", "sh", "-c", &script]
    } else {
        vec!["sh", "-c", &script]
    };
    let run = marking_test(60).run_via(&prefix);
    assert_eq!(run.code, 0, "the script itself: {}", run.stderr);
    let first_code = run.read("first.code");
    assert_eq!(first_code.trim(), "0", "the first run: {}", run.read("first.out"));
    let green = run.read("first-summary.md");
    assert!(green.starts_with("## ✅ evalgate"), "the first run's summary is green:\n{green}");
    assert!(run.dir.join("second-ran").exists(), "the second run started its agents");

    let stderr = run.read("second.err");
    assert_eq!(run.read("second.code").trim(), "4", "{stderr}");
    assert!(stderr.contains(reason), "the reason is named:\n{stderr}");
    assert!(stderr.contains("cannot write evalgate-out/"), "the file is named:\n{stderr}");
    assert!(stderr.contains("aborting the run"), "the run stops at the first failed write:\n{stderr}");

    // Whatever the out directory holds now is this run's, and none of it is green.
    let after = run.dir.join("after");
    for entry in std::fs::read_dir(&after).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert_ne!(text, green, "{} is the previous run's green summary", path.display());
        assert!(!text.contains("✅ evalgate"), "{} is green:\n{text}", path.display());
    }
    if let Ok(results) = std::fs::read_to_string(after.join("results.json")) {
        let results: serde_json::Value = serde_json::from_str(&results).expect("a report is whole or absent");
        assert_eq!(results["verdict"]["passed"], false);
        assert_ne!(results["verdict"]["outcome"]["status"], "passed");
    }
}

/// Every report the run left, and `report --gate` on its results, say what the exit code
/// says: aborted (4).
fn every_report_says_aborted(run: &crate::common::Run, why: &str) {
    let results = run.results();
    assert_eq!(results["verdict"]["outcome"]["status"], "aborted", "{}", run.stderr);
    assert!(results["verdict"]["outcome"]["reason"].as_str().unwrap().contains(why), "{results}");
    let summary = run.read("evalgate-out/summary.md");
    assert!(summary.contains("aborted") && !summary.contains("✅ evalgate"), "{summary}");
    assert_eq!(run.json("evalgate-out/summary.json")["passed"], false);
    // The event log ends as the reports do: one `eval.completed`, the last line, not passed.
    let events = run.read("evalgate-out/events.jsonl");
    let completed: Vec<&str> = events.lines().filter(|l| l.contains("\"eval.completed\"")).collect();
    assert_eq!(completed.len(), 1, "{events}");
    assert_eq!(events.lines().last(), Some(completed[0]), "{events}");
    let last: serde_json::Value = serde_json::from_str(completed[0]).unwrap();
    assert_eq!(last["payload"]["passed"], false, "{last}");
    let gate = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(&run.dir)
        .args(["report", "evalgate-out/results.json", "--out", "again", "--gate"])
        .output()
        .unwrap();
    assert_eq!(gate.status.code(), Some(4), "{}", String::from_utf8_lossy(&gate.stderr));
}

#[test]
fn a_report_write_that_fails_at_the_end_aborts_the_run_and_every_report_says_so() {
    // The agent puts a directory where the final JUnit report goes.
    let agent =
        "#!/bin/sh\nrm -f evalgate-out/junit.xml; mkdir -p evalgate-out/junit.xml/keep\nprintf '%s\\n' \"$1\"\n";
    let run = Test::new().write("evalgate.yaml", &suite("", &tasks(2))).write("agent.sh", agent).args(&["run"]).run();
    run.expect_code(4);
    assert!(run.stderr_has("cannot write evalgate-out/junit.xml"), "{}", run.stderr);
    assert!(run.stderr_has("\nABORTED test.evals.demo\n"), "the terminal's last word:\n{}", run.stderr);
    every_report_says_aborted(&run, "cannot write evalgate-out/junit.xml");
}

#[test]
fn step_outputs_that_cannot_be_written_abort_the_run_and_every_report_says_so() {
    let test = marking_test(2);
    let (summary, output) = (test.path().join("step-summary.md"), test.path().join("output-dir"));
    std::fs::create_dir(&output).unwrap();
    let run = test
        .env("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())
        .env("GITHUB_OUTPUT", output.to_str().unwrap())
        .args(&["run", "--github"])
        .run();
    run.expect_messages(
        r#"
            evalgate: cannot write [DIR]/output-dir: Is a directory (os error 21); the run is aborted
            ABORTED test.evals.demo
            error: cannot write [DIR]/output-dir: Is a directory (os error 21)
        "#,
    );
    run.expect_code(4);
    every_report_says_aborted(&run, "output-dir");
    // The step summary is published after the outputs were settled: it says aborted too.
    let shown = std::fs::read_to_string(&summary).unwrap();
    assert!(shown.contains("aborted") && !shown.contains("✅ evalgate"), "{shown}");
}

/// The out directory may come from a pull request (committed, or written by its agents): a
/// symbolic link in it never makes a run write, truncate or delete a file elsewhere. Each
/// case plants links in `evalgate-out/` to files in `elsewhere/`; the run refuses with the
/// link named, and `elsewhere/` is as it was.
#[test]
fn links_in_the_out_directory_never_reach_outside_it() {
    use std::os::unix::fs::symlink;
    let suite_named = |id: &str| suite("", &tasks(1)).replace("test.evals.demo", id);
    // (what is planted, the link the error names)
    type Plant = fn(&std::path::Path);
    let cases: [(Plant, &str); 3] = [
        // A suite's directory is a link, and the manifest lists files "in" it.
        (
            |out| {
                symlink("../elsewhere", out.join("test.evals.b")).unwrap();
                let listed = "test.evals.b/results.json\ntest.evals.b/events.jsonl\ntest.evals.b/summary.md\n";
                std::fs::write(out.join(".evalgate-files"), listed).unwrap();
            },
            "evalgate-out/test.evals.b is a symbolic link",
        ),
        // A report and the event log are links in a real directory.
        (
            |out| {
                std::fs::create_dir(out.join("test.evals.b")).unwrap();
                symlink("../../elsewhere/events.jsonl", out.join("test.evals.b/events.jsonl")).unwrap();
                symlink("../../elsewhere/summary.md", out.join("test.evals.b/summary.md")).unwrap();
            },
            "evalgate-out/test.evals.b/summary.md is a symbolic link",
        ),
        // The lock file is a link to a file that does not exist yet.
        (
            |out| symlink("../elsewhere/created", out.join(".evalgate.lock")).unwrap(),
            "evalgate-out/.evalgate.lock is a symbolic link",
        ),
    ];
    for (plant, link) in cases {
        let test = Test::new()
            .write("a.yaml", &suite_named("test.evals.a"))
            .write("b.yaml", &suite_named("test.evals.b"))
            .write("agent.sh", MARKING_AGENT)
            .write("elsewhere/results.json", "precious results")
            .write("elsewhere/events.jsonl", "precious events")
            .write("elsewhere/summary.md", "precious summary");
        let out = test.path().join("evalgate-out");
        std::fs::create_dir(&out).unwrap();
        plant(&out);
        let run = test.args(&["run", "a.yaml", "b.yaml"]).run();
        run.expect_code(4);
        assert!(run.stderr_has(link), "expected {link:?} in\n{}", run.stderr);
        assert!(!run.dir.join("ran.marker").exists(), "{link}: an agent ran");
        let mut left: Vec<String> = std::fs::read_dir(run.dir.join("elsewhere"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["events.jsonl", "results.json", "summary.md"],
            "{link}: a file was created or deleted elsewhere"
        );
        for (name, text) in [("results.json", "results"), ("events.jsonl", "events"), ("summary.md", "summary")] {
            assert_eq!(
                run.read(&format!("elsewhere/{name}")),
                format!("precious {text}"),
                "{link}: {name} was overwritten"
            );
        }
    }
}

/// A link an agent makes while the run goes (the next suite's directory, replaced by a link
/// elsewhere) is found at the next write: nothing is written through it.
#[test]
fn a_link_an_agent_makes_mid_run_is_not_written_through() {
    let agent = "#!/bin/sh\n[ -L evalgate-out/test.evals.b ] || { rm -rf evalgate-out/test.evals.b; ln -s ../elsewhere evalgate-out/test.evals.b; }\nprintf '%s\\n' \"$1\"\n";
    let suite_named = |id: &str| suite("", &tasks(1)).replace("test.evals.demo", id);
    let run = Test::new()
        .write("a.yaml", &suite_named("test.evals.a"))
        .write("b.yaml", &suite_named("test.evals.b"))
        .write("agent.sh", agent)
        .write("elsewhere/keep", "")
        .args(&["run", "a.yaml", "b.yaml"])
        .run();
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr_has("evalgate-out/test.evals.b is a symbolic link"), "{}", run.stderr);
    let left: Vec<_> = std::fs::read_dir(run.dir.join("elsewhere")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["keep"], "a report was written through the link");
}
