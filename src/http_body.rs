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

/// The one client of the requests a suite writes (a step's `http` calls, an `http` agent's),
/// with evalgate's user agent; its connections are kept between requests.
pub fn suite_client() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| {
        client_builder()
            .user_agent(concat!("evalgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("a client with a static user agent builds")
    })
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

#[cfg(test)]
mod tests {
    use super::client_builder;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{Read, Write};
    use std::sync::Arc;

    /// A self-signed certificate for `localhost` and its key, made for this test (no secret).
    const CERT: &[u8] = include_bytes!("../tests/fixtures/tls/localhost.crt");
    const KEY: &[u8] = include_bytes!("../tests/fixtures/tls/localhost.key");

    /// A TLS server on 127.0.0.1 that answers one connection `200 ok`; its port.
    fn serve_once() -> u16 {
        let cert = CertificateDer::from_pem_slice(CERT).unwrap();
        let key = PrivateKeyDer::from_pem_slice(KEY).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (tcp, _) = listener.accept().unwrap();
            tcp.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
            let conn = rustls::ServerConnection::new(Arc::new(config)).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            let mut request = Vec::new();
            let mut byte = [0u8];
            // A client that refuses the certificate ends the handshake: the read fails.
            while !request.ends_with(b"\r\n\r\n") && tls.read(&mut byte).is_ok_and(|n| n == 1) {
                request.push(byte[0]);
            }
            let _ = tls.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
            tls.conn.send_close_notify();
            let _ = tls.flush();
        });
        port
    }

    #[tokio::test]
    async fn a_client_speaks_tls_with_the_one_provider_and_trusts_what_it_is_told() {
        let port = serve_once();
        let trusted = reqwest::Certificate::from_pem(CERT).unwrap();
        let client = client_builder().tls_certs_only([trusted]).build().unwrap();
        let response = client.get(format!("https://localhost:{port}/")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.text().await.unwrap(), "ok");
    }

    #[tokio::test]
    async fn a_client_refuses_a_certificate_no_root_vouches_for() {
        let port = serve_once();
        let client = client_builder().build().unwrap();
        let err = client.get(format!("https://localhost:{port}/")).send().await.unwrap_err();
        let chain = std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(": ");
        assert!(chain.contains("invalid peer certificate"), "{chain}");
    }
}
