//! evalgate as a GitHub Action: the runner files and workflow commands under
//! `GITHUB_ACTIONS=true`, the sticky PR comment against a local mock of GitHub's REST API
//! (127.0.0.1; GitHub itself is never contacted), the action's scripts and action.yml, and
//! `evalgate init`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use std::sync::Mutex;

use crate::common::server::{Request, Server};
use crate::common::{ECHO_AGENT, Run, Test, numbered, suite};
use serde_json::{Value, json};

/// Task lists for `suite`.
const PASSING: &str = "
    - id: a
      prompt: hello
      grade: [{type: contains, value: hello}]
    ";
const FAILING: &str = "
    - id: a
      prompt: x
      grade: [{type: contains, value: y}]
    ";
pub(crate) const TOKEN: &str = "ghs_test_token_never_printed";

/// Parses `$GITHUB_OUTPUT` as the runner does; panics on a line outside a block.
pub(crate) fn outputs(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            out.insert(name.to_owned(), value.join("\n"));
        } else {
            let (name, value) = line.split_once('=').unwrap_or_else(|| panic!("not an output line: {line:?}"));
            out.insert(name.to_owned(), value.to_owned());
        }
    }
    out
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---------------------------------------------------------------- under GitHub Actions

#[test]
fn under_github_actions_the_run_appends_the_summary_writes_outputs_annotates_and_masks() {
    let tasks = "
        - id: good
          prompt: hello {env.EVALGATE_TEST_GREETING}
          grade: [{type: contains, value: hello}]
        - id: bad
          prompt: 'a: b, 50%'
          grade: [{type: contains, value: zzz}]
        ";
    let test = Test::new()
        .write("evals/agent.sh", ECHO_AGENT)
        .write("evals/evalgate.yaml", &suite("env: {required_env: [EVALGATE_TEST_SECRET]}", tasks))
        .write("runner/summary.md", "previous step's summary\n")
        .write("runner/output.txt", "earlier=value\n")
        .write("runner/event.json", r#"{"pull_request": {"number": 5}}"#);
    let dir = test.path().to_owned();
    let run = test
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", path_str(&dir.join("runner/summary.md")))
        .env("GITHUB_OUTPUT", path_str(&dir.join("runner/output.txt")))
        .env("GITHUB_EVENT_PATH", path_str(&dir.join("runner/event.json")))
        .env("GITHUB_WORKSPACE", path_str(&dir))
        .env("EVALGATE_TEST_SECRET", "hunter2-very-secret")
        .env("EVALGATE_TEST_GREETING", "greeting-token-42")
        .args(&["run", "evals/evalgate.yaml"])
        .run();
    run.expect_code(1);

    // Masks come first, before anything could print a value.
    let first_two: Vec<&str> = run.stdout.lines().take(2).collect();
    assert_eq!(first_two, ["::add-mask::greeting-token-42", "::add-mask::hunter2-very-secret"], "{}", run.stdout);
    assert!(run.stderr_lacks("hunter2"), "{}", run.stderr);
    assert_eq!(run.stdout.matches("hunter2-very-secret").count(), 1, "{}", run.stdout);

    let group = run.stdout.find("::group::evalgate: tasks of test.evals.demo").expect("a group");
    let end = run.stdout.find("::endgroup::").expect("the group ends");
    let annotation =
        run.stdout.lines().find(|l| l.starts_with("::error file=evals/evalgate.yaml,line=")).expect("an annotation");
    assert!(group < end && end < run.stdout.find(annotation).unwrap());
    assert_eq!(
        annotation,
        "::error file=evals/evalgate.yaml,line=10,title=bad (failed)::`contains` failed: output does not contain \"zzz\""
    );
    // The task, and the gate check it failed.
    assert_eq!(run.stdout.lines().filter(|l| l.starts_with("::error ")).count(), 2);

    let summary = run.read("runner/summary.md");
    assert!(summary.starts_with("previous step's summary\n## ❌ evalgate: `test.evals.demo` failed"), "{summary}");
    assert!(summary.contains("| `bad` | ❌ failed |"), "{summary}");
    let outputs = outputs(&run.read("runner/output.txt"));
    assert_eq!(outputs["earlier"], "value", "appended, not replaced");
    assert_eq!(outputs["passed"], "false");
    assert_eq!(outputs["outcome"], "failed");
    assert_eq!(outputs["score"], "0.5000");
    assert_eq!(outputs["pass-rate"], "0.5000");
    assert_eq!(outputs["cost-usd"], "", "the echo agent reports no cost");
    assert_eq!(outputs["results-path"], "evalgate-out/results.json");
    assert_eq!(outputs["junit-path"], "evalgate-out/junit.xml");
    assert_eq!(outputs["summary-path"], "evalgate-out/summary.md");
    assert_eq!(outputs["html-path"], "evalgate-out/report.html");
    assert_eq!(outputs.len(), 10);
}

/// The log as GitHub shows it (stdout and stderr in one stream): the task lines fold in the
/// group, and the gate table and verdict come after it ends, so they stay in view.
#[test]
fn the_log_group_ends_before_the_gate_table_and_verdict() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", FAILING))
        .env("GITHUB_ACTIONS", "true")
        .args(&["run"])
        .run_via(&["sh", "-c", "exec \"$0\" \"$@\" 2>&1"]);
    run.expect_code(1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let at = |prefix: &str| {
        lines.iter().position(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix:?} in\n{}", run.stdout))
    };
    let (group, task, end) = (at("::group::evalgate: tasks of"), at("FAIL  a "), at("::endgroup::"));
    assert!(group < task && task < end, "{}", run.stdout);
    assert!(end < at("  FAIL failing tasks"), "the gate table is folded away:\n{}", run.stdout);
    assert!(end < at("FAILED test.evals.demo"), "the verdict is folded away:\n{}", run.stdout);
}

/// Each failing gate check of `run`'s results.json, with the one annotation it has.
fn annotated_checks(run: &Run) -> Vec<(String, String)> {
    let results = run.results();
    let failed: Vec<String> = results["verdict"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false && c.get("checked") != Some(&Value::Bool(false)))
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!failed.is_empty(), "the run failed on a check:\n{}", run.stdout);
    let errors: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("::error ")).collect();
    failed
        .into_iter()
        .map(|name| {
            let title = format!("title=evalgate%3A gate check `{name}` failed::");
            let on: Vec<&&str> = errors.iter().filter(|l| l.contains(&title)).collect();
            assert_eq!(on.len(), 1, "one annotation for check `{name}`:\n{}", run.stdout);
            (name, (*on[0]).to_owned())
        })
        .collect()
}

/// A run that fails on a check no task explains (a server's lint, a variant's gate) still
/// shows the pull request why: every failing check is annotated, on the suite file.
#[test]
fn every_failing_gate_check_is_annotated_whatever_it_checks() {
    let liar = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/lying_server.py");
    let lint = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  shop: {{command: [python3, '{}'], env: {{LINT: '1'}}, protocol: 2025-11-25, lint: {{invalid_input: true}}}}\n\
         tasks:\n  - id: plain\n    level: execution\n    call: {{server: shop, tool: plain}}\n    grade: [{{type: json, path: x, equals: y}}]\n",
        liar.display()
    );
    let run = Test::new().write("evalgate.yaml", &lint).args(&["run", "--github"]).run();
    run.expect_code(1);
    assert_eq!(run.task("plain")["status"], "passed", "no task fails: only the lint does");
    let checks = annotated_checks(&run);
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert!(
        checks[0].1.starts_with("::error file=evalgate.yaml,title=evalgate%3A gate check `tools/list lint of `shop`` failed::tools/list lint of `shop`: "),
        "{}",
        checks[0].1
    );

    // A variant's gate: an arm that passes fewer tasks than the control by more than the margin.
    let tasks: String = (0..12)
        .map(|i| format!("  - {{id: t{i}, prompt: '{i}', grade: [{{type: contains, value: '{i}'}}]}}\n"))
        .collect();
    let variants = format!(
        "evalgate: 1\nsuite: v\nagents:\n  sh: {{command: [sh, -c, 'if [ \"$1\" -lt \"$P\" ]; then echo \"$1\"; fi', sh, '{{prompt}}'], env: {{P: '99'}}}}\n\
         defaults: {{agent: sh}}\nvariants:\n  control: base\n  arms:\n    base: {{}}\n    worse: {{env: {{P: '2'}}, gate: {{not_worse_than: control, margin: 0.05}}}}\n\
         thresholds: {{pass_score: 0}}\ntasks:\n{tasks}"
    );
    let run = Test::new().write("evalgate.yaml", &variants).args(&["run", "--github"]).run();
    run.expect_code(1);
    let checks = annotated_checks(&run);
    let names: Vec<&str> = checks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["variant worse vs base"], "{}", run.stdout);
    // The gate's annotation comes before the tasks' (the runner shows the first 10).
    let errors: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(errors[0], checks[0].1, "{errors:?}");
}

