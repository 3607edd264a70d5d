//! `workspace:` as written and as it runs (docs/workspaces.md): located errors, a template
//! and a pinned commit made fresh for every trial, setup, graders on what the agent left,
//! `file_changes`, `keep`, provenance in the definition hash, and preflight's sandbox check.

use std::process::Command;

use crate::common::Test;

#[test]
fn a_bad_workspace_is_refused_at_its_line() {
    Test::new()
        .write("tpl/a.txt", "a\n")
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              bot: {command: [sh, -c, echo ok]}
              mcp_bot: {command: [sh, -c, echo ok], mcp: [srv]}
            mcp_servers:
              srv: {command: [sh, -c, 'sleep 1']}
            defaults: {agent: bot}
            workspace:
              template: missing
            tasks:
              - id: both
                prompt: hi
                workspace: {template: tpl, repo: {path: ., commit: main}}
                grade: [{type: contains, value: ok}]
              - id: bad
                prompt: hi
                workspace: {repo: {path: ., commit: nope}, setup: [[]], protect: ['[x']}
                grade: [{type: contains, value: ok}]
              - id: whole-suite
                prompt: hi
                workspace: {template: .}
                grade: [{type: contains, value: ok}]
              - id: mcp
                prompt: hi
                agent: mcp_bot
                workspace: {template: tpl}
                grade: [{type: contains, value: ok}]
            ",
        )
        .args(&["check"])
        .run()
        .expect_code(2)
        .expect_stderr_contains(&[
            "evalgate.yaml:10:13: workspace.template: cannot read `missing`",
            "evalgate.yaml:14:16: tasks[0].workspace: a workspace has one origin: `template` or `repo`, not both",
            "evalgate.yaml:18:30: tasks[1].workspace.repo.path: `.` is not a git repository",
            "evalgate.yaml:18:56: tasks[1].workspace.setup[0]: a setup command is an argv list whose first word names the program",
            "evalgate.yaml:18:71: tasks[1].workspace.protect[0]: invalid glob",
            "evalgate.yaml:22:27: tasks[2].workspace.template: `.` holds the suite file",
        ]);
}

/// A repository with two commits (`v1`, then `v2`, on `main`).
fn repo(test: Test) -> Test {
    let test = test.write("repo/code.txt", "v1\n");
    let dir = test.path().join("repo");
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .current_dir(&dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
            .args(args)
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&ok.stderr));
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "v1"]);
    git(&["tag", "v1"]);
    std::fs::write(dir.join("code.txt"), "v2\n").unwrap();
    git(&["commit", "-qam", "v2"]);
    test
}

/// The agent edits the file it finds; a command grader, run in the workspace after it,
/// checks the edit; the second trial finds the pinned commit again, not the first's edit.
#[test]
fn each_trial_gets_the_pinned_commit_and_the_graders_see_what_the_agent_left() {
    let run = repo(Test::new())
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              editor: {command: [sh, -c, 'cat code.txt; cat ready; echo edited >> code.txt; echo ok']}
            defaults: {agent: editor}
            workspace:
              repo: {path: repo, commit: v1}
              setup: [[sh, -c, 'echo set > ready']]
              keep: always
            tasks:
              - id: edit
                prompt: hi
                repeat: 2
                grade:
                  - {type: contains, value: \"v1\"}
                  - {type: not_contains, value: edited}
                  - {type: command, run: \"grep -q edited code.txt\"}
            ",
        )
        .args(&["run"])
        .run();
    run.expect_code(0);
    let task = run.task("edit");
    assert_eq!(task["status"], "passed", "{task:#}");
    let trial = &task["trials"][0];
    let workspace = &trial["workspace"];
    assert_eq!(workspace["provenance"]["commit"].as_str().unwrap().len(), 40);
    assert_eq!(workspace["file_changes"]["files"], serde_json::json!([{"path": "code.txt", "change": "modified"}]));
    let kept = std::path::Path::new(workspace["kept"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(kept.join("work/code.txt")).unwrap(), "v1\nedited\n");
    for trial in task["trials"].as_array().unwrap() {
        let kept = std::path::Path::new(trial["workspace"]["kept"].as_str().unwrap());
        std::fs::remove_dir_all(kept.parent().unwrap()).unwrap();
    }
    // The repository itself is untouched.
    assert_eq!(run.read("repo/code.txt"), "v2\n");
}

/// A template's diff is in the results; `keep: never` removes the workspace; a changed
/// template changes the task's definition hash (a comparison then says not comparable).
#[test]
fn a_template_s_changes_are_listed_and_its_content_is_in_the_definition() {
    let suite = "
        evalgate: 1
        suite: t
        agents:
          writer: {command: [sh, -c, 'echo new > added.txt; echo two >> a.txt; rm gone.txt; echo ok']}
        defaults: {agent: writer}
        workspace: {template: tpl, keep: never}
        tasks:
          - id: w
            prompt: hi
            grade: [{type: contains, value: ok}]
        ";
    let test = Test::new().write("tpl/a.txt", "one\n").write("tpl/gone.txt", "bye\n").suite(suite);
    let run = test.args(&["run"]).run();
    run.expect_code(0);
    let first = run.task("w");
    let changes = &first["trials"][0]["workspace"]["file_changes"];
    assert_eq!(
        changes["files"],
        serde_json::json!([
            {"path": "a.txt", "change": "modified"},
            {"path": "added.txt", "change": "added"},
            {"path": "gone.txt", "change": "deleted"}
        ])
    );
    assert!(
        changes["diff"].as_str().unwrap().contains("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n one\n+two\n"),
        "{changes:#}"
    );
    assert!(first["trials"][0]["workspace"].get("kept").is_none());
    // Same template: same definition. A changed template: another.
    let changed =
        Test::new().write("tpl/a.txt", "one!\n").write("tpl/gone.txt", "bye\n").suite(suite).args(&["run"]).run();
    let same = Test::new().write("tpl/a.txt", "one\n").write("tpl/gone.txt", "bye\n").suite(suite).args(&["run"]).run();
    assert_eq!(same.task("w")["definition"], first["definition"]);
    assert_ne!(changed.task("w")["definition"], first["definition"]);
    assert_ne!(changed.results()["plan"]["definitions"], run.results()["plan"]["definitions"]);
}

/// Without bubblewrap on `PATH` a confining workspace stops the run before any task, and
/// says what to install; nothing runs unconfined.
#[test]
fn preflight_names_the_fix_when_the_sandbox_cannot_run() {
    let run = Test::new()
        .write("tpl/a.txt", "a\n")
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              bot: {command: [/bin/sh, -c, 'echo ok > /dev/null; echo ok']}
            defaults: {agent: bot}
            workspace: {template: tpl}
            tasks:
              - id: a
                prompt: hi
                grade: [{type: contains, value: ok}]
            ",
        )
        .env("PATH", "/nonexistent")
        .args(&["run"])
        .run();
    run.expect_code(3).expect_stderr_contains(&[
        "sandbox `bubblewrap`: ",
        "is not installed: install bubblewrap and util-linux (Debian/Ubuntu: `apt-get install bubblewrap`)",
    ]);
}
