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

/// The marker, the Markdown summary cut to fit (the verdict always stays), a link to the run.
pub fn body(results: &Results) -> String {
    let link = run_link().map(|l| format!("\n\n[Full results of this run]({l})")).unwrap_or_default();
    let head = format!("{}\n", marker(&results.suite.id));
    let room = MAX_BODY.saturating_sub(head.chars().count() + link.chars().count());
    let results = crate::redact::data_ref(results);
    crate::redact::text(&format!("{head}{}{link}", markdown::render_within(&results, room))).into_owned()
}

fn run_link() -> Option<String> {
    let server = std::env::var("GITHUB_SERVER_URL").ok().filter(|s| !s.is_empty());
    let server = server.unwrap_or_else(|| "https://github.com".into());
    let repo = std::env::var("GITHUB_REPOSITORY").ok().filter(|s| !s.is_empty())?;
    let run = std::env::var("GITHUB_RUN_ID").ok().filter(|s| !s.is_empty())?;
    Some(format!("{}/{repo}/actions/runs/{run}", server.trim_end_matches('/')))
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
