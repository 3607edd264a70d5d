//! The sticky PR comment: one comment per suite, found by a hidden marker, created once
//! and then updated — never a second one. A comment that cannot be posted is a warning:
//! it never changes the gate.

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

/// The three comment calls evalgate makes; a fake stands in for GitHub in tests, and a
/// new octocrab major touches only the implementation in `api`.
#[async_trait::async_trait]
pub trait CommentSink: Send + Sync {
    /// One page (1-based) of the pull request's comments, `PER_PAGE` at most.
    async fn list(&self, pr: &PullRequest, page: u32) -> Result<Vec<Comment>, CommentError>;
    async fn create(&self, pr: &PullRequest, body: &str) -> Result<(), CommentError>;
    async fn update(&self, pr: &PullRequest, id: u64, body: &str) -> Result<(), CommentError>;
}

/// The two fields of a GitHub comment evalgate needs (octocrab's typed model wants many
/// more, and fails on a minimal answer).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CommentError {
    /// 403 / 404: the token may not comment here (a fork's read-only token, say).
    #[error("GitHub refused the comment (HTTP {status}): {message}")]
    Forbidden { status: u16, message: String },
    #[error("the GitHub comment request failed: {0}")]
    Other(String),
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
    let id: String =
        suite_id.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_') { c } else { '-' }).collect();
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

/// Updates the first comment that starts with the suite's marker, or creates one. Only the
/// start counts, so a reply quoting the marker is never taken for ours.
pub async fn post_sticky(
    sink: &dyn CommentSink,
    pr: &PullRequest,
    suite_id: &str,
    body: &str,
) -> Result<Posted, CommentError> {
    let marker = marker(suite_id);
    for page in 1..=MAX_PAGES {
        let comments = sink.list(pr, page).await?;
        if let Some(c) =
            comments.iter().find(|c| c.body.as_deref().is_some_and(|b| b.trim_start().starts_with(&marker)))
        {
            sink.update(pr, c.id, body).await?;
            return Ok(Posted::Updated(c.id));
        }
        if comments.len() < PER_PAGE {
            break;
        }
    }
    sink.create(pr, body).await?;
    Ok(Posted::Created)
}

/// Posts the sticky comment for `results` on the run's pull request (`pr` overrides it).
/// A missing token or pull request is a notice, a refusal or failure a warning.
pub async fn comment(results: &Results, pr: Option<u64>) {
    let notice = |message: &str| crate::outln!("{}", command("notice", &[("title", "evalgate".into())], message));
    let Some(pr) = super::event::current(pr) else {
        notice("no pull request for this run (and no --pr): the comment is skipped");
        return;
    };
    let Some(token) = std::env::var("GITHUB_TOKEN").ok().filter(|t| !t.trim().is_empty()) else {
        notice("GITHUB_TOKEN is not set: the comment is skipped");
        return;
    };
    let posted = match GitHubApi::new(token) {
        Ok(api) => post_sticky(&api, &pr, &results.suite.id, &body(results)).await,
        Err(e) => Err(e),
    };
    match posted {
        Ok(Posted::Created) => crate::errln!("evalgate: commented on pull request #{}", pr.number),
        Ok(Posted::Updated(id)) => crate::errln!("evalgate: updated comment {id} on pull request #{}", pr.number),
        Err(e) => crate::outln!("{}", command("warning", &[("title", "evalgate".into())], &e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// GitHub in memory: comments by id, and every call made.
    #[derive(Default)]
    struct FakeGitHub {
        comments: Mutex<Vec<Comment>>,
        calls: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl CommentSink for FakeGitHub {
        async fn list(&self, _: &PullRequest, page: u32) -> Result<Vec<Comment>, CommentError> {
            self.calls.lock().unwrap().push(format!("list {page}"));
            let all = self.comments.lock().unwrap();
            Ok(all.iter().skip((page as usize - 1) * PER_PAGE).take(PER_PAGE).cloned().collect())
        }
        async fn create(&self, _: &PullRequest, body: &str) -> Result<(), CommentError> {
            self.calls.lock().unwrap().push("create".into());
            let mut all = self.comments.lock().unwrap();
            let id = all.len() as u64 + 1;
            all.push(Comment { id, body: Some(body.into()) });
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
        assert_eq!(*gh.calls.lock().unwrap(), ["list 1", "list 2", "create", "list 1", "list 2", "update 153"]);
        let comments = gh.comments.lock().unwrap();
        assert_eq!(
            comments.iter().filter(|c| c.body.as_deref().unwrap().starts_with("<!-- evalgate:s -->")).count(),
            1
        );
    }
}