#[test]
fn annotations_are_capped_at_ten_then_one_notice_counts_the_rest() {
    let tasks: String = numbered(
        0..12,
        "
            - id: t<i>
              prompt: x
              grade: [{type: contains, value: y}]
            ",
    );
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", &tasks))
        .args(&["run", "--github"])
        .run();
    run.expect_code(1);
    let errors: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(errors.len(), 10);
    assert_eq!(
        errors[0],
        "::error file=evalgate.yaml,title=evalgate%3A gate check `failing tasks` failed::failing tasks: 12 (budget: 0)"
    );
    assert!(errors[1].starts_with("::error file=evalgate.yaml,line=7,title=t0 (failed)::"), "{}", errors[1]);
    assert!(
        run.stdout.clone()
            .contains("::notice::3 more problems of test.evals.demo are not annotated (the runner shows 10 a step); see the step summary"),
        "{}",
        run.stdout.clone()
    );

    let off = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", &tasks))
        .env("GITHUB_ACTIONS", "true")
        .args(&["run", "--no-github"])
        .run();
    off.expect_code(1);
    assert!(!off.stdout.contains("::"), "{}", off.stdout);
}

#[test]
fn several_suites_share_one_set_of_outputs_that_is_never_greener_than_one_of_them() {
    let many_failing: String = numbered(
        0..12,
        "
            - id: t<i>
              prompt: x
              grade: [{type: contains, value: y}]
            ",
    );
    let test = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("a.yaml", &suite("", PASSING).replace("test.evals.demo", "test.evals.a"))
        .write("b.yaml", &suite("", &many_failing).replace("test.evals.demo", "test.evals.b"))
        .write("c.yaml", &suite("", FAILING).replace("test.evals.demo", "test.evals.c"))
        .write("output.txt", "");
    let output = test.path().join("output.txt");
    let summary = test.path().join("summary.md");
    let run = test
        .env("GITHUB_OUTPUT", path_str(&output))
        .env("GITHUB_STEP_SUMMARY", path_str(&summary))
        .args(&["run", "--github", "a.yaml", "b.yaml", "c.yaml", "--out", "out"])
        .run();
    run.expect_code(1);
    let outputs = outputs(&run.read("output.txt"));
    assert_eq!(outputs["passed"], "false");
    assert_eq!(outputs["score"], "0.0000");
    assert_eq!(
        outputs["results-path"],
        "out/test.evals.a/results.json\nout/test.evals.b/results.json\nout/test.evals.c/results.json"
    );
    let summary = run.read("summary.md");
    assert!(summary.contains("## ✅ evalgate: `test.evals.a` passed"), "{summary}");
    assert!(summary.contains("## ❌ evalgate: `test.evals.b` failed"), "{summary}");
    assert!(summary.contains("## ❌ evalgate: `test.evals.c` failed"), "{summary}");
    // The runner shows 10 error annotations a step, whatever the number of suites.
    assert_eq!(run.stdout.lines().filter(|l| l.starts_with("::error ")).count(), 10);
    // Each suite's failing check and its tasks: 13 of b's, 2 of c's.
    assert!(run.stdout.contains("::notice::3 more problems of test.evals.b are not annotated"));
    assert!(run.stdout.contains("::notice::2 more problems of test.evals.c are not annotated"));
}

#[test]
fn several_sharded_suites_exit_0_and_never_read_passed() {
    let test = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("a.yaml", &suite("", PASSING).replace("test.evals.demo", "test.evals.a"))
        .write(
            "b.yaml",
            &suite("", &PASSING.repeat(2).replacen("id: a", "id: b", 1)).replace("test.evals.demo", "test.evals.b"),
        )
        .write("output.txt", "");
    let output = test.path().join("output.txt");
    // Shard 2 of 2 has no task of `a` and one of `b`: both suites defer to the merge.
    let run = test
        .env("GITHUB_OUTPUT", path_str(&output))
        .args(&["run", "--github", "a.yaml", "b.yaml", "--shard", "2/2"])
        .run();
    run.expect_messages(
        r#"
            note: shard 2 of 2 of test.evals.a has no task
              shard 2 of 2: the gate is decided on the merged results (`evalgate merge`, then `evalgate report --gate`)
              shard 2 of 2: the gate is decided on the merged results (`evalgate merge`, then `evalgate report --gate`)
        "#,
    );
    run.expect_code(0);
    let outputs = outputs(&run.read("output.txt"));
    assert_eq!((outputs["passed"].as_str(), outputs["outcome"].as_str()), ("false", "deferred\ndeferred"));
}

#[test]
fn the_step_summary_stays_under_one_mebibyte_with_the_verdict_kept() {
    let tasks: String = (0..40)
        .map(|i| {
            format!("  - id: t{i}\n    prompt: x\n    grade: [{{type: contains, value: \"{}\"}}]\n", "é".repeat(200))
        })
        .collect();
    // An earlier step of the job left the file nearly full.
    let earlier = "x".repeat(1_000_000 - 6_000);
    let test = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", &tasks))
        .write("summary.md", &earlier);
    let summary = test.path().join("summary.md");
    let run = test.env("GITHUB_STEP_SUMMARY", path_str(&summary)).args(&["run", "--github"]).run();
    run.expect_code(1);
    let written = std::fs::read(&summary).unwrap();
    assert!(written.len() <= 1_000_000, "{} bytes", written.len());
    let ours = String::from_utf8(written[earlier.len()..].to_vec()).unwrap();
    assert!(ours.starts_with("## ❌ evalgate: `test.evals.demo` failed"), "{ours}");
    assert!(ours.contains("more failing tasks: see `results.json`."), "task rows were cut first: {ours}");
}

// ---------------------------------------------------------------- the sticky PR comment

const COMMENTS: &str = "/repos/acme/bot/issues/5/comments";

/// The login GitHub gives the token: comments it writes are its own.
const BOT: &str = "github-actions[bot]";

/// A comment `BOT` wrote.
fn ours(id: u64, body: &str) -> Value {
    json!({"id": id, "body": body, "user": {"login": BOT}})
}

