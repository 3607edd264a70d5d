//! Extensions through the binary: a fixture speaking mcpchecker's extension protocol
//! (tests/fixtures/extension/files-ext) as setup, verify and cleanup steps; preflight's
//! check of operations and arguments; a crash, a wrong checksum and a leaked child never
//! pass; an mcpchecker eval using one.

use crate::common::{ECHO_AGENT, Test, is_running, suite};
use serde_json::json;

fn fixture() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/extension/files-ext").display().to_string()
}

/// The suite's `extensions:` block: the fixture, its shutdown marker in `shutdown.log`.
fn extensions(extra: &str) -> String {
    format!(
        "extensions:\n  files:\n    package: '{}'\n    env: {{FILES_EXT_SHUTDOWN: shutdown.log}}\n{extra}",
        fixture()
    )
}

#[test]
fn operations_set_up_verify_and_clean_up_a_task_and_the_extension_is_shut_down() {
    let tasks = "
        - id: t
          setup:
            - id: w
              extension: {name: files, operation: write, args: {path: note.txt, content: 'hello {task.id}'}}
              outputs: {bytes: '{response.json.bytes}'}
          prompt: 'wrote {steps.w.outputs.bytes} bytes'
          grade:
            - {type: contains, value: wrote 7 bytes}
            - type: steps
              steps: [{extension: {name: files, operation: exists, args: {path: note.txt, contains: hello t}}}]
            - type: steps
              steps: [{extension: {name: files, operation: agent, args: {text: '7 bytes'}}}]
          cleanup:
            - extension: {name: files, operation: write, args: {path: cleaned.txt, content: x}}
        - id: long
          setup: [{file: {path: big.txt, content: 'LONG'}}]
          prompt: x
          grade:
            - type: steps
              steps: [{extension: {name: files, operation: exists, args: {path: big.txt, contains: y}}}]
        - id: missing
          prompt: x
          grade:
            - type: steps
              steps: [{extension: {name: files, operation: exists, args: {path: absent.txt}}}]
        ";
    let tasks = tasks.replace("LONG", &"x".repeat(5000));
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite(&extensions(""), &tasks));
    let dir = test.path().to_owned();
    let run = test.args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    assert_eq!(run.task("t")["status"], "passed", "{}", run.task("t"));
    let setup = &run.task("t")["trials"][0]["steps"][0];
    assert_eq!(setup["action"], r#"files.write {"path":"note.txt","content":"hello t"}"#);
    assert_eq!(setup["stderr"], "[info] writing note.txt\n", "the operation's logs are its step's");
    assert!(dir.join("cleaned.txt").exists(), "cleanup ran its operation");
    // An operation that says it failed fails its check, with the extension's reason.
    let missing = run.task("missing");
    assert_eq!(missing["status"], "failed", "{missing}");
    assert!(missing.to_string().contains("files.exists failed: absent.txt does not exist"), "{missing}");
    // An extension's reason is bounded as every reason is.
    let long = run.task("long")["reason"].as_str().unwrap().to_owned();
    assert!(long.contains("files.exists failed: big.txt holds 'xxx") && long.chars().count() < 700, "{long}");
    assert_eq!(std::fs::read_to_string(dir.join("shutdown.log")).unwrap(), "shutdown\n", "asked to shut down once");
    run.any_stderr();
}

#[test]
fn preflight_checks_each_operation_and_its_arguments_against_the_manifest_before_any_agent_runs() {
    let tasks = "
        - id: t
          setup:
            - extension: {name: files, operation: wirte, args: {path: a, content: b}}
          prompt: x
          grade:
            - type: steps
              steps: [{extension: {name: files, operation: exists, args: {pth: a}}}]
        ";
    let agent = "#!/bin/sh\ntouch agent-ran\nprintf '%s\\n' \"$1\"\n";
    let test = Test::new().write("agent.sh", agent).write("evalgate.yaml", &suite(&extensions(""), tasks));
    let dir = test.path().to_owned();
    let run = test.args(&["run"]).run();
    run.expect_code(3);
    run.expect_messages(
        "  preflight failed for evalgate.yaml: 3 missing
  - extension operation `files.wirte`: its manifest has no operation `wirte`: did you mean `write`? (task `t`)
  - extension operation `files.exists`: args: Additional properties are not allowed ('pth' was unexpected) (`pth`: did you mean `path`?) (task `t`)
  - extension operation `files.exists`: args: \"path\" is a required property (task `t`)
nothing ran
",
    );
    assert!(!dir.join("agent-ran").exists());
    assert!(dir.join("shutdown.log").exists(), "the extension was shut down");
}

