//! The sticky PR comment against a local mock of GitHub's REST API.

mod common;

use common::{ECHO_AGENT, Test, suite};
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const COMMENTS: &str = "/repos/acme/bot/issues/5/comments";

/// Runs a suite with `--comment`, as in a pull_request workflow.
fn run_with_comment(api: &str, tasks: &str) -> common::Run {
    let test = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", tasks))
        .write("event.json", r#"{"pull_request": {"number": 5}}"#);
    let event = test.path().join("event.json");
    test.env("GITHUB_API_URL", api)
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_EVENT_PATH", event.to_str().unwrap())
        .env("GITHUB_TOKEN", "ghs_test_token")
        .env("GITHUB_RUN_ID", "42")
        .args(&["run", "--comment"])
        .run()
}

const PASSING: &str = "  - id: a\n    prompt: hello\n    grade: [{type: contains, value: hello}]\n";

async fn requests(server: &MockServer, verb: &str) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.method.as_str() == verb)
        .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_creates_the_comment_and_the_second_updates_it() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .and(header("authorization", "Bearer ghs_test_token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([{"id": 1, "body": "LGTM"}])))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .and(body_string_contains("<!-- evalgate:test.evals.demo -->"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 99})))
        .expect(1)
        .mount(&server)
        .await;
    let first = tokio::task::spawn_blocking({
        let uri = server.uri();
        move || run_with_comment(&uri, PASSING)
    })
    .await
    .unwrap();
    first.expect_code(0);

    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!([{"id": 1, "body": "LGTM"}, {"id": 99, "body": "<!-- evalgate:test.evals.demo -->\nold"}]),
        ))
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/bot/issues/comments/99"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": 99})))
        .expect(1)
        .mount(&server)
        .await;
    let second = tokio::task::spawn_blocking({
        let uri = server.uri();
        move || run_with_comment(&uri, PASSING)
    })
    .await
    .unwrap();
    second.expect_code(0);
    assert_eq!(requests(&server, "POST").await.len(), 1, "never a second comment");
    let patched = requests(&server, "PATCH").await;
    let body = patched[0]["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- evalgate:test.evals.demo -->\n## ✅ evalgate: `test.evals.demo` passed"), "{body}");
    assert!(body.ends_with("[Full results of this run](https://github.com/acme/bot/actions/runs/42)"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_marker_is_found_on_the_second_page() {
    let server = MockServer::start().await;
    let page1: Vec<Value> = (1..=100).map(|i| json!({"id": i, "body": format!("comment {i}")})).collect();
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .and(query_param("page", "1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(Value::Array(page1)))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .and(query_param("page", "2"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!([{"id": 777, "body": "<!-- evalgate:test.evals.demo -->"}])),
        )
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/bot/issues/comments/777"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": 777})))
        .expect(1)
        .mount(&server)
        .await;
    let uri = server.uri();
    let run = tokio::task::spawn_blocking(move || run_with_comment(&uri, PASSING)).await.unwrap();
    run.expect_code(0);
    assert!(requests(&server, "POST").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_token_is_a_warning_and_the_verdict_stands() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(
            ResponseTemplate::new(403).set_body_json(json!({"message": "Resource not accessible by integration"})),
        )
        .mount(&server)
        .await;
    let uri = server.uri();
    let run = tokio::task::spawn_blocking(move || run_with_comment(&uri, PASSING)).await.unwrap();
    run.expect_code(0);
    assert!(
        run.stdout.contains(
            "::warning title=evalgate::GitHub refused the comment (HTTP 403): Resource not accessible by integration"
        ),
        "{}",
        run.stdout
    );
    let uri = server.uri();
    let failing = tokio::task::spawn_blocking(move || {
        run_with_comment(&uri, "  - id: a\n    prompt: x\n    grade: [{type: contains, value: y}]\n")
    })
    .await
    .unwrap();
    failing.expect_code(1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_body_is_cut_under_the_limit_with_the_verdict_kept() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 1})))
        .mount(&server)
        .await;
    let tasks: String = (0..700)
        .map(|i| format!("  - id: task-{i}-with-a-long-name-to-fill-the-comment-body\n    prompt: x\n    grade: [{{type: contains, value: \"{}\"}}]\n", "y".repeat(60)))
        .collect();
    let uri = server.uri();
    let run = tokio::task::spawn_blocking(move || run_with_comment(&uri, &tasks)).await.unwrap();
    run.expect_code(1);
    let posted = requests(&server, "POST").await;
    let body = posted[0]["body"].as_str().unwrap();
    assert!(body.chars().count() <= 65_536, "{} characters", body.chars().count());
    assert!(body.starts_with("<!-- evalgate:test.evals.demo -->\n## ❌ evalgate: `test.evals.demo` failed"));
    assert!(body.contains("more failing tasks: see `results.json`."));
}

#[test]
fn no_pull_request_or_no_token_skips_with_a_notice() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", PASSING))
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_REF", "refs/heads/main")
        .args(&["run", "--comment"])
        .run();
    run.expect_code(0);
    assert!(
        run.stdout.contains("::notice title=evalgate::no pull request for this run: the comment is skipped"),
        "{}",
        run.stdout
    );
}
