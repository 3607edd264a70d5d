//! The baseline from the base branch: `evalgate baseline fetch` and `--baseline github:base`.
//!
//! On GitHub Actions, the baseline of a pull request is what the same workflow measured on
//! the code it is merged into. In order: the newest successful run of this workflow on the
//! pull request's base commit, then on the merge base, then the newest successful run on the
//! base branch (on a push: on the pushed branch, this run excluded). The first of those runs
//! that still has an unexpired artifact named `evalgate-results` (what the action uploads)
//! is the baseline; its `results.json` files are extracted, and where it came from is said
//! ("main@1a2b3c4, 3 days old").
//!
//! The archive is downloaded from where GitHub redirects to, without the token: that host is
//! not GitHub's API and must not see it.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue, LOCATION, USER_AGENT};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::http_body::{BodyError, read_capped};

/// The `--baseline` value that means "fetch it from GitHub".
pub use crate::results::baseline_comparison::GITHUB_BASE as SOURCE;
/// The artifact the action uploads and `baseline fetch` looks for.
pub const ARTIFACT: &str = "evalgate-results";
/// Where a fetched baseline is extracted, relative to the working directory.
pub const DEFAULT_DIR: &str = ".evalgate/baseline";
/// `regression.max_baseline_age` unless the suite says otherwise.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// Runs looked at per query, at most (pages of 100).
const MAX_PAGES: u32 = 5;
const PER_PAGE: u32 = 100;
/// An artifact larger than this is not a results file.
const MAX_ARCHIVE: u64 = 256 * 1024 * 1024;
/// The most read of an API answer (a page of runs is some hundred kilobytes).
const MAX_API_ANSWER: usize = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{0}")]
    NotOnGitHub(String),
    #[error("{0}")]
    NotFound(String),
    #[error("GitHub API: {0}")]
    Api(String),
    #[error("the artifact of run {run}: {message}")]
    Archive { run: u64, message: String },
}

/// Where to look: read from the runner's environment (or given, in tests and by flags).
#[derive(Debug, Clone)]
pub struct Lookup {
    pub api: String,
    pub token: String,
    pub owner: String,
    pub repo: String,
    /// The workflow file (`ci.yml`) or id.
    pub workflow: String,
    /// The pull request's base commit and head commit, on a pull request.
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    /// The branch whose newest run is the fallback.
    pub branch: Option<String>,
    /// This run, never its own baseline.
    pub current_run: Option<u64>,
    pub artifact: String,
}

impl Lookup {
    /// From `GITHUB_*`: the repository, the workflow (`GITHUB_WORKFLOW_REF`), the event's base
    /// and head, the token. `branch` overrides the base branch.
    pub fn from_env(artifact: &str, branch: Option<&str>) -> Result<Lookup, FetchError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let outside = |what: &str| {
            FetchError::NotOnGitHub(format!("{what} is not set: a baseline from GitHub needs a GitHub Actions run"))
        };
        let repository = var("GITHUB_REPOSITORY").ok_or_else(|| outside("GITHUB_REPOSITORY"))?;
        let (owner, repo) = repository
            .split_once('/')
            .ok_or_else(|| FetchError::NotOnGitHub(format!("GITHUB_REPOSITORY `{repository}` is not owner/name")))?;
        let workflow_ref = var("GITHUB_WORKFLOW_REF").ok_or_else(|| outside("GITHUB_WORKFLOW_REF"))?;
        let workflow = workflow_file(&workflow_ref).ok_or_else(|| {
            FetchError::NotOnGitHub(format!("GITHUB_WORKFLOW_REF `{workflow_ref}` names no workflow file"))
        })?;
        let token = var("GITHUB_TOKEN").ok_or_else(|| {
            FetchError::NotOnGitHub(
                "GITHUB_TOKEN is not set: the action passes it; the job needs `actions: read`".into(),
            )
        })?;
        let event = super::event::payload().unwrap_or_default();
        let text = |pointer: &str| event.pointer(pointer).and_then(|v| v.as_str()).map(str::to_owned);
        let base_branch =
            text("/pull_request/base/ref").or_else(|| var("GITHUB_BASE_REF")).or_else(|| var("GITHUB_REF_NAME"));
        Ok(Lookup {
            api: var("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into()),
            token,
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            workflow,
            base_sha: text("/pull_request/base/sha"),
            head_sha: text("/pull_request/head/sha"),
            branch: branch.map(str::to_owned).or(base_branch),
            current_run: var("GITHUB_RUN_ID").and_then(|id| id.parse().ok()),
            artifact: artifact.to_owned(),
        })
    }
}

