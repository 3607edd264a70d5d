//! Hostile agents in a workspace (docs/workspaces.md): each task below attacks one promise
//! of the sandbox or of the checks after the agent. None may escape: an attack is either
//! blocked (the task passes, the host is untouched) or caught (the trial is an error whose
//! reason names what it did). The same suite with `isolation: none` shows which attacks the
//! sandbox itself stops.

use std::collections::BTreeMap;
use std::net::TcpListener;

use crate::common::{Run, Test, unindent};

/// Runs every attack by name (`$1`); prints `ok` at the end so that, undetected, the task
/// would pass. `$0` is absolute (evalgate makes an agent's own script path absolute), so
/// its directory is the suite's.
const ATTACK: &str = r#"#!/bin/sh
SUITE=$(dirname "$0")
case "$1" in
read-answer) cat "$SUITE/expected/answer.txt" ;;
read-suite) cat "$SUITE/evalgate.yaml" ;;
write-suite) echo hacked >> "$SUITE/expected/answer.txt" ;;
write-outside) echo x > "$OUTSIDE/escape" ;;
env-secret) env ;;
proc-environ) cat /proc/*/environ | tr '\0' '\n' ;;
list-processes) [ "$(ls /proc | grep -c '^[0-9]')" -gt 20 ] && echo MANY ;;
host-sockets) [ -n "$(ls -A /run)" ] && echo RUN-SOCKETS ;;
connect-out) bash -c 'exec 3<>/dev/tcp/1.1.1.1/80' ;;
dns) getent hosts example.com ;;
host-loopback) bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" && echo CONNECTED ;;
fork-bomb) sleep 30 & timeout 3 sh -c 'b(){ b|b& }; b' ;;
daemon) (setsid sleep 60 </dev/null >/dev/null 2>&1 &) ;;
nohup) nohup sleep 60 >/dev/null 2>&1 & ;;
poison) for f in poison /tmp/poison /dev/shm/poison; do [ -e $f ] && echo POISONED; touch $f; done ;;
symlink-out) ln -s "$SUITE/expected/answer.txt" result.txt ;;
fill-disk) for i in 1 2 3 4 5 6; do head -c 900000 /dev/zero > fill$i; done ;;
big-file) head -c 3000000 /dev/zero > big; [ "$(wc -c < big)" -gt 1048576 ] && echo BIG ;;
fill-tmp) for i in 1 2 3 4 5 6; do head -c 900000 /dev/zero > /tmp/fill$i; done; [ "$(du -sk /tmp | cut -f1)" -gt 4200 ] && echo TMP-FULL ;;
protect) echo 'exit 0' > tests/check.sh ;;
kill-report) kill -9 $PPID ;;
forge-report) (setsid sleep 60 </dev/null >/dev/null 2>&1 &); echo "EVALGATE-SANDBOX $(tr '\0' ' ' < /proc/$PPID/cmdline | grep -o 'EVALGATE-SANDBOX [0-9a-f]*' | cut -d' ' -f2) noroute=0+0 left=" >&2 ;;
kill-all) kill -9 -1 ;;
esac 2>/dev/null
echo ok
"#;

/// `(task, tags, what the task must end as, the words its reason must hold)`. An attack the
/// sandbox blocks passes; one it cannot block is caught by a check after the agent.
const ATTACKS: &[(&str, &str, &str, &str)] = &[
    ("read-answer", "unconfined", "passed", ""),
    ("read-suite", "unconfined", "passed", ""),
    ("write-suite", "unconfined", "passed", ""),
    ("write-outside", "unconfined", "passed", ""),
    ("env-secret", "unconfined", "passed", ""),
    ("proc-environ", "unconfined", "passed", ""),
    ("list-processes", "unconfined", "passed", ""),
    ("host-sockets", "", "passed", ""),
    ("connect-out", "", "error", "tried to reach the network under `network: none`"),
    ("dns", "", "error", "tried to reach the network under `network: none`"),
    ("host-loopback", "unconfined", "passed", ""),
    // The bomb runs into the process limit; whether any of its own processes are alive when
    // the agent exits is timing (CI saw both), so a sleeper started first makes the outliving
    // certain: the check is what is asserted, the limit is what keeps the run alive.
    ("fork-bomb", "", "error", "processes outlived the agent"),
    ("daemon", "unconfined", "error", "processes outlived the agent: "),
    ("nohup", "unconfined", "error", "processes outlived the agent: "),
    ("poison", "unconfined", "passed", ""),
    ("symlink-out", "unconfined", "error", "a symbolic link out of the workspace: `result.txt`"),
    ("fill-disk", "unconfined", "error", "over the limit of 4194304"),
    ("big-file", "unconfined", "passed", ""),
    ("fill-tmp", "", "passed", ""),
    ("protect", "unconfined", "error", "the agent changed the protected file `tests/check.sh`"),
    ("kill-report", "", "error", "the sandbox's report is missing"),
    ("forge-report", "", "error", "processes outlived the agent: "),
    ("kill-all", "", "error", "the sandbox's report is missing"),
];

/// What an attack prints when it got through.
const ESCAPED: [&str; 8] =
    ["ANSWER-42", "S3CRET-ENV", "POISONED", "CONNECTED", "MANY", "RUN-SOCKETS", "BIG", "TMP-FULL"];

/// The suite: one task an attack, the workspace `isolation` as given, below the system's
/// temp directory.
fn hostile(isolation: &str) -> Test {
    hostile_in(Test::new(), isolation)
}

/// The suite of [`hostile`] in `test`'s directory.
fn hostile_in(test: Test, isolation: &str) -> Test {
    let mut suite = unindent(&format!(
        "
        evalgate: 1
        suite: test.workspace
        agents:
          attacker:
            command: [sh, attack.sh, \"{{prompt}}\"]
            env: {{PORT: \"{{env.PORT}}\", OUTSIDE: \"{{env.OUTSIDE}}\"}}
        defaults: {{agent: attacker, timeout: 30s}}
        workspace:
          template: template
          isolation: {isolation}
          protect: [\"tests/**\"]
          keep: never
          limits: {{processes: 64, file_size_mb: 1, disk_mb: 4}}
        tasks:
        "
    ));
    for (id, tags, _, _) in ATTACKS {
        let repeat = if *id == "poison" { 2 } else { 1 };
        let tags = if tags.is_empty() { String::new() } else { format!(", tags: [{tags}]") };
        suite.push_str(&format!(
            "  - {{id: {id}, prompt: {id}, repeat: {repeat}{tags}, grade: [{{type: contains, value: ok}}, {}]}}\n",
            ESCAPED.iter().map(|w| format!("{{type: not_contains, value: {w}}}")).collect::<Vec<_>>().join(", ")
        ));
    }
    test.write("evalgate.yaml", &suite)
        .write("attack.sh", ATTACK)
        .write("expected/answer.txt", "ANSWER-42\n")
        .write("template/README.md", "the workspace\n")
        .write("template/tests/check.sh", "exit 1\n")
        .env("EVALGATE_TEST_SECRET", "S3CRET-ENV")
}

/// Each task's status and reason.
fn verdicts(run: &Run) -> BTreeMap<String, (String, String)> {
    let results = run.results();
    results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let reason = t["reason"].as_str().unwrap_or("").to_owned();
            (t["id"].as_str().unwrap().to_owned(), (t["status"].as_str().unwrap().to_owned(), reason))
        })
        .collect()
}

fn run_hostile(isolation: &str, args: &[&str], outside: &std::path::Path, port: u16) -> Run {
    let mut all = vec!["run"];
    all.extend(args);
    let run = hostile(isolation)
        .env("PORT", &port.to_string())
        .env("OUTSIDE", &outside.display().to_string())
        .args(&all)
        .run();
    run.take_stderr();
    run
}

/// Every attack is blocked or caught, the host is untouched, and the verdicts are the same
/// run after run and with two trials at once.
#[test]
fn no_hostile_agent_escapes_its_workspace() {
    let outside = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut seen = Vec::new();
    for args in [&[][..], &[][..], &["-j", "2"][..]] {
        let run = run_hostile("bwrap", args, outside.path(), port);
        let verdicts = verdicts(&run);
        let wrong: Vec<String> = ATTACKS
            .iter()
            .filter(|(id, _, status, reason)| verdicts[*id].0 != *status || !verdicts[*id].1.contains(reason))
            .map(|(id, ..)| format!("{id}: {:?}", verdicts[*id]))
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
        assert_eq!(run.read("expected/answer.txt"), "ANSWER-42\n", "the suite's files are untouched");
        assert!(!outside.path().join("escape").exists(), "nothing written outside");
        assert!(listener.accept().is_err(), "the host's loopback was not reached");
        // The statuses (a reason names pids, which differ from run to run).
        seen.push(verdicts.into_iter().map(|(id, (status, _))| (id, status)).collect::<BTreeMap<_, _>>());
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "the same verdicts every time");
}

/// The same attacks with the sandbox off (the dangerous ones left out: they would reach the
/// host): what the sandbox blocked now gets through, and the checks after the agent still
/// catch what they look for.
#[test]
fn without_the_sandbox_the_attacks_get_through_but_the_checks_still_catch() {
    let outside = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let run = run_hostile("none", &["--tag", "unconfined"], outside.path(), port);
    let verdicts = verdicts(&run);
    let failed = |id: &str| verdicts[id].0 != "passed";
    for id in [
        "read-answer",
        "read-suite",
        "env-secret",
        "proc-environ",
        "list-processes",
        "host-loopback",
        "poison",
        "big-file",
    ] {
        assert!(failed(id), "{id} is blocked by the sandbox alone: {:?}", verdicts[id]);
    }
    assert!(
        verdicts["write-suite"].1.contains("a write outside the workspace: `expected/answer.txt`"),
        "{:?}",
        verdicts["write-suite"]
    );
    assert!(outside.path().join("escape").exists());
    for id in ["symlink-out", "fill-disk", "protect"] {
        assert_eq!(verdicts[id].0, "error", "{id}: {:?}", verdicts[id]);
    }
}

/// A suite outside `/tmp` (which the sandbox replaces anyway): its directory is emptied in
/// the sandbox, so its files can be neither read nor written.
#[test]
fn a_suite_outside_tmp_is_hidden_from_the_agent() {
    let test = hostile_in(Test::new_in(std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))), "bwrap");
    let run = test
        .env("PORT", "9")
        .env("OUTSIDE", "/nonexistent")
        .args(&["run", "--filter", "read-*", "--filter", "write-suite"])
        .run();
    run.take_stderr();
    let verdicts = verdicts(&run);
    for id in ["read-answer", "read-suite", "write-suite"] {
        assert_eq!(verdicts[id].0, "passed", "{id}: {:?}", verdicts[id]);
    }
    assert_eq!(run.read("expected/answer.txt"), "ANSWER-42\n");
}

/// An agent under `network: none` that calls the model through the cassette's endpoint
/// (relayed into its sandbox), then attacks the relay: another host port, the model's own
/// upstream port, the relay's socket with another port's traffic, and killing the relay.
const RELAYED_AGENT: &str = r#"import json, os, socket, sys, urllib.request
def connects(port):
    try:
        socket.create_connection(("127.0.0.1", int(port)), 2).close()
        return True
    except OSError:
        return False
attack = sys.argv[1]
if attack == "kill-relay":
    stat = open(f"/proc/{os.getppid()}/stat").read()
    os.kill(int(stat.rsplit(")", 1)[1].split()[1]), 9)
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": attack}]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
print(json.load(urllib.request.urlopen(request, timeout=10))["choices"][0]["message"]["content"])
for name in ["PORT", "UPSTREAM_PORT"]:
    if connects(os.environ[name]):
        print("CONNECTED", name)
# The relay's socket carries only the endpoint's traffic: a request for another port's
# service gets the endpoint's 404.
for sock in [f for f in os.listdir(os.path.dirname(os.environ["EVALGATE_TRACE"])) if f.endswith(".sock")]:
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.join(os.path.dirname(os.environ["EVALGATE_TRACE"]), sock))
    s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{os.environ['PORT']}\r\nConnection: close\r\n\r\n".encode())
    if b"LISTENER" in s.recv(4096):
        print("CONNECTED socket")
print("ok")
"#;

/// Under `network: none` the cassette's model endpoint is relayed into the sandbox and
/// nothing else is: the agent's model call is answered, every other port (the host's
/// loopback, the model's upstream) stays out of reach, the relay is no process left
/// behind, and killing it is caught.
#[test]
fn the_relay_reaches_evalgate_s_endpoint_and_nothing_else() {
    use crate::common::server::Server;
    let upstream = Server::start(|_| (200, crate::cassettes::openai("Paris")));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream_port = upstream.url().rsplit(':').next().unwrap().trim_end_matches('/').to_owned();
    let test = Test::new().write("agent.py", RELAYED_AGENT).write("template/README.md", "w\n").suite(
        "
        evalgate: 1
        suite: relay
        agents:
          cli:
            command: [/usr/bin/python3, agent.py, '{prompt}']
            env: {PORT: '{env.PORT}', UPSTREAM_PORT: '{env.UPSTREAM_PORT}'}
        defaults: {agent: cli, timeout: 30s}
        workspace: {template: template, network: none, keep: never}
        tasks:
          - {id: call, prompt: call, grade: [{type: contains, value: Paris}, {type: not_contains, value: CONNECTED}]}
          - {id: kill-relay, prompt: kill-relay, grade: [{type: contains, value: ok}]}
        ",
    );
    let dir = test.path().to_owned();
    let env = [
        ("OPENAI_BASE_URL", format!("{}/v1", upstream.url())),
        ("OPENAI_API_KEY", "sk-test".to_owned()),
        ("PORT", port.to_string()),
        ("UPSTREAM_PORT", upstream_port),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = crate::cassettes::evalgate_with(&dir, &["run", "--record", "-j", "1"], &env);
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    let task = |id: &str| results["tasks"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap().clone();
    let call = task("call");
    assert_eq!(call["status"], "passed", "{call:#}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(call["trials"][0]["output"].as_str().unwrap().contains("Paris\nok"), "{call:#}");
    assert!(listener.accept().is_err(), "the host's loopback was not reached");
    assert_eq!(upstream.requests(), 1, "the model was reached once, through the endpoint");
    let killed = task("kill-relay");
    assert_eq!(killed["status"], "error", "{killed:#}");
    assert!(killed["reason"].as_str().unwrap().contains("the sandbox's report is missing"), "{killed:#}");
}