/// GitHub's API for the comments on one pull request of acme/bot (its head at `HEAD_SHA`),
/// in memory: lists them a page at a time, creates one as `BOT` (its id one more than the
/// largest), updates one by id, says who the token is (GraphQL's `viewer`) and where the
/// pull request's head is; anything else is GitHub's 404. The server keeps every request
/// it received.
pub(crate) fn github(pr: u64, comments: Vec<Value>) -> Server {
    let list = format!("/repos/acme/bot/issues/{pr}/comments");
    let pull = format!("/repos/acme/bot/pulls/{pr}");
    let comments = Mutex::new(comments);
    Server::start(move |r| {
        let mut comments = comments.lock().unwrap();
        let body = || serde_json::from_str::<Value>(&r.body).unwrap()["body"].clone();
        let id = r.path.strip_prefix("/repos/acme/bot/issues/comments/").and_then(|id| id.parse::<u64>().ok());
        let edited = id.and_then(|id| comments.iter().position(|c| c["id"] == id));
        match (r.method.as_str(), edited) {
            ("POST", _) if r.path == "/graphql" => (200, json!({"data": {"viewer": {"login": BOT}}}).to_string()),
            ("GET", _) if r.path == pull => (200, json!({"number": pr, "head": {"sha": HEAD_SHA}}).to_string()),
            ("GET", _) if r.path == list => {
                let number = |name, default| r.query_param(name).map_or(default, |n| n.parse().unwrap());
                let (per_page, page) = (number("per_page", 30), number("page", 1));
                let page: Vec<&Value> = comments.iter().skip(per_page * (page - 1)).take(per_page).collect();
                (200, json!(page).to_string())
            }
            ("POST", _) if r.path == list => {
                let id = comments.iter().filter_map(|c| c["id"].as_u64()).max().unwrap_or(0) + 1;
                comments.push(json!({"id": id, "body": body(), "user": {"login": BOT}}));
                (201, json!({"id": id}).to_string())
            }
            ("PATCH", Some(i)) => {
                comments[i]["body"] = body();
                (200, json!({"id": comments[i]["id"]}).to_string())
            }
            _ => (404, json!({"message": "Not Found"}).to_string()),
        }
    })
}

/// `METHOD /path?query` of every request the API received, in order.
fn calls(api: &Server) -> Vec<String> {
    let call = |r: &Request| match r.query.as_str() {
        "" => format!("{} {}", r.method, r.path),
        query => format!("{} {}?{query}", r.method, r.path),
    };
    api.received().iter().map(call).collect()
}

/// The comment bodies the API received with this method, in order.
pub(crate) fn bodies(api: &Server, verb: &str) -> Vec<String> {
    let body = |r: &Request| serde_json::from_str::<Value>(&r.body).unwrap()["body"].as_str().unwrap().to_owned();
    api.received().iter().filter(|r| r.method == verb && r.path != "/graphql").map(body).collect()
}

