//! `CommentSink` on GitHub's REST API through octocrab: its raw `_get` / `_post` / `_patch`,
//! each answer read up to a cap into our own small structs, so a minimal response is enough
//! and the verbs are GitHub's documented ones. The base URI is `$GITHUB_API_URL`, so GitHub
//! Enterprise works.

use std::time::Duration;

use serde_json::json;

use super::event::PullRequest;
use super::pr_comment::{Comment, CommentError, CommentSink, PER_PAGE};

pub struct GitHubApi {
    client: octocrab::Octocrab,
    /// GitHub's GraphQL endpoint, and a client based there: its path is not under the REST
    /// base on GitHub Enterprise (`/api/graphql` beside `/api/v3`), which octocrab would
    /// prefix.
    graphql: (octocrab::Octocrab, String),
}

impl GitHubApi {
    pub fn new(token: String) -> Result<GitHubApi, CommentError> {
        let env = |name| std::env::var(name).ok().filter(|u: &String| !u.is_empty());
        let api = env("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into());
        let graphql =
            env("GITHUB_GRAPHQL_URL").unwrap_or_else(|| match api.trim_end_matches('/').strip_suffix("/v3") {
                Some(enterprise) => format!("{enterprise}/graphql"),
                None => format!("{}/graphql", api.trim_end_matches('/')),
            });
        let graphql_path = graphql
            .parse::<hyper::Uri>()
            .map_err(|e| CommentError::Other(format!("invalid GITHUB_GRAPHQL_URL: {e}")))?
            .path()
            .to_owned();
        let client = |base: String, name: &str| {
            octocrab::Octocrab::builder()
                .base_uri(base)
                .map_err(|e| CommentError::Other(format!("invalid {name}: {e}")))?
                .personal_token(token.clone())
                // A hung API must not hold the CI job: the comment is not worth a stuck gate.
                .set_connect_timeout(Some(Duration::from_secs(10)))
                .set_read_timeout(Some(Duration::from_secs(30)))
                .set_write_timeout(Some(Duration::from_secs(30)))
                .build()
                .map_err(|e| CommentError::Other(e.to_string()))
        };
        Ok(GitHubApi {
            client: client(api, "GITHUB_API_URL")?,
            graphql: (client(graphql, "GITHUB_GRAPHQL_URL")?, graphql_path),
        })
    }
}

/// The answer to a create or update; only that it is a JSON object matters.
#[derive(serde::Deserialize)]
struct Written {}

/// The most read of one answer: a page of comments is some hundred kilobytes.
const MAX_ANSWER: usize = 16 << 20;

/// The answer to a request as `T`, its body read up to [`MAX_ANSWER`] (octocrab's own
/// `get`/`post` read a body to its end, however long).
async fn answer<B, T>(response: octocrab::Result<hyper::Response<B>>) -> Result<T, CommentError>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T: serde::de::DeserializeOwned,
{
    use http_body_util::BodyExt;
    let response = response.map_err(|e| CommentError::Other(e.to_string()))?;
    let status = response.status().as_u16();
    let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER).collect().await.map_err(|e| {
        CommentError::Other(if e.is::<http_body_util::LengthLimitError>() {
            format!("the answer is {}", crate::http_body::BodyError::too_large(MAX_ANSWER))
        } else {
            e.to_string()
        })
    })?;
    let bytes = body.to_bytes();
    if !(200..300).contains(&status) {
        // 403 and 404 are what a token without write access gets (fork pull requests, no
        // `pull-requests: write`): those are expected, the rest are failures.
        let message = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| crate::excerpt::excerpt(&String::from_utf8_lossy(&bytes), 200));
        return Err(match status {
            403 | 404 => CommentError::Forbidden { status, message },
            _ => CommentError::Other(format!("HTTP {status}: {message}")),
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| CommentError::Other(format!("HTTP {status}: unexpected answer: {e}")))
}

/// `{"data": {"viewer": {"login": …}}}`; GraphQL answers its errors with 200 and `errors`.
#[derive(serde::Deserialize)]
struct ViewerAnswer {
    data: Option<ViewerData>,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

#[derive(serde::Deserialize)]
struct ViewerData {
    viewer: super::pr_comment::Author,
}

/// `{"head": {"sha": …}}` of a pull request.
#[derive(serde::Deserialize)]
struct PullAnswer {
    head: PullHead,
}

#[derive(serde::Deserialize)]
struct PullHead {
    sha: String,
}

#[async_trait::async_trait]
impl CommentSink for GitHubApi {
    /// GraphQL's `viewer`: REST's `/user` refuses an installation token such as
    /// `GITHUB_TOKEN`, and the login GraphQL gives is the one REST shows on its comments.
    async fn viewer(&self) -> Result<String, CommentError> {
        let (client, path) = &self.graphql;
        let answer: ViewerAnswer =
            answer(client._post(path.as_str(), Some(&json!({"query": "query { viewer { login } }"}))).await).await?;
        answer.data.map(|d| d.viewer.login).ok_or_else(|| {
            let errors = serde_json::Value::from(answer.errors).to_string();
            CommentError::Other(format!(
                "GitHub did not say who the token is: {}",
                crate::excerpt::excerpt(&errors, 200)
            ))
        })
    }

    async fn head(&self, pr: &PullRequest) -> Result<String, CommentError> {
        let route = format!("/repos/{}/{}/pulls/{}", pr.owner, pr.repo, pr.number);
        let pull: PullAnswer = answer(self.client._get(route).await).await?;
        Ok(pull.head.sha)
    }

    async fn list(&self, pr: &PullRequest, page: u32) -> Result<Vec<Comment>, CommentError> {
        let route =
            format!("/repos/{}/{}/issues/{}/comments?per_page={PER_PAGE}&page={page}", pr.owner, pr.repo, pr.number);
        answer(self.client._get(route).await).await
    }

    async fn create(&self, pr: &PullRequest, body: &str) -> Result<(), CommentError> {
        let route = format!("/repos/{}/{}/issues/{}/comments", pr.owner, pr.repo, pr.number);
        let _: Written = answer(self.client._post(route, Some(&json!({"body": body}))).await).await?;
        Ok(())
    }

    async fn update(&self, pr: &PullRequest, id: u64, body: &str) -> Result<(), CommentError> {
        let route = format!("/repos/{}/{}/issues/comments/{id}", pr.owner, pr.repo);
        let _: Written = answer(self.client._patch(route, Some(&json!({"body": body}))).await).await?;
        Ok(())
    }
}
