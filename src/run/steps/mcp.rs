//! `mcp` steps and graders: one `tools/call`, its result checked against `expect`.

use std::time::Duration;

use super::outcome::{Leaf, Response, content_failures};
use crate::mcp::session::{is_error, result_output};
use crate::suite::model::McpAction;
use crate::template::Bindings;

/// Default time limit of an `mcp` step.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Calls the tool. `{response.body}` / `{response.json.PATH}` outputs read the whole result
/// (`content`, `structuredContent`, `isError`).
pub async fn call(action: &McpAction, timeout: Option<Duration>, bindings: &Bindings) -> Leaf {
    let arguments = action.arguments.render(&|v| bindings.lookup(v));
    let mut leaf = Leaf { action: format!("{}.{} {arguments}", action.server, action.tool), ..Leaf::default() };
    if let Some(missing) = bindings.take_missing() {
        leaf.failure = Some(missing);
        leaf.error = true;
        return leaf;
    }
    let Some(server) = bindings.servers.as_ref().and_then(|s| s.0.by_name.get(&action.server)) else {
        leaf.failure = Some(format!("MCP server `{}` is not running", action.server));
        leaf.error = true;
        return leaf;
    };
    let result = match server.call(&action.tool, arguments, timeout.unwrap_or(DEFAULT_TIMEOUT)).await {
        Ok(r) => r,
        Err(e) => {
            leaf.failure = Some(e.0);
            leaf.error = true;
            return leaf;
        }
    };
    let text = result_output(&result);
    let mut failures = Vec::new();
    if is_error(&result) != action.is_error {
        failures.push(if action.is_error {
            "expected the tool to return an error".to_owned()
        } else {
            format!("the tool returned an error: {}", crate::excerpt::excerpt(&text, 160))
        });
    } else {
        failures.extend(content_failures(&action.output, &text, "the result", bindings));
    }
    if !failures.is_empty() {
        leaf.failure = Some(failures.join("; "));
    }
    leaf.stdout = text;
    leaf.response = Some(Response { status: 200, headers: Default::default(), body: result.to_string() });
    leaf
}