/// Runs a suite with `--comment`, as in a pull_request workflow, against the mock API.
#[track_caller]
fn run_with_comment(api: &Server, tasks: &str) -> Run {
    let test = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", tasks))
        .write("event.json", r#"{"pull_request": {"number": 5}}"#);
    let event = test.path().join("event.json");
    test.env("GITHUB_API_URL", &api.url())
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_EVENT_PATH", path_str(&event))
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_RUN_ID", "42")
        .args(&["run", "--comment"])
        .run()
}

fn assert_token_not_printed(run: &Run) {
    assert!(!run.stdout.contains(TOKEN) && run.stderr_lacks(TOKEN), "{}\n{}", run.stdout, run.stderr);
}

#[test]
fn the_first_run_creates_the_comment_and_the_second_updates_the_same_one() {
    let api = github(5, vec![json!({"id": 1, "body": "LGTM"})]);
    let first = run_with_comment(&api, PASSING);
    first.expect_code(0);
    assert!(first.stderr_has("evalgate: commented on pull request #5"), "{}", first.stderr);

    // GitHub now lists the comment the first run created.
    let second = run_with_comment(&api, PASSING);
    second.expect_code(0);
    assert!(second.stderr_has("evalgate: updated comment 2 on pull request #5"), "{}", second.stderr);

    let (list, create) = (format!("GET {COMMENTS}?per_page=100&page=1"), format!("POST {COMMENTS}"));
    let expected = [&*list, &create, &list, "POST /graphql", "PATCH /repos/acme/bot/issues/comments/2"];
    assert_eq!(calls(&api), expected, "exactly one POST, then who the token is, then a PATCH of that comment");
    let bearer = format!("Bearer {TOKEN}");
    assert!(api.received().iter().all(|r| r.header("authorization") == Some(&bearer)), "every call authorized");
    assert!(bodies(&api, "POST")[0].starts_with("<!-- evalgate:test.evals.demo -->\n"));
    let body = &bodies(&api, "PATCH")[0];
    assert!(body.starts_with("<!-- evalgate:test.evals.demo -->\n## ✅ evalgate: `test.evals.demo` passed"), "{body}");
    assert!(body.contains("### Gate"), "{body}");
    assert!(body.ends_with("[Full results of this run](https://github.com/acme/bot/actions/runs/42)"), "{body}");
    assert_token_not_printed(&second);
}

#[test]
fn the_marker_is_found_on_the_second_page_of_comments() {
    let mut comments: Vec<Value> = (1..=100).map(|i| json!({"id": i, "body": format!("comment {i}")})).collect();
    comments.push(json!({"id": 500, "body": "chatter"}));
    comments.push(ours(777, "<!-- evalgate:test.evals.demo -->\nold"));
    let api = github(5, comments);
    let run = run_with_comment(&api, PASSING);
    run.expect_messages("evalgate: updated comment 777 on pull request #5\n");
    run.expect_code(0);
    let expected = [
        format!("GET {COMMENTS}?per_page=100&page=1"),
        format!("GET {COMMENTS}?per_page=100&page=2"),
        "POST /graphql".to_owned(),
        "PATCH /repos/acme/bot/issues/comments/777".to_owned(),
    ];
    assert_eq!(calls(&api), expected, "each page once, never a second comment");
}

#[test]
fn a_forbidden_token_is_a_warning_and_the_verdict_stands() {
    let api = Server::start(|_| (403, json!({"message": "Resource not accessible by integration"}).to_string()));
    let passing = run_with_comment(&api, PASSING);
    passing.expect_code(0);
    assert!(
        passing.stdout.contains(
            "::warning title=evalgate::GitHub refused the comment (HTTP 403): Resource not accessible by integration"
        ),
        "{}",
        passing.stdout
    );
    assert_token_not_printed(&passing);
    let failing = run_with_comment(&api, FAILING);
    failing.expect_code(1);
    assert!(failing.stdout.contains("::warning title=evalgate::GitHub refused the comment (HTTP 403)"));
    let list = format!("GET {COMMENTS}?per_page=100&page=1");
    assert_eq!(calls(&api), [list.clone(), list], "a refusal ends the comment");
}

#[test]
fn a_long_body_is_cut_under_the_limit_with_the_verdict_kept() {
    let api = github(5, Vec::new());
    // 700 failing rows of about 150 characters: over 100,000 characters uncut.
    let tasks: String = (0..700)
        .map(|i| format!("  - id: task-{i}-with-a-long-name-to-fill-the-comment-body\n    prompt: x\n    grade: [{{type: contains, value: \"{}\"}}]\n", "y".repeat(60)))
        .collect();
    let run = run_with_comment(&api, &tasks);
    run.expect_messages("evalgate: commented on pull request #5\n");
    run.expect_code(1);
    assert_eq!(calls(&api), [format!("GET {COMMENTS}?per_page=100&page=1"), format!("POST {COMMENTS}")]);
    let body = &bodies(&api, "POST")[0];
    assert!(body.chars().count() <= 65_536, "{} characters", body.chars().count());
    assert!(body.starts_with("<!-- evalgate:test.evals.demo -->\n## ❌ evalgate: `test.evals.demo` failed"));
    assert!(body.contains("more failing tasks: see `results.json`."));
    assert!(body.ends_with("[Full results of this run](https://github.com/acme/bot/actions/runs/42)"));
}

#[test]
fn a_comment_someone_else_wrote_with_the_marker_is_left_alone_and_ours_is_created() {
    let forged = "<!-- evalgate:test.evals.demo -->\n## ✅ evalgate: `test.evals.demo` passed";
    let api = github(5, vec![json!({"id": 3, "body": forged, "user": {"login": "mallory"}})]);
    let run = run_with_comment(&api, FAILING);
    run.expect_code(1);
    assert!(run.stderr_has("evalgate: commented on pull request #5"), "{}", run.stderr);
    let list = format!("GET {COMMENTS}?per_page=100&page=1");
    assert_eq!(
        calls(&api),
        [list, "POST /graphql".to_owned(), format!("POST {COMMENTS}")],
        "mallory's is never patched"
    );
    assert!(bodies(&api, "POST")[0].starts_with("<!-- evalgate:test.evals.demo -->\n## ❌ evalgate"));
}

/// A saved results file of a failing run, and `evalgate comment results.json ARGS` on it in
/// a `workflow_run` job (the fork-safe flow) whose event says the run tested `tested`.
#[track_caller]
fn comment_from_workflow_run(api: &Server, edit: impl FnOnce(&mut Value), tested: &str, args: &[&str]) -> Run {
    let saved =
        Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", FAILING)).args(&["run"]).run();
    saved.expect_code(1);
    let mut results: Value = serde_json::from_str(&saved.read("evalgate-out/results.json")).unwrap();
    edit(&mut results);
    // GitHub leaves a fork's `pull_requests` empty: the number comes with the artifact.
    let event = json!({"workflow_run": {"id": 1, "head_sha": tested, "pull_requests": []}});
    let test = Test::new().write("results.json", &results.to_string()).write("event.json", &event.to_string());
    let event = test.path().join("event.json");
    test.env("GITHUB_API_URL", &api.url())
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_EVENT_PATH", path_str(&event))
        .env("GITHUB_TOKEN", TOKEN)
        .args(&[&["comment", "results.json"], args].concat())
        .run()
}

#[test]
fn the_comment_subcommand_posts_a_saved_results_file_and_never_gates() {
    let api = github(8, Vec::new());
    let run = comment_from_workflow_run(&api, |_| {}, HEAD_SHA, &["--pr", "8"]);
    run.expect_messages("evalgate: commented on pull request #8\n");
    run.expect_code(0);
    let comments = "/repos/acme/bot/issues/8/comments";
    let expected = [
        "GET /repos/acme/bot/pulls/8".to_owned(),
        format!("GET {comments}?per_page=100&page=1"),
        format!("POST {comments}"),
    ];
    assert_eq!(calls(&api), expected);
    assert!(bodies(&api, "POST")[0].starts_with("<!-- evalgate:test.evals.demo -->\n## ❌ evalgate"));
}

/// `comment --dry-run` prints the body `comment` posts, byte for byte, redacted as the posted
/// one is, and needs no token: GitHub is never asked.
#[test]
fn comment_dry_run_prints_the_exact_body_that_is_posted_without_github() {
    // The token sits in the results (an agent echoed it): neither body may show it.
    let leak = |r: &mut Value| r["tasks"][0]["reason"] = json!(format!("echoed {TOKEN}"));
    let api = github(8, Vec::new());
    let posted = comment_from_workflow_run(&api, leak, HEAD_SHA, &["--pr", "8"]);
    posted.expect_messages("evalgate: commented on pull request #8\n");
    posted.expect_code(0);
    let body = bodies(&api, "POST").pop().expect("a comment posted");
    assert!(body.contains(r"echoed \[secret:GITHUB\_TOKEN\]"), "{body}");

    let untouched = Server::start(|_| (500, String::new()));
    let dry_run = |results: &str, args: &[&str], token: Option<&str>| {
        let event = json!({"workflow_run": {"id": 1, "head_sha": HEAD_SHA, "pull_requests": []}});
        let test = Test::new().write("results.json", results).write("event.json", &event.to_string());
        let event = test.path().join("event.json");
        let test = test
            .env("GITHUB_API_URL", &untouched.url())
            .env("GITHUB_REPOSITORY", "acme/bot")
            .env("GITHUB_EVENT_PATH", path_str(&event))
            .args(&[&["comment", "results.json"], args].concat());
        let run = match token {
            Some(token) => test.env("GITHUB_TOKEN", token).run(),
            None => test.run(),
        };
        run.expect_code(0);
        assert_eq!(run.stderr, "", "{args:?}");
        assert_token_not_printed(&run);
        run.stdout.clone()
    };
    let results = posted.read("results.json");
    assert_eq!(dry_run(&results, &["--dry-run"], Some(TOKEN)), format!("{body}\n"));
    assert_eq!(dry_run(&results, &["--print", "--pr", "8"], Some(TOKEN)), format!("{body}\n"));
    let without_token = dry_run(&results.replace(TOKEN, "a-value"), &["--dry-run"], None);
    assert_eq!(without_token, format!("{body}\n").replace(r"\[secret:GITHUB\_TOKEN\]", r"a-value"));
    assert_eq!(untouched.requests(), 0, "no request to GitHub");
}

/// Under GitHub Actions the log reads a `::command` at a line's start: a results file whose
/// task id puts one there does not get it run by `comment --dry-run`. Elsewhere the line is
/// made inert as every line evalgate prints (`redact::stream_line`).
#[test]
fn comment_dry_run_under_github_actions_stops_commands_around_the_body() {
    let saved =
        Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", FAILING)).args(&["run"]).run();
    let mut results = saved.results();
    // An output's lines are kept (in a `<pre>`).
    results["tasks"][0]["trials"][0]["output"] = json!("a\n::error::forged");
    let plain = Test::new().write("results.json", &results.to_string()).args(&["comment", "results.json", "--dry-run"]);
    let shown = plain.run().stdout.clone();
    assert!(!shown.lines().any(|l| l.trim_start().starts_with("::")), "a command line:\n{shown}");
    // The body as posted holds the line as the results do.
    let body = shown.replace(": :error::forged", "::error::forged");
    assert!(body.lines().any(|l| l.starts_with("::error::forged")), "the body holds a command line:\n{body}");

    let run = Test::new()
        .write("results.json", &results.to_string())
        .env("GITHUB_ACTIONS", "true")
        .args(&["comment", "results.json", "--dry-run"])
        .run();
    run.expect_code(0);
    let (first, rest) = run.stdout.split_once('\n').unwrap();
    let token =
        first.strip_prefix("::stop-commands::").unwrap_or_else(|| panic!("commands not stopped:\n{}", run.stdout));
    assert!(token.len() >= 32 && !body.contains(token), "{token}");
    assert_eq!(rest, format!("{body}::{token}::\n"));
}

/// Text a results file holds — a task id, its reason and output, a judge's advisory reason —
/// with blank lines and Markdown in it renders as text in the PR comment and summary.md: no
/// heading, link or `<details>` end more than the same results with plain text make
/// (GitHub's renderer, as comrak configured as GitHub is).
#[test]
fn hostile_text_in_results_renders_no_markdown_in_the_comment_or_the_summary() {
    const HOSTILE: &str = "x\n\n## ✅ All gates passed\n\n[ok](https://t.example) </details></summary>\n\n# h";
    let saved =
        Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", FAILING)).args(&["run"]).run();
    let rendered = |text: &str| {
        let mut results = saved.results();
        let task = &mut results["tasks"][0];
        task["id"] = json!(format!("id {text}"));
        task["reason"] = json!(format!("reason {text}"));
        task["trials"][0]["output"] = json!(format!("output {text}"));
        let identity = json!({"provider": "openai", "model": "m", "temperature": 0.0, "prompt_sha256": "0"});
        results["judges"] = json!({"judge": {"identity": identity, "advisory": format!("why {text}")}});
        let test = Test::new().write("results.json", &results.to_string());
        let dir = test.path().to_owned();
        let body = test.args(&["comment", "results.json", "--dry-run"]).run();
        body.expect_code(0);
        let report = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
            .current_dir(&dir)
            .args(["report", "results.json", "--out", "out"])
            .output()
            .unwrap();
        assert_eq!(report.status.code(), Some(0), "{}", String::from_utf8_lossy(&report.stderr));
        let summary = std::fs::read_to_string(dir.join("out/summary.md")).unwrap();
        let mut options = comrak::Options::default();
        options.extension.table = true;
        options.extension.autolink = true;
        options.extension.strikethrough = true;
        options.extension.tagfilter = true;
        options.render.r#unsafe = true;
        [body.stdout.clone(), summary].map(|md| (comrak::markdown_to_html(&md, &options), md))
    };
    let plain = rendered("plain words");
    let hostile = rendered(HOSTILE);
    for ((plain, _), (hostile, md)) in plain.iter().zip(&hostile) {
        for tag in ["<h1", "<h2", "<h3", "<a ", "</details>", "</summary>"] {
            let (want, got) = (plain.matches(tag).count(), hostile.matches(tag).count());
            assert_eq!(got, want, "{tag} in:\n{hostile}\n\nfrom:\n{md}");
        }
        assert!(hostile.contains("All gates passed"), "the text is still shown: {hostile}");
    }
}

#[test]
fn a_fork_artifact_naming_another_pull_request_is_refused_and_nothing_is_posted() {
    // The fork's run tested its own commit; its artifact names pull request 8 (at HEAD_SHA),
    // and its results claim HEAD_SHA too: the event is GitHub's word, the results are not.
    let api = github(8, vec![ours(2, "<!-- evalgate:test.evals.demo -->\n## ❌ evalgate: failed")]);
    let fork = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let run = comment_from_workflow_run(&api, |r| r["plan"]["commit"] = json!(HEAD_SHA), fork, &["--pr", "8"]);
    run.expect_messages("error: the comment on pull request #8 is refused: its head is 0123456789abcdef0123456789abcdef01234567, but the workflow run tested aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n");
    run.expect_code(2);
    assert_eq!(
        run.stderr.trim(),
        format!(
            "error: the comment on pull request #8 is refused: its head is {HEAD_SHA}, but the workflow run tested {fork}"
        )
    );
    assert_eq!(calls(&api), ["GET /repos/acme/bot/pulls/8"], "nothing listed, created or updated");

    // The right run, but results produced for another commit: refused too.
    let api = github(8, Vec::new());
    let run = comment_from_workflow_run(&api, |r| r["plan"]["commit"] = json!(fork), HEAD_SHA, &["--pr", "8"]);
    run.expect_code(2);
    assert!(run.stderr_has("but the results were produced for aaaaaaa"), "{}", run.stderr);
    assert_eq!(calls(&api), ["GET /repos/acme/bot/pulls/8"]);
}

#[test]
fn a_hostile_results_file_cannot_push_the_comment_over_githubs_limit() {
    let api = github(8, Vec::new());
    let huge = |r: &mut Value| {
        r["suite"]["id"] = json!("s".repeat(100_000));
        for task in r["tasks"].as_array_mut().unwrap() {
            task["id"] = json!("t|`<".repeat(30_000));
        }
    };
    let run = comment_from_workflow_run(&api, huge, HEAD_SHA, &["--pr", "8"]);
    run.expect_messages("evalgate: commented on pull request #8\n");
    run.expect_code(0);
    let body = &bodies(&api, "POST")[0];
    assert!(body.chars().count() <= 65_536, "{} characters", body.chars().count());
    assert!(body.contains("## ❌ evalgate"), "the verdict is kept");
}

#[test]
fn no_pull_request_or_no_token_skips_the_comment_with_a_notice() {
    let no_pr = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", PASSING))
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_REF", "refs/heads/main")
        .env("GITHUB_TOKEN", TOKEN)
        .args(&["run", "--comment"])
        .run();
    no_pr.expect_code(0);
    assert!(
        no_pr
            .stdout
            .contains("::notice title=evalgate::no pull request for this run (and no --pr): the comment is skipped"),
        "{}",
        no_pr.stdout
    );
    let no_token = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", FAILING))
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_REF", "refs/pull/5/merge")
        .args(&["run", "--comment"])
        .run();
    no_token.expect_code(1);
    assert!(
        no_token.stdout.contains("::notice title=evalgate::GITHUB_TOKEN is not set: the comment is skipped"),
        "{}",
        no_token.stdout
    );
}

// ---------------------------------------------------------------- every outcome reaches the PR

/// The pull request's head commit, and the merge commit GitHub made for the run.
const HEAD_SHA: &str = "0123456789abcdef0123456789abcdef01234567";
const MERGE_SHA: &str = "fedcba9876543210fedcba9876543210fedcba98";
const UNSET: &str = "EVALGATE_TEST_SURELY_UNSET";

/// What one run of the Action on pull request 5 left: its exit, stdout and runner files.
pub(crate) struct ActionRun {
    pub run: Run,
    pub summary: String,
    pub outputs: BTreeMap<String, String>,
}

impl ActionRun {
    fn errors(&self) -> Vec<&str> {
        self.run.stdout.lines().filter(|l| l.starts_with("::error ")).collect()
    }
}

/// `evalgate run --comment ARGS` as the Action runs it on a pull_request event: under
/// GitHub Actions, with the step summary, the outputs and the event in temp files, against
/// the mock API. `files` are written into the workspace first.
#[track_caller]
fn action_run(api: &Server, files: &[(&str, &str)], args: &[&str]) -> ActionRun {
    action_run_with(api, files, args, &[])
}

/// `action_run` with more environment variables.
#[track_caller]
pub(crate) fn action_run_with(api: &Server, files: &[(&str, &str)], args: &[&str], env: &[(&str, &str)]) -> ActionRun {
    let event = json!({"pull_request": {"number": 5, "head": {"sha": HEAD_SHA}}}).to_string();
    let mut test = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("runner/summary.md", "")
        .write("runner/output.txt", "")
        .write("runner/event.json", &event);
    for (name, text) in files {
        test = test.write(name, text);
    }
    for (key, value) in env {
        test = test.env(key, value);
    }
    let dir = test.path().to_owned();
    let run = test
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", path_str(&dir.join("runner/summary.md")))
        .env("GITHUB_OUTPUT", path_str(&dir.join("runner/output.txt")))
        .env("GITHUB_EVENT_PATH", path_str(&dir.join("runner/event.json")))
        .env("GITHUB_WORKSPACE", path_str(&dir))
        .env("GITHUB_API_URL", &api.url())
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_RUN_ID", "42")
        .env("GITHUB_SHA", MERGE_SHA)
        .args(&[&["run", "--comment"], args].concat())
        .run();
    let summary = run.read("runner/summary.md");
    let outputs = outputs(&run.read("runner/output.txt"));
    ActionRun { run, summary, outputs }
}

/// The body of the last create or update of a comment.
pub(crate) fn last_body(api: &Server) -> String {
    let body = |r: &Request| serde_json::from_str::<Value>(&r.body).unwrap()["body"].as_str().unwrap().to_owned();
    let written = |r: &&Request| r.method != "GET" && r.path != "/graphql";
    api.received().iter().rev().find(written).map(body).expect("a comment was written")
}

#[test]
fn a_run_stopped_by_preflight_or_an_invalid_suite_updates_the_green_comment_and_every_runner_file() {
    let api = github(5, Vec::new());
    let green = suite("", PASSING);
    let first = action_run(&api, &[("evalgate.yaml", &green)], &[]);
    first.run.expect_messages("evalgate: commented on pull request #5\n");
    first.run.expect_code(0);
    assert_eq!(first.outputs["passed"], "true");
    let created = last_body(&api);
    assert!(created.contains("## ✅ evalgate: `test.evals.demo` passed"), "{created}");
    // The head the pull request pushed, never the merge commit GitHub made for the run.
    let commit = format!("Commit [`0123456`](https://github.com/acme/bot/commit/{HEAD_SHA}) · run started 20");
    assert!(created.contains(&commit), "{created}");
    assert!(!created.contains("fedcba9"), "{created}");

    // The same suite, now needing a variable the runner does not have: exit 3.
    let missing = green.replace("agents:", &format!("env: {{required_env: [{UNSET}]}}\nagents:"));
    let preflight = action_run(&api, &[("evalgate.yaml", &missing)], &[]);
    preflight.run.expect_messages("evalgate: updated comment 1 on pull request #5\npreflight failed for evalgate.yaml: 1 missing\n  - environment variable `EVALGATE_TEST_SURELY_UNSET`: is not set (used by `env.required_env`)\nnothing ran\n");
    preflight.run.expect_code(3);
    let (list, create) = (format!("GET {COMMENTS}?per_page=100&page=1"), format!("POST {COMMENTS}"));
    let update = "PATCH /repos/acme/bot/issues/comments/1";
    assert_eq!(
        calls(&api),
        [&*list, &create, &list, "POST /graphql", update],
        "the green comment is updated, not left"
    );
    let body = last_body(&api);
    assert!(body.starts_with("<!-- evalgate:test.evals.demo -->\n## ⛔ evalgate: `test.evals.demo` preflight failed"));
    assert!(body.contains(&format!("environment variable `{UNSET}`: is not set")), "{body}");
    assert!(body.contains(&commit), "{body}");
    assert_eq!(preflight.outputs["passed"], "false");
    assert_eq!(preflight.outputs["outcome"], "preflight failed");
    assert_eq!(preflight.outputs["results-path"], "evalgate-out/results.json");
    assert!(
        preflight.summary.starts_with("## ⛔ evalgate: `test.evals.demo` preflight failed"),
        "{}",
        preflight.summary
    );
    assert!(preflight.summary.contains(UNSET), "{}", preflight.summary);
    let annotation = format!(
        "::error file=evalgate.yaml,title=evalgate%3A preflight failed::environment variable `{UNSET}`: is not set (used by `env.required_env`)"
    );
    assert_eq!(preflight.errors(), [annotation.as_str()]);
    assert_eq!(preflight.run.results()["verdict"]["outcome"]["status"], "preflight_failed");

    // A key misspelled: exit 2, annotated on its line.
    let invalid = action_run(&api, &[("evalgate.yaml", &green.replace("prompt: hello", "promt: hello"))], &[]);
    invalid.run.expect_messages("evalgate: updated comment 1 on pull request #5\nerror: evalgate.yaml:8:5: tasks[0].promt: unknown key `promt`\n  |\n8 |     promt: hello\n  |     ^\n  help: did you mean `prompt`?\n1 error in the suite; nothing ran\n");
    invalid.run.expect_code(2);
    assert_eq!(calls(&api)[5..], [&*list, "POST /graphql", update]);
    let body = last_body(&api);
    assert!(body.starts_with("<!-- evalgate:test.evals.demo -->\n## ⛔ evalgate: `test.evals.demo` invalid"), "{body}");
    assert!(body.contains("tasks[0].promt: unknown key `promt`"), "{body}");
    assert_eq!(invalid.outputs["passed"], "false");
    assert_eq!(invalid.outputs["outcome"], "invalid");
    assert!(invalid.summary.starts_with("## ⛔ evalgate: `test.evals.demo` invalid"), "{}", invalid.summary);
    assert_eq!(
        invalid.errors(),
        [
            "::error file=evalgate.yaml,line=8,col=5,title=evalgate%3A invalid suite::tasks[0].promt: unknown key `promt`%0Ahelp: did you mean `prompt`?"
        ]
    );
    assert_token_not_printed(&invalid.run);
}

#[test]
fn a_server_that_does_not_start_updates_the_comment_and_the_runner_files_too() {
    let api = github(5, vec![ours(9, "<!-- evalgate:test.evals.demo -->\n## ✅ evalgate: passed")]);
    let broken = suite("mcp_servers:\n  calc: {command: [sh, -c, 'exit 1']}", PASSING);
    let run = action_run(&api, &[("evalgate.yaml", &broken)], &[]);
    // How the dying server's pipe fails (closed, or a broken pipe) depends on timing.
    run.run.expect_stderr_contains(&[
        "  preflight failed for evalgate.yaml: 1 missing\n  - MCP server `calc`: did not start: handshake failed: ",
        "\nnothing ran\nevalgate: updated comment 9 on pull request #5\n",
    ]);
    run.run.expect_code(3);
    assert_eq!(calls(&api)[1..], ["POST /graphql", "PATCH /repos/acme/bot/issues/comments/9"]);
    let body = last_body(&api);
    assert!(body.contains("## ⛔ evalgate: `test.evals.demo` preflight failed"), "{body}");
    assert!(body.contains("MCP server `calc`: did not start"), "{body}");
    assert_eq!(run.outputs["outcome"], "preflight failed");
    assert!(run.summary.starts_with("## ⛔ evalgate: `test.evals.demo` preflight failed"), "{}", run.summary);
    let errors = run.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("::error file=evalgate.yaml,title=evalgate%3A preflight failed::"), "{errors:?}");
    assert!(errors[0].contains("MCP server `calc`: did not start"), "{errors:?}");
}