#[test]
fn a_crash_is_an_error_naming_the_extension_with_its_stderr_redacted_and_a_leaked_child_is_killed() {
    let tasks = "
        - id: spawns
          setup:
            - extension: {name: files, operation: misbehave, args: {how: spawn}}
          prompt: x
          grade: [{type: contains, value: x}]
        - id: crashes
          setup:
            - extension: {name: files, operation: misbehave, args: {how: crash}}
          prompt: x
          grade: [{type: contains, value: x}]
        - id: after
          setup:
            - extension: {name: files, operation: write, args: {path: a, content: b}}
          prompt: x
          grade: [{type: contains, value: x}]
        ";
    let secret = "tok-3a91c7e2f0b84d55";
    let yaml = suite(&extensions("    config: {token: '{env.EXT_TOKEN}'}\n"), tasks);
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml).env("EXT_TOKEN", secret);
    let dir = test.path().to_owned();
    let run = test.args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    assert_eq!(run.task("spawns")["status"], "passed");
    let crashed = run.task("crashes");
    assert_eq!(crashed["status"], "error", "a crash is never a pass: {crashed}");
    let why = crashed.to_string();
    assert!(why.contains("files.misbehave: extension `files` exited"), "{why}");
    assert!(why.contains("panic: the cluster is gone"), "its stderr's tail: {why}");
    assert!(why.contains("token is [secret:EXT_TOKEN]"), "redacted: {why}");
    // Every later call is refused: the extension's state is unknown.
    assert_eq!(run.task("after")["status"], "error");
    assert!(run.task("after").to_string().contains("was stopped earlier"));
    // results.json and the HTML report record the extension, why it stopped and its log,
    // redacted.
    let record = &run.results()["extensions"]["files"];
    assert_eq!(
        (&record["name"], &record["version"], &record["protocol_version"]),
        (&json!("files"), &json!("0.1.0"), &json!("0.0.1")),
        "{record}"
    );
    assert_eq!(record["operations"], json!(["agent", "exists", "misbehave", "sleep", "write"]));
    assert_eq!(record["package"], fixture());
    assert!(record["stopped"].as_str().unwrap().contains("files.misbehave: extension `files` exited"), "{record}");
    let log = record["stderr"].as_str().unwrap();
    assert!(
        log.contains("token is [secret:EXT_TOKEN]\ngot execute") && log.ends_with("panic: the cluster is gone"),
        "{log}"
    );
    let html = crate::html::unescape(&std::fs::read_to_string(dir.join("evalgate-out/report.html")).unwrap());
    assert!(html.contains("<section id=\"extensions\"><h2>Extensions</h2>"), "{html}");
    assert!(html.contains("panic: the cluster is gone") && html.contains("files 0.1.0"));
    let everything = std::fs::read_dir(dir.join("evalgate-out")).unwrap();
    for file in everything.flatten() {
        let text = std::fs::read_to_string(file.path()).unwrap_or_default();
        assert!(!text.contains(secret), "{} holds the token", file.path().display());
    }
    assert!(run.stderr_lacks(secret));
    let child: i32 = std::fs::read_to_string(dir.join("child.pid")).unwrap().trim().parse().unwrap();
    assert!(!is_running(child), "the extension's child outlived the run");
    run.any_stderr();
}

#[test]
fn a_pinned_binary_that_changed_never_runs() {
    let tasks = "
        - id: t
          prompt: x
          grade: [{type: contains, value: x}]
        ";
    let wrong = "0".repeat(64);
    let yaml = suite(&extensions(&format!("    sha256: 'sha256:{wrong}'\n")), tasks);
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml);
    let dir = test.path().to_owned();
    let run = test.args(&["run"]).run();
    run.expect_code(3);
    assert!(run.stderr_has("has SHA-256 ") && run.stderr_has(&format!("not the pinned {wrong}: refused")));
    assert!(!dir.join("shutdown.log").exists(), "the binary never started");
    // A release reference is looked for in the cache, never fetched.
    let release = suite(
        "extensions:\n  k8s: {package: 'https://github.com/mcpchecker/kubernetes-extension@v0.0.2', sha256: '{wrong}'}\n"
            .replace("{wrong}", &wrong)
            .as_str(),
        tasks,
    );
    let cache = tempfile::tempdir().unwrap();
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &release)
        .env("EVALGATE_EXTENSIONS", cache.path().to_str().unwrap())
        .args(&["run"])
        .run();
    run.expect_code(3);
    assert!(run.stderr_has("it is not in the extension cache: put the release's"), "{}", run.stderr);
    assert!(run.stderr_has("github.com/mcpchecker/kubernetes-extension/v0.0.2/kubernetes-extension"));
}

