//! OAuth for MCP servers in CI, never interactive: an access token from the
//! client-credentials grant (RFC 6749 §4.4) on every request of a connection, renewed
//! before it expires, and a clear error when a server answers 401 with a
//! `WWW-Authenticate` challenge (RFC 9728).

mod authorized_client;
mod challenge;
mod grant;

pub use authorized_client::AuthorizedClient;
pub use challenge::refused;
pub use grant::{ClientAuth, ClientCredentials};