#[test]
fn an_aborted_run_says_aborted_in_the_comment_the_outputs_and_the_summary() {
    let api = github(5, vec![ours(9, "<!-- evalgate:test.evals.demo -->\n## ✅ evalgate: passed")]);
    // A report path that cannot be created: the run aborts before any task starts.
    let files = [("evalgate.yaml", suite("", PASSING)), ("blocker", String::new())];
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let before = action_run(&api, &files, &["--junit", "blocker/junit.xml"]);
    // The temp file's name is random: the lines are pinned up to it.
    before.run.expect_stderr_contains(&[
        "warning: cannot write blocker/junit.xml: Not a directory (os error 20) at path \"[DIR]/blocker/.tmp",
        "\"\nevalgate: updated comment 9 on pull request #5\nerror: cannot write blocker: File exists (os error 17)\n",
    ]);
    before.run.expect_code(4);
    let body = last_body(&api);
    assert!(body.contains("## ⚠️ evalgate: `test.evals.demo` aborted"), "{body}");
    assert!(body.contains("blocker"), "{body}");
    assert_eq!(before.outputs["passed"], "false");
    assert_eq!(before.outputs["outcome"], "aborted");
    assert!(before.summary.starts_with("## ⚠️ evalgate: `test.evals.demo` aborted"), "{}", before.summary);
    assert_eq!(before.run.results()["verdict"]["outcome"]["status"], "aborted", "results.json is still written");
    assert!(
        before.errors()[0].starts_with("::error file=evalgate.yaml,title=evalgate%3A aborted::"),
        "{:?}",
        before.errors()
    );

    // The out directory taken away while the task runs: its reports cannot be written.
    let agent = "#!/bin/sh\nrm -rf evalgate-out && touch evalgate-out\nprintf '%s\\n' \"$1\"\n";
    let during = action_run(&api, &[("evalgate.yaml", &suite("", PASSING)), ("agent.sh", agent)], &[]);
    during.run.expect_stderr_contains(&[
        "ABORTED test.evals.demo\nwarning: cannot write evalgate-out/results.json: Not a directory (os error 20) at path \"[DIR]/evalgate-out/.tmp",
        "\"\nevalgate: updated comment 9 on pull request #5\nerror: cannot write evalgate-out/results.json: Not a directory (os error 20) at path \"[DIR]/evalgate-out/.tmp",
    ]);
    during.run.expect_code(4);
    assert!(last_body(&api).contains("## ⚠️ evalgate: `test.evals.demo` aborted"), "{}", last_body(&api));
    assert_eq!(during.outputs["passed"], "false");
    assert_eq!(during.outputs["outcome"], "aborted");
    assert!(during.summary.starts_with("## ⚠️ evalgate: `test.evals.demo` aborted"), "{}", during.summary);
    assert_eq!(calls(&api).iter().filter(|c| c.starts_with("PATCH")).count(), 2, "{:?}", calls(&api));
}

