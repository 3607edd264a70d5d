//! `--baseline github:base` and `evalgate baseline fetch` against a local mock of GitHub's
//! Actions REST API (workflow runs, artifacts, the archive's redirect to storage).

use std::collections::BTreeMap;
use std::io::Write as _;

use crate::common::server::{Reply, Request, Server};
use crate::common::{Run, Test, numbered};
use serde_json::{Value, json};

const TOKEN: &str = "ghs_baseline_fetch_token_000";
const BASE_SHA: &str = "1a2b3c4d5e6f70819293a4b5c6d7e8f901234567";
const HEAD_SHA: &str = "fedcba9876543210fedcba9876543210fedcba98";
const MERGE_BASE: &str = "0123456789abcdef0123456789abcdef01234567";
const RUNS: &str = "/repos/acme/bot/actions/workflows/evals.yml/runs";

const AGENT: &str = "#!/bin/sh\nif [ -f \"fail-$EVALGATE_TASK_ID\" ]; then echo wrong; else echo right; fi\n";

fn suite(extra: &str) -> String {
    let tasks: String = numbered(
        0..4,
        "
            - id: t<i>
              prompt: x
              grade: [{type: contains, value: right}]
            ",
    );
    format!(
        "evalgate: 1\nsuite: test.evals.fetch\nagents: {{bot: {{command: [./agent.sh]}}}}\nthresholds: {{pass_score: 0.1}}\n{extra}\ntasks:\n{tasks}"
    )
}

/// A zip of one passing baseline run's out directory (`results.json` and `summary.md`).
fn baseline_archive() -> Vec<u8> {
    let run = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite("")).args(&["run"]).run();
    run.expect_code(0);
    let mut bytes = Vec::new();
    {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
        let options = zip::write::SimpleFileOptions::default();
        for name in ["results.json", "summary.md"] {
            zip.start_file(name, options).unwrap();
            zip.write_all(run.read(&format!("evalgate-out/{name}")).as_bytes()).unwrap();
        }
        zip.finish().unwrap();
    }
    bytes
}

fn iso(days_ago: u64) -> String {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(days_ago * 86400 + 60);
    humantime::format_rfc3339_seconds(t).to_string()
}

fn run_json(id: u64, sha: &str, days_ago: u64) -> Value {
    json!({"id": id, "head_sha": sha, "head_branch": "main", "status": "completed", "conclusion": "success",
           "updated_at": iso(days_ago), "event": "push", "head_repository": {"full_name": "acme/bot"}})
}

/// What the mock API holds: successful runs by commit and on `main` (newest first), each
/// run's artifacts, and a status that every API call answers with instead, when set.
#[derive(Default, Clone)]
struct Fake {
    by_sha: BTreeMap<String, Vec<Value>>,
    on_main: Vec<Value>,
    artifacts: BTreeMap<u64, Vec<Value>>,
    refuse: Option<u16>,
}

fn artifact(id: u64, expired: bool) -> Value {
    json!({"id": id, "name": "evalgate-results", "expired": expired, "size_in_bytes": 2048})
}

/// Storage: `/blob/N` is the archive (answered only without a token).
fn storage(archive: Vec<u8>) -> Server {
    Server::start_with(move |r| {
        if r.path.starts_with("/blob/") {
            Reply { status: 200, headers: vec![], body: archive.clone() }
        } else {
            Reply::json(404, "{}")
        }
    })
}

/// The Actions API of acme/bot: workflow runs (filtered, paginated), each run's artifacts,
/// the compare endpoint for the merge base, and the archive endpoint, which redirects to
/// storage with a signed URL as GitHub's does.
fn api(fake: Fake, storage: &Server) -> Server {
    let blob = storage.url();
    Server::start_with(move |r: &Request| {
        let json = |status, body: Value| Reply::json(status, body.to_string());
        if let Some(status) = fake.refuse {
            return json(status, json!({"message": "Resource not accessible by integration"}));
        }
        if r.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
            return json(401, json!({"message": "Bad credentials"}));
        }
        let param = |name| r.query_param(name).map(str::to_owned);
        if r.path == RUNS {
            assert_eq!(param("status").as_deref(), Some("success"));
            let page: usize = param("page").map_or(1, |p| p.parse().unwrap());
            let per_page: usize = param("per_page").map_or(30, |p| p.parse().unwrap());
            let all = match (param("head_sha"), param("branch")) {
                (Some(sha), None) => fake.by_sha.get(&sha).cloned().unwrap_or_default(),
                (None, Some(branch)) if branch == "main" => fake.on_main.clone(),
                _ => vec![],
            };
            let runs: Vec<&Value> = all.iter().skip(per_page * (page - 1)).take(per_page).collect();
            return json(200, json!({"total_count": all.len(), "workflow_runs": runs}));
        }
        if r.path == format!("/repos/acme/bot/compare/{BASE_SHA}...{HEAD_SHA}") {
            return json(200, json!({"merge_base_commit": {"sha": MERGE_BASE}}));
        }
        let run = r.path.strip_prefix("/repos/acme/bot/actions/runs/").and_then(|p| p.strip_suffix("/artifacts"));
        if let Some(run) = run.and_then(|r| r.parse::<u64>().ok()) {
            assert_eq!(param("name").as_deref(), Some("evalgate-results"));
            let list = fake.artifacts.get(&run).cloned().unwrap_or_default();
            return json(200, json!({"total_count": list.len(), "artifacts": list}));
        }
        let archive = r.path.strip_prefix("/repos/acme/bot/actions/artifacts/").and_then(|p| p.strip_suffix("/zip"));
        if let Some(id) = archive {
            let location = format!("{blob}/blob/{id}?sig=s3cr3t");
            return Reply { status: 302, headers: vec![("location".into(), location)], body: vec![] };
        }
        json(404, json!({"message": "Not Found"}))
    })
}

