//! No secret in any sink: an agent that echoes every secret the run uses on every channel
//! (stdout, stderr, its trace's tool arguments), a grader whose failure quotes one, an HTTP
//! step whose error names a URL with one, a cleanup step that prints them; then every file
//! evalgate wrote, its stdout and stderr, the step summary, the step outputs and every
//! PR-comment body are scanned for each value.

use std::path::Path;

use crate::common::server::closed_port;
use crate::github::{TOKEN, action_run_with, bodies, github};

const ENV_SECRET: &str = "s3cr3t-env-value-7f1e";
const GRADE_SECRET: &str = "expected-answer-9a8b7c";
const API_KEY: &str = "sk-test-judge-key-5d4c3b";
const HEADER_SECRET: &str = "Bearer literal-header-secret-42";
const CANARY: &str = "canary-literal-0xdeadbeef";
/// A multi-line secret: each line is a secret too.
const PEM: &str = "-----BEGIN TEST KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQ\n-----END TEST KEY-----";

/// Prints each secret it can reach to stdout and stderr and puts them in a tool call's
/// arguments in its trace.
const LEAKY_AGENT: &str = r#"#!/bin/sh
all="$EG_SECRET $SECRET $GH $OPENAI_API_KEY $EG_PEM canary-literal-0xdeadbeef"
echo "prompt: $1"
echo "everything: $all"
echo "to stderr: $all" >&2
printf '{"tool_calls": [{"name": "send", "arguments": {"body": "%s", "%s": 1}}]}' "$EG_SECRET $OPENAI_API_KEY" "$EG_SECRET" > "$EVALGATE_TRACE"
"#;

fn suite(port: u16) -> String {
    format!(
        r#"evalgate: 1
suite: secrets.demo
judge: {{provider: openai, model: gpt-test}}
agents:
  leaky:
    command: [./agent.sh, "{{prompt}}"]
    env: {{SECRET: "{{env.EG_SECRET}}", GH: "{{env.GITHUB_TOKEN}}", PEM_COPY: "{{env.EG_PEM}}"}}
tasks:
  - id: echo
    prompt: "say {{env.EG_SECRET}}"
    grade:
      - {{type: no_leak, canaries: ["{CANARY}"]}}
      - {{type: equals, value: "{{env.EG_SECRET}}"}}
    cleanup:
      - run: echo "cleanup saw $EG_SECRET {HEADER_SECRET}"
      - http: {{url: "http://127.0.0.1:{port}/hook/{{env.EG_SECRET}}", headers: {{Authorization: "{HEADER_SECRET}"}}}}
  - id: quote
    prompt: hello
    grade:
      - {{type: contains, value: "{{env.EG_GRADE}}"}}
"#
    )
}

/// Every file below `dir`, recursively, with its text.
pub(crate) fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            // report.html escapes `/`, quotes and `<>&`: a secret is looked for as the reader sees it too.
            if path.extension().is_some_and(|e| e == "html") {
                out.push((format!("{} (as read)", path.display()), crate::html::unescape(&text)));
            }
            out.push((path.display().to_string(), text));
        }
    }
    out
}