#[test]
fn with_several_suites_a_stop_updates_each_suites_comment() {
    let api = github(5, Vec::new());
    let a = suite("", PASSING).replace("test.evals.demo", "test.evals.a");
    let b = suite(&format!("env: {{required_env: [{UNSET}]}}"), PASSING).replace("test.evals.demo", "test.evals.b");
    let run = action_run(&api, &[("a.yaml", &a), ("b.yaml", &b)], &["a.yaml", "b.yaml"]);
    run.run.expect_messages("evalgate: commented on pull request #5\nevalgate: commented on pull request #5\npreflight failed for b.yaml: 1 missing\n  - environment variable `EVALGATE_TEST_SURELY_UNSET`: is not set (used by `env.required_env`)\nnothing ran\n");
    run.run.expect_code(3);
    let created = bodies(&api, "POST");
    assert_eq!(created.len(), 2);
    assert!(created[0].starts_with("<!-- evalgate:test.evals.a -->\n## ⛔ evalgate: `test.evals.a` preflight failed"));
    assert!(created[1].starts_with("<!-- evalgate:test.evals.b -->\n## ⛔ evalgate: `test.evals.b` preflight failed"));
    assert_eq!(run.outputs["outcome"], "preflight failed\npreflight failed");
    assert_eq!(
        run.outputs["results-path"],
        "evalgate-out/test.evals.a/results.json\nevalgate-out/test.evals.b/results.json"
    );
    let results: Value = serde_json::from_str(&run.run.read("evalgate-out/test.evals.b/results.json")).unwrap();
    assert_eq!(results["verdict"]["outcome"]["status"], "preflight_failed");
    // The miss is annotated once, on the suite that has it.
    assert_eq!(run.errors().len(), 1, "{:?}", run.errors());
    assert!(run.errors()[0].starts_with("::error file=b.yaml,"), "{:?}", run.errors());
}