/// `owner/repo/.github/workflows/ci.yml@refs/heads/main` → `ci.yml`.
fn workflow_file(workflow_ref: &str) -> Option<String> {
    let path = workflow_ref.split('@').next()?;
    let file = path.split_once("/.github/workflows/")?.1;
    (!file.is_empty()).then(|| file.to_owned())
}

/// The baseline that was fetched, and where it came from.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Where the artifact's `results.json` files were extracted.
    pub dir: PathBuf,
    pub run_id: u64,
    pub sha: String,
    pub branch: String,
    /// Which of the three places it was found in.
    pub found_on: &'static str,
    pub age: Duration,
}

impl Fetched {
    /// `main@1a2b3c4, 3 days old (run 123, on the base commit)`.
    pub fn describe(&self) -> String {
        let short = self.sha.get(..7).unwrap_or(&self.sha);
        format!("{}@{short}, {} (run {}, {})", self.branch, age(self.age), self.run_id, self.found_on)
    }

    /// A warning when the baseline is older than `max`.
    pub fn stale(&self, max: Duration) -> Option<String> {
        (self.age > max).then(|| {
            format!(
                "the baseline ({}) is older than regression.max_baseline_age ({})",
                self.describe(),
                humantime::format_duration(max)
            )
        })
    }

    /// The results file for `suite_id`: `<suite>/results.json` (a run of several suites),
    /// else `results.json`.
    pub fn results_for(&self, suite_id: &str) -> PathBuf {
        let own = self.dir.join(suite_id).join("results.json");
        if own.is_file() { own } else { self.dir.join("results.json") }
    }
}

fn age(d: Duration) -> String {
    let hours = d.as_secs() / 3600;
    match hours {
        0 => "less than an hour old".into(),
        1..24 => format!("{hours} {} old", crate::gate::plural(hours as usize, "hour", "hours")),
        _ => {
            let days = hours / 24;
            format!("{days} {} old", crate::gate::plural(days as usize, "day", "days"))
        }
    }
}

#[derive(Debug, Deserialize)]
struct Runs {
    workflow_runs: Vec<Run>,
}

#[derive(Debug, Clone, Deserialize)]
struct Run {
    id: u64,
    head_sha: String,
    #[serde(default)]
    head_branch: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    /// What started it: `push`, `pull_request`, …
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    head_repository: Option<Repository>,
}

#[derive(Debug, Clone, Deserialize)]
struct Repository {
    full_name: String,
}

impl Run {
    /// Whether the run speaks for this repository's own code: its commit is in this
    /// repository and no pull request started it. A fork's `pull_request` run on a branch it
    /// named `main`, or any pull request's run, is never a baseline; a run that does not say
    /// where it came from is not either.
    fn is_trusted(&self, owner: &str, repo: &str) -> bool {
        let here =
            self.head_repository.as_ref().is_some_and(|r| r.full_name.eq_ignore_ascii_case(&format!("{owner}/{repo}")));
        let event = self.event.as_deref().unwrap_or("pull_request");
        here && !event.starts_with("pull_request")
    }
}

#[derive(Debug, Deserialize)]
struct Artifacts {
    artifacts: Vec<Artifact>,
}

