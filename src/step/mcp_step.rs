//! `mcp` steps (and the `mcp` grader): one `tools/call`, its result checked against `expect`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::text_expect::{ContentCheck, RawBodyExpect, content_failures, content_templates};
use crate::template::JsonTemplate;
use super::leaf::Response;
use super::{Captures, CompileStep, Leaf, RunStep, StepEnv};
use crate::mcp::servers::Called;
use crate::mcp::session::{is_error, result_output};
use crate::results::StepResult;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope};
use crate::uses::Uses;

/// Default time limit of an `mcp` step.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One MCP `tools/call`, as a step or a grader.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcpCall {
    /// One of the suite's `mcp_servers`.
    pub server: String,
    /// The tool to call.
    pub tool: String,
    /// The tool's arguments (strings are templates).
    #[serde(default)]
    pub arguments: serde_json::Map<String, Value>,
    /// What the result must be; default not an error.
    pub expect: Option<RawMcpExpect>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcpExpect {
    /// Default false: a result with `isError: true` fails the step.
    pub is_error: Option<bool>,
    /// Checks on the result's text (structuredContent, else the text blocks).
    pub output: Option<RawBodyExpect>,
}

#[derive(Debug)]
pub struct McpAction {
    pub server: String,
    pub tool: String,
    pub arguments: JsonTemplate,
    pub is_error: bool,
    pub output: Vec<ContentCheck>,
}

impl CompileStep for RawMcpCall {
    type Action = McpAction;

    const CAPTURES: Option<Captures> = Some(Captures::Response);

    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<McpAction> {
        cx.known_mcp_server(&path.key("server"), &self.server);
        let arguments =
            JsonTemplate::compile(cx, &Value::Object(self.arguments.clone()), scope, &path.key("arguments"));
        let output = match self.expect.as_ref().and_then(|e| e.output.as_ref()) {
            Some(o) => o.compile(cx, &path.key("expect").key("output"), scope),
            None => Some(Vec::new()),
        };
        Some(McpAction {
            server: self.server.clone(),
            tool: self.tool.clone(),
            arguments: arguments?,
            is_error: self.expect.as_ref().and_then(|e| e.is_error).unwrap_or(false),
            output: output?,
        })
    }
}

impl RunStep for McpAction {
    const OWN_TIMEOUT: bool = true;

    async fn execute(
        &self,
        timeout: Option<Duration>,
        _: StepEnv<'_>,
        bindings: &mut Bindings,
        _: &mut StepResult,
    ) -> Option<Leaf> {
        Some(call(self, timeout, bindings).await)
    }

    fn uses(&self) -> Uses<'_> {
        let templates = self.arguments.templates().into_iter().chain(content_templates(&self.output));
        Uses { mcp_tools: vec![(self.server.as_str(), self.tool.as_str())], ..Uses::templates(templates) }
    }
}

/// Calls the tool. `{response.body}` / `{response.json.PATH}` outputs read the whole result
/// (`content`, `structuredContent`, `isError`).
pub async fn call(action: &McpAction, timeout: Option<Duration>, bindings: &Bindings) -> Leaf {
    let rendered = bindings.render_with(|lookup| action.arguments.render(lookup));
    let arguments = rendered.as_ref().unwrap_or_else(|m| &m.partial);
    let mut leaf = Leaf { action: format!("{}.{} {arguments}", action.server, action.tool), ..Leaf::default() };
    let arguments = match rendered {
        Ok(arguments) => arguments,
        Err(missing) => {
            leaf.failure = Some(missing.to_string());
            leaf.error = true;
            return leaf;
        }
    };
    let Some(server) = bindings.servers.as_ref().and_then(|s| s.0.by_name.get(&action.server)) else {
        leaf.failure = Some(format!("MCP server `{}` is not running", action.server));
        leaf.error = true;
        return leaf;
    };
    let Called { result, violation } = match server.call(&action.tool, arguments, timeout.unwrap_or(DEFAULT_TIMEOUT)).await {
        Ok(called) => called,
        Err(e) => {
            leaf.failure = Some(e.to_string());
            leaf.error = true;
            return leaf;
        }
    };
    let text = result_output(&result);
    let mut failures: Vec<String> = violation.into_iter().collect();
    if is_error(&result) != action.is_error {
        failures.push(if action.is_error {
            "expected the tool to return an error".to_owned()
        } else {
            // Its result is not what the checks look at (as the `json` grader holds).
            leaf.unobserved = true;
            format!("the tool returned an error: {}", crate::excerpt::excerpt(&text, 160))
        });
    } else {
        match content_failures(&action.output, &text, "the result", bindings) {
            Ok(unmet) => {
                leaf.unobserved = unmet.unobserved;
                failures.extend(unmet.failures);
            }
            Err(missing) => {
                failures.push(missing.to_string());
                leaf.error = true;
            }
        }
    }
    if !failures.is_empty() {
        leaf.failure = Some(failures.join("; "));
    }
    leaf.stdout = text;
    leaf.response = Some(Response { status: 200, headers: Default::default(), body: result.to_string() });
    leaf
}