// ---------------------------------------------------------------- the action

/// Every workflow in the docs whose matrix runs the action gives each job its own results
/// artifact: the default name in every job makes the uploads collide.
#[test]
fn a_documented_matrix_gives_each_job_its_own_results_artifact() {
    let mut matrices = 0;
    for doc in std::fs::read_dir("docs")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(&doc).unwrap();
        for block in text.split("```yaml\n").skip(1).filter_map(|b| b.split("```").next()) {
            let Ok(workflow) = evalgate::yaml::from_str::<Value>(block) else { continue };
            let Some(jobs) = workflow["jobs"].as_object() else { continue };
            for (name, job) in jobs.iter().filter(|(_, j)| j["strategy"]["matrix"].is_object()) {
                for step in job["steps"].as_array().into_iter().flatten() {
                    if !step["uses"].as_str().is_some_and(|u| u.starts_with("evalgate/evalgate@")) {
                        continue;
                    }
                    matrices += 1;
                    let artifact = step["with"]["results-artifact"].as_str();
                    assert!(
                        artifact.is_some_and(|a| a.is_empty() || a.contains("${{ matrix.")),
                        "{}: job `{name}` runs a matrix with results-artifact {artifact:?}",
                        doc.display()
                    );
                }
            }
        }
    }
    assert!(matrices > 0, "the docs show a matrix");
}

#[test]
fn action_yml_maps_every_output_to_a_step_output_and_no_run_interpolates_inputs() {
    let action: serde_json::Value = evalgate::yaml::from_str(&std::fs::read_to_string("action.yml").unwrap()).unwrap();
    assert_eq!(action["runs"]["using"], "composite");
    let steps = action["runs"]["steps"].as_array().unwrap();
    let run_step = steps.iter().find(|s| s["id"] == "run").expect("a step with id `run`");
    let outputs = action["outputs"].as_object().unwrap();
    let names: Vec<&str> = outputs.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "passed",
            "outcome",
            "score",
            "pass-rate",
            "cost-usd",
            "results-path",
            "junit-path",
            "summary-path",
            "html-path"
        ]
    );
    for (name, output) in outputs {
        let name = name.as_str();
        assert_eq!(output["value"].as_str().unwrap(), format!("${{{{ steps.run.outputs.{name} }}}}"), "output {name}");
        assert!(output["description"].is_string(), "output {name}");
    }
    // The run script passes --github, so evalgate itself writes those step outputs.
    assert!(run_step["run"].as_str().unwrap().contains("scripts/action-run.sh"));
    assert!(std::fs::read_to_string("scripts/action-run.sh").unwrap().contains("--github"));
    for step in steps.iter().filter(|s| s.get("run").is_some()) {
        assert_eq!(step["shell"], "bash", "{step:?}");
        let run = step["run"].as_str().unwrap_or_default();
        assert!(!run.contains("${{ inputs.") && !run.contains("${{"), "a run: interpolates an expression: {run}");
    }
    let inputs = action["inputs"].as_object().unwrap();
    for input in [
        "suite",
        "args",
        "out",
        "baseline",
        "comment",
        "github-token",
        "version",
        "binary-path",
        "html",
        "results-artifact",
        "changed-since",
    ] {
        assert!(inputs.contains_key(input), "input {input}");
    }
    // The results are uploaded under the name `baseline: github` looks for, from every run.
    let upload = steps.iter().find(|s| s["id"] == "upload-results").expect("an upload-results step");
    assert_eq!(upload["uses"], "actions/upload-artifact@v4");
    assert_eq!(upload["with"]["path"], "${{ steps.run.outputs.results-path }}");
    assert!(upload["if"].as_str().unwrap().contains("always()"));
    assert_eq!(action["inputs"]["results-artifact"]["default"], "evalgate-results");
    assert_eq!(action["inputs"]["suite"]["required"], true);
}

fn script(name: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(std::fs::canonicalize("scripts").unwrap().join(name));
    // The test may itself run on a runner: start from none of its variables.
    for (key, _) in std::env::vars() {
        if key.starts_with("GITHUB_") || key.starts_with("RUNNER_") || key.starts_with("INPUT_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_install_script_takes_binary_path_and_rejects_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output.txt");
    std::fs::write(&output, "").unwrap();
    let bin = env!("CARGO_BIN_EXE_evalgate");

    let install = script("action-install.sh")
        .env("INPUT_BINARY_PATH", bin)
        .env("INPUT_VERSION", "")
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_ACTION_PATH", std::fs::canonicalize(".").unwrap())
        .env("RUNNER_TEMP", dir.path())
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", text(&install));
    assert_eq!(outputs(&std::fs::read_to_string(&output).unwrap())["bin"], bin);

    let missing = script("action-install.sh")
        .env("INPUT_BINARY_PATH", "/no/such/evalgate")
        .env("GITHUB_OUTPUT", &output)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing).contains("::error title=evalgate::binary-path /no/such/evalgate is not an executable file"),
        "{}",
        text(&missing)
    );
}

#[test]
fn the_run_script_runs_the_gate_with_the_inputs_and_keeps_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output.txt");
    let summary = dir.path().join("summary.md");
    let event = dir.path().join("event.json");
    std::fs::write(&output, "").unwrap();
    std::fs::write(&event, r#"{"ref": "refs/heads/main"}"#).unwrap();
    let quickstart = std::fs::canonicalize("examples/quickstart/evalgate.yaml").unwrap();
    let run_script = |suite: &Path, args: &str, comment: &str, baseline: &str| {
        script("action-run.sh")
            .current_dir(dir.path())
            .env("EVALGATE_BIN", env!("CARGO_BIN_EXE_evalgate"))
            .env("INPUT_SUITE", suite)
            .env("INPUT_ARGS", args)
            .env("INPUT_OUT", "reports")
            .env("INPUT_BASELINE", baseline)
            .env("INPUT_COMMENT", comment)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_EVENT_NAME", "push")
            .env("GITHUB_EVENT_PATH", &event)
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .output()
            .unwrap()
    };

    // A block input is several lines; `*` must reach evalgate as a glob, not the shell's.
    let run = run_script(&quickstart, "-j 2\n--tag billing --filter *", "auto", "");
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    assert!(!text(&run).contains("::notice title=evalgate::"), "auto on a push: no comment");
    let outputs = outputs(&std::fs::read_to_string(&output).unwrap());
    assert_eq!(outputs["passed"], "true");
    assert_eq!(outputs["results-path"], "reports/results.json");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("reports/results.json")).unwrap()).unwrap();
    assert_eq!(results["tasks"].as_array().unwrap().len(), 1, "--tag billing reached evalgate");
    assert!(std::fs::read_to_string(&summary).unwrap().contains("evalgate.evals.quickstart"));

    let failing = dir.path().join("failing/evalgate.yaml");
    std::fs::create_dir_all(failing.parent().unwrap()).unwrap();
    std::fs::write(&failing, suite("", FAILING)).unwrap();
    std::fs::write(failing.with_file_name("agent.sh"), ECHO_AGENT).unwrap();
    let chmod = Command::new("chmod").arg("+x").arg(failing.with_file_name("agent.sh")).status().unwrap();
    assert!(chmod.success());
    let gate = run_script(&failing, "", "true", "");
    assert_eq!(gate.status.code(), Some(1), "{}", text(&gate));
    assert!(text(&gate).contains("::error file="), "{}", text(&gate));
    assert!(text(&gate).contains("::notice title=evalgate::"), "comment: true asks for the comment");

    let invalid = run_script(&quickstart, "", "maybe", "");
    assert_eq!(invalid.status.code(), Some(2));
    assert!(text(&invalid).contains("::error title=evalgate::the comment input must be true, false or auto"));

    // `baseline: github` is `--baseline github:base` (here with no repository to ask: a
    // missing baseline, so a warning and the regression checks skipped).
    let fetched = run_script(&quickstart, "", "false", "github");
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    assert!(
        text(&fetched).contains("no baseline from github:base: GITHUB_REPOSITORY is not set"),
        "{}",
        text(&fetched)
    );
}

