//! `extension` steps: one operation of one of the suite's `extensions`, its arguments
//! checked against the operation's manifest schema (as written, at preflight; as rendered,
//! before each call), its outcome the step's verdict.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::leaf::Response;
use super::{Captures, CompileStep, Leaf, RunStep, StepEnv};
use crate::extension::messages::{AgentContext, Context, go_duration};
use crate::extension::params;
use crate::results::{Phase, StepResult};
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, JsonTemplate, Scope};
use crate::uses::Uses;

/// Default time limit of an `extension` step (mcpchecker's).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `{name, operation, args}`: an operation of one of the suite's `extensions`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExtensionCall {
    /// One of the suite's `extensions`.
    pub name: String,
    /// One of the operations its manifest lists.
    pub operation: String,
    /// The operation's arguments (strings are templates), checked against its manifest's
    /// `params` schema.
    #[serde(default)]
    pub args: serde_json::Map<String, Value>,
}

#[derive(Debug)]
pub struct ExtensionCall {
    pub name: String,
    pub operation: String,
    pub args: JsonTemplate,
    /// The arguments as written, a placeholder's string as its source.
    pub written: Value,
    /// The JSON pointers (below `args`) of strings that hold a placeholder.
    pub templated: Vec<String>,
}

impl CompileStep for RawExtensionCall {
    type Action = ExtensionCall;

    const CAPTURES: Option<Captures> = Some(Captures::Response);

    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<ExtensionCall> {
        cx.known_extension(&path.key("name"), &self.name);
        let args = JsonTemplate::compile(cx, &Value::Object(self.args.clone()), scope, &path.key("args"))?;
        let (written, templated) = args.as_known();
        Some(ExtensionCall {
            name: self.name.clone(),
            operation: self.operation.clone(),
            args,
            written,
            templated,
        })
    }
}

impl RunStep for ExtensionCall {
    const OWN_TIMEOUT: bool = true;

    async fn execute(
        &self,
        timeout: Option<Duration>,
        env: StepEnv<'_>,
        bindings: &mut Bindings,
        _: &mut StepResult,
    ) -> Option<Leaf> {
        Some(call(self, timeout.unwrap_or(DEFAULT_TIMEOUT), env, bindings).await)
    }

    fn uses(&self) -> Uses<'_> {
        Uses { extension_calls: vec![self.written()], ..Uses::templates(self.args.templates()) }
    }
}

impl ExtensionCall {
    /// The call as preflight checks it.
    pub fn written(&self) -> params::Call<'_> {
        params::Call { name: &self.name, operation: &self.operation, written: &self.written, templated: &self.templated }
    }
}

/// Runs the operation. Anything but an outcome of `success: true` fails the step; an
/// extension that is not running, an unknown operation, arguments its schema refuses or a
/// broken conversation make it an error (it could not be carried out).
async fn call(action: &ExtensionCall, timeout: Duration, env: StepEnv<'_>, bindings: &Bindings) -> Leaf {
    let rendered = bindings.render_with(|lookup| action.args.render(lookup));
    let shown = rendered.as_ref().unwrap_or_else(|m| &m.partial);
    let mut leaf = Leaf { action: format!("{}.{} {shown}", action.name, action.operation), ..Leaf::default() };
    let mut error = |why: String| {
        leaf.failure = Some(why);
        leaf.error = true;
    };
    let args = match rendered {
        Ok(args) => args,
        Err(missing) => {
            error(missing.to_string());
            return leaf;
        }
    };
    let Some(extension) = bindings.extensions.as_ref().and_then(|e| e.get(&action.name)) else {
        error(format!("extension `{}` is not running", action.name));
        return leaf;
    };
    let Some(operation) = extension.manifest.operations.get(&action.operation) else {
        error(format!("`{}` has no operation `{}`", action.name, action.operation));
        return leaf;
    };
    match params::check_rendered(&operation.params, &args) {
        Ok(problems) if problems.is_empty() => {}
        Ok(problems) => {
            let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
            error(format!("the arguments do not match the operation's params: {}", list.join("; ")));
            return leaf;
        }
        Err(e) => {
            error(e);
            return leaf;
        }
    }
    let phase = phase(env.phase, bindings);
    let context = Context {
        workdir: env.dir.display().to_string(),
        phase,
        timeout: Some(go_duration(timeout)),
        agent: bindings
            .agent_output
            .as_ref()
            .filter(|_| phase == "verify")
            .map(|output| AgentContext { prompt: bindings.prompt.clone(), output: output.clone() }),
    };
    // The extension is given the step's bound and a moment more to say so itself.
    let executed = match extension.execute(&action.operation, args, context, timeout + Duration::from_secs(2)).await {
        Ok(executed) => executed,
        Err(e) => {
            error(e.0);
            return leaf;
        }
    };
    leaf.stderr = executed.logs.iter().map(|l| format!("[{}] {}\n", l.level, l.message)).collect();
    let outcome = executed.outcome;
    leaf.stdout = outcome.message.clone().unwrap_or_default();
    let body = serde_json::to_string(&outcome.outputs).unwrap_or_default();
    leaf.response = Some(Response { status: 0, headers: Default::default(), body });
    if !outcome.success {
        // The extension's text, bounded as every reason is (its message is the step's stdout).
        let why = outcome.error.or(outcome.message).unwrap_or_else(|| "it did not say why".into());
        let why = crate::excerpt::excerpt(&why, 400);
        leaf.failure = Some(format!("{}.{} failed: {why}", action.name, action.operation));
    }
    leaf
}

/// The protocol's phase: `cleanup` in cleanup, `verify` once the agent has answered (the
/// `steps` grader), `setup` before.
fn phase(phase: Phase, bindings: &Bindings) -> &'static str {
    match phase {
        Phase::Cleanup | Phase::AfterAll => "cleanup",
        _ if bindings.agent_output.is_some() => "verify",
        _ => "setup",
    }
}
