//! mcpchecker files (tests/fixtures/mcpchecker): an eval run directly, its tasks imported into
//! a native suite, and `convert` giving the same verdicts — against a real MCP server
//! (server-everything), a local LLM stand-in that is also the HTTP service the tasks check.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::common::server::{Request, Server, answer};
use crate::common::{Test, owned_pairs, sorted_statuses, unindent};
use serde_json::{Value, json};

const KEY: &str = "sk-test-key";

/// A task that only prompts.
const PLAIN_TASK: &str = "
    kind: Task
    metadata: {name: plain}
    steps:
      prompt: {inline: hi}
    ";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcpchecker")
}

/// A test directory holding a copy of the fixtures.
fn with_fixtures() -> Test {
    fn copy(test: Test, dir: &Path, rel: &Path) -> Test {
        let mut test = test;
        for entry in std::fs::read_dir(dir.join(rel)).unwrap() {
            let entry = entry.unwrap();
            let rel = rel.join(entry.file_name());
            test = if entry.path().is_dir() {
                copy(test, dir, &rel)
            } else {
                let name = rel.to_str().unwrap().to_owned();
                test.write(&name, &std::fs::read_to_string(entry.path()).unwrap())
            };
        }
        test
    }
    copy(Test::new(), &fixtures(), Path::new(""))
}

/// `PATH` with server-everything's bin directory first, as mcp-config.yaml names it bare.
fn path_with_servers() -> String {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/node_modules/.bin");
    assert!(bin.join("mcp-server-everything").exists(), "run scripts/test.sh: it installs the MCP servers");
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// The model agent echoes its prompt through `everything__echo` and answers with the result
/// (or says "Paris" to the capital question without a tool); the judge passes an answer
/// that contains the expected text; `/items` is a tiny HTTP service for the `http` steps.
fn stand_in() -> Server {
    let items: Arc<Mutex<Vec<String>>> = Arc::default();
    Server::start(move |r: &Request| {
        if r.path == "/items" && r.method == "POST" {
            let name = serde_json::from_str::<Value>(&r.body).unwrap()["name"].as_str().unwrap().to_owned();
            items.lock().unwrap().push(name);
            return (201, "{}".into());
        }
        if let Some(name) = r.path.strip_prefix("/items/") {
            let count = items.lock().unwrap().iter().filter(|i| *i == name).count();
            return if count > 0 {
                (200, json!({"name": name, "count": count}).to_string())
            } else {
                (404, "{}".into())
            };
        }
        let b: Value = serde_json::from_str(&r.body).unwrap();
        let user = b["messages"][0]["content"].as_str().unwrap_or_default();
        if b.get("tool_choice").is_some_and(|c| c.get("function").is_some()) {
            let user = b["messages"][1]["content"].as_str().unwrap();
            let answer_text = user.split("The system's answer:\n").nth(1).unwrap().split("\n\n").next().unwrap();
            let expected = user.rsplit("Expected:\n").next().unwrap().trim();
            let passed = answer_text.to_lowercase().contains(&expected.to_lowercase());
            let verdict = json!({"passed": passed, "reason": format!("looked for {expected}")});
            return (200, answer(None, &[("record_verdict", &verdict.to_string())]));
        }
        if user.contains("capital of France") {
            return (200, answer(Some("Paris"), &[]));
        }
        let results: Vec<&str> = b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap())
            .collect();
        match results.first() {
            None => (200, answer(None, &[("everything__echo", &json!({"message": user}).to_string())])),
            Some(r) => (200, answer(Some(r), &[])),
        }
    })
}

const EVAL_VERDICTS: [(&str, &str); 5] = [
    ("broken", "failed"),
    ("echo-v2", "passed"),
    ("greet-file", "passed"),
    ("judge-inline", "passed"),
    ("portable-flow", "passed"),
];

