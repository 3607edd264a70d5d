//! ACP agents: a coding agent spoken to over the Agent Client Protocol (JSON-RPC 2.0, a
//! message a line, on its stdin and stdout), one session a trial. `connection` is the wire
//! (the bounded line reader and process group shared with the extension host), `protocol`
//! the messages evalgate reads, `session` a trial's whole conversation, `updates` what
//! becomes the trace, `client_files` the `fs/*` requests served inside the working directory.

mod client_files;
mod connection;
mod protocol;
mod session;
mod updates;

pub use session::{AcpSession, AcpSut};