#[test]
fn an_unknown_extension_name_is_a_load_error_at_its_line() {
    let tasks = "
        - id: t
          setup:
            - extension: {name: fils, operation: write}
          prompt: x
          grade: [{type: contains, value: x}]
        ";
    let run = Test::new().write("evalgate.yaml", &suite(&extensions(""), tasks)).args(&["check"]).run();
    run.expect_code(2);
    let line = suite(&extensions(""), tasks).lines().position(|l| l.contains("name: fils")).unwrap() + 1;
    let at = format!("evalgate.yaml:{line}:");
    assert!(
        run.stderr_has(&at) && run.stderr_has("tasks[0].setup[0].extension.name: unknown extension `fils`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr_has("did you mean `files`?"), "{}", run.stderr);
}

#[test]
fn an_mcpchecker_eval_runs_its_extension_operations() {
    let eval = format!(
        "kind: Eval\nmetadata: {{name: ext}}\nconfig:\n  agent: {{type: file, path: agent.yaml}}\n  extensions:\n    files:\n      package: '{}'\n  taskSets:\n    - glob: tasks/*.yaml\n",
        fixture()
    );
    let agent = "kind: Agent\nmetadata: {name: echo}\ncommands:\n  runPrompt: ./agent.sh {prompt}\n";
    let task = "kind: Task\napiVersion: mcpchecker/v1alpha2\nmetadata: {name: writes}\nspec:\n  requires:\n    - {extension: files, as: fs}\n  setup:\n    - fs.write: {path: seeded.txt, content: seeded}\n  prompt: {inline: hello}\n  verify:\n    - fs.exists: {path: seeded.txt, contains: seeded}\n";
    let test = Test::new()
        .write("eval.yaml", &eval)
        .write("agent.yaml", agent)
        .write("agent.sh", ECHO_AGENT)
        .write("tasks/writes.yaml", task);
    let run = test.args(&["run", "eval.yaml"]).run();
    run.expect_code(0);
    assert_eq!(run.task("writes")["status"], "passed", "{}", run.task("writes"));
    run.any_stderr();
}

/// The corpus: the extension tasks mcpchecker and kubernetes-extension publish, verbatim,
/// run against a fake of the Kubernetes extension with its manifest
/// (tests/fixtures/extension/kubernetes/README.md), found as a pinned release in the cache.
#[test]
fn the_published_kubernetes_extension_tasks_load_and_run_against_its_fake() {
    use sha2::Digest as _;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/extension/kubernetes");
    let test = Test::new();
    let dir = test.path().to_owned();
    crate::common::copy_dir(&root, &dir);
    let fake = std::fs::read(root.join("kubernetes-fake")).unwrap();
    let sha = format!("sha256:{:x}", sha2::Sha256::digest(&fake));
    for file in ["eval.yaml", "readme-eval.yaml"] {
        let eval = std::fs::read_to_string(dir.join(file)).unwrap().replace("{sha256}", &sha);
        std::fs::write(dir.join(file), eval).unwrap();
    }
    // The release, as `mcpchecker` would have downloaded it, in evalgate's cache.
    let cache = dir.join("cache/github.com/mcpchecker/kubernetes-extension/v0.0.2");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::copy(root.join("kubernetes-fake"), cache.join("kubernetes-extension")).unwrap();
    // `~/.kube/config`, as the eval names it.
    std::fs::create_dir_all(dir.join(".kube")).unwrap();
    let kubeconfig = r#"{"apiVersion": "v1", "kind": "Config", "current-context": "kind-dev",
        "contexts": [{"name": "kind-dev"}, {"name": "prod"}]}"#;
    std::fs::write(dir.join(".kube/config"), kubeconfig).unwrap();
    let home = dir.to_str().unwrap().to_owned();
    let cache = dir.join("cache").to_str().unwrap().to_owned();

    // The README's tasks say `gevals/v1alpha2`, which mcpchecker itself no longer reads
    // (pkg/util/meta.go): refused, located, with the rename to make.
    let check = Test::new().args(&["check", &format!("{home}/readme-eval.yaml")]).env("HOME", &home).run();
    check.expect_code(2);
    for task in ["create-nginx-pod", "list-helm-releases"] {
        let at = format!(
            "tasks/readme/{task}.yaml:2:1: /apiVersion: unknown apiVersion `gevals/v1alpha2` (gevals was renamed: use mcpchecker/…)"
        );
        assert!(check.stderr_has(&at), "{}", check.stderr);
    }
    for task in ["create-nginx-pod", "list-helm-releases"] {
        let path = dir.join(format!("tasks/readme/{task}.yaml"));
        let text = std::fs::read_to_string(&path).unwrap().replace("gevals/v1alpha2", "mcpchecker/v1alpha2");
        std::fs::write(path, text).unwrap();
    }
    for file in ["eval.yaml", "readme-eval.yaml"] {
        let check = Test::new().args(&["check", &format!("{home}/{file}")]).env("HOME", &home);
        let check = check.env("EVALGATE_EXTENSIONS", &cache).run();
        check.expect_code(0);
        check.any_stderr();
    }

    let run =
        test.env("HOME", &home).env("EVALGATE_EXTENSIONS", &cache).args(&["run", "-j", "1", "readme-eval.yaml"]).run();
    run.expect_code(0);
    run.any_stderr();
    let ids: Vec<String> = crate::common::sorted_statuses(&run.results()).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["create-nginx-pod", "list-helm-releases"]);
    for id in &ids {
        assert_eq!(run.task(id)["status"], "passed", "{}", run.task(id));
    }
    // Setup ran before the agent (the release it installed is listed), verify waited on the
    // pod the agent made, and cleanup undid everything setup made.
    let helm = run.task("list-helm-releases");
    assert!(helm["trials"][0]["output"].as_str().unwrap().contains("test-nginx (helm-test)"), "{helm}");
    let steps = run.task("create-nginx-pod")["trials"][0]["graders"].to_string();
    assert!(steps.contains("Pod/web-server condition Ready=True"), "{steps}");
    let cluster = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(".kube/config.cluster.json")).unwrap()).unwrap()
    };
    assert_eq!(cluster(), serde_json::json!({"resources": [], "releases": []}), "cleanup left {}", cluster());

    // mcpchecker's example task, through its alias (`requires: [{extension: kubernetes, as: k8s}]`).
    let run = Test::new()
        .env("HOME", &home)
        .env("EVALGATE_EXTENSIONS", &cache)
        .args(&["run", &format!("{home}/eval.yaml"), "--out", &format!("{home}/out-example")])
        .run();
    run.expect_code(0);
    run.any_stderr();
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out-example/results.json")).unwrap()).unwrap();
    assert_eq!(crate::common::sorted_statuses(&results), [("create-nginx-pod".to_owned(), "passed".to_owned())]);
    assert_eq!(cluster(), serde_json::json!({"resources": [], "releases": []}), "cleanup left {}", cluster());
}

