//! The sticky PR comment: one comment per suite, found by a hidden marker on a comment the
//! token itself wrote, created once and then updated — never a second one. A comment that
//! cannot be posted is a warning: it never changes the gate. A pull request named with
//! `--pr` must be the one the results were produced for, or the comment is refused.

use super::api::GitHubApi;
use super::event::PullRequest;
use super::workflow_command::command;
use crate::report::markdown;
use crate::results::Results;

/// GitHub rejects comment bodies longer than this many characters.
pub const MAX_BODY: usize = 65_536;
/// Comments asked for a page (GitHub's maximum).
pub const PER_PAGE: usize = 100;
/// A guard against a server that always returns full pages: 10,000 comments.
const MAX_PAGES: u32 = 100;
/// The most of a suite id the marker keeps: a results file from a fork may hold any id.
const MAX_MARKER_ID: usize = 200;
/// A footer longer than this (an enormous report URL) is left out rather than crowd out
/// the summary.
const MAX_FOOTER: usize = 4096;

/// The GitHub calls the comment makes; a fake stands in for GitHub in tests, and a new
/// octocrab major touches only the implementation in `api`.
#[async_trait::async_trait]
pub trait CommentSink: Send + Sync {
    /// The login the token writes comments as (`github-actions[bot]` for `GITHUB_TOKEN`).
    async fn viewer(&self) -> Result<String, CommentError>;
    /// The commit the pull request's head is at now.
    async fn head(&self, pr: &PullRequest) -> Result<String, CommentError>;
    /// One page (1-based) of the pull request's comments, `PER_PAGE` at most.
    async fn list(&self, pr: &PullRequest, page: u32) -> Result<Vec<Comment>, CommentError>;
    async fn create(&self, pr: &PullRequest, body: &str) -> Result<(), CommentError>;
    async fn update(&self, pr: &PullRequest, id: u64, body: &str) -> Result<(), CommentError>;
}