#[derive(Debug, Deserialize)]
struct Artifact {
    id: u64,
    name: String,
    #[serde(default)]
    expired: bool,
    #[serde(default)]
    size_in_bytes: u64,
}

#[derive(Debug, Deserialize)]
struct Compare {
    merge_base_commit: Commit,
}

#[derive(Debug, Deserialize)]
struct Commit {
    sha: String,
}

struct Api {
    http: reqwest::Client,
    lookup: Lookup,
}

impl Api {
    fn new(lookup: Lookup) -> Result<Api, FetchError> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/vnd.github+json"));
        headers.insert("x-github-api-version", HeaderValue::from_static("2022-11-28"));
        headers.insert(USER_AGENT, HeaderValue::from_static(concat!("evalgate/", env!("CARGO_PKG_VERSION"))));
        let http = crate::http_body::client_builder()
            .default_headers(headers)
            // The archive's redirect is followed by hand, without the token.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| FetchError::Api(e.to_string()))?;
        Ok(Api { http, lookup })
    }

    fn url(&self, route: &str) -> String {
        format!("{}/repos/{}/{}{route}", self.lookup.api.trim_end_matches('/'), self.lookup.owner, self.lookup.repo)
    }

    async fn get(&self, route: &str, query: &[(&str, String)]) -> Result<reqwest::Response, FetchError> {
        let mut token = HeaderValue::from_str(&format!("Bearer {}", self.lookup.token))
            .map_err(|_| FetchError::NotOnGitHub("GITHUB_TOKEN is not a valid header value".into()))?;
        token.set_sensitive(true);
        let url = reqwest::Url::parse_with_params(&self.url(route), query)
            .map_err(|e| FetchError::NotOnGitHub(format!("GITHUB_API_URL: {e}")))?;
        let response = self
            .http
            .get(url)
            .header(AUTHORIZATION, token)
            .send()
            .await
            .map_err(|e| FetchError::Api(format!("GET {route}: {}", without_url(e))))?;
        let status = response.status();
        if status.is_success() || status.is_redirection() {
            return Ok(response);
        }
        let body = read_capped(response, MAX_API_ANSWER).await.unwrap_or_default();
        let body = String::from_utf8_lossy(&body);
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
            .unwrap_or_default();
        let hint = match status {
            StatusCode::FORBIDDEN | StatusCode::NOT_FOUND => " (the job's token needs `actions: read`)",
            _ => "",
        };
        Err(FetchError::Api(format!("GET {route}: HTTP {}{hint}: {message}", status.as_u16())))
    }

    async fn json<T: DeserializeOwned>(&self, route: &str, query: &[(&str, String)]) -> Result<T, FetchError> {
        let response = self.get(route, query).await?;
        let text = read_capped(response, MAX_API_ANSWER)
            .await
            .map_err(|e| FetchError::Api(format!("GET {route}: {}", body_error(e))))?;
        serde_json::from_slice(&text).map_err(|e| FetchError::Api(format!("GET {route}: unexpected answer: {e}")))
    }

    /// Successful runs of the workflow matching `filter`, newest first, page by page.
    async fn runs(&self, filter: (&str, &str), page: u32) -> Result<Vec<Run>, FetchError> {
        let route = format!("/actions/workflows/{}/runs", self.lookup.workflow);
        let query = [
            (filter.0, filter.1.to_owned()),
            ("status", "success".to_owned()),
            ("per_page", PER_PAGE.to_string()),
            ("page", page.to_string()),
        ];
        let runs: Runs = self.json(&route, &query).await?;
        Ok(runs.workflow_runs)
    }

    /// The run's unexpired artifact of our name.
    async fn artifact(&self, run: u64) -> Result<Option<Artifact>, FetchError> {
        let route = format!("/actions/runs/{run}/artifacts");
        let query = [("name", self.lookup.artifact.clone()), ("per_page", PER_PAGE.to_string())];
        let list: Artifacts = self.json(&route, &query).await?;
        Ok(list.artifacts.into_iter().find(|a| a.name == self.lookup.artifact && !a.expired))
    }

    async fn merge_base(&self) -> Result<Option<String>, FetchError> {
        let (Some(base), Some(head)) = (&self.lookup.base_sha, &self.lookup.head_sha) else { return Ok(None) };
        let compare: Compare = self.json(&format!("/compare/{base}...{head}"), &[]).await?;
        Ok(Some(compare.merge_base_commit.sha).filter(|sha| sha != base))
    }

    /// The archive: GitHub answers with a redirect to short-lived storage, fetched without
    /// the token.
    async fn download(&self, run: u64, artifact: &Artifact) -> Result<Vec<u8>, FetchError> {
        let archive = |message: String| FetchError::Archive { run, message };
        if artifact.size_in_bytes > MAX_ARCHIVE {
            return Err(archive(format!("{} bytes is more than a results artifact can be", artifact.size_in_bytes)));
        }
        let route = format!("/actions/artifacts/{}/zip", artifact.id);
        let response = self.get(&route, &[]).await?;
        let response = if response.status().is_redirection() {
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| archive("a redirect without a location".into()))?
                .to_owned();
            let next = self.http.get(&location).send().await.map_err(|e| archive(without_url(e)))?;
            if !next.status().is_success() {
                return Err(archive(format!("download: HTTP {}", next.status().as_u16())));
            }
            next
        } else {
            response
        };
        read_capped(response, MAX_ARCHIVE as usize).await.map_err(|e| match e {
            BodyError::TooLarge { .. } => archive("the archive is larger than a results artifact can be".into()),
            BodyError::Read(e) => archive(without_url(e)),
        })
    }
}