/// mcpchecker finds an extension step's outputs by its step type (`{steps.ALIAS.OP.KEY}`, in a
/// script's `env`, a judge's template): converted, the step captures each key read of it.
#[test]
fn an_mcpchecker_task_reads_an_extension_steps_outputs_by_its_type() {
    let eval = format!(
        "kind: Eval\nmetadata: {{name: ext}}\nconfig:\n  agent: {{type: file, path: agent.yaml}}\n  extensions:\n    files:\n      package: '{}'\n  taskSets:\n    - glob: tasks/*.yaml\n",
        fixture()
    );
    let agent = "kind: Agent\nmetadata: {name: echo}\ncommands:\n  runPrompt: ./agent.sh \"{{ .Prompt }}\"\n";
    let task = "
        kind: Task
        apiVersion: mcpchecker/v1alpha2
        metadata: {name: reads-outputs}
        spec:
          requires: [{extension: files, as: fs}]
          setup:
            - fs.write: {path: first.txt, content: abc}
            - fs.write: {path: second.txt, content: abcdefgh}
          prompt: {inline: hello}
          verify:
            - script:
                inline: 'test \"$BYTES\" = 8 && test \"$PHASE\" = setup'
                env: {BYTES: '{steps.fs.write.bytes}', PHASE: '{steps.fs.write.phase}'}
          cleanup:
            - script:
                inline: 'echo \"$BYTES\" > cleanup-saw.txt'
                env: {BYTES: '{steps.fs.write.bytes}'}
        ";
    let test = Test::new()
        .write("eval.yaml", &eval)
        .write("agent.yaml", agent)
        .write("agent.sh", ECHO_AGENT)
        .write("tasks/t.yaml", &crate::common::unindent(task));
    let dir = test.path().to_owned();
    // The last `fs.write` of setup is the one its type names; each key read is captured.
    let converted = Test::new().args(&["convert", dir.join("eval.yaml").to_str().unwrap()]).run();
    converted.expect_code(0);
    converted.any_stderr();
    let declared =
        "id: fs-2\n    outputs:\n      bytes: \"{response.json.bytes}\"\n      phase: \"{response.json.phase}\"";
    assert!(converted.stdout.contains(declared), "{}", converted.stdout);
    assert!(
        converted.stdout.contains("id: fs-1\n  - extension"),
        "no output is read of the first: {}",
        converted.stdout
    );
    let run = test.args(&["run", "eval.yaml"]).run();
    run.expect_code(0);
    run.any_stderr();
    assert_eq!(run.task("reads-outputs")["status"], "passed", "{}", run.task("reads-outputs"));
    assert_eq!(
        std::fs::read_to_string(dir.join("tasks/cleanup-saw.txt")).unwrap(),
        "8\n",
        "cleanup reads setup's outputs"
    );

    // A key the operation does not answer is never read as empty: the grader errors.
    let wrong = std::fs::read_to_string(dir.join("tasks/t.yaml")).unwrap().replace("write.phase", "write.nope");
    std::fs::write(dir.join("tasks/t.yaml"), wrong).unwrap();
    let run = Test::new().args(&["run", dir.join("eval.yaml").to_str().unwrap()]).run();
    run.any_stderr();
    assert_eq!(run.task("reads-outputs")["status"], "error", "{}", run.task("reads-outputs"));
}

