//! The wire to one ACP agent: its process (a group of its own, killed whole at the end:
//! agents do not exit when stdin closes), JSON-RPC messages written and read a line at a
//! time, each line bounded; a line that is not JSON-RPC, one past the bound or the agent's
//! exit is an error, never a message.

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::excerpt::excerpt;
use crate::process::piped::{Piped, kill_group, read_line};

/// The longest line read from an agent: a longer one is garbage, not a message. Large
/// enough for a file an agent writes through `fs/write_text_file` (what `files::read`
/// allows of a file an agent controls).
pub const MAX_LINE: usize = 16 << 20;

/// How long an agent whose stdout closed is given to exit, for its status.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// "exited (exit status: 3)".
fn exited(status: std::io::Result<std::process::ExitStatus>) -> String {
    format!("exited ({})", status.map_or_else(|e| e.to_string(), |s| s.to_string()))
}

/// A message from the agent.
#[derive(Debug)]
pub enum Incoming {
    /// The answer to one of evalgate's requests: its result or the error's text.
    Answer { id: u64, result: Result<Value, String> },
    /// A request of the agent's (`session/request_permission`, `fs/*`, `terminal/*`).
    Request { id: Value, method: String, params: Value },
    /// A notification (`session/update`).
    Notification { method: String, params: Value },
}

/// A running agent and the next id of evalgate's requests.
pub struct Connection {
    piped: Piped,
    next_id: u64,
    /// How the agent exited, once it has: its last lines are still read.
    exit: Option<String>,
    /// The line being read: a read cut off (the turn's timeout) goes on from it.
    partial: Vec<u8>,
}

impl Connection {
    pub fn new(piped: Piped) -> Connection {
        Connection { piped, next_id: 1, exit: None, partial: Vec::new() }
    }

    /// Sends a request; returns its id.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<u64, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        Ok(id)
    }

    pub async fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Answers the agent's request `id` with `result`, or with a JSON-RPC error.
    pub async fn answer(&mut self, id: Value, result: Result<Value, (i64, String)>) -> Result<(), String> {
        self.send(match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        })
        .await
    }

    async fn send(&mut self, message: Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        let stdin = &mut self.piped.stdin;
        stdin.write_all(line.as_bytes()).await.map_err(|e| format!("cannot be written to: {e}"))?;
        stdin.flush().await.map_err(|e| format!("cannot be written to: {e}"))
    }

    /// The next message. The agent's exit ends the wait even when a child it left holds
    /// stdout open; what it wrote before it exited is still read (for a moment).
    pub async fn next(&mut self) -> Result<Incoming, String> {
        loop {
            let line = match self.exit.clone() {
                Some(exit) => match tokio::time::timeout(
                    EXIT_GRACE,
                    read_line(&mut self.piped.stdout, &mut self.partial, MAX_LINE),
                )
                .await
                {
                    Ok(Ok(line)) => line,
                    Ok(Err(why)) if why != "exited" => return Err(why),
                    _ => return Err(exit),
                },
                None => tokio::select! {
                    biased;
                    line = read_line(&mut self.piped.stdout, &mut self.partial, MAX_LINE) => match line {
                        // Its stdout closed: say how it ended, when it ends within a moment.
                        Err(why) if why == "exited" => {
                            let status = tokio::time::timeout(EXIT_GRACE, self.piped.child.wait()).await;
                            return Err(status.map_or(why, exited));
                        }
                        line => line?,
                    },
                    status = self.piped.child.wait() => {
                        self.exit = Some(exited(status));
                        continue;
                    }
                },
            };
            return parse(&line);
        }
    }

    /// Kills the agent's whole group and reads the end of its stderr; returns the tail.
    /// The agent's process id (its sandbox's, when confined), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.piped.child.id()
    }

    pub async fn close(mut self) -> String {
        kill_group(self.piped.pgid);
        let _ = self.piped.child.wait().await;
        self.piped.stderr.finish().await;
        self.piped.stderr.text()
    }
}

/// One line as a message; anything that is not JSON-RPC 2.0 is an error.
fn parse(line: &str) -> Result<Incoming, String> {
    let garbage = || format!("wrote a line that is not JSON-RPC: {:?}", excerpt(line, 200));
    let message: Value = serde_json::from_str(line).map_err(|_| garbage())?;
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(garbage());
    }
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        let method = method.to_owned();
        return Ok(match message.get("id") {
            Some(id) if !id.is_null() => Incoming::Request { id: id.clone(), method, params },
            _ => Incoming::Notification { method, params },
        });
    }
    let Some(id) = message.get("id").and_then(Value::as_u64) else { return Err(garbage()) };
    if let Some(error) = message.get("error") {
        let text = error.get("message").and_then(Value::as_str).unwrap_or("(no message)");
        let code = error.get("code").and_then(Value::as_i64).map_or(String::new(), |c| format!(" {c}"));
        return Ok(Incoming::Answer { id, result: Err(format!("error{code}: {}", excerpt(text, 400))) });
    }
    match message.get("result") {
        Some(result) => Ok(Incoming::Answer { id, result: Ok(result.clone()) }),
        None => Err(format!("answered with neither `result` nor `error`: {}", excerpt(line, 200))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_an_answer_a_request_a_notification_or_garbage() {
        let answer = parse(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#).unwrap();
        assert!(matches!(answer, Incoming::Answer { id: 3, result: Ok(v) } if v["stopReason"] == "end_turn"));
        let error = parse(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Authentication required"}}"#);
        assert!(
            matches!(error.unwrap(), Incoming::Answer { id: 2, result: Err(e) } if e == "error -32000: Authentication required")
        );
        let request = parse(r#"{"jsonrpc":"2.0","id":"p1","method":"fs/read_text_file","params":{"path":"/x"}}"#);
        assert!(matches!(request.unwrap(), Incoming::Request { method, .. } if method == "fs/read_text_file"));
        let update = parse(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#).unwrap();
        assert!(matches!(update, Incoming::Notification { method, .. } if method == "session/update"));
        for garbage in ["Starting Claude Code...", r#"{"id":1,"result":{}}"#, r#"{"jsonrpc":"2.0","id":1}"#, "[1]"] {
            assert!(parse(garbage).is_err(), "{garbage}");
        }
    }
}
