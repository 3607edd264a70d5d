//! What an ACP session's `session/update`s become: the trial's trace. Tool calls (by id, in
//! the order first reported, each update merged into its call), the agent's message text
//! (the output graders read), thoughts, plans, file edits as diffs and the cost reported.

use serde_json::{Map, Value};

use crate::trace::{FileDiff, Session, ToolCall, Trace, Usage};

/// The trace as the updates build it.
#[derive(Debug, Default)]
pub struct TraceBuilder {
    output: String,
    calls: Vec<(String, ToolCall)>,
    session: Session,
    usage: Usage,
    /// The last update was a thought: the next thought chunk continues it.
    thinking: bool,
    /// The MCP servers the session was given: `mcp__SERVER__TOOL` names their tools.
    servers: Vec<String>,
    /// Text dropped past `OUTPUT_CAP` (the answer and the thoughts, each).
    pub cut: bool,
    thought_bytes: usize,
    /// Where the current turn's answer and calls start (a conversation's turn).
    turn_output: usize,
    turn_calls: usize,
}

/// Appends `text` to `to`, up to `OUTPUT_CAP` bytes (as a command agent's stdout is kept);
/// whether it dropped any.
fn push_capped(to: &mut String, text: &str) -> bool {
    let room = crate::process::OUTPUT_CAP.saturating_sub(to.len());
    let mut end = text.len().min(room);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    to.push_str(&text[..end]);
    end < text.len()
}

impl TraceBuilder {
    pub fn new(servers: Vec<String>) -> TraceBuilder {
        TraceBuilder { servers, ..TraceBuilder::default() }
    }

    /// Applies one `session/update`'s `update`. Kinds evalgate does not read (the commands
    /// or modes offered, the echo of the prompt) change nothing.
    pub fn apply(&mut self, update: &Value) {
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default();
        let thought = kind == "agent_thought_chunk";
        match kind {
            "agent_message_chunk" => self.cut |= push_capped(&mut self.output, text_of(update.get("content"))),
            "agent_thought_chunk" => {
                let text = text_of(update.get("content"));
                self.thought_bytes += text.len();
                match self.session.thoughts.last_mut() {
                    _ if self.thought_bytes > crate::process::OUTPUT_CAP => self.cut = true,
                    Some(last) if self.thinking => last.push_str(text),
                    _ => self.session.thoughts.push(text.to_owned()),
                }
            }
            "tool_call" | "tool_call_update" => self.tool_call(update),
            "plan" => self.session.plans.push(update.get("entries").cloned().unwrap_or(Value::Null)),
            "usage_update" => {
                // The session's cost so far (a total, not an increment), in dollars only.
                let cost = update.get("cost").filter(|c| c.get("currency").and_then(Value::as_str) == Some("USD"));
                if let Some(amount) = cost.and_then(|c| c.get("amount")).and_then(Value::as_f64) {
                    self.usage.cost_usd = (amount.is_finite() && amount >= 0.0).then_some(amount);
                }
            }
            _ => {}
        }
        self.thinking = thought;
    }

    /// The tokens of the turn, from `session/prompt`'s answer.
    pub fn prompt_usage(&mut self, usage: &Value) {
        let tokens = |key: &str| usage.get(key).and_then(Value::as_u64);
        // A conversation's turns each report theirs: the session's are their sum.
        let add = |was: Option<u64>, turn: Option<u64>| match (was, turn) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.usage.input_tokens = add(self.usage.input_tokens, tokens("inputTokens"));
        self.usage.output_tokens = add(self.usage.output_tokens, tokens("outputTokens"));
    }

    /// The answer text and the tool calls reported since the last call (a conversation's
    /// turn); the whole trace keeps them.
    pub fn take_turn(&mut self) -> (String, Vec<ToolCall>) {
        let output = self.output[self.turn_output..].to_owned();
        let calls = self.calls[self.turn_calls..].iter().map(|(_, c)| c.clone()).collect();
        (self.turn_output, self.turn_calls) = (self.output.len(), self.calls.len());
        (output, calls)
    }

    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// The name a tool call is known by: the call's already, else `_meta.claudeCode.toolName`
    /// (Claude Code's titles are descriptions), else its title.
    pub fn tool_name(&self, call: &Value) -> String {
        let id = call.get("toolCallId").and_then(Value::as_str);
        if let Some((_, known)) = self.calls.iter().find(|(known, _)| Some(known.as_str()) == id) {
            return qualified(known);
        }
        let meta = call.pointer("/_meta/claudeCode/toolName").and_then(Value::as_str);
        meta.or_else(|| call.get("title").and_then(Value::as_str)).unwrap_or("(unnamed)").to_owned()
    }