/// Cleanup runs whatever happened: after an extension's failure (every step, last first, a
/// failing one not stopping the rest) and after SIGINT (the extension still up for it, then
/// shut down).
#[test]
fn cleanup_runs_after_an_extension_failure_and_after_sigint() {
    let tasks = "
        - id: fails
          setup:
            - extension: {name: files, operation: misbehave, args: {how: error}}
          prompt: x
          grade: [{type: contains, value: x}]
          cleanup:
            - extension: {name: files, operation: write, args: {path: first.txt, content: '1'}}
            - extension: {name: files, operation: exists, args: {path: missing.txt}}
            - run: ls > order.txt
        ";
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite(&extensions(""), tasks));
    let dir = test.path().to_owned();
    let run = test.args(&["run"]).run();
    run.expect_code(1);
    run.any_stderr();
    let task = run.task("fails");
    assert_eq!(task["status"], "error", "{task}");
    assert!(task["reason"].as_str().unwrap().contains("invalid params: how"), "{task}");
    let order = std::fs::read_to_string(dir.join("order.txt")).unwrap();
    assert!(!order.contains("first.txt"), "cleanup runs last first: {order}");
    assert!(dir.join("first.txt").exists(), "a failing cleanup step does not stop the rest");
    let cleanup: Vec<String> = task["trials"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["phase"] == "cleanup")
        .map(|s| s["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(cleanup, ["passed", "failed", "passed"], "{task}");

    let agent = "#!/bin/sh\necho $$ > agent.pid\nexec sleep 60\n";
    let tasks = "
        - id: hangs
          prompt: x
          grade: [{type: contains, value: x}]
          cleanup:
            - extension: {name: files, operation: write, args: {path: cleaned.txt, content: '{task.id}'}}
        ";
    let test =
        Test::new().write("agent.sh", agent).write("evalgate.yaml", &suite(&extensions(""), tasks)).args(&["run"]);
    let dir = test.path().to_owned();
    let mut child = test.command().stderr(std::process::Stdio::null()).spawn().unwrap();
    crate::interrupt::every_command::pid_in(&dir, "agent.pid");
    crate::trust::signal(&child, nix::sys::signal::Signal::SIGINT);
    assert_eq!(crate::trust::wait_exit(&mut child, std::time::Duration::from_secs(30)), 4);
    assert_eq!(
        std::fs::read_to_string(dir.join("cleaned.txt")).unwrap(),
        "hangs",
        "the interrupted task's cleanup ran"
    );
    assert!(dir.join("shutdown.log").exists(), "the extension was shut down after it");
}

/// The example extension docs/extensions.md walks through (examples/extension/) sets up and
/// grades its task, and fails an answer without the order number.
#[test]
fn the_example_extension_sets_up_and_grades_its_task() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/extension");
    let test = Test::new();
    crate::common::copy_dir(&root, test.path());
    let dir = test.path().to_owned();
    let run = test.args(&["run", "evalgate.yaml"]).run();
    run.expect_code(0);
    run.any_stderr();
    let record = &run.results()["extensions"]["notes"];
    assert_eq!((&record["name"], &record["version"]), (&json!("notes"), &json!("1.0.0")), "{record}");
    assert!(!dir.join("order.note").exists(), "cleanup removed the notes");

    let forgetful = std::fs::read_to_string(dir.join("evalgate.yaml")).unwrap().replace("the order is 4411", "done");
    std::fs::write(dir.join("evalgate.yaml"), forgetful).unwrap();
    let run = Test::new().args(&["run", dir.join("evalgate.yaml").to_str().unwrap()]).run();
    run.expect_code(1);
    run.any_stderr();
    let task = run.task("keeps-the-order-number");
    assert_eq!(task["status"], "failed", "{task}");
    assert!(task.to_string().contains("note answer holds"), "{task}");
}