#[track_caller]
fn run_in(test: Test, server: &Server, args: &[&str]) -> crate::common::Run {
    test.env("PATH", &path_with_servers())
        .env("OPENAI_BASE_URL", &format!("{}/v1", server.url()))
        .env("OPENAI_API_KEY", KEY)
        .env("STUB_URL", &server.url())
        .args(args)
        .run()
}

#[test]
fn an_eval_runs_directly_with_its_task_sets_assertions_and_every_step_kind() {
    let server = stand_in();
    let run = run_in(with_fixtures(), &server, &["run", "eval.yaml", "-j", "1"]);
    run.expect_code(1);
    let results = run.results();
    assert_eq!(sorted_statuses(&results), owned_pairs(&EVAL_VERDICTS), "{results:#}");

    // Every task keeps its source file and line.
    let echo = run.task("echo-v2");
    assert_eq!((echo["file"].as_str(), echo["line"].as_u64()), (Some("tasks/echo-v2/task.yaml"), Some(4)));
    // The tool-set assertions became graders, and they were checked against the real calls.
    let names: Vec<&str> =
        echo["trials"][0]["graders"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "verify[0] script",
            "verify[1] http",
            "verify[2] ev.get-sum",
            "verify[3] llmJudge",
            "toolsUsed",
            "requireAny",
            "toolsNotUsed",
            "minToolCalls",
            "callOrder",
            "noDuplicateCalls"
        ]
    );
    let broken = run.task("broken");
    assert_eq!(broken["trials"][0]["graders"][0]["status"], "failed", "{broken}");
    // Cleanup ran in mcpchecker's order; setup's MCP output reached the script's env.
    assert_eq!(run.read("tasks/echo-v2/cleanup.log"), "one\ntwo\n");
    for gone in ["tasks/echo-v2/seed.txt", "tasks/greet-file/greeting.txt", "tasks/judge-inline/ready.txt"] {
        assert!(!run.dir.join(gone).exists(), "{gone} was cleaned up");
    }
    assert_eq!(run.read("tasks/portable/cleaned.txt"), "cleaned\n");
    let leftovers: Vec<_> = std::fs::read_dir(run.dir.join("tasks/portable"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("work-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The v1alpha1 prompt kept its braces literally.
    assert_eq!(run.task("judge-inline")["trials"][0]["output"], "Paris");

    // An assertion that fails fails the task (mcpchecker's "passed but assertions failed").
    let test = with_fixtures();
    let eval = std::fs::read_to_string(test.path().join("eval.yaml")).unwrap();
    let test = test.write("eval.yaml", &eval.replace("maxToolCalls: 3", "maxToolCalls: 0"));
    let run = run_in(test, &server, &["run", "eval.yaml", "-j", "1", "--filter", "greet-file"]);
    run.expect_code(1);
    let greet = run.task("greet-file");
    let last = greet["trials"][0]["graders"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["name"].as_str(), last["status"].as_str()), (Some("maxToolCalls"), Some("failed")), "{greet}");
}

#[test]
fn convert_prints_a_suite_that_gives_the_same_verdicts() {
    let server = stand_in();
    let test = with_fixtures();
    let dir = test.path().to_owned();
    let converted = test.args(&["convert", "eval.yaml"]).run();
    converted.expect_code(0);
    let suite: Value = evalgate::yaml::from_str(&converted.stdout).unwrap();
    assert_eq!(
        suite["agents"]["agent"],
        json!({"provider": "openai", "model": "gpt-4o-mini", "mcp": ["everything"], "timeout": "none"})
    );
    assert_eq!(suite["mcp_servers"], json!({"everything": {"command": ["mcp-server-everything", "stdio"]}}));
    std::fs::write(dir.join("converted.yaml"), &converted.stdout).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(&dir)
        .env("PATH", path_with_servers())
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env("OPENAI_API_KEY", KEY)
        .env("STUB_URL", server.url())
        .args(["run", "converted.yaml", "-j", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    assert_eq!(sorted_statuses(&results), owned_pairs(&EVAL_VERDICTS));
}

#[test]
fn tasks_imported_into_a_native_suite_run_with_its_agent() {
    let server = stand_in();
    let yaml = unindent(
        "
            evalgate: 1
            suite: imported
            mcp_servers:
              everything: {command: [mcp-server-everything, stdio]}
            agents:
              bot: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: BOT_KEY, mcp: [everything]}
            judge: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: BOT_KEY}
            imports:
              - {format: mcpchecker, path: 'tasks/*/task.yaml', agent: bot}
            ",
    )
    .replace("<url>", &server.url());
    let test = with_fixtures().write("evalgate.yaml", &yaml).env("BOT_KEY", KEY);
    let run = run_in(test, &server, &["run", "-j", "1"]);
    run.expect_code(1);
    assert_eq!(sorted_statuses(&run.results()), owned_pairs(&EVAL_VERDICTS));
    let greet = run.task("greet-file");
    assert_eq!(greet["file"], "tasks/greet-file/task.yaml");
    assert_eq!(greet["trials"][0]["graders"].as_array().unwrap().len(), 1, "no task-set assertions without the eval");

    // Importing the eval instead takes its task sets and their assertions, with this suite's agent.
    let yaml = yaml.replace("path: 'tasks/*/task.yaml'", "path: eval.yaml");
    let test = with_fixtures().write("evalgate.yaml", &yaml).env("BOT_KEY", KEY);
    let run = run_in(test, &server, &["run", "-j", "1"]);
    run.expect_code(1);
    assert_eq!(sorted_statuses(&run.results()), owned_pairs(&EVAL_VERDICTS));
    let echo = run.task("echo-v2");
    assert_eq!(echo["trials"][0]["graders"].as_array().unwrap().len(), 10, "{echo}");
    assert_eq!(echo["file"], "tasks/echo-v2/task.yaml");
}

#[test]
fn unsupported_and_incomplete_files_are_load_errors_that_say_why() {
    // A task alone does not say which agent runs it.
    let run = with_fixtures().args(&["run", "tasks/greet-file/task.yaml"]).run();
    run.expect_code(2);
    assert!(run.stderr_has("an mcpchecker task does not say which agent runs it"), "{}", run.stderr);
    assert!(run.stderr_has("imports: [{format: mcpchecker, path: tasks/greet-file/task.yaml, agent: NAME}]"));

    let ext = "
        kind: Task
        apiVersion: mcpchecker/v1alpha2
        metadata: {name: ext}
        spec:
          requires: [{extension: kubernetes, as: k8s}]
          setup:
            - k8s.create: {kind: Pod}
          prompt: {inline: hi}
        ";
    // An extension's operation converts; on its own, a placeholder stands in for its binary.
    let run = Test::new().file("task.yaml", ext).args(&["convert", "task.yaml"]).run();
    run.expect_code(0);
    let converted = &run.stdout;
    assert!(converted.contains("extensions:\n  kubernetes:\n    package: ./kubernetes-extension\n"), "{converted}");
    assert!(
        converted.contains(
            "  - extension:\n      name: kubernetes\n      operation: create\n      args:\n        kind: Pod\n"
        ),
        "{converted}"
    );
    run.any_stderr();

    let old = "
        kind: Task
        apiVersion: gevals/v1alpha2
        metadata: {name: old}
        spec: {prompt: {inline: hi}}
        ";
    let run = Test::new().file("task.yaml", old).args(&["convert", "task.yaml"]).run();
    run.expect_code(2);
    assert!(run.stderr_has("unknown apiVersion `gevals/v1alpha2` (gevals was renamed"), "{}", run.stderr);

    let eval = "
        kind: Eval
        metadata: {name: e}
        config:
          agent: {type: builtin.claude-code}
          taskSets:
            - glob: tasks/*/task.yaml
              assertions: {resourcesRead: [{server: everything, uri: 'x'}]}
        ";
    let run = with_fixtures().file("eval.yaml", eval).args(&["run", "eval.yaml"]).run();
    run.expect_code(2);
    assert!(!run.stderr_has("/config/agent"), "builtin.claude-code is an ACP agent, not refused: {}", run.stderr);
    assert!(run.stderr_has("`resourcesRead` is not supported: evalgate records tool calls only"), "{}", run.stderr);
}

#[test]
fn an_agent_file_runs_its_run_prompt_command_with_the_prompt_and_mcp_config() {
    let eval = "
        kind: Eval
        metadata: {name: e}
        config:
          agent: {type: file, path: agent.yaml}
          mcpConfigFile: mcp.json
          taskSets: [{path: t/task.yaml}]
        ";
    let everything =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/node_modules/.bin/mcp-server-everything");
    let mcp = json!({"mcpServers": {"everything": {"command": everything, "args": ["stdio"]}}}).to_string();
    let agent = r#"
        kind: Agent
        metadata: {name: a}
        commands:
          argTemplateMcpServer: "--mcp-config {{ .File }}"
          runPrompt: |-
            echo "got {{ .Prompt }}" && test "$(jq -r '.mcpServers | length' {{ .McpServerFileArgs | printf "%s" }})"
        "#;
    let task = r#"
        kind: Task
        metadata: {name: plain}
        steps:
          prompt: {inline: "it's {x} $HOME"}
        "#;
    let run_with = |agent: &str| {
        Test::new()
            .file("eval.yaml", eval)
            .file("agent.yaml", agent)
            .write("mcp.json", &mcp)
            .file("t/task.yaml", task)
            .args(&["run", "eval.yaml"])
            .run()
    };
    // Only `.Prompt` and `.McpServerFileArgs` are supplied; anything else is named.
    let run = run_with(agent);
    run.expect_code(2);
    assert!(run.stderr_has("`commands.runPrompt` uses `{{ .McpServerFileArgs | printf \"%s\" }}`"), "{}", run.stderr);

    let agent = r#"
        kind: Agent
        metadata: {name: a}
        commands:
          argTemplateMcpServer: "--mcp-config {{ .File }}"
          runPrompt: |-
            printf 'got %s; ' {{ printf "%q" .Prompt }} && echo {{ .McpServerFileArgs }}
        "#;
    let run = run_with(agent);
    run.expect_code(0);
    let plain = run.task("plain");
    let output = plain["trials"][0]["output"].as_str().unwrap();
    let (said, config) = output.trim().split_once("; --mcp-config ").unwrap();
    assert_eq!(said, "got it's {x} $HOME", "the prompt arrives whole and unexpanded");
    assert!(config.ends_with(".json") && config.starts_with('/'), "{output}");
    assert_eq!(plain["trials"][0]["graders"][0]["name"], "the agent ran (no verify steps)");
}

#[test]
fn a_header_of_a_converted_task_is_masked_and_redacted_like_every_secret() {
    const HEADER: &str = "Bearer mcpchecker-literal-token-77";
    let task = std::fs::read_to_string(fixtures().join("tasks/echo-v2/task.yaml")).unwrap();
    let with_header = task.replacen(
        "        method: POST\n",
        &format!("        method: POST\n        headers: {{Authorization: \"{HEADER}\"}}\n"),
        1,
    );
    assert_ne!(task, with_header, "the fixture's first http step takes the header");
    let server = stand_in();
    let run = run_in(
        with_fixtures().write("tasks/echo-v2/task.yaml", &with_header),
        &server,
        &["run", "eval.yaml", "--github"],
    );
    assert!(run.stdout.lines().any(|l| l == format!("::add-mask::{HEADER}")), "{}", run.stdout);
    let sent = server.received().into_iter().find(|r| r.path == "/items" && r.method == "POST").expect("the step ran");
    assert_eq!(sent.header("authorization"), Some(HEADER), "the header reached the service as written");
    for file in ["results.json", "summary.md", "junit.xml", "events.jsonl"] {
        assert!(!run.read(&format!("evalgate-out/{file}")).contains("mcpchecker-literal-token-77"), "{file}");
    }
}

#[test]
fn shell_parameters_and_braces_reach_the_shell_unchanged() {
    let task = std::fs::read_to_string(fixtures().join("tasks/portable/task.yaml")).unwrap();
    let shell = r#"    - command: {run: "NS=ns1; echo \"${NS}-${NS:-dflt}-${UNSET_X:-dflt}\" | awk '{print $1}' > shell.txt"}
"#;
    let with_shell = task.replacen("  setup:\n", &format!("  setup:\n{shell}"), 1);
    assert_ne!(task, with_shell);
    let server = stand_in();
    let run = run_in(with_fixtures().write("tasks/portable/task.yaml", &with_shell), &server, &["run", "eval.yaml"]);
    assert_eq!(run.task("portable-flow")["status"], "passed", "{}", run.stderr);
    assert_eq!(run.read("tasks/portable/shell.txt"), "ns1-ns1-dflt\n");
}

#[test]
fn a_prompt_spliced_inside_quotes_arrives_as_one_argument() {
    let eval = "
        kind: Eval
        metadata: {name: e}
        config:
          agent: {type: file, path: agent.yaml}
          taskSets: [{path: t/task.yaml}]
        ";
    // gemini's agent file writes `--prompt "{{ .Prompt }}"`: inside double quotes.
    let agent = r#"
        kind: Agent
        metadata: {name: a}
        commands:
          runPrompt: |-
            ./args.sh --prompt "{{ .Prompt }}" --single '{{ .Prompt }}' --bare {{ .Prompt }}
        "#;
    let args = "#!/bin/sh\necho \"$#\"\nfor a in \"$@\"; do echo \"[$a]\"; done\n";
    let task = r#"
        kind: Task
        metadata: {name: words}
        steps:
          prompt: {inline: "many words, it's $HOME * here"}
        "#;
    let run = Test::new()
        .file("eval.yaml", eval)
        .file("agent.yaml", agent)
        .write("args.sh", args)
        .file("t/task.yaml", task)
        .args(&["run", "eval.yaml"])
        .run();
    run.expect_code(0);
    let output = run.task("words")["trials"][0]["output"].as_str().unwrap().to_owned();
    let prompt = "many words, it's $HOME * here";
    assert_eq!(
        output.lines().collect::<Vec<_>>(),
        [
            "6",
            "[--prompt]",
            &format!("[{prompt}]"),
            "[--single]",
            &format!("[{prompt}]"),
            "[--bare]",
            &format!("[{prompt}]")
        ],
    );
}

#[test]
fn an_error_in_a_task_file_points_into_that_file() {
    let task = std::fs::read_to_string(fixtures().join("tasks/portable/task.yaml")).unwrap();
    let broken = task.replacen("file: {path: \"{env.WORK}/a.txt\"", "file: {path: \"{nope.x}/a.txt\"", 1);
    assert_ne!(task, broken);
    let line = broken.lines().position(|l| l.contains("{nope.x}")).unwrap() + 1;
    let server = stand_in();
    let run = run_in(with_fixtures().write("tasks/portable/task.yaml", &broken), &server, &["check", "eval.yaml"]);
    run.expect_code(2);
    let expected = format!("tasks/portable/task.yaml:{line}:");
    assert!(run.stderr_has(&expected), "{expected} in:\n{}", run.stderr);
    assert!(run.stderr_has("/spec/verify/1/file/path: unknown reference `{nope.x}`"), "{}", run.stderr);
}

#[test]
fn agent_files_and_mcp_configs_are_reported_at_their_own_lines_and_no_timeout_is_invented() {
    let eval = "
        kind: Eval
        metadata: {name: e}
        config:
          agent: {type: file, path: agents/agent.yaml}
          mcpConfigFile: mcp.yaml
          # limits
          taskSets: [{path: t/task.yaml}]
        ";
    let task = PLAIN_TASK;
    let test = |agent: &str, mcp: &str, eval: &str| {
        Test::new()
            .file("eval.yaml", eval)
            .file("agents/agent.yaml", agent)
            .file("mcp.yaml", mcp)
            .file("t/task.yaml", task)
            .args(&["convert", "eval.yaml"])
            .run()
    };
    let agent = "
        kind: Agent
        metadata: {name: a}
        builtin:
          type: claude-code
        ";
    let mcp = "
        mcpServers:
          ok: {command: x}
          broken:
            args: [a]
        ";
    let run = test(agent, mcp, eval);
    run.expect_code(2).expect_stderr(
        "
        error: invalid mcpchecker:
          mcp.yaml:3:3: /mcpServers/broken: a server needs `command` (stdio) or `url` (http)
        ",
    );

    // A command agent gets mcpchecker's bound: the eval's default task limit, else none.
    let agent = "
        kind: Agent
        metadata: {name: a}
        commands:
          runPrompt: echo {{ .Prompt }}
        ";
    let mcp = "
        mcpServers:
          ok: {command: x}
        ";
    let run = test(agent, mcp, eval);
    run.expect_code(0);
    let suite: Value = evalgate::yaml::from_str(&run.stdout).unwrap();
    assert_eq!(suite["agents"]["agent"]["timeout"], "none", "{}", run.stdout);
    let limited = eval.replace("# limits", "defaultTaskLimits: {timeout: 2m}");
    let run = test(agent, mcp, &limited);
    let suite: Value = evalgate::yaml::from_str(&run.stdout).unwrap();
    assert_eq!(suite["agents"]["agent"]["timeout"], "2m", "{}", run.stdout);
    // A whole-phase cleanup limit has no native twin: refused where it is written.
    let run = test(agent, mcp, &limited.replace("{timeout: 2m}", "{timeout: 2m, cleanupTimeout: 1m}"));
    run.expect_code(2);
    assert!(run.stderr_has("eval.yaml:6:36: /config/defaultTaskLimits/cleanupTimeout"), "{}", run.stderr);
}

#[test]
fn a_portable_expect_stdout_string_is_an_exact_match() {
    let task = r#"
        apiVersion: mcp-eval/v1
        kind: Task
        metadata: {name: p}
        spec:
          prompt: hi
          verify:
            - command: {run: echo 50, expect: {stdout: "50"}}
            - command: {run: echo 50, expect: {stdout: {equal: "50"}}}
        "#;
    let run = Test::new().file("task.yaml", task).args(&["convert", "task.yaml"]).run();
    run.expect_code(2);
    assert!(run.stderr_has("/spec/verify/1/command/expect/stdout/equal: unknown key `equal`"), "{}", run.stderr);
    let run = Test::new()
        .file("task.yaml", &task.replace("{equal: \"50\"}", "{contains: \"5\"}"))
        .args(&["convert", "task.yaml"])
        .run();
    run.expect_code(0);
    assert!(run.stdout.contains("equals: '50'") || run.stdout.contains("equals: \"50\""), "{}", run.stdout);
}

/// mcpchecker pastes `{agent.output}` into a command step's shell text; converted, the
/// value reaches the shell as a variable the step sets, placed by the reader every `run:`
/// string goes through (`sh -c` and `shell: bash` alike), and a paste the reader cannot
/// place with certainty is refused at its place in the task file.
#[test]
fn an_answer_mcpchecker_pastes_into_shell_text_is_text_or_refused() {
    let eval = "
        kind: Eval
        metadata: {name: e}
        config:
          agent: {type: file, path: agent.yaml}
          taskSets: [{path: t/task.yaml}]
        ";
    let agent = "
        kind: Agent
        metadata: {name: a}
        commands:
          runPrompt: ./agent.sh
        ";
    let hostile = "x $(touch pwned1) `touch pwned2` '; touch pwned3; ' \"; touch pwned4; \"";
    let task = r#"
        apiVersion: mcp-eval/v1
        kind: Task
        metadata: {name: paste}
        spec:
          prompt: hi
          verify:
            - command: {run: "printf '%s' {agent.output} > ../plain"}
            - command: {run: "printf '%s' \"{agent.output}\" > ../bash", shell: bash}
        "#;
    let test = || {
        Test::new()
            .file("eval.yaml", eval)
            .file("agent.yaml", agent)
            .write("agent.sh", &format!("#!/bin/sh\ncat <<'EOF'\n{hostile}\nEOF\n"))
    };
    let run = test().file("t/task.yaml", task).args(&["run", "eval.yaml"]).run();
    run.expect_code(0);
    for pwned in ["pwned1", "pwned2", "pwned3", "pwned4"] {
        assert!(!run.dir.join(pwned).exists() && !run.dir.join("t").join(pwned).exists(), "{pwned} ran");
    }
    assert_eq!(run.read("plain").trim_end(), hostile);
    assert_eq!(run.read("bash").trim_end(), hostile);

    let heredoc =
        task.replace(r#"{run: "printf '%s' {agent.output} > ../plain"}"#, r#"{run: "cat <<EOF\n{agent.output}\nEOF"}"#);
    let run = test().file("t/task.yaml", &heredoc).args(&["run", "eval.yaml"]).run();
    run.expect_code(2);
    assert!(run.stderr_has("/spec/verify/0/command/run: `{agent.output}` stands after a heredoc"), "{}", run.stderr);
    assert!(run.stderr_has("write `\"$EVALGATE_VALUE_1\"` instead"), "{}", run.stderr);
}

/// mcpchecker's ACP agents load and run through the `acp` kind: `builtin.claude-code` is
/// `claude-agent-acp` over ACP, and an agent file's `acp: {cmd, args}` runs as written (here
/// the scripted fake ACP agent), with the eval's servers and every permission allowed.
#[test]
fn mcpchecker_acp_agents_run_as_acp_agents() {
    let eval = "
        kind: Eval
        metadata: {name: e}
        config:
          agent: {type: builtin.claude-code}
          taskSets: [{path: t/task.yaml}]
        ";
    let task = PLAIN_TASK;
    let converted = Test::new().file("eval.yaml", eval).file("t/task.yaml", task).args(&["convert", "eval.yaml"]).run();
    converted.expect_code(0);
    let suite: Value = evalgate::yaml::from_str(&converted.stdout).unwrap();
    assert_eq!(
        suite["agents"]["agent"]["acp"],
        json!({"command": ["claude-agent-acp"], "permissions": [{"decision": "allow"}]}),
        "{}",
        converted.stdout
    );
    let agent = "
        kind: Agent
        metadata: {name: fake}
        acp: {cmd: python3, args: [fake_agent.py]}
        ";
    let eval = eval.replace("{type: builtin.claude-code}", "{type: file, path: agent.yaml}");
    let run = Test::new()
        .file("eval.yaml", &eval)
        .file("agent.yaml", agent)
        .file("t/task.yaml", task)
        .write("fake_agent.py", include_str!("../fixtures/acp/fake_agent.py"))
        .env("FAKE_ACP", "stop:end_turn")
        .args(&["run", "eval.yaml"])
        .run();
    run.expect_code(0);
    let trial = &run.task("plain")["trials"][0];
    assert_eq!(
        (trial["status"].as_str(), trial["session"]["stop_reason"].as_str()),
        (Some("passed"), Some("end_turn"))
    );
}