#[test]
fn no_secret_the_run_uses_reaches_any_output_file_log_or_comment() {
    let api = github(5, Vec::new());
    let port = closed_port();
    let run = action_run_with(
        &api,
        &[("agent.sh", LEAKY_AGENT), ("evalgate.yaml", &suite(port))],
        &[],
        &[("EG_SECRET", ENV_SECRET), ("EG_GRADE", GRADE_SECRET), ("OPENAI_API_KEY", API_KEY), ("EG_PEM", PEM)],
    );
    run.run.expect_messages("evalgate: commented on pull request #5\n");
    run.run.expect_code(1);

    let mut sinks: Vec<(String, String)> = files(&run.run.dir.join("evalgate-out"));
    assert!(sinks.len() >= 6, "results, summary, junit, markdown, html and events: {sinks:?}");
    // The runner reads `::add-mask::` lines and hides the values: the one place they are printed.
    let stdout: String =
        run.run.stdout.lines().filter(|l| !l.starts_with("::add-mask::")).collect::<Vec<_>>().join("\n");
    sinks.push(("stdout".into(), stdout));
    sinks.push(("stderr".into(), run.run.stderr.clone()));
    sinks.push(("step summary".into(), run.summary.clone()));
    sinks.push(("step outputs".into(), run.run.read("runner/output.txt")));
    let comments = [bodies(&api, "POST"), bodies(&api, "PATCH")].concat();
    assert_eq!(comments.len(), 1, "one comment was posted");
    sinks.push(("PR comment".into(), comments.join("\n")));

    let pem_lines: Vec<&str> = PEM.lines().collect();
    let secrets = [ENV_SECRET, GRADE_SECRET, API_KEY, HEADER_SECRET, CANARY, TOKEN, pem_lines[1]];
    let mut hits = Vec::new();
    for (sink, text) in &sinks {
        for secret in secrets {
            if text.contains(secret) {
                hits.push(format!("{secret} in {sink}"));
            }
        }
    }
    assert!(hits.is_empty(), "secrets in sinks: {hits:#?}");

    // The secrets were there to leak, and reports say where, by name.
    let results = run.run.read("evalgate-out/results.json");
    for placeholder in ["[secret:EG_SECRET]", "[secret:OPENAI_API_KEY]", "[secret:GITHUB_TOKEN]", "[canary #1]"] {
        assert!(results.contains(placeholder), "{placeholder} in results.json:\n{results}");
    }
    assert!(results.contains("[secret:EG_GRADE]"), "the failing grader's reason names the variable: {results}");
    assert!(results.contains("[secret:header Authorization]"), "{results}");
    assert!(results.contains("[secret:EG_PEM]"), "{results}");
    let markdown = run.run.read("evalgate-out/summary.md");
    assert!(markdown.contains("canary #1"), "the leak is reported, by number: {markdown}");
    // Each secret is masked for the runner too.
    for secret in [ENV_SECRET, GRADE_SECRET, API_KEY, HEADER_SECRET, CANARY, pem_lines[1]] {
        assert!(run.run.stdout.contains(&format!("::add-mask::{secret}")), "no mask for {secret}");
    }
}

/// A 53-character key, every piece of which is distinctive.
const KEY: &str = "Kq7vXw2Rt9LmZp4Ns8Hd3Jf6Gb1Yc5Vx0Qa2We7Ru4Ti9Op3As6D";

/// Every cut evalgate makes splits the key: the agent's output at 16 KiB, an erroring
/// agent's stderr at its last 2,000 characters and at the 1 MiB capture cap, a step's stdout
/// at 2,000 and a grader's reason at 120. No piece of the key longer than the redactor's
/// shortest partial (3 characters) may reach a sink.
#[test]
fn a_secret_split_by_any_cut_never_reaches_a_sink_in_part() {
    let cap = 1024 * 1024;
    let agent = format!(
        r#"#!/bin/sh
case "$1" in
  output) head -c {head} /dev/zero | tr '\0' x; printf '%s tail\n' "$KEY"; printf '%s\n' "$KEY" >&2; head -c 1990 /dev/zero | tr '\0' y >&2; exit 1 ;;
  cap) head -c {capped} /dev/zero | tr '\0' z >&2; printf '%s\n' "$KEY" >&2; exit 1 ;;
  reason) head -c 100 /dev/zero | tr '\0' r; printf '%s\n' "$KEY" ;;
esac
"#,
        head = 16 * 1024 - 20,
        capped = cap - 20,
    );
    let suite = r#"evalgate: 1
suite: cuts
agents:
  a: {command: [./agent.sh, "{prompt}"], env: {KEY: "{env.EG_KEY}"}}
tasks:
  - {id: output, prompt: output, grade: [{type: contains, value: never}]}
  - {id: cap, prompt: cap, grade: [{type: contains, value: never}]}
  - id: reason
    prompt: reason
    setup:
      - run: "head -c 1990 /dev/zero | tr '\\0' s; echo {env.EG_KEY}"
    grade: [{type: equals, value: other}]
