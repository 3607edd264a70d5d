//! ACP agents through the binary: a scripted fake agent (tests/fixtures/acp/fake_agent.py)
//! drives every update kind, stop reason, permission request and file request in and out of
//! its working directory, and misbehaves (garbage, an oversized line, death mid-turn, a hung
//! turn): nothing it does may pass a trial that did not finish.

use serde_json::{Value, json};

use crate::common::{Test, is_running};

const FAKE: &str = include_str!("../fixtures/acp/fake_agent.py");

/// A suite of ACP agents running the fake (each `NAME: FAKE_ACP mode`, in `w/`), with `extra`
/// keys and `tasks` (an indented block, as it lands below `tasks:`).
fn acp_suite(agents: &[(&str, &str)], agent_keys: &str, tasks: &str) -> Test {
    let mut suite = String::from("evalgate: 1\nsuite: test.acp\nagents:\n");
    for (name, mode) in agents {
        suite += &format!(
            "  {name}:\n    workdir: w\n    timeout: 5s\n    acp:\n      command: [python3, ../fake_agent.py]\n      \
             env: {{FAKE_ACP: '{mode}', FAKE_ACP_PIDS: ../pids-{name}}}\n{agent_keys}"
        );
    }
    suite += "tasks:\n";
    suite += &crate::common::indent(tasks, 2);
    Test::new()
        .write("fake_agent.py", FAKE)
        .write("w/notes.txt", "hello\n")
        .write("outside.txt", "not yours\n")
        .write("evalgate.yaml", &suite)
}

fn trial(run: &crate::common::Run, task: &str) -> Value {
    run.task(task)["trials"][0].clone()
}

