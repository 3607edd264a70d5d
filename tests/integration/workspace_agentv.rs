//! AgentV workspaces through the binary: upstream's `agentv-self` suite (its setup hook
//! empties the directory it is given, then copies the repository into it) runs with every
//! test in a workspace of its own, and nothing else is emptied; a local repository at its
//! pinned commit, `repos` entries that are URLs refused; `file_changes` to code graders.

use std::process::Command;

use crate::common::Test;

/// `git` in `dir` with a fixed identity.
fn git(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A rewritten excerpt of upstream's evals/agentv-self/scripts/setup.mjs (EntityProcess/agentv
/// v4.42.4, MIT), in Python: AgentV's JSON context on stdin, the workspace emptied, the
/// repository's HEAD extracted into it.
const SETUP: &str = r#"import json, os, shutil, subprocess, sys
ws = json.load(sys.stdin)["workspace_path"]
root = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
for entry in os.listdir(ws):
    path = os.path.join(ws, entry)
    shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
archive = os.path.join(ws, "repo.tar")
subprocess.check_call(["git", "archive", "--format=tar", "--output=" + archive, "HEAD"], cwd=root)
subprocess.check_call(["tar", "-xf", archive, "-C", ws])
os.remove(archive)
assert os.path.exists(os.path.join(ws, "AGENTS.md")), "AGENTS.md not copied"
print("copied", root, "to", ws)
"#;

/// The guidance suite, rewritten from upstream's agentv-self.eval.yaml: a `before_all`
/// hook and no template, so AgentV makes an empty workspace per test for the hook to fill.
const EVAL: &str = "
name: agentv-self-guidance
workspace:
  hooks:
    before_all:
      command: [python3, ./scripts/setup.py]
input: Follow the repo-facing agent instructions from disk. Start with AGENTS.md.
tests:
  - id: guidance-split-paths
    criteria: Names the workflow guide
    input: List the detailed guidance files.
    assertions:
      - {type: contains, value: .agents/workflow.md}
      - name: workspace-was-prepared
        type: code-grader
        command: [python3, ./graders/prepared.py]
        required: true
  - id: repo-change-preflight
    criteria: Names the preflight commands
    input: What two commands start every repo change?
    assertions:
      - {type: contains, value: git fetch origin}
      - {name: workspace-was-prepared, type: code-grader, command: [python3, ./graders/prepared.py], required: true}
";

/// AgentV's payload on stdin: `workspace_path` holds the copied repository, and
/// `file_changes` is null (the agent changed nothing).
const GRADER: &str = r#"import json, os, sys
p = json.load(sys.stdin)
ws = p["workspace_path"]
checks = [
    {"text": "workspace has AGENTS.md", "passed": bool(ws) and os.path.isfile(os.path.join(ws, "AGENTS.md"))},
    {"text": "workspace is not the repository", "passed": bool(ws) and not os.getcwd().startswith(os.path.realpath(ws))},
    {"text": "file_changes is null", "passed": p["file_changes"] is None},
]
print(json.dumps({"score": sum(c["passed"] for c in checks) / 3, "assertions": checks}))
"#;

/// A repository holding the suite, the eval and the guidance, committed: the hook copies
/// its HEAD into each test's workspace.
fn agentv_self() -> Test {
    let test = Test::new()
        .write("AGENTS.md", "# AgentV\nSee .agents/workflow.md\n")
        .write(".agents/workflow.md", "# Workflow\nStart with: git fetch origin; git status --short --branch\n")
        .write("evals/agentv-self/agentv-self.eval.yaml", EVAL)
        .write("evals/agentv-self/scripts/setup.py", SETUP)
        .write("evals/agentv-self/graders/prepared.py", GRADER)
        .write("keep-me.txt", "the suite's own file\n")
        // The agent reads the guidance it finds in its working directory.
        .write("agent.sh", "#!/bin/sh\ncat AGENTS.md .agents/workflow.md\n")
        .suite(
            "
            evalgate: 1
            suite: self
            agents:
              coder: {command: [./agent.sh, '{prompt}']}
            judge: {provider: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key_env: JUDGE_KEY}
            imports:
              - {format: agentv, path: evals/agentv-self/agentv-self.eval.yaml, agent: coder}
            ",
        );
    let dir = test.path().to_owned();
    std::fs::set_permissions(dir.join("agent.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-qm", "init"]);
    test
}

#[test]
fn agentv_self_runs_with_its_hook_emptying_only_its_own_workspace() {
    for jobs in ["1", "2"] {
        let test = agentv_self();
        let dir = test.path().to_owned();
        let run = test.env("JUDGE_KEY", "k").args(&["run", "-j", jobs]).run();
        run.expect_code(0);
        let results = run.results();
        for task in results["tasks"].as_array().unwrap() {
            assert_eq!(task["status"], "passed", "-j {jobs}: {task:#}");
            let graders = task["trials"][0]["graders"].as_array().unwrap();
            let prepared = graders.iter().find(|g| g["name"] == "workspace-was-prepared").unwrap();
            assert_eq!(prepared["score"], 1.0, "{prepared:#}");
        }
        // The hook emptied each test's workspace, never the suite's directory or the eval's.
        assert_eq!(run.read("keep-me.txt"), "the suite's own file\n");
        assert!(run.read("evals/agentv-self/graders/prepared.py").contains("workspace_path"));
        let status = Command::new("git").current_dir(&dir).args(["status", "--porcelain"]).output().unwrap();
        let changed = String::from_utf8_lossy(&status.stdout);
        assert!(changed.lines().all(|l| l.contains("evalgate-out")), "-j {jobs}: {changed}");
    }
}

/// Without a workspace path to give it (the hook given the suite's directory, as evalgate
/// did before), the hook would have emptied the suite: its `workspace_path` is checked to be
/// below the run's scratch directory, never the suite's.
#[test]
fn an_agentv_hook_gets_its_trial_s_workspace_and_an_agent_s_edit_reaches_the_code_grader() {
    let test = Test::new()
        .write("tpl/notes.txt", "template notes\n")
        .write(
            "e.eval.yaml",
            "
workspace:
  template: tpl
  hooks:
    before_each:
      command: [sh, -c, 'cat > \"$EVALGATE_WORKSPACE/context.json\"']
tests:
  - id: edit
    input: edit the notes
    assertions:
      - type: code-grader
        command: [python3, grader.py]
",
        )
        .write(
            "grader.py",
            r#"import json, os, sys
p = json.load(sys.stdin)
ctx = json.load(open(os.path.join(p["workspace_path"], "context.json")))
checks = [
    ctx["workspace_path"] == p["workspace_path"],
    ctx["test_id"] == "edit" and ctx["case_input"] == "edit the notes",
    "+template notes, edited" in p["file_changes"].splitlines(),
    "diff --git a/notes.txt b/notes.txt" in p["file_changes"],
    not os.path.exists(os.path.join(os.getcwd(), "context.json")),
]
print(json.dumps({"score": sum(checks) / len(checks)}))
"#,
        )
        .suite(
            "
            evalgate: 1
            suite: s
            agents:
              editor: {command: [sh, -c, 'echo \"template notes, edited\" > notes.txt; echo done']}
            imports:
              - {format: agentv, path: e.eval.yaml, agent: editor}
            ",
        );
    let run = test.args(&["run"]).run();
    run.expect_code(0);
    let task = run.task("edit");
    assert_eq!(task["status"], "passed", "{task:#}");
    let files = &task["trials"][0]["workspace"]["file_changes"]["files"];
    let paths: Vec<&str> = files.as_array().unwrap().iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(paths, ["notes.txt"], "{files:#}");
}

#[test]
fn a_local_repository_is_checked_out_at_its_commit_and_a_remote_one_is_refused() {
    let test = Test::new().write("upstream/code.txt", "v1\n");
    let upstream = test.path().join("upstream");
    git(&upstream, &["init", "-q", "-b", "main"]);
    git(&upstream, &["add", "."]);
    git(&upstream, &["commit", "-qm", "v1"]);
    git(&upstream, &["tag", "v1"]);
    std::fs::write(upstream.join("code.txt"), "v2\n").unwrap();
    git(&upstream, &["commit", "-qam", "v2"]);
    let eval = |repo: &str| {
        format!(
            "
workspace:
  repos: [{{path: ./fixture, repo: '{repo}', commit: v1}}]
tests:
  - id: read
    input: read it
    assertions: [{{type: contains, value: v1}}]
"
        )
    };
    let suite = "
        evalgate: 1
        suite: s
        agents:
          reader: {command: [sh, -c, 'cat fixture/code.txt']}
        imports:
          - {format: agentv, path: e.eval.yaml, agent: reader}
        ";
    let local = upstream.display().to_string();
    let run = test.write("e.eval.yaml", &eval(&local)).suite(suite).args(&["run"]).run();
    run.expect_code(0);
    let trial = &run.task("read")["trials"][0];
    assert_eq!(trial["output"], "v1\n", "{trial:#}");
    let repos = &trial["workspace"]["provenance"]["repos"];
    assert!(repos[0].as_str().unwrap().starts_with("./fixture@"), "{repos}");
    // A GitHub shorthand is a URL to AgentV (`resolveRepoCloneUrl`): refused, as any URL.
    for remote in ["EntityProcess/agentv-contract-fixture", "https://github.com/o/r.git"] {
        let test = Test::new().write("e.eval.yaml", &eval(remote)).suite(suite);
        test.args(&["check"]).run().expect_code(2).expect_stderr_contains(&[&format!(
            "e.eval.yaml:3:29: /workspace/repos/0/repo: `{remote}` is a remote repository"
        )]);
    }
}

/// Upstream's file-changes example (tests/fixtures/agentv-workspace): its own grader reads
/// `file_changes` as AgentV's `git diff` writes it (`diff --git`, `--- /dev/null`,
/// `+++ /dev/null`) and finds every edit, creation and deletion of its mock agent.
#[test]
fn upstream_s_file_changes_example_passes_its_own_grader() {
    let fixtures = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agentv-workspace");
    let mut test = Test::new();
    crate::common::copy_dir(&fixtures, test.path());
    test = test.suite(
        "
        evalgate: 1
        suite: file-changes
        agents:
          mock: {command: [./agent.sh]}
        judge: {provider: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key_env: JUDGE_KEY}
        imports:
          - {format: agentv, path: evals/dataset.eval.yaml, agent: mock}
        ",
    );
    let run = test.env("JUDGE_KEY", "k").args(&["run", "-j", "2"]).run();
    run.expect_code(0);
    for task in run.results()["tasks"].as_array().unwrap() {
        let grader = &task["trials"][0]["graders"][0];
        assert_eq!((task["status"].as_str(), grader["score"].as_f64()), (Some("passed"), Some(1.0)), "{task:#}");
    }
}