fn body_error(e: BodyError) -> String {
    match e {
        BodyError::Read(e) => without_url(e),
        BodyError::TooLarge { cap, .. } => format!("the answer is {}", BodyError::too_large(cap)),
    }
}

/// The storage URL carries a signature: errors name the failure, not the address.
fn without_url(e: reqwest::Error) -> String {
    e.without_url().to_string()
}

/// The baseline of this process's GitHub run, fetched once into `DEFAULT_DIR` however many
/// suites ask.
pub fn fetch_once() -> &'static Result<Fetched, String> {
    static FETCHED: std::sync::OnceLock<Result<Fetched, String>> = std::sync::OnceLock::new();
    FETCHED.get_or_init(|| {
        let fetched = fetch_blocking(ARTIFACT, None, Path::new(DEFAULT_DIR)).map_err(|e| e.to_string())?;
        crate::errln!("baseline: {}", fetched.describe());
        Ok(fetched)
    })
}

/// `fetch` from the runner's environment, on a runtime of its own.
pub fn fetch_blocking(artifact: &str, branch: Option<&str>, dir: &Path) -> Result<Fetched, FetchError> {
    let lookup = Lookup::from_env(artifact, branch)?;
    let runtime = crate::error::runtime().map_err(|e| FetchError::Api(e.to_string()))?;
    runtime.block_on(fetch(lookup, dir))
}