/// Every update kind becomes the trace, graders read it unchanged, permissions are answered by
/// the policy and recorded, files are served inside the working directory only, and no
/// terminal is offered.
#[test]
fn an_acp_session_becomes_the_trials_trace() {
    let keys = "      model: fake-2\n      mode: plan\n      permissions:\n        - {decision: allow, kind: edit, path: '*.txt'}\n";
    let test = acp_suite(
        &[("claude", "full")],
        keys,
        "
        - id: full
          agent: claude
          prompt: tidy up
          grade:
            - {type: contains, value: 'read-in:ok hello'}
            - {type: contains, value: 'read-out:refused read-link:refused'}
            - {type: contains, value: 'edit:yes write-in:ok write-out:refused rm:no terminal:refused'}
            - {type: tool_called, tool: Read, arguments: {file_path: notes.txt}}
            - {type: tool_sequence, order: exact, tools: [Read, Write, Bash]}
        ",
    );
    std::os::unix::fs::symlink("../outside.txt", test.path().join("w/escape")).unwrap();
    let run = test.args(&["run"]).run();
    run.expect_code(0);
    let trial = trial(&run, "full");
    assert_eq!(trial["status"], "passed", "{trial:#}");
    assert_eq!(trial["model"], "fake-2");
    assert_eq!(trial["usage"], json!({"input_tokens": 1000, "output_tokens": 200, "cost_usd": 0.0123}));
    let calls: Vec<(&str, &str)> = trial["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(calls, [("Read", "completed"), ("Write", "completed"), ("Bash", "failed")]);
    let session = &trial["session"];
    assert_eq!(session["stop_reason"], "end_turn");
    assert_eq!(session["thoughts"], json!(["I should look first.", "Done."]));
    assert_eq!(session["plans"][0][1]["content"], "clean up");
    assert_eq!(session["diffs"][0]["new_text"], "written by the agent\n");
    let permissions = &session["permissions"];
    assert_eq!(
        (&permissions[0]["tool"], &permissions[0]["allowed"], &permissions[0]["rule"], &permissions[0]["option"]),
        (&json!("Write"), &json!(true), &json!("permissions[0]"), &json!("allow_once"))
    );
    assert_eq!(
        (&permissions[1]["tool"], &permissions[1]["allowed"], &permissions[1]["rule"], &permissions[1]["input"]),
        (&json!("Bash"), &json!(false), &json!("default"), &json!({"command": "rm -rf build"}))
    );
    let refused: Vec<(&str, bool)> = session["client_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["method"].as_str().unwrap(), c.get("refused").is_some()))
        .collect();
    assert_eq!(
        refused,
        [
            ("fs/read_text_file", false),
            ("fs/read_text_file", true),
            ("fs/read_text_file", true),
            ("fs/write_text_file", false),
            ("fs/write_text_file", true),
            ("terminal/create", true),
        ]
    );
    assert_eq!(run.read("w/out.txt"), "written by the agent\n");
    assert!(!run.dir.join("pwned.txt").exists());
}

/// Only `end_turn` can pass: the agent's own limits are a graded fail, a cancel it was not
/// asked for and a reason the protocol does not have are errors. The answer text would pass
/// each.
#[test]
fn only_end_turn_can_pass() {
    let reasons = ["end_turn", "refusal", "max_tokens", "max_turn_requests", "cancelled", "timeout"];
    let agents: Vec<(String, String)> = reasons.iter().map(|r| (r.replace('_', "-"), format!("stop:{r}"))).collect();
    let agents: Vec<(&str, &str)> = agents.iter().map(|(a, m)| (a.as_str(), m.as_str())).collect();
    let tasks: String = agents
        .iter()
        .map(|(a, _)| {
            format!("- {{id: {a}, agent: {a}, prompt: go, grade: [{{type: contains, value: I stop here}}]}}\n")
        })
        .collect();
    let run = acp_suite(&agents, "", &tasks).args(&["run"]).run();
    run.any_stderr(); // the reasons are pinned below, from the results
    let got: Vec<(String, String, String)> = agents
        .iter()
        .map(|(a, _)| {
            let t = trial(&run, a);
            (a.to_string(), t["status"].as_str().unwrap().to_owned(), t["reason"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    let want = [
        ("end-turn", "passed", ""),
        ("refusal", "failed", "the agent refused (stop reason `refusal`)"),
        ("max-tokens", "failed", "the agent ran out of tokens (stop reason `max_tokens`)"),
        ("max-turn-requests", "failed", "the agent reached its turn limit (stop reason `max_turn_requests`)"),
        ("cancelled", "error", "agent `cancelled` the agent cancelled its turn unasked (stop reason `cancelled`)"),
        ("timeout", "error", "agent `timeout` the agent stopped for a reason the protocol does not have: \"timeout\""),
    ];
    let want: Vec<(String, String, String)> =
        want.iter().map(|(a, s, r)| ((*a).to_owned(), (*s).to_owned(), (*r).to_owned())).collect();
    assert_eq!(got, want);
    run.expect_code(1);
}

/// A crash, garbage, an oversized line, a protocol version evalgate does not speak and a
/// hung turn are errors, never graded; the hung agent's whole group (a grandchild too) is
/// killed, though it ignores `session/cancel` and stdin's end.
#[test]
fn a_broken_agent_is_an_error_and_its_group_is_reaped() {
    let agents = [
        ("garbage", "garbage"),
        ("oversized", "oversized"),
        ("dies", "die"),
        ("hangs", "hang"),
        ("cancels", "cancellable"),
        ("v2", "version:2"),
    ];
    let tasks: String = agents
        .iter()
        .map(|(a, _)| {
            // Only a hung turn meets its timeout; a loaded machine may take seconds to write 17 MiB.
            let timeout = if ["hangs", "cancels"].contains(a) { "2s" } else { "60s" };
            format!("- {{id: {a}, agent: {a}, prompt: go, timeout: {timeout}, grade: [{{type: contains, value: answer}}]}}\n")
        })
        .collect();
    let run = acp_suite(&agents, "", &tasks).args(&["run"]).run();
    run.any_stderr(); // the reasons are pinned below, from the results
    let reason = |task: &str| {
        let t = trial(&run, task);
        assert_eq!(t["status"], "error", "{task}: {t:#}");
        t["reason"].as_str().unwrap().to_owned()
    };
    assert!(
        reason("garbage")
            .starts_with("agent `garbage` wrote a line that is not JSON-RPC: \"Loading model weights... done\"")
    );
    assert_eq!(reason("oversized"), "agent `oversized` wrote a line longer than 16 MiB");
    assert_eq!(reason("dies"), "agent `dies` exited (exit status: 3)");
    assert_eq!(trial(&run, "dies")["output"], "half an answer", "what it said before it died is kept");
    assert_eq!(reason("hangs"), "agent `hangs` timed out after 2s; it did not answer `session/cancel` within 3s");
    assert_eq!(
        reason("cancels"),
        "agent `cancels` timed out after 2s; after `session/cancel` it stopped (stop reason `cancelled`)"
    );
    assert_eq!(reason("v2"), "agent `v2` speaks ACP protocol version 2; evalgate speaks 1");
    let pids = run.read("pids-hangs");
    for pid in pids.split_whitespace() {
        assert!(!is_running(pid.parse().unwrap()), "process {pid} of the hung agent outlived its trial");
    }
    run.expect_code(1);
}

/// What the agent reports of its MCP calls is checked against what the server received
/// through evalgate's proxy: a call it hid joins the trace, one it made up is a note.
#[test]
fn reported_mcp_calls_are_checked_against_what_the_server_received() {
    let everything = crate::mcp::bin("mcp-server-everything");
    let servers = format!("mcp_servers:\n  everything: {{command: [{everything}, stdio]}}\n");
    for lie in [false, true] {
        let agent = "      mcp: []\n";
        let test = acp_suite(
            &[("honest", "mcp")],
            "",
            "
            - id: echo
              agent: honest
              prompt: call echo
              grade:
                - {type: tool_called, tool: everything.echo, arguments: {message: hello}}
            ",
        );
        let _ = agent;
        let suite = std::fs::read_to_string(test.path().join("evalgate.yaml")).unwrap();
        let suite = suite
            .replace("    timeout: 5s\n", "    timeout: 30s\n    mcp: [everything]\n")
            .replace("tasks:\n", &format!("{servers}tasks:\n"));
        let test = test.write("evalgate.yaml", &suite);
        let test = if lie { test.env("FAKE_ACP_LIE", "1") } else { test };
        let run = test.args(&["run"]).run();
        run.expect_code(0);
        let trial = trial(&run, "echo");
        let calls: Vec<String> = trial["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!("{}.{} {}", c["server"].as_str().unwrap_or("-"), c["name"].as_str().unwrap(), c["arguments"])
            })
            .collect();
        let notes = trial["notes"].as_array().cloned().unwrap_or_default();
        if lie {
            assert_eq!(
                calls,
                [
                    r#"everything.echo {"message":"hello"}"#,
                    r#"everything.echo {"message":"never sent"}"#,
                    r#"everything.add {"a":1,"b":2}"#,
                ]
            );
            assert_eq!(
                notes,
                [
                    json!(r#"the MCP server received `everything.add` {"a":1,"b":2}, which the agent did not report"#),
                    json!(
                        r#"the agent reported `everything.echo` {"message":"never sent"}, which no MCP server received"#
                    ),
                ]
            );
        } else {
            assert_eq!(calls, [r#"everything.echo {"message":"hello"}"#]);
            assert!(notes.is_empty(), "{notes:?}");
        }
    }
}

/// Keys of an ACP agent that cannot work are located errors, all at once.
#[test]
fn a_bad_acp_agent_is_a_located_error() {
    let check = |suite: &str| Test::new().suite(suite).args(&["check"]).run();
    let run = check(
        "
            evalgate: 1
            suite: t
            agents:
              a:
                env: {X: '1'}
                acp:
                  command: []
                  model: ''
                  permissions:
                    - {decision: allow, tool: 'Bash[', kind: execute}
            tasks:
              - {id: t, agent: a, prompt: hi, grade: [{type: contains, value: x}]}
            ",
    );
    run.expect_code(2);
    run.expect_stderr_contains(&[
        "evalgate.yaml:5:",
        "agents.a.env: `env` does not belong to an ACP agent (write it in `acp.env`)",
        "evalgate.yaml:7:",
        "agents.a.acp.command: the command is empty",
        "agents.a.acp.model: `model` is empty",
        "agents.a.acp.permissions[0].tool: `Bash[` is not a glob",
    ]);
    let run = check(
        "
        evalgate: 1
        suite: t
        agents:
          a: {acp: {command: [x], permissions: [{decision: maybe}]}}
        tasks:
          - {id: t, agent: a, prompt: hi, grade: [{type: contains, value: x}]}
        ",
    );
    run.expect_code(2);
    run.expect_stderr_contains(&[
        "evalgate.yaml:4:52: agents.a.acp.permissions[0].decision: unknown decision `maybe`",
        "expected one of: allow, deny",
    ]);
}

/// Claude Code's ACP adapter, installed by scripts/test.sh (npm ci in tests/fixtures/acp).
fn claude_agent_acp() -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/node_modules/.bin/claude-agent-acp");
    assert!(path.exists(), "{} is missing: run scripts/test.sh (it runs npm ci in tests/fixtures/acp)", path.display());
    path.display().to_string()
}

/// An Anthropic Messages stand-in that scripts Claude Code's turn: while the request offers
/// the `everything` server's `echo` and holds no tool result, a streamed `tool_use` of it;
/// then a streamed answer. `HEAD /` (Claude Code's reachability check) is answered empty.
fn claude_standin() -> crate::common::server::Server {
    crate::common::server::Server::start_with(|r| {
        use crate::common::server::Reply;
        if r.method == "HEAD" {
            return Reply { status: 200, headers: Vec::new(), body: Vec::new() };
        }
        let body: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
        let offered = body["tools"].as_array().into_iter().flatten().any(|t| t["name"] == "mcp__everything__echo");
        let last = body["messages"].as_array().and_then(|m| m.last()).map(|m| m["content"].clone());
        let answered =
            last.and_then(|c| c.as_array().cloned()).into_iter().flatten().any(|c| c["type"] == "tool_result");
        let (start, delta, stop) = if offered && !answered {
            (
                json!({"type": "tool_use", "id": "toolu_1", "name": "mcp__everything__echo", "input": {}}),
                json!({"type": "input_json_delta", "partial_json": "{\"message\": \"hello\"}"}),
                "tool_use",
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": "The echo said hello."}),
                "end_turn",
            )
        };
        let usage = json!({"input_tokens": 10, "output_tokens": 1});
        let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"], "content": [],
                             "stop_reason": null, "stop_sequence": null, "usage": usage});
        let events = [
            json!({"type": "message_start", "message": message}),
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
            json!({"type": "message_stop"}),
        ];
        let text: String =
            events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
        let mut reply = Reply::json(200, text);
        reply.headers.push(("content-type".into(), "text/event-stream".into()));
        reply
    })
}

/// The real Claude Code (claude-agent-acp 0.23.1) runs a tool-call turn offline against the
/// stand-in, with server-everything behind evalgate's recording proxy: the calls it reports
/// are those the server received (no note). Recorded once, the suite replays from another
/// directory (another `HOME`, too) with the stand-in gone and no key, with the same
/// verdicts; a changed prompt misses, with its difference shown.
#[test]
fn claude_code_over_acp_records_and_replays_from_another_directory() {
    let everything = crate::mcp::bin("mcp-server-everything");
    let suite = |prompt: &str| {
        format!(
            "evalgate: 1\nsuite: claude.acp\nmcp_servers:\n  everything: {{command: [{everything}, stdio]}}\n\
             agents:\n  claude:\n    timeout: 120s\n    mcp: [everything]\n    acp:\n      command: [{}]\n      \
             env: {{IS_SANDBOX: '1', HOME: '{{env.AGENT_HOME}}'}}\n      permissions: [{{decision: allow, tool: 'mcp__everything__*'}}]\n\
             tasks:\n  - id: echo\n    agent: claude\n    prompt: {prompt}\n    grade:\n      \
             - {{type: tool_called, tool: everything.echo, arguments: {{message: hello}}}}\n      \
             - {{type: contains, value: The echo said hello}}\n",
            claude_agent_acp()
        )
    };
    let standin = claude_standin();
    let first = Test::new().write("evalgate.yaml", &suite("Call the echo tool with hello."));
    std::fs::create_dir(first.path().join("home")).unwrap();
    let home = first.path().join("home").display().to_string();
    let run = first
        .env("AGENT_HOME", &home)
        .env("ANTHROPIC_BASE_URL", &standin.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-stand-in-key")
        .args(&["run", "--record"])
        .run();
    run.expect_code(0);
    let recorded = trial(&run, "echo");
    assert_eq!(recorded["status"], "passed", "{recorded:#}");
    assert_eq!(recorded["tool_calls"].as_array().unwrap().len(), 1, "{recorded:#}");
    assert_eq!(recorded["session"]["permissions"][0]["tool"], "mcp__everything__echo");
    assert!(recorded.get("notes").is_none(), "the agent's report and the proxy disagree: {recorded:#}");
    let posts = standin.received().iter().filter(|r| r.method == "POST").count();
    assert_eq!(posts, 2, "the tool call, then the answer");

    for (prompt, passes) in [("Call the echo tool with hello.", true), ("Call the echo tool with bye.", false)] {
        let again = Test::new().write("evalgate.yaml", &suite(prompt));
        std::fs::create_dir(again.path().join("cassettes")).unwrap();
        crate::common::copy_dir(&run.dir.join("cassettes"), &again.path().join("cassettes"));
        std::fs::create_dir(again.path().join("home")).unwrap();
        let home = again.path().join("home").display().to_string();
        let closed = format!("http://127.0.0.1:{}", crate::common::server::closed_port());
        let replay = again.env("AGENT_HOME", &home).env("ANTHROPIC_BASE_URL", &closed).args(&["run", "--replay"]).run();
        let trial = trial(&replay, "echo");
        let cassette = &replay.results()["cassette"];
        if passes {
            replay.expect_code(0);
            assert_eq!(
                (trial["status"].as_str(), trial["replayed"].as_bool()),
                (Some("passed"), Some(true)),
                "{trial:#}"
            );
            assert_eq!(trial["tool_calls"], recorded["tool_calls"]);
            assert_eq!((cassette["replayed"].as_u64(), cassette["missed"].as_u64()), (Some(3), Some(0)), "{cassette}");
        } else {
            replay.any_stderr(); // the miss is pinned below, from the results
            assert_eq!(trial["status"], "error", "{trial:#}");
            let reason = trial["reason"].as_str().unwrap();
            assert!(reason.starts_with("agent `claude`: not in cassette cassettes/claude.acp.jsonl"), "{reason}");
            assert!(reason.contains("differs at body.messages[0]"), "{reason}");
        }
    }
    assert_eq!(standin.received().iter().filter(|r| r.method == "POST").count(), posts, "a replay asked the stand-in");
}

/// An ACP session's working directory is the trial's workspace, and its agent is confined
/// there as a command agent is (bubblewrap): it works on the template; it cannot read the
/// suite; its attempt at the network is blocked and turns the trial into an error (read from
/// the sandbox's network namespace before evalgate ends the session); its MCP servers are
/// reached through the relay, nothing else. `isolation: none` runs it unconfined.
#[test]
fn an_acp_agent_works_in_the_trials_workspace_confined() {
    let task = |isolation: &str| {
        format!(
            "
            - id: ws
              agent: claude
              workspace: {{template: tmpl{isolation}}}
              prompt: tidy up
              grade: [{{type: contains, value: 'read-in:ok from the template'}}]
            - id: escape
              agent: escaper
              workspace: {{template: tmpl{isolation}}}
              prompt: get out
              grade: [{{type: contains, value: 'outside:hidden'}}]
            "
        )
    };
    let agents = [("claude", "full"), ("escaper", "escape")];
    let confined = acp_suite(&agents, "", &task("")).write("tmpl/notes.txt", "from the template\n");
    let run = confined.args(&["run", "-j", "2"]).run();
    run.expect_code(1);
    run.any_stderr();
    assert_eq!(trial(&run, "ws")["status"], "passed", "{:#}", trial(&run, "ws"));
    let escape = trial(&run, "escape");
    assert_eq!(escape["status"], "error", "{escape:#}");
    assert!(escape["output"].as_str().unwrap().contains("net:blocked outside:hidden"), "{escape:#}");
    assert!(
        escape["reason"].as_str().unwrap().contains("tried to reach the network under `network: none`"),
        "{escape:#}"
    );
    let unconfined = acp_suite(&agents, "", &task(", isolation: none")).write("tmpl/notes.txt", "from the template\n");
    let run = unconfined.args(&["run", "--filter", "escape"]).run();
    run.expect_code(1);
    run.any_stderr();
    assert!(trial(&run, "escape")["output"].as_str().unwrap().contains("outside:LEAK"), "{:#}", trial(&run, "escape"));
}

/// A confined ACP agent under `network: none` calls its MCP server through evalgate's proxy,
/// relayed into the sandbox: the call is made and recorded.
#[test]
fn a_confined_acp_agent_reaches_its_mcp_server_through_the_relay() {
    let everything = crate::mcp::bin("mcp-server-everything");
    let test = acp_suite(
        &[("honest", "mcp")],
        "",
        "
        - id: echo
          agent: honest
          workspace: {template: tmpl, network: none}
          prompt: call echo
          grade:
            - {type: tool_called, tool: everything.echo, arguments: {message: hello}}
        ",
    )
    .write("tmpl/notes.txt", "x\n");
    let suite = std::fs::read_to_string(test.path().join("evalgate.yaml")).unwrap();
    let suite = suite
        .replace("    timeout: 5s\n", "    timeout: 30s\n    mcp: [everything]\n")
        .replace("tasks:\n", &format!("mcp_servers:\n  everything: {{command: [{everything}, stdio]}}\ntasks:\n"));
    let run = test.write("evalgate.yaml", &suite).args(&["run"]).run();
    run.expect_code(0);
    run.any_stderr();
    assert_eq!(trial(&run, "echo")["status"], "passed", "{:#}", trial(&run, "echo"));
}

/// The `permission` grader reads what the agent asked and how the policy answered: "asked to
/// run `rm -rf` and was denied", "allowed an edit", "never asked to `curl`"; a claim the
/// record contradicts fails, and an agent with no session cannot pass it.
#[test]
fn permission_graders_read_what_was_asked_and_answered() {
    let keys = "      permissions:\n        - {decision: allow, kind: edit, path: '*.txt'}\n";
    let test = acp_suite(
        &[("claude", "full")],
        keys,
        "
        - id: asked
          agent: claude
          prompt: tidy up
          grade:
            - {type: permission, tool: Bash, contains: 'rm -rf', decision: denied}
            - {type: permission, kind: edit, decision: allowed}
            - {type: permission, contains: curl, asked: false}
        - id: claims-wrong
          agent: claude
          prompt: tidy up
          grade:
            - {type: permission, tool: Bash, decision: allowed}
        - id: never-asked-wrong
          agent: claude
          prompt: tidy up
          grade:
            - {type: permission, contains: 'rm -rf', asked: false}
        ",
    );
    let run = test.args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    run.any_stderr();
    assert_eq!(trial(&run, "asked")["status"], "passed", "{:#}", trial(&run, "asked"));
    let reason = trial(&run, "asked")["graders"][0]["reason"].as_str().unwrap().to_owned();
    assert_eq!(
        reason,
        "a permission request for `Bash` holding `rm -rf` that was denied: `rm -rf build` (denied by default)"
    );
    assert_eq!(trial(&run, "claims-wrong")["status"], "failed");
    assert_eq!(trial(&run, "never-asked-wrong")["status"], "failed");
    assert!(trial(&run, "never-asked-wrong")["graders"][0]["reason"].as_str().unwrap().contains("rm -rf build"));

    // A command agent reports no permission requests: "never asked" is unknown, an error.
    let suite = "evalgate: 1\nsuite: t\nagents:\n  cli: {command: [echo, hi]}\ntasks:\n  - {id: t, agent: cli, prompt: x, grade: [{type: permission, contains: rm, asked: false}]}\n";
    let run = Test::new().write("evalgate.yaml", suite).args(&["run"]).run();
    run.any_stderr();
    assert_eq!(run.task("t")["status"], "error", "{}", run.task("t"));
    assert!(run.task("t").to_string().contains("only an ACP agent's session does"));
}

/// A confined ACP agent in a conversation keeps its sandbox and its relay across the turns:
/// each turn's call to its MCP server through the relay is made and recorded.
#[test]
fn a_confined_acp_conversation_reaches_its_mcp_server_on_every_turn() {
    let everything = crate::mcp::bin("mcp-server-everything");
    let test = acp_suite(
        &[("honest", "mcp")],
        "",
        "
        - id: echo
          agent: honest
          workspace: {template: tmpl, network: none}
          turns:
            - prompt: call echo
              grade: [{type: tool_called, tool: everything.echo, arguments: {message: hello}}]
            - prompt: call echo again
              grade: [{type: tool_called, tool: everything.echo, arguments: {message: hello}}]
          grade:
            - {type: tool_called, tool: everything.echo, min: 2}
        ",
    )
    .write("tmpl/notes.txt", "x\n");
    let suite = std::fs::read_to_string(test.path().join("evalgate.yaml")).unwrap();
    let suite = suite
        .replace("    timeout: 5s\n", "    timeout: 30s\n    mcp: [everything]\n")
        .replace("tasks:\n", &format!("mcp_servers:\n  everything: {{command: [{everything}, stdio]}}\ntasks:\n"));
    let run = test.write("evalgate.yaml", &suite).args(&["run"]).run();
    run.any_stderr();
    let trial = trial(&run, "echo");
    assert_eq!(trial["status"], "passed", "{trial:#}");
    assert_eq!(trial["turns"].as_array().unwrap().len(), 2, "{trial:#}");
    run.expect_code(0);
}