/// An extension that floods, answers too much, writes a line past the bound, leaks a secret,
/// hangs or has no manifest: bounded, redacted, an error where it is one, never a pass.
#[test]
fn a_misbehaving_extension_is_bounded_redacted_and_never_a_pass() {
    let secret = "tok-77c0a1d94e2b6f03";
    let step = |how: &str| {
        format!("\n          setup: [{{extension: {{name: files, operation: misbehave, args: {{how: {how}}}}}}}]")
    };
    let tasks: String = ["flood", "oversized", "secret", "huge"]
        .iter()
        .map(|how| {
            format!(
                "\n        - id: {how}{}\n          prompt: x\n          grade: [{{type: contains, value: x}}]",
                step(how)
            )
        })
        .collect();
    let yaml = suite(&extensions("    config: {token: '{env.EXT_TOKEN}'}\n"), &crate::common::unindent(&tasks));
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml).env("EXT_TOKEN", secret);
    let dir = test.path().to_owned();
    let run = test.args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    run.any_stderr();
    let status = |id: &str| run.task(id)["status"].as_str().unwrap().to_owned();
    assert_eq!(status("flood"), "passed", "{}", run.task("flood"));
    assert_eq!(status("oversized"), "passed");
    assert_eq!(status("secret"), "error", "{}", run.task("secret"));
    assert_eq!(status("huge"), "error");
    assert!(run.task("huge").to_string().contains("4 MiB"), "{}", run.task("huge"));
    let results = std::fs::metadata(dir.join("evalgate-out/results.json")).unwrap().len();
    assert!(results < 2 << 20, "20 MB of logs and a 3 MiB output are cut: results.json is {results} bytes");
    for file in std::fs::read_dir(dir.join("evalgate-out")).unwrap().flatten() {
        let text = std::fs::read_to_string(file.path()).unwrap_or_default();
        assert!(!text.contains(secret), "{} holds the token", file.path().display());
    }
    assert!(run.task("secret").to_string().contains("rejected token [secret:EXT_TOKEN]"), "{}", run.task("secret"));
    assert!(run.stderr_lacks(secret));

    // A hang past the step's timeout.
    let tasks = "
        - id: hangs
          setup: [{extension: {name: files, operation: sleep, args: {seconds: 30}}, timeout: 1s}]
          prompt: x
          grade: [{type: contains, value: x}]
        ";
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite(&extensions(""), tasks))
        .args(&["run"])
        .run();
    run.expect_code(1);
    run.any_stderr();
    let hang = run.task("hangs");
    assert_eq!(hang["status"], "error", "{hang}");
    assert!(
        hang["reason"].as_str().unwrap().contains("files.sleep: extension `files` did not answer within 3s"),
        "{hang}"
    );

    // No manifest: a preflight failure naming it, nothing runs.
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite(&extensions("    config: {no_manifest: true}\n"), tasks))
        .args(&["run"])
        .run();
    run.expect_code(3);
    assert!(
        run.stderr_has("extension `files`: did not start: extension `files`: its manifest is not one"),
        "{}",
        run.stderr
    );
}