/// Finds the baseline run, downloads its artifact and extracts its `results.json` files
/// into `dir` (emptied first).
pub async fn fetch(lookup: Lookup, dir: &Path) -> Result<Fetched, FetchError> {
    let api = Api::new(lookup)?;
    let lookup = &api.lookup;
    let mut places: Vec<(&'static str, (&str, String))> = Vec::new();
    if let Some(base) = &lookup.base_sha {
        places.push(("on the base commit", ("head_sha", base.clone())));
    }
    if let Some(merge_base) = api.merge_base().await? {
        places.push(("on the merge base", ("head_sha", merge_base)));
    }
    if let Some(branch) = &lookup.branch {
        places.push(("the newest on the branch", ("branch", branch.clone())));
    }
    if places.is_empty() {
        return Err(FetchError::NotOnGitHub(
            "no base commit or branch to look on: run on a pull request or a push, or pass --branch".into(),
        ));
    }
    let mut looked = Vec::new();
    for (found_on, (key, value)) in &places {
        for page in 1..=MAX_PAGES {
            let runs = api.runs((key, value), page).await?;
            let last = runs.len() < PER_PAGE as usize;
            let trusted = |r: &Run| Some(r.id) != lookup.current_run && r.is_trusted(&lookup.owner, &lookup.repo);
            for run in runs.into_iter().filter(trusted) {
                if let Some(artifact) = api.artifact(run.id).await? {
                    let bytes = api.download(run.id, &artifact).await?;
                    extract(&bytes, dir).map_err(|message| FetchError::Archive { run: run.id, message })?;
                    return Ok(Fetched {
                        dir: dir.to_owned(),
                        run_id: run.id,
                        branch: run.head_branch.clone().or_else(|| lookup.branch.clone()).unwrap_or_default(),
                        sha: run.head_sha,
                        found_on,
                        age: run
                            .updated_at
                            .as_deref()
                            .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
                            .and_then(|t| SystemTime::now().duration_since(t).ok())
                            .unwrap_or_default(),
                    });
                }
            }
            if last {
                break;
            }
        }
        looked.push(format!("{key}={value}"));
    }
    Err(FetchError::NotFound(format!(
        "no successful run of workflow `{}` with an unexpired `{}` artifact ({})",
        lookup.workflow,
        lookup.artifact,
        looked.join(", ")
    )))
}

/// At most this many entries in an archive, this many bytes extracted, and this many times
/// the archive's size: a few kilobytes of zip can hold gigabytes of zeros.
const MAX_ENTRIES: usize = 10_000;
const MAX_EXTRACTED: u64 = MAX_ARCHIVE;
const MAX_RATIO: u64 = 100;
/// Left in a directory evalgate extracted a baseline into: the next fetch may replace it.
const MARKER: &str = ".evalgate-baseline";

/// Writes every `results.json` of the archive under `dir`, at its path in the archive: into a
/// new directory beside it, which then takes the place of `dir`. Paths that would leave `dir`
/// are refused, and so is `dir` when it is there and not a baseline evalgate extracted (`-o
/// project` must never delete a project).
fn extract(bytes: &[u8], dir: &Path) -> Result<(), String> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| format!("not a zip archive: {e}"))?;
    if archive.len() > MAX_ENTRIES {
        return Err(format!("it holds {} entries, more than the {MAX_ENTRIES} evalgate reads", archive.len()));
    }
    if dir.exists() && !is_baseline(dir) {
        return Err(format!(
            "{} is there and is not a baseline evalgate fetched: nothing was written; give a new directory (-o) or remove it",
            dir.display()
        ));
    }
    let beside = crate::files::parent(dir);
    std::fs::create_dir_all(beside).map_err(|e| format!("{}: {e}", beside.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".evalgate-baseline-")
        .tempdir_in(beside)
        .map_err(|e| format!("{}: {e}", beside.display()))?;
    let budget = MAX_EXTRACTED.min(bytes.len() as u64 * MAX_RATIO);
    let (mut found, mut written) = (0, 0u64);
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| e.to_string())?;
        // `enclosed_name` refuses a path that would leave `dir` (`..`, absolute).
        let Some(path) = entry.enclosed_name() else { continue };
        if path.file_name().is_none_or(|n| n != "results.json") {
            continue;
        }
        let target = staging.path().join(&path);
        let shown = dir.join(&path);
        std::fs::create_dir_all(crate::files::parent(&target)).map_err(|e| format!("{}: {e}", shown.display()))?;
        let mut file = std::fs::File::create_new(&target).map_err(|e| format!("{}: {e}", shown.display()))?;
        // Counted as read, not as the entry's header says.
        written += std::io::copy(&mut (&mut entry).take(budget - written + 1), &mut file)
            .map_err(|e| format!("{}: {e}", shown.display()))?;
        if written > budget {
            return Err(format!(
                "its results.json files come to more than {budget} bytes, the most evalgate extracts ({MAX_RATIO} times the archive's {} bytes, at most {} MiB)",
                bytes.len(),
                MAX_EXTRACTED >> 20
            ));
        }
        found += 1;
    }
    if found == 0 {
        return Err("it holds no results.json".into());
    }
    std::fs::write(staging.path().join(MARKER), "").map_err(|e| format!("{}: {e}", beside.display()))?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("cannot replace {}: {e}", dir.display()))?;
    }
    std::fs::rename(staging.keep(), dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// Whether `dir` holds what [`extract`] writes and nothing else: its marker, directories and
/// `results.json` files (no link, nothing a user put there).
fn is_baseline(dir: &Path) -> bool {
    fn only_results(dir: &Path) -> bool {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.into_iter().all(|e| {
                let Ok(e) = e else { return false };
                match e.file_type() {
                    Ok(kind) if kind.is_dir() => only_results(&e.path()),
                    Ok(kind) => kind.is_file() && (e.file_name() == "results.json" || e.path() == dir.join(MARKER)),
                    Err(_) => false,
                }
            })
        })
    }
    let real_dir = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
    real_dir && std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file()) && only_results(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workflow_file_comes_from_the_workflow_ref() {
        assert_eq!(workflow_file("acme/bot/.github/workflows/ci.yml@refs/pull/5/merge").as_deref(), Some("ci.yml"));
        assert_eq!(
            workflow_file("acme/bot/.github/workflows/evals.yaml@refs/heads/main").as_deref(),
            Some("evals.yaml")
        );
        assert_eq!(workflow_file("acme/bot@refs/heads/main"), None);
    }

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(age(Duration::from_secs(60)), "less than an hour old");
        assert_eq!(age(Duration::from_secs(3600)), "1 hour old");
        assert_eq!(age(Duration::from_secs(5 * 3600)), "5 hours old");
        assert_eq!(age(Duration::from_secs(3 * 86400 + 7)), "3 days old");
    }

    #[test]
    fn an_archive_entry_cannot_leave_the_directory() {
        let mut bytes = Vec::new();
        {
            let mut zip = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
            let options = zip::write::SimpleFileOptions::default();
            zip.start_file("../escape/results.json", options).unwrap();
            std::io::Write::write_all(&mut zip, b"{}").unwrap();
            zip.start_file("suite-a/results.json", options).unwrap();
            std::io::Write::write_all(&mut zip, b"{\"a\":1}").unwrap();
            zip.finish().unwrap();
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("baseline");
        extract(&bytes, &dir).unwrap();
        assert!(!tmp.path().join("escape").exists());
        assert_eq!(std::fs::read_to_string(dir.join("suite-a/results.json")).unwrap(), "{\"a\":1}");
    }

    #[test]
    fn an_archive_of_too_many_entries_is_refused() {
        let archive = |entries: usize| {
            let mut bytes = Vec::new();
            let mut zip = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
            for i in 0..entries {
                zip.start_file(format!("s{i}/results.json"), zip::write::SimpleFileOptions::default()).unwrap();
            }
            zip.finish().unwrap();
            bytes
        };
        let tmp = tempfile::tempdir().unwrap();
        let err = extract(&archive(MAX_ENTRIES + 1), &tmp.path().join("a")).unwrap_err();
        assert!(err.contains("more than the 10000 evalgate reads"), "{err}");
        assert!(!tmp.path().join("a").exists());
        extract(&archive(3), &tmp.path().join("b")).unwrap();
        assert!(tmp.path().join("b/s2/results.json").exists());
    }
}