"#;
    let run = crate::common::Test::new()
        .write("agent.sh", &agent)
        .write("evalgate.yaml", suite)
        .env("EG_KEY", KEY)
        .args(&["run", "evalgate.yaml"])
        .run();
    run.expect_code(1);
    let mut sinks = files(&run.dir.join("evalgate-out"));
    sinks.push(("stdout".into(), run.stdout.clone()));
    sinks.push(("stderr".into(), run.stderr.clone()));
    // Each cut did split the key: its placeholder is where the key was.
    let results = run.read("evalgate-out/results.json");
    assert!(results.matches("[secret:EG_KEY]").count() >= 4, "{}", &results[..results.len().min(3000)]);
    let pieces: Vec<&str> = (0..=KEY.len() - 4).map(|i| &KEY[i..i + 4]).collect();
    let mut hits = Vec::new();
    for (sink, text) in &sinks {
        if let Some(piece) = pieces.iter().find(|p| text.contains(**p)) {
            hits.push(format!("{piece} in {sink}"));
        }
    }
    assert!(hits.is_empty(), "pieces of the key in sinks: {hits:#?}");
}

/// The runner's channels are evalgate's: an agent does not inherit the runner's files (it
/// wrote a fake green summary), cannot read evalgate's environment from `/proc` (the
/// PR-write token is there), and a legacy `##[command]` it prints is not one when evalgate
/// relays it. Run as an unprivileged user, as on a runner (root reads any `/proc` file).
#[test]
fn an_agent_reaches_neither_the_runner_files_nor_evalgates_environment_nor_its_commands() {
    let agent = r#"#!/bin/sh
env | grep '^GITHUB_' | cut -d= -f1 > seen-env
cat /proc/$PPID/environ > seen-environ 2>&1
[ -n "$GITHUB_STEP_SUMMARY" ] && echo '## ✅ All gates passed' >> "$GITHUB_STEP_SUMMARY"
echo '##[add-mask]evalgate ##vso[task.setvariable variable=x]y ##[error]fake' >&2
exit 1
"#;
    let test = crate::common::Test::new()
        .write("agent.sh", agent)
        .write(
            "evalgate.yaml",
            &crate::common::suite(
                "",
                "
                - {id: t, prompt: x, grade: [{type: contains, value: x}]}
                ",
            ),
        )
        .write("runner/summary.md", "")
        .write("runner/output.txt", "")
        .write("runner/env", "");
    let dir = test.path().to_owned();
    let path = |name: &str| dir.join(name).display().to_string();
    // `/proc/self` belongs to the test's own user.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    let unprivileged: &[&str] = if root {
        use std::os::unix::fs::PermissionsExt;
        for entry in ["", "runner", "runner/summary.md", "runner/output.txt", "runner/env"] {
            std::fs::set_permissions(dir.join(entry), std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    } else {
        &[]
    };
    let run = test
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &path("runner/summary.md"))
        .env("GITHUB_OUTPUT", &path("runner/output.txt"))
        .env("GITHUB_ENV", &path("runner/env"))
        .env("GITHUB_TOKEN", "ghs_private-token-8c2f")
        .args(&["run"])
        .run_via(unprivileged);
    run.expect_code(1);
    assert_eq!(run.read("seen-env"), "GITHUB_ACTIONS\n", "only the harmless flag is inherited");
    let environ = run.read("seen-environ");
    assert!(!environ.contains("ghs_private") && !environ.contains("GITHUB_ACTIONS"), "{environ}");
    assert!(!run.read("runner/summary.md").contains("All gates passed"));
    let log = format!("{}{}", run.stdout, run.stderr);
    assert!(log.contains("## [add-mask]evalgate"), "the line was relayed: {log}");
    assert!(!log.contains("##[") && !log.contains("##vso["), "{log}");
}