/// A pull request's run of `args` under GitHub Actions, pointed at the mock API.
/// `files` are written beside the suite (`fail-T` makes task T fail).
#[track_caller]
fn on_pull_request(api: &Server, suite_extra: &str, files: &[(&str, &str)], args: &[&str]) -> Run {
    pull_request(api, suite_extra, files).args(args).run()
}

/// The test directory and environment of a run on pull request 5.
fn pull_request(api: &Server, suite_extra: &str, files: &[(&str, &str)]) -> Test {
    let mut test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite(suite_extra)).write(
        "event.json",
        &json!({"pull_request": {"number": 5, "base": {"ref": "main", "sha": BASE_SHA}, "head": {"sha": HEAD_SHA}}})
            .to_string(),
    );
    for (name, contents) in files {
        test = test.write(name, contents);
    }
    let event = test.path().join("event.json").display().to_string();
    test.env("GITHUB_API_URL", &api.url())
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_WORKFLOW_REF", "acme/bot/.github/workflows/evals.yml@refs/pull/5/merge")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_RUN_ID", "999")
}

fn assert_no_token(run: &Run, storage: &Server) {
    assert!(!run.stdout.contains(TOKEN) && run.stderr_lacks(TOKEN), "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("s3cr3t") && run.stderr_lacks("s3cr3t"), "the signed URL was printed");
    for request in storage.received() {
        assert_eq!(request.header("authorization"), None, "the token went to the storage host");
    }
}

#[test]
fn a_pull_request_is_gated_against_the_run_on_its_base_commit() {
    let storage = storage(baseline_archive());
    let mut fake = Fake::default();
    fake.by_sha.insert(BASE_SHA.into(), vec![run_json(11, BASE_SHA, 3)]);
    fake.artifacts.insert(11, vec![artifact(501, false)]);
    let api = api(fake, &storage);

    let passing = on_pull_request(&api, "", &[], &["run", "--baseline", "github:base"]);
    passing.expect_code(0);
    assert!(passing.stderr_has("main@1a2b3c4, 3 days old (run 11, on the base commit)"), "{}", passing.stderr);
    let results = passing.results();
    assert!(results["regression"]["comparison"].is_object(), "{results}");
    assert_eq!(results["regression"]["baseline"], "github:base: main@1a2b3c4, 3 days old (run 11, on the base commit)");

    // Two tasks that passed on the base now fail: the regression gate says so.
    let worse = on_pull_request(&api, "", &[("fail-t0", ""), ("fail-t1", "")], &["run", "--baseline", "github:base"]);
    worse.expect_messages("baseline: main@1a2b3c4, 3 days old (run 11, on the base commit)\n  warning: inconclusive: too few tasks to tell noise from change: 4 comparable task(s) (2 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 68.4% of runs with no change; with 4 trials that every run makes on both sides (`repeat: 4`, or adaptive trials with `min: 4`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    worse.expect_code(1);
    let summary = worse.read("evalgate-out/summary.md");
    assert!(summary.contains("Baseline from the base branch: main@"), "{summary}");
    assert!(summary.contains("1a2b3c4, 3 days old (run 11, on the base commit)"), "{summary}");
    assert!(summary.contains("newly failing (2): `t0`, `t1`"), "{summary}");
    assert_no_token(&worse, &storage);
    assert!(storage.requests() >= 2, "the archive was downloaded from storage");

    // `compare github:base HEAD` judges a saved results file against the same baseline.
    let head = worse.read("evalgate-out/results.json");
    let compare = on_pull_request(&api, "", &[("head.json", &head)], &["compare", "github:base", "head.json"]);
    compare.expect_code(1);
    assert!(
        compare.stdout.contains("t0") && compare.stderr_has("baseline: main@1a2b3c4"),
        "{}\n{}",
        compare.stdout,
        compare.stderr
    );
}

/// A baseline speaks for this repository's own code: a fork's `pull_request` run on a
/// branch it named `main`, a pull request's run in this repository, and a run that does not
/// say where it came from are passed over, newest first though they are.
#[test]
fn only_this_repositorys_own_runs_are_baselines_never_a_forks_or_a_pull_requests() {
    let storage = storage(baseline_archive());
    let mut fake = Fake::default();
    let mut fork = run_json(31, MERGE_BASE, 0);
    fork["event"] = "pull_request".into();
    fork["head_repository"]["full_name"] = "mallory/bot".into();
    let mut pull_request = run_json(32, MERGE_BASE, 0);
    pull_request["event"] = "pull_request_target".into();
    let mut unsaid = run_json(33, MERGE_BASE, 0);
    unsaid.as_object_mut().unwrap().remove("head_repository");
    fake.on_main = vec![fork, pull_request, unsaid, run_json(34, "abcdef0123456789abcdef0123456789abcdef01", 1)];
    for run in 31..=34 {
        fake.artifacts.insert(run, vec![artifact(800 + run, false)]);
    }
    let api = api(fake, &storage);
    let run = on_pull_request(&api, "", &[], &["baseline", "fetch"]);
    run.expect_code(0);
    assert!(run.stdout.contains("(run 34, the newest on the branch)"), "{}\n{}", run.stdout, run.stderr);
}

#[test]
fn expired_artifacts_and_this_run_are_passed_over_for_the_merge_base_then_the_branch_across_pages() {
    let storage = storage(baseline_archive());
    let mut fake = Fake::default();
    fake.by_sha.insert(BASE_SHA.into(), vec![run_json(999, BASE_SHA, 0), run_json(12, BASE_SHA, 1)]);
    fake.artifacts.insert(999, vec![artifact(600, false)]);
    fake.artifacts.insert(12, vec![artifact(601, true)]);
    fake.by_sha.insert(MERGE_BASE.into(), vec![run_json(13, MERGE_BASE, 2)]);
    // 100 runs on main without the artifact, then one with it on the second page.
    fake.on_main = (0..100).map(|i| run_json(1000 + i, MERGE_BASE, 4)).collect();
    fake.on_main.push(run_json(77, "abcdef0123456789abcdef0123456789abcdef01", 5));
    fake.artifacts.insert(77, vec![json!({"id": 700, "name": "other", "expired": false}), artifact(701, false)]);
    let api = api(fake, &storage);

    let run = on_pull_request(&api, "", &[], &["baseline", "fetch"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("baseline: main@abcdef0, 5 days old (run 77, the newest on the branch)"),
        "{}",
        run.stdout
    );
    let fetched = run.read(".evalgate/baseline/results.json");
    assert!(fetched.contains("test.evals.fetch"), "{fetched}");
    assert_no_token(&run, &storage);
}

#[test]
fn no_baseline_anywhere_fails_fetch_and_skips_or_fails_the_regression_gate_as_configured() {
    let storage = storage(baseline_archive());
    let api = api(Fake::default(), &storage);

    let fetch = on_pull_request(&api, "", &[], &["baseline", "fetch"]);
    fetch.expect_messages("error: no baseline: no successful run of workflow `evals.yml` with an unexpired `evalgate-results` artifact (head_sha=1a2b3c4d5e6f70819293a4b5c6d7e8f901234567, head_sha=0123456789abcdef0123456789abcdef01234567, branch=main)\n");
    fetch.expect_code(3);
    assert!(
        fetch
            .stderr
            .contains("no successful run of workflow `evals.yml` with an unexpired `evalgate-results` artifact"),
        "{}",
        fetch.stderr
    );

    let skipped = on_pull_request(&api, "", &[], &["run", "--baseline", "github:base"]);
    skipped.expect_code(0);
    assert!(skipped.stderr_has("the regression gate is skipped"), "{}", skipped.stderr);

    let required = on_pull_request(&api, "regression: {baseline: 'github:base', required: true}", &[], &["run"]);
    required.expect_messages("warning: no baseline from github:base: no successful run of workflow `evals.yml` with an unexpired `evalgate-results` artifact (head_sha=1a2b3c4d5e6f70819293a4b5c6d7e8f901234567, head_sha=0123456789abcdef0123456789abcdef01234567, branch=main); the regression gate fails\n");
    required.expect_code(1);
    assert!(required.read("evalgate-out/summary.md").contains("no baseline from github:base"));
}

#[test]
fn a_forbidden_token_names_the_permission_it_needs() {
    let storage = storage(baseline_archive());
    let api = api(Fake { refuse: Some(403), ..Fake::default() }, &storage);
    let fetch = on_pull_request(&api, "", &[], &["baseline", "fetch"]);
    fetch.expect_code(3);
    assert!(fetch.stderr_has("HTTP 403 (the job's token needs `actions: read`)"), "{}", fetch.stderr);
    assert_no_token(&fetch, &storage);
}

#[test]
fn an_old_baseline_is_used_with_a_warning_naming_its_age() {
    let storage = storage(baseline_archive());
    let mut fake = Fake::default();
    fake.by_sha.insert(BASE_SHA.into(), vec![run_json(11, BASE_SHA, 10)]);
    fake.artifacts.insert(11, vec![artifact(501, false)]);
    let api = api(fake, &storage);
    let run = on_pull_request(&api, "", &[], &["run", "--baseline", "github:base"]);
    run.expect_messages("baseline: main@1a2b3c4, 10 days old (run 11, on the base commit)\nwarning: the baseline (main@1a2b3c4, 10 days old (run 11, on the base commit)) is older than regression.max_baseline_age (7days)\n  warning: inconclusive: too few tasks to tell noise from change: 4 comparable task(s) (0 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 68.4% of runs with no change; with 4 trials that every run makes on both sides (`repeat: 4`, or adaptive trials with `min: 4`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("10 days old (run 11, on the base commit)) is older than regression.max_baseline_age (7days)"),
        "{}",
        run.stderr
    );
    let allowed = on_pull_request(&api, "regression: {baseline: 'github:base', max_baseline_age: 30d}", &[], &["run"]);
    allowed.expect_messages("baseline: main@1a2b3c4, 10 days old (run 11, on the base commit)\n  warning: inconclusive: too few tasks to tell noise from change: 4 comparable task(s) (0 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 68.4% of runs with no change; with 4 trials that every run makes on both sides (`repeat: 4`, or adaptive trials with `min: 4`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    allowed.expect_code(0);
    assert!(allowed.stderr_lacks("older than"), "{}", allowed.stderr);
}

fn one_run_with(archive: Vec<u8>) -> (Server, Server) {
    let storage = storage(archive);
    let mut fake = Fake::default();
    fake.by_sha.insert(BASE_SHA.into(), vec![run_json(12, BASE_SHA, 1)]);
    fake.artifacts.insert(12, vec![artifact(600, false)]);
    let api = api(fake, &storage);
    (api, storage)
}

/// `-o DIR` replaces a baseline evalgate fetched there, and nothing else: a directory of
/// the user's (`-o project`) is left whole and the fetch refused, naming it.
#[test]
fn fetch_never_deletes_a_directory_it_did_not_create() {
    let (api, _storage) = one_run_with(baseline_archive());
    let files = [("project/main.rs", "fn main() {}"), ("project/results.json", "mine")];
    let run = on_pull_request(&api, "", &files, &["baseline", "fetch", "-o", "project"]);
    run.expect_code(3);
    assert!(run.stderr_has("project is there and is not a baseline evalgate fetched"), "{}", run.stderr);
    assert_eq!(run.read("project/main.rs"), "fn main() {}");
    assert_eq!(run.read("project/results.json"), "mine");

    // A baseline it fetched is replaced by the next fetch.
    let twice = pull_request(&api, "", &[]).args(&["baseline", "fetch", "-o", "fresh"]);
    let twice = twice.run_via(&["sh", "-c", "\"$0\" \"$@\" && \"$0\" \"$@\""]);
    twice.expect_code(0);
    assert!(twice.read("fresh/results.json").contains("test.evals.fetch"));
}

/// An archive whose `results.json` inflates far past its own size is refused before it
/// fills the disk; nothing is left where the baseline goes.
#[test]
fn an_archive_that_inflates_too_far_is_refused() {
    let mut bytes = Vec::new();
    {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
        zip.start_file("results.json", zip::write::SimpleFileOptions::default()).unwrap();
        zip.write_all(&vec![b' '; 20 << 20]).unwrap();
        zip.finish().unwrap();
    }
    let (api, _storage) = one_run_with(bytes);
    let run = on_pull_request(&api, "", &[], &["baseline", "fetch", "-o", "base"]);
    run.expect_code(3);
    assert!(run.stderr_has("the most evalgate extracts"), "{}", run.stderr);
    assert!(!run.dir.join("base").exists());
    let left: Vec<_> = std::fs::read_dir(&run.dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().starts_with(".evalgate-baseline")), "{left:?}");
}