/// The fields of a GitHub comment evalgate needs (octocrab's typed model wants many more,
/// and fails on a minimal answer).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    /// Who wrote it (`None` for a deleted account: never ours).
    #[serde(default)]
    pub user: Option<Author>,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct Author {
    pub login: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CommentError {
    /// 403 / 404: the token may not comment here (a fork's read-only token, say).
    #[error("GitHub refused the comment (HTTP {status}): {message}")]
    Forbidden { status: u16, message: String },
    #[error("the GitHub comment request failed: {0}")]
    Other(String),
    /// `--pr N` names a pull request the results were not produced for: refused, an error.
    #[error("{0}")]
    WrongPullRequest(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    Created,
    Updated(u64),
}

/// Keyed by suite, so two suites in one pull request keep two comments. Suite ids are
/// `[a-z0-9.-]` when loaded, but `evalgate comment` may read a results file from a fork:
/// anything else is replaced so the id cannot end the HTML comment.
pub fn marker(suite_id: &str) -> String {
    let id: String = suite_id
        .chars()
        .take(MAX_MARKER_ID)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_') { c } else { '-' })
        .collect();
    format!("<!-- evalgate:{id} -->")
}

/// The marker, the Markdown summary cut to fit (the verdict always stays), and a footer
/// naming the commit, the time and the run, so a comment left from an older run shows it.
pub fn body(results: &Results) -> String {
    let env = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
    let server = env("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
    let repo = env("GITHUB_REPOSITORY").map(|r| format!("{}/{r}", server.trim_end_matches('/')));
    let sha = super::event::head_sha();
    let link = super::report_link::line().map_or(String::new(), |l| format!("\n\n{l}"));
    let footer =
        format!("{link}\n\n{}", footer(&results.started_at, sha.as_deref(), repo.as_deref(), env("GITHUB_RUN_ID")));
    let footer = if footer.chars().count() > MAX_FOOTER { String::new() } else { footer };
    let head = format!("{}\n", marker(&results.suite.id));
    let room = MAX_BODY.saturating_sub(head.chars().count() + footer.chars().count());
    let results = crate::redact::data_ref(results);
    crate::redact::text(&format!("{head}{}{footer}", markdown::render_within(&results, room))).into_owned()
}

/// `Commit [`0123abc`](REPO/commit/SHA) · run started 2026-11-23 09:30:00 UTC · [Full
/// results of this run](REPO/actions/runs/ID)`, each part when it is known.
fn footer(started_at: &str, sha: Option<&str>, repo: Option<&str>, run_id: Option<String>) -> String {
    let mut parts = Vec::new();
    if let Some(sha) = sha {
        let short = &sha[..sha.len().min(7)];
        parts.push(match repo {
            Some(repo) => format!("Commit [`{short}`]({repo}/commit/{sha})"),
            None => format!("Commit `{short}`"),
        });
    }
    // Only a time that parses is shown: a results file from a fork is not ours to print.
    if let Ok(t) = humantime::parse_rfc3339_weak(started_at) {
        let utc = humantime::format_rfc3339_seconds(t).to_string();
        parts.push(format!("run started {} UTC", utc.trim_end_matches('Z').replace('T', " ")));
    }
    if let (Some(repo), Some(run)) = (repo, run_id) {
        parts.push(format!("[Full results of this run]({repo}/actions/runs/{run})"));
    }
    parts.join(" · ")
}

/// Updates the first comment the token itself wrote that starts with the suite's marker, or
/// creates one. Only the start counts, so a reply quoting the marker is never taken for ours,
/// and only our own comments do, so anyone else's comment that starts with the marker (which
/// its author could edit after evalgate wrote it) is never the sticky one. Who the token is
/// is asked once, when a comment with the marker is found.
pub async fn post_sticky(
    sink: &dyn CommentSink,
    pr: &PullRequest,
    suite_id: &str,
    body: &str,
) -> Result<Posted, CommentError> {
    let marker = marker(suite_id);
    let mut viewer = None;
    for page in 1..=MAX_PAGES {
        let comments = sink.list(pr, page).await?;
        for c in comments.iter().filter(|c| c.body.as_deref().is_some_and(|b| b.trim_start().starts_with(&marker))) {
            if viewer.is_none() {
                viewer = Some(sink.viewer().await?);
            }
            if c.user.as_ref().map(|u| &u.login) == viewer.as_ref() {
                sink.update(pr, c.id, body).await?;
                return Ok(Posted::Updated(c.id));
            }
        }
        if comments.len() < PER_PAGE {
            break;
        }
    }
    sink.create(pr, body).await?;
    Ok(Posted::Created)
}

/// `--pr N` is a claim the results file cannot back: in the fork-safe flow the number comes
/// from the fork's own artifact. N's head must be the commit the run tested, as the event
/// says (`workflow_run.head_sha`: GitHub's word, not the artifact's) and as the results
/// record; at least one of them must be known, and each one known must match.
pub async fn verify_pull_request(
    sink: &dyn CommentSink,
    pr: &PullRequest,
    event_commit: Option<String>,
    results: &Results,
) -> Result<(), CommentError> {
    let refused = |why: String| {
        CommentError::WrongPullRequest(format!("the comment on pull request #{} is refused: {why}", pr.number))
    };
    let recorded = results.plan.as_ref().and_then(|p| p.commit.as_deref());
    let recorded = match recorded.map(super::event::hex_sha) {
        Some(None) => return Err(refused("the results record a commit that is not a commit id".into())),
        Some(Some(sha)) => Some(sha),
        None => None,
    };
    let claims = [("the workflow run tested", event_commit), ("the results were produced for", recorded)];
    if claims.iter().all(|(_, c)| c.is_none()) {
        return Err(refused(
            "neither the event ($GITHUB_EVENT_PATH, $GITHUB_SHA) nor the results name the commit that was tested"
                .into(),
        ));
    }
    let head = sink.head(pr).await?;
    for (what, commit) in claims {
        if let Some(commit) = commit.filter(|c| !c.eq_ignore_ascii_case(&head)) {
            return Err(refused(format!("its head is {head}, but {what} {commit}")));
        }
    }
    Ok(())
}

/// Posts the sticky comment for `results` on the run's pull request (`pr`, from `--pr`,
/// overrides it, and is verified first). A missing token or pull request is a notice, a
/// failure a warning; a pull request the results are not for is refused: `Err`, and
/// nothing is posted.
pub async fn comment(results: &Results, pr: Option<u64>) -> Result<(), CommentError> {
    let notice = |message: &str| command("notice", &[("title", "evalgate".into())], message).emit();
    let Some(pull_request) = super::event::current(pr) else {
        notice("no pull request for this run (and no --pr): the comment is skipped");
        return Ok(());
    };
    let Some(token) = std::env::var("GITHUB_TOKEN").ok().filter(|t| !t.trim().is_empty()) else {
        notice("GITHUB_TOKEN is not set: the comment is skipped");
        return Ok(());
    };
    let posted = async {
        let api = GitHubApi::new(token)?;
        if pr.is_some() {
            verify_pull_request(&api, &pull_request, super::event::head_sha(), results).await?;
        }
        post_sticky(&api, &pull_request, &results.suite.id, &body(results)).await
    };
    let number = pull_request.number;
    match posted.await {
        Ok(Posted::Created) => crate::errln!("evalgate: commented on pull request #{number}"),
        Ok(Posted::Updated(id)) => crate::errln!("evalgate: updated comment {id} on pull request #{number}"),
        Err(e @ CommentError::WrongPullRequest(_)) => return Err(e),
        Err(e) => command("warning", &[("title", "evalgate".into())], &e.to_string()).emit(),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// GitHub in memory: comments by id, the pull request's head, and every call made. The
    /// token is `bot`.
    #[derive(Default)]
    struct FakeGitHub {
        comments: Mutex<Vec<Comment>>,
        head: String,
        calls: Mutex<Vec<String>>,
    }

    impl FakeGitHub {
        fn by(&self, login: &str, body: &str) {
            let mut all = self.comments.lock().unwrap();
            let id = all.len() as u64 + 1;
            all.push(Comment { id, body: Some(body.into()), user: Some(Author { login: login.into() }) });
        }
    }

    #[async_trait::async_trait]
    impl CommentSink for FakeGitHub {
        async fn viewer(&self) -> Result<String, CommentError> {
            self.calls.lock().unwrap().push("viewer".into());
            Ok("bot".into())
        }
        async fn head(&self, _: &PullRequest) -> Result<String, CommentError> {
            self.calls.lock().unwrap().push("head".into());
            Ok(self.head.clone())
        }
        async fn list(&self, _: &PullRequest, page: u32) -> Result<Vec<Comment>, CommentError> {
            self.calls.lock().unwrap().push(format!("list {page}"));
            let all = self.comments.lock().unwrap();
            Ok(all.iter().skip((page as usize - 1) * PER_PAGE).take(PER_PAGE).cloned().collect())
        }
        async fn create(&self, _: &PullRequest, body: &str) -> Result<(), CommentError> {
            self.calls.lock().unwrap().push("create".into());
            self.by("bot", body);
            Ok(())
        }
        async fn update(&self, _: &PullRequest, id: u64, body: &str) -> Result<(), CommentError> {
            self.calls.lock().unwrap().push(format!("update {id}"));
            let mut all = self.comments.lock().unwrap();
            all.iter_mut().find(|c| c.id == id).expect("exists").body = Some(body.into());
            Ok(())
        }
    }

    fn pr() -> PullRequest {
        PullRequest { owner: "o".into(), repo: "r".into(), number: 1 }
    }

    #[test]
    fn the_footer_names_the_commit_the_time_and_the_run() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let repo = Some("https://github.com/acme/bot");
        assert_eq!(
            footer("2026-11-23T09:30:00.250Z", Some(sha), repo, Some("42".into())),
            format!(
                "Commit [`0123456`](https://github.com/acme/bot/commit/{sha}) · run started 2026-11-23 09:30:00 UTC · [Full results of this run](https://github.com/acme/bot/actions/runs/42)"
            )
        );
        assert_eq!(
            footer("2026-11-23T09:30:00Z", Some(sha), None, None),
            "Commit `0123456` · run started 2026-11-23 09:30:00 UTC"
        );
        assert_eq!(footer("[click](https://evil)", None, repo, None), "");
    }

    #[test]
    fn the_marker_cannot_end_the_html_comment() {
        assert_eq!(marker("acme.evals.bot"), "<!-- evalgate:acme.evals.bot -->");
        assert_eq!(marker("x --> <b>y</b>"), "<!-- evalgate:x------b-y--b- -->");
    }

    #[tokio::test]
    async fn creates_once_then_updates_and_ignores_quotes_and_other_suites() {
        let gh = FakeGitHub::default();
        for i in 0..150 {
            gh.create(&pr(), &format!("chatter {i}")).await.unwrap();
        }
        gh.create(&pr(), "> <!-- evalgate:s -->\nquoted by a human").await.unwrap();
        gh.create(&pr(), "<!-- evalgate:other -->\nanother suite").await.unwrap();
        gh.calls.lock().unwrap().clear();

        let first = post_sticky(&gh, &pr(), "s", "<!-- evalgate:s -->\nv1").await.unwrap();
        assert_eq!(first, Posted::Created);
        let second = post_sticky(&gh, &pr(), "s", "<!-- evalgate:s -->\nv2").await.unwrap();
        assert_eq!(second, Posted::Updated(153));
        let calls = ["list 1", "list 2", "create", "list 1", "list 2", "viewer", "update 153"];
        assert_eq!(*gh.calls.lock().unwrap(), calls);
        let comments = gh.comments.lock().unwrap();
        assert_eq!(
            comments.iter().filter(|c| c.body.as_deref().unwrap().starts_with("<!-- evalgate:s -->")).count(),
            1
        );
    }

    #[tokio::test]
    async fn a_comment_someone_else_wrote_with_the_marker_is_never_the_sticky_one() {
        let gh = FakeGitHub::default();
        gh.by("mallory", "<!-- evalgate:s -->\n## ✅ evalgate: `s` passed");
        gh.by("bot", "<!-- evalgate:s -->\nours");
        assert_eq!(post_sticky(&gh, &pr(), "s", "<!-- evalgate:s -->\nv2").await.unwrap(), Posted::Updated(2));

        let gh = FakeGitHub::default();
        gh.by("mallory", "<!-- evalgate:s -->\n## ✅ evalgate: `s` passed");
        assert_eq!(post_sticky(&gh, &pr(), "s", "<!-- evalgate:s -->\nv1").await.unwrap(), Posted::Created);
        let comments = gh.comments.lock().unwrap();
        assert_eq!(comments[0].body.as_deref(), Some("<!-- evalgate:s -->\n## ✅ evalgate: `s` passed"));
        assert_eq!(comments.len(), 2);
    }

    fn results_for(commit: Option<&str>) -> Results {
        let mut results = crate::results::testing::results(Vec::new());
        results.plan = Some(crate::results::PlanFingerprint {
            definitions: "d".into(),
            tasks: 0,
            selection: Vec::new(),
            commit: commit.map(str::to_owned),
        });
        results
    }

    #[tokio::test]
    async fn a_named_pull_request_must_be_at_the_commit_the_results_are_for() {
        let (head, other) = ("0123456789abcdef0123456789abcdef01234567", "fedcba9876543210fedcba9876543210fedcba98");
        let gh = FakeGitHub { head: head.into(), ..FakeGitHub::default() };
        let verify = |event: Option<&str>, recorded: Option<&str>| {
            let (event, results, gh) = (event.map(str::to_owned), results_for(recorded), &gh);
            async move { verify_pull_request(gh, &pr(), event, &results).await.map_err(|e| e.to_string()) }
        };
        assert_eq!(verify(Some(head), Some(head)).await, Ok(()));
        assert_eq!(verify(Some(head), None).await, Ok(()));
        assert_eq!(verify(None, Some(&head.to_uppercase())).await, Ok(()));
        let refused = "the comment on pull request #1 is refused: ";
        assert_eq!(
            verify(Some(other), Some(head)).await.unwrap_err(),
            format!("{refused}its head is {head}, but the workflow run tested {other}")
        );
        assert_eq!(
            verify(Some(head), Some(other)).await.unwrap_err(),
            format!("{refused}its head is {head}, but the results were produced for {other}")
        );
        assert_eq!(
            verify(None, None).await.unwrap_err(),
            format!(
                "{refused}neither the event ($GITHUB_EVENT_PATH, $GITHUB_SHA) nor the results name the commit that was tested"
            )
        );
        assert_eq!(
            verify(Some(head), Some("main\n::error::x")).await.unwrap_err(),
            format!("{refused}the results record a commit that is not a commit id")
        );
    }

    #[test]
    fn the_body_stays_under_the_limit_whatever_the_suite_id() {
        let mut results = results_for(None);
        results.suite.id = "x".repeat(200_000);
        let body = body(&results);
        assert!(body.chars().count() <= MAX_BODY, "{} characters", body.chars().count());
        assert!(body.starts_with(&format!("<!-- evalgate:{} -->\n## ", "x".repeat(MAX_MARKER_ID))), "{}", &body[..300]);
    }
}
