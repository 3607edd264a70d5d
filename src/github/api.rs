//! `CommentSink` on GitHub's REST API through octocrab: its generic `get` / `post` / `patch`
//! with our own small structs, so a minimal response is enough and the verbs are GitHub's
//! documented ones. The base URI is `$GITHUB_API_URL`, so GitHub Enterprise works.

use std::time::Duration;

use serde_json::json;

use super::comment::{Comment, CommentError, CommentSink, PER_PAGE};
use super::event::PullRequest;

pub struct GitHubApi {
    client: octocrab::Octocrab,
}

impl GitHubApi {
    pub fn new(token: String) -> Result<GitHubApi, CommentError> {
        let api = std::env::var("GITHUB_API_URL").ok().filter(|u| !u.is_empty());
        let api = api.unwrap_or_else(|| "https://api.github.com".into());
        let client = octocrab::Octocrab::builder()
            .base_uri(api)
            .map_err(|e| CommentError::Other(format!("invalid GITHUB_API_URL: {e}")))?
            .personal_token(token)
            // A hung API must not hold the CI job: the comment is not worth a stuck gate.
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(30)))
            .set_write_timeout(Some(Duration::from_secs(30)))
            .build()
            .map_err(|e| CommentError::Other(e.to_string()))?;
        Ok(GitHubApi { client })
    }
}

/// 403 and 404 are what a token without write access gets (fork pull requests, missing
/// `pull-requests: write`): those are expected, the rest are failures.
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

/// The answer to a create or update; only that it is a JSON object matters.
#[derive(serde::Deserialize)]
struct Written {}

#[async_trait::async_trait]
impl CommentSink for GitHubApi {
    async fn list(&self, pr: &PullRequest, page: u32) -> Result<Vec<Comment>, CommentError> {
        let route = format!("/repos/{}/{}/issues/{}/comments", pr.owner, pr.repo, pr.number);
        let query = [("per_page", PER_PAGE.to_string()), ("page", page.to_string())];
        self.client.get(route, Some(&query)).await.map_err(classify)
    }

    async fn create(&self, pr: &PullRequest, body: &str) -> Result<(), CommentError> {
        let route = format!("/repos/{}/{}/issues/{}/comments", pr.owner, pr.repo, pr.number);
        let _: Written = self.client.post(route, Some(&json!({"body": body}))).await.map_err(classify)?;
        Ok(())
    }

    async fn update(&self, pr: &PullRequest, id: u64, body: &str) -> Result<(), CommentError> {
        let route = format!("/repos/{}/{}/issues/comments/{id}", pr.owner, pr.repo);
        let _: Written = self.client.patch(route, Some(&json!({"body": body}))).await.map_err(classify)?;
        Ok(())
    }
}