// ---------------------------------------------------------------- evalgate init

#[test]
fn init_writes_a_working_suite_and_a_workflow_and_never_overwrites() {
    let test = Test::new();
    let dir = test.path().to_owned();
    let init = test.args(&["init"]).run();
    init.expect_messages(
        r#"
            wrote evalgate.yaml
            wrote evals/agent.sh
            wrote .github/workflows/evalgate.yml
            added evalgate-out/ and .evalgate/cache/ to .gitignore
            next: `evalgate run`, then point agents.bot.command at your agent
        "#,
    );
    init.expect_code(0);
    for f in ["evalgate.yaml", "evals/agent.sh", ".github/workflows/evalgate.yml"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let workflow: serde_json::Value =
        evalgate::yaml::from_str(&std::fs::read_to_string(dir.join(".github/workflows/evalgate.yml")).unwrap())
            .unwrap();
    assert_eq!(workflow["permissions"]["pull-requests"], "write");
    // The real action, pinned to this version; the schema modeline; the ignored outputs.
    let uses = format!("{}@v{}", evalgate::REPOSITORY, env!("CARGO_PKG_VERSION"));
    assert_eq!(workflow["jobs"]["evals"]["steps"][1]["uses"], uses.as_str());
    assert_eq!(evalgate::REPOSITORY, "evalgate/evalgate");
    let suite = std::fs::read_to_string(dir.join("evalgate.yaml")).unwrap();
    let modeline = format!(
        "# yaml-language-server: $schema=https://raw.githubusercontent.com/evalgate/evalgate/v{}/schema/evalgate.schema.json\n",
        env!("CARGO_PKG_VERSION")
    );
    assert!(suite.starts_with(&modeline), "{suite}");
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "# evalgate: reports and the response cache\nevalgate-out/\n.evalgate/cache/\n"
    );
    let evalgate =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap();
    assert_eq!(evalgate(&["check"]).status.code(), Some(0));
    assert_eq!(evalgate(&["run", "--no-github"]).status.code(), Some(0));

    std::fs::write(dir.join("evalgate.yaml"), "mine").unwrap();
    let again = evalgate(&["init"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains("not overwriting evalgate.yaml, evals/agent.sh, .github/workflows/evalgate.yml"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(std::fs::read_to_string(dir.join("evalgate.yaml")).unwrap(), "mine");
}

/// `init --cassettes`: pull requests replay with no key; a scheduled job records with the
/// keys and opens a pull request with the diff.
#[test]
fn init_with_cassettes_writes_the_replay_and_the_record_workflows() {
    let test = Test::new();
    let dir = test.path().to_owned();
    let init = test.args(&["init", "--cassettes"]).run();
    init.expect_messages(
        r#"
            wrote evalgate.yaml
            wrote evals/agent.sh
            wrote .github/workflows/evalgate.yml
            wrote .github/workflows/evalgate-record.yml
            added evalgate-out/ and .evalgate/cache/ to .gitignore
            next: `evalgate run`, then point agents.bot.command at your agent
        "#,
    );
    init.expect_code(0);
    let read = |f: &str| -> serde_json::Value {
        evalgate::yaml::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap()
    };
    let pr = read(".github/workflows/evalgate.yml");
    let step = &pr["jobs"]["evals"]["steps"][1];
    assert_eq!(step["with"]["args"], "--replay");
    assert!(step.get("env").is_none(), "a replay needs no key: {step}");
    let record = read(".github/workflows/evalgate-record.yml");
    assert!(record["on"]["schedule"][0]["cron"].is_string());
    let steps = record["jobs"]["record"]["steps"].as_array().unwrap();
    assert_eq!(steps[1]["with"]["args"], "--record");
    assert_eq!(steps[1]["env"]["OPENAI_API_KEY"], "${{ secrets.OPENAI_API_KEY }}");
    assert!(steps[2]["run"].as_str().unwrap().contains("gh pr create"));
}

/// The record workflow's last step, run as the runner would in a checkout: the first
/// recording (a new, untracked cassette) is proposed, a changed one is, an unchanged one is
/// not. `git push` goes to a local bare repository, `gh` is a stub that notes its call.
#[test]
fn the_record_workflow_proposes_the_first_recording_and_every_change() {
    let test = Test::new();
    let dir = test.path().to_owned();
    let init = test.args(&["init", "--cassettes"]).expect_messages("wrote evalgate.yaml\nwrote evals/agent.sh\nwrote .github/workflows/evalgate.yml\nwrote .github/workflows/evalgate-record.yml\nadded evalgate-out/ and .evalgate/cache/ to .gitignore\nnext: `evalgate run`, then point agents.bot.command at your agent\n").run(); // holds the directory
    init.expect_code(0);
    let record: serde_json::Value =
        evalgate::yaml::from_str(&std::fs::read_to_string(dir.join(".github/workflows/evalgate-record.yml")).unwrap())
            .unwrap();
    let script = record["jobs"]["record"]["steps"][2]["run"].as_str().unwrap().to_owned();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").args(args).current_dir(&dir).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let bin = dir.join("stub-bin");
    std::fs::create_dir(&bin).unwrap();
    let gh = bin.join("gh");
    std::fs::write(&gh, "#!/bin/sh\necho \"$@\" >> \"$GH_CALLS\"\n").unwrap();
    std::fs::set_permissions(&gh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(&["init", "-q", "-b", "main"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start"]);
    git(&["init", "-q", "--bare", "origin.git"]);
    git(&["remote", "add", "origin", "origin.git"]);
    std::fs::write(dir.join(".git/info/exclude"), "origin.git\nstub-bin\ncalls\n").unwrap();
    let proposals = |n: usize| {
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let out = std::process::Command::new("bash")
            .args(["-e", "-c", &script])
            .current_dir(&dir)
            .env("PATH", path)
            .env("GH_CALLS", dir.join("calls"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let calls = std::fs::read_to_string(dir.join("calls")).unwrap_or_default();
        assert_eq!(calls.lines().count(), n, "pull requests proposed: {calls}");
    };
    // The first recording: a new file.
    std::fs::create_dir_all(dir.join("cassettes")).unwrap();
    std::fs::write(dir.join("cassettes/t.jsonl"), "{}\n").unwrap();
    proposals(1);
    // Recorded again, the same: nothing to propose (from the recording's branch, merged).
    proposals(1);
    // The pull request merged; a week later, recorded again and changed.
    let branches = std::process::Command::new("git")
        .args(["branch", "--list", "evalgate/record-*", "--format=%(refname:short)"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let branch = String::from_utf8_lossy(&branches.stdout).trim().to_owned();
    git(&["switch", "-q", "main"]);
    git(&["merge", "-q", "--ff-only", &branch]);
    git(&["branch", "-q", "-D", &branch]);
    std::fs::write(dir.join("cassettes/t.jsonl"), "{\"changed\": true}\n").unwrap();
    proposals(2);
}
