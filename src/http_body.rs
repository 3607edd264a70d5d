//! Every HTTP client's start and end: [`client_builder`], the one way a `reqwest::Client` is
//! made (it brings the TLS provider), and a response body read up to a cap: past it the read
//! stops and says so, so an endless or huge body (a model, a server, an API) costs neither
//! the memory nor the time of the run.

/// A `reqwest` client builder, with rustls on ring installed as the process's TLS provider
/// first: reqwest brings none of its own (`rustls-no-provider`, one TLS stack in the build)
/// and panics when it builds a client without one. `clippy.toml` forbids the other ways.
#[allow(clippy::disallowed_methods)]
pub fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    // Err only when a provider is already installed, which is as good.
    PROVIDER.call_once(|| drop(rustls::crypto::ring::default_provider().install_default()));
    reqwest::Client::builder()
}

/// Why a body was not read whole.
#[derive(Debug)]
pub enum BodyError {
    /// The connection failed while it was read.
    Read(reqwest::Error),
    /// It is longer than the cap (its `Content-Length` says so, or the bytes did); `start`
    /// holds what was read, for an excerpt.
    TooLarge { cap: usize, start: Vec<u8> },
}

impl BodyError {
    /// "larger than 16 MiB, the most evalgate reads of a response", for a `TooLarge`.
    pub fn too_large(cap: usize) -> String {
        format!("larger than {} MiB, the most evalgate reads of a response", cap >> 20)
    }
}

/// The body of `response`, at most `cap` bytes; a longer one is [`BodyError::TooLarge`],
/// never read past the cap.
pub async fn read_capped(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(BodyError::TooLarge { cap, start: Vec::new() });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Read)? {
        if body.len() + chunk.len() > cap {
            body.extend_from_slice(&chunk[..cap - body.len()]);
            return Err(BodyError::TooLarge { cap, start: body });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