    fn tool_call(&mut self, update: &Value) {
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else { return };
        let index = match self.calls.iter().position(|(known, _)| known == id) {
            Some(index) => index,
            None => {
                let (name, server) = self.split_name(&self.tool_name(update));
                let call = ToolCall {
                    name,
                    server,
                    arguments: Value::Object(Map::new()),
                    result: None,
                    duration_ms: None,
                    violation: None,
                    status: None,
                };
                self.calls.push((id.to_owned(), call));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[index].1;
        if let Some(input) = update.get("rawInput").filter(|v| !v.is_null()) {
            call.arguments = input.clone();
        }
        if let Some(status) = update.get("status").and_then(Value::as_str) {
            call.status = Some(status.to_owned());
        }
        let content = update.get("content").and_then(Value::as_array);
        if let Some(output) = update.get("rawOutput").filter(|v| !v.is_null()) {
            call.result = Some(output.clone());
        } else if let Some(content) = content.filter(|c| !c.is_empty()) {
            call.result = Some(Value::Array(content.clone()));
        }
        for diff in content.into_iter().flatten().filter(|c| c.get("type").and_then(Value::as_str) == Some("diff")) {
            let text = |key: &str| diff.get(key).and_then(Value::as_str).map(str::to_owned);
            if let (Some(path), Some(new_text)) = (text("path"), text("newText")) {
                let diff = FileDiff { path, old_text: text("oldText"), new_text };
                if !self.session.diffs.contains(&diff) {
                    self.session.diffs.push(diff);
                }
            }
        }
    }

    /// `mcp__SERVER__TOOL` (Claude Code's name of an MCP tool) of one of the session's
    /// servers is that server's `TOOL`, as the MCP proxy and the graders name it.
    fn split_name(&self, name: &str) -> (String, Option<String>) {
        let split = name.strip_prefix("mcp__").and_then(|rest| rest.split_once("__"));
        match split.filter(|(server, _)| self.servers.iter().any(|s| s == server)) {
            Some((server, tool)) => (tool.to_owned(), Some(server.to_owned())),
            None => (name.to_owned(), None),
        }
    }

    /// The trace, with the turn's stop reason.
    pub fn finish(mut self, stop_reason: Option<String>) -> Trace {
        self.session.stop_reason = stop_reason;
        let usage = self.usage;
        let reported = usage.input_tokens.is_some() || usage.output_tokens.is_some() || usage.cost_usd.is_some();
        Trace {
            no_answer: None,
            output: Some(self.output),
            tool_calls: Some(self.calls.into_iter().map(|(_, call)| call).collect()),
            usage: reported.then_some(usage),
            model: None,
            session: Some(self.session),
            conversation: None,
            declared: None,
        }
    }
}

/// A call's name as a permission sees it: `server.tool` for an MCP tool.
fn qualified(call: &ToolCall) -> String {
    match &call.server {
        Some(server) => format!("mcp__{server}__{}", call.name),
        None => call.name.clone(),
    }
}

/// The text of a content block; other blocks (images, resources) add none.
fn text_of(content: Option<&Value>) -> &str {
    content
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn updates_become_the_trace() {
        let mut b = TraceBuilder::new(vec!["fs".into()]);
        for update in [
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "the prompt"}}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "let me "}}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "look"}}),
            json!({"sessionUpdate": "plan", "entries": [{"content": "read", "priority": "high", "status": "pending"}]}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Terminal", "kind": "execute",
                   "status": "pending", "_meta": {"claudeCode": {"toolName": "Bash"}}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "`ls -la`",
                   "rawInput": {"command": "ls -la"}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "a.txt"}}]}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "mcp__fs__write_file", "status": "completed",
                   "rawInput": {"path": "b"}, "content": [{"type": "diff", "path": "/w/b", "newText": "hi"}]}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "done"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "All "}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "AA=="}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done."}}),
            json!({"sessionUpdate": "usage_update", "used": 100, "size": 200000, "cost": {"amount": 0.25, "currency": "USD"}}),
            json!({"sessionUpdate": "something_new"}),
        ] {
            b.apply(&update);
        }
        b.prompt_usage(&json!({"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}));
        let trace = b.finish(Some("end_turn".into()));
        assert_eq!(trace.output.as_deref(), Some("All done."));
        let calls = trace.calls();
        assert_eq!(
            (calls[0].name.as_str(), &calls[0].arguments, calls[0].status.as_deref()),
            ("Bash", &json!({"command": "ls -la"}), Some("completed"))
        );
        assert_eq!(calls[0].result, Some(json!([{"type": "content", "content": {"type": "text", "text": "a.txt"}}])));
        assert!(calls[1].is("fs.write_file") && calls[1].is("write_file"), "{:?}", calls[1]);
        let session = trace.session.unwrap();
        assert_eq!(session.thoughts, ["let me look", "done"]);
        assert_eq!((session.plans.len(), session.diffs[0].path.as_str()), (1, "/w/b"));
        assert_eq!(trace.usage, Some(Usage { input_tokens: Some(10), output_tokens: Some(5), cost_usd: Some(0.25) }));
        assert_eq!(session.stop_reason.as_deref(), Some("end_turn"));
    }
}
