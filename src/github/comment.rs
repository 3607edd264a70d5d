//! The sticky PR comment: one comment per suite, found by a hidden marker, created once
//! and then updated — never a second one.

use serde::Deserialize;
use serde_json::json;

use super::event::PullRequest;
use crate::report::markdown;
use crate::results::Results;

/// GitHub rejects comment bodies longer than this.
pub const MAX_BODY: usize = 65_536;
const PER_PAGE: usize = 100;

/// The comment calls evalgate makes; a fake stands in for GitHub in tests.
#[async_trait::async_trait]
pub trait CommentSink: Send + Sync {
    async fn list(&self, pr: &PullRequest, page: u32) -> Result<Vec<Comment>, CommentError>;
    async fn create(&self, pr: &PullRequest, body: &str) -> Result<(), CommentError>;
    async fn update(&self, pr: &PullRequest, id: u64, body: &str) -> Result<(), CommentError>;
}

#[derive(Debug, Clone, Deserialize)]
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
    #[error("GitHub comment request failed: {0}")]
    Other(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    Created,
    Updated(u64),
}

pub fn marker(suite_id: &str) -> String {
    format!("<!-- evalgate:{suite_id} -->")
}

/// The body: the marker, the Markdown summary cut to fit, and a link to the run.
pub fn body(results: &Results) -> String {
    let link = run_link().map(|l| format!("\n\n[Full results of this run]({l})")).unwrap_or_default();
    let head = format!("{}\n", marker(&results.suite.id));
    let room = MAX_BODY - head.chars().count() - link.chars().count();
    format!("{head}{}{link}", markdown::render_within(results, room))
}

fn run_link() -> Option<String> {
    let server = std::env::var("GITHUB_SERVER_URL").unwrap_or_else(|_| "https://github.com".into());
    let repo = std::env::var("GITHUB_REPOSITORY").ok()?;
    let run = std::env::var("GITHUB_RUN_ID").ok()?;
    Some(format!("{server}/{repo}/actions/runs/{run}"))
}

/// Updates the comment that carries the suite's marker, or creates it.
pub async fn post_sticky(
    sink: &dyn CommentSink,
    pr: &PullRequest,
    suite_id: &str,
    body: &str,
) -> Result<Posted, CommentError> {
    let marker = marker(suite_id);
    let mut page = 1;
    loop {
        let comments = sink.list(pr, page).await?;
        if let Some(c) = comments.iter().find(|c| c.body.as_deref().is_some_and(|b| b.contains(&marker))) {
            sink.update(pr, c.id, body).await?;
            return Ok(Posted::Updated(c.id));
        }
        if comments.len() < PER_PAGE {
            break;
        }
        page += 1;
    }
    sink.create(pr, body).await?;
    Ok(Posted::Created)
}

/// GitHub's REST API through octocrab (`$GITHUB_API_URL`, so GitHub Enterprise works).
pub struct GitHubSink {
    client: octocrab::Octocrab,
}

impl GitHubSink {
    pub fn new(token: String) -> Result<GitHubSink, CommentError> {
        let api = std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".into());
        let client = octocrab::Octocrab::builder()
            .base_uri(api)
            .and_then(|b| b.personal_token(token).build())
            .map_err(|e| CommentError::Other(e.to_string()))?;
        Ok(GitHubSink { client })
    }
}

fn classify(e: octocrab::Error) -> CommentError {
    match e {
        octocrab::Error::GitHub { source, .. } if matches!(source.status_code.as_u16(), 403 | 404) => {
            CommentError::Forbidden { status: source.status_code.as_u16(), message: source.message }
        }
        octocrab::Error::GitHub { source, .. } => {
            CommentError::Other(format!("HTTP {}: {}", source.status_code.as_u16(), source.message))
        }
        other => CommentError::Other(other.to_string()),
    }
}

#[async_trait::async_trait]
impl CommentSink for GitHubSink {
    async fn list(&self, pr: &PullRequest, page: u32) -> Result<Vec<Comment>, CommentError> {
        let route = format!("/repos/{}/{}/issues/{}/comments", pr.owner, pr.repo, pr.number);
        let query = [("per_page", PER_PAGE.to_string()), ("page", page.to_string())];
        self.client.get(route, Some(&query)).await.map_err(classify)
    }

    async fn create(&self, pr: &PullRequest, body: &str) -> Result<(), CommentError> {
        let route = format!("/repos/{}/{}/issues/{}/comments", pr.owner, pr.repo, pr.number);
        let _: serde_json::Value = self.client.post(route, Some(&json!({"body": body}))).await.map_err(classify)?;
        Ok(())
    }

    async fn update(&self, pr: &PullRequest, id: u64, body: &str) -> Result<(), CommentError> {
        let route = format!("/repos/{}/{}/issues/comments/{id}", pr.owner, pr.repo);
        let _: serde_json::Value = self.client.patch(route, Some(&json!({"body": body}))).await.map_err(classify)?;
        Ok(())
    }
}

/// Posts the sticky comment for `results`: a missing token or PR is a notice, a refusal a
/// warning; neither changes the gate.
pub async fn comment(results: &Results) {
    let Some(pr) = super::event::current() else {
        println!("::notice title=evalgate::no pull request for this run: the comment is skipped");
        return;
    };
    let Some(token) = std::env::var("GITHUB_TOKEN").ok().filter(|t| !t.is_empty()) else {
        println!("::notice title=evalgate::GITHUB_TOKEN is not set: the comment is skipped");
        return;
    };
    let sink = match GitHubSink::new(token) {
        Ok(s) => s,
        Err(e) => {
            println!("::warning title=evalgate::{e}");
            return;
        }
    };
    match post_sticky(&sink, &pr, &results.suite.id, &body(results)).await {
        Ok(Posted::Created) => eprintln!("evalgate: commented on pull request #{}", pr.number),
        Ok(Posted::Updated(id)) => eprintln!("evalgate: updated comment {id} on pull request #{}", pr.number),
        Err(e) => println!("::warning title=evalgate::{}", super::commands::escape_data(&e.to_string())),
    }
}
