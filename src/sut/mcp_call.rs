//! An execution-level task: one `tools/call` with fixed arguments, no model. The output
//! graders see is `structuredContent` when present, else the text blocks.

use std::time::{Duration, Instant};

use super::{AgentError, AgentRun, SystemUnderTest, ToolCall, Trace};
use crate::mcp::servers::{Called, Servers};
use crate::mcp::session::{is_error, result_output};
use crate::suite::model::ToolCallSpec;
use crate::template::Bindings;

pub struct McpCallSut<'a> {
    pub call: &'a ToolCallSpec,
    pub servers: &'a Servers,
}

#[async_trait::async_trait]
impl SystemUnderTest for McpCallSut<'_> {
    async fn run(&self, bindings: &Bindings, timeout: Duration) -> Result<AgentRun, AgentError> {
        let call = self.call;
        let server = self.servers.by_name.get(&call.server).ok_or_else(|| AgentError {
            reason: format!("MCP server `{}` is not running", call.server),
            run: None,
            agent_fault: false,
        })?;
        let arguments = bindings.render_with(|lookup| call.arguments.render(lookup))?;
        let started = Instant::now();
        // A transport or JSON-RPC error is an error of the task; `isError` is data.
        let Called { result, violation } = server.call(&call.tool, arguments.clone(), timeout).await.map_err(|e| {
            AgentError { reason: format!("MCP server `{}`: {e}", call.server), run: None, agent_fault: false }
        })?;
        let output = result_output(&result);
        let error = is_error(&result);
        // `expect.is_error`: the tool error is the outcome asked for, its message the output.
        let failure = violation.clone().or_else(|| {
            (call.expect_error && !error).then(|| {
                format!(
                    "expected a tool error (`call.expect.is_error: true`), but the tool returned a result: {}",
                    crate::excerpt::excerpt(&output, 160)
                )
            })
        });
        let tool_error = (error && !call.expect_error).then(|| output.clone());
        Ok(AgentRun {
            output,
            output_truncated: false,
            stderr: String::new(),
            exit_code: None,
            latency: started.elapsed(),
            trace: Trace {
                no_answer: None,
                output: None,
                tool_calls: Some(vec![ToolCall {
                    name: call.tool.clone(),
                    server: Some(call.server.clone()),
                    arguments,
                    result: Some(result.clone()),
                    duration_ms: Some(started.elapsed().as_millis() as u64),
                    violation: violation.clone(),
                    status: None,
                }]),
                usage: None,
                model: None,
                session: None,
                conversation: None,
                declared: None,
            },
            tool_result: Some(result.clone()),
            tool_error,
            // A result that breaks the tool's declared outputSchema fails the task.
            failure,
            cached: false,
            replayed: false,
        })
    }
}
