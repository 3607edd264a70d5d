//! The HTTP client of a server's streamable-HTTP transport, which carries the grant's token.

use std::collections::HashMap;
use std::sync::Arc;

use futures_core::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::grant::{ClientCredentials, Token, fetch_token};
use crate::mcp::session::McpError;

/// The HTTP client of a server's transport: reqwest, as rmcp's own (no idle connections
/// kept, only same-origin 307/308 redirects followed), plus the bearer token of `auth`, when
/// set, on every request: fetched when the client is made (so a refusal stops the connection
/// at preflight, and a restart gets a new token) and again shortly before it expires.
#[derive(Clone)]
pub struct AuthorizedClient {
    http: reqwest::Client,
    grant: Option<Arc<Grant>>,
}

struct Grant {
    auth: ClientCredentials,
    server_url: String,
    token: tokio::sync::Mutex<Token>,
}

impl AuthorizedClient {
    pub async fn new(auth: Option<&ClientCredentials>, server_url: &str) -> Result<AuthorizedClient, McpError> {
        let http = crate::http_body::client_builder()
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| McpError(format!("cannot build an HTTP client: {e}")))?;
        let grant = match auth {
            Some(auth) => {
                let token = fetch_token(auth, server_url).await?;
                let grant = Grant { auth: auth.clone(), server_url: server_url.to_owned(), token: token.into() };
                Some(Arc::new(grant))
            }
            None => None,
        };
        Ok(AuthorizedClient { http, grant })
    }

    /// The token to send: the one the transport was given, else the grant's, renewed when due.
    async fn token(&self, given: Option<String>) -> Result<Option<String>, StreamableHttpError<reqwest::Error>> {
        let Some(grant) = &self.grant else { return Ok(given) };
        let mut token = grant.token.lock().await;
        if !token.is_fresh() {
            *token = fetch_token(&grant.auth, &grant.server_url)
                .await
                .map_err(|e| StreamableHttpError::UnexpectedServerResponse(e.0.into()))?;
        }
        Ok(Some(token.value.clone()))
    }
}

/// What rmcp's default client follows: a same-origin 307 or 308 (which keep the method and
/// body), at most 10 in a row; anything else is returned as the response.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_method = matches!(attempt.status().as_u16(), 307 | 308);
        if same_origin && keeps_method && attempt.previous().len() <= 10 { attempt.follow() } else { attempt.stop() }
    })
}

type Headers = HashMap<HeaderName, HeaderValue>;
type HttpError = StreamableHttpError<reqwest::Error>;

impl StreamableHttpClient for AuthorizedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let auth = self.token(auth).await?;
        self.http.post_message(uri, message, session_id, auth, headers).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let auth = self.token(auth).await?;
        self.http
            .post_message_with_max_sse_event_size(uri, message, session_id, auth, headers, max_sse_event_size)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let auth = self.token(auth).await?;
        self.http.post_message_with_response_limits(uri, message, session_id, auth, headers, limits).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<(), HttpError> {
        let auth = self.token(auth).await?;
        self.http.delete_session(uri, session_id, auth, headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let auth = self.token(auth).await?;
        self.http.get_stream(uri, session_id, last_event_id, auth, headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let auth = self.token(auth).await?;
        self.http
            .get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth, headers, max_sse_event_size)
            .await
    }
}
