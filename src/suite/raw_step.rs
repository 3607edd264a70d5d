//! Steps as written: setup, cleanup and hook steps (`run`, `http`, `file`, `wait`,
//! `foreach`, `any_of`, `group`), and the `http` / `file` checks graders share with them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::values::{RawDuration, Scalar};

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHooks {
    #[serde(default)]
    pub before_all: Vec<RawStep>,
    #[serde(default)]
    pub after_all: Vec<RawStep>,
}

/// One step: exactly one action key (`run`/`argv`, `http`, `file`, `wait`, `foreach`,
/// `any_of`, `group`) plus the common keys.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    /// Names the step, so later steps, the prompt, graders and cleanup can use its outputs.
    pub id: Option<String>,
    /// A failure of this step is recorded but does not stop the task.
    #[serde(default)]
    pub continue_on_error: bool,
    pub timeout: Option<RawDuration>,
    /// Values to capture: `"{stdout}"`, `"{stderr}"`, `"{exit_code}"`, `{from: stdout, json_path: a.b}`,
    /// `"{response.status}"`, `"{response.body}"`, `"{response.headers.NAME}"`, `"{response.json.PATH}"`.
    #[serde(default)]
    pub outputs: BTreeMap<String, RawOutput>,
    /// A hook step marked `preflight: true` that fails means the environment is not ready (exit 3).
    #[serde(default)]
    pub preflight: bool,

    /// A shell command, run with `sh -c`.
    pub run: Option<String>,
    /// A program and its arguments, run directly.
    pub argv: Option<Vec<String>>,
    /// `run`/`argv` only.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `run`/`argv` only.
    pub workdir: Option<String>,
    /// `run`/`argv` only.
    pub expect: Option<RawRunExpect>,

    pub http: Option<RawHttp>,
    /// Call an MCP tool: `{server, tool, arguments, expect}`.
    pub mcp: Option<RawMcpCall>,
    pub file: Option<RawFileStep>,
    pub wait: Option<Box<RawWait>>,
    pub foreach: Option<Box<RawForeach>>,
    pub any_of: Option<Vec<RawStep>>,
    pub group: Option<Box<RawGroup>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawOutput {
    /// One of the `{…}` forms.
    Template(String),
    /// A field of JSON stdout.
    Field { from: OutputStream, json_path: Option<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRunExpect {
    /// Default 0.
    pub exit_code: Option<i32>,
    pub stdout: Option<RawTextExpect>,
    pub stderr: Option<RawTextExpect>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTextExpect {
    pub equals: Option<String>,
    pub contains: Option<String>,
    pub matches: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttp {
    pub url: String,
    /// Default GET.
    pub method: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A text body.
    pub body: Option<String>,
    /// A JSON body (sets `content-type: application/json`).
    pub json: Option<serde_json::Value>,
    /// Default 10s.
    pub timeout: Option<RawDuration>,
    pub expect: Option<RawHttpExpect>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttpExpect {
    /// Default: any 2xx.
    pub status: Option<u16>,
    pub body: Option<RawBodyExpect>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBodyExpect {
    pub contains: Option<String>,
    pub matches: Option<String>,
    pub json: Option<RawJsonChecks>,
}

/// One JSON check, or a list that must all hold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawJsonChecks {
    One(RawJsonExpect),
    All(Vec<RawJsonExpect>),
}

impl RawJsonChecks {
    pub fn as_slice(&self) -> &[RawJsonExpect] {
        match self {
            RawJsonChecks::One(one) => std::slice::from_ref(one),
            RawJsonChecks::All(all) => all,
        }
    }
}

/// A check on one value of a JSON document.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawJsonExpect {
    /// `a.b[0].c`; default the whole document.
    pub path: Option<String>,
    pub equals: Option<serde_json::Value>,
    pub matches: Option<String>,
    pub exists: Option<bool>,
    #[serde(rename = "type")]
    pub kind: Option<crate::json::JsonKind>,
}

/// One MCP `tools/call`, as a step or a grader.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcpCall {
    pub server: String,
    pub tool: String,
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
    pub expect: Option<RawMcpExpect>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcpExpect {
    /// Default false: a result with `isError: true` fails the step.
    pub is_error: Option<bool>,
    /// Checks on the result's text (structuredContent, else the text blocks).
    pub output: Option<RawBodyExpect>,
}

/// Create (`content`), remove (`absent: true`) or check (`expect`) a file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFileStep {
    pub path: String,
    pub content: Option<String>,
    /// Octal permission bits for a created file, e.g. "0755".
    pub mode: Option<String>,
    #[serde(default)]
    pub absent: bool,
    pub expect: Option<RawFileExpect>,
}

/// The `file` grader: a file that must meet `expect`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFileCheck {
    pub path: String,
    pub expect: RawFileExpect,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFileExpect {
    /// Default true.
    pub exists: Option<bool>,
    pub contains: Option<String>,
    pub matches: Option<String>,
    pub json: Option<RawJsonChecks>,
}

/// Repeat `step` every `interval` until it passes or `timeout` expires; with `stable_for`,
/// it must then keep passing that long.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWait {
    pub step: RawStep,
    /// Default 1s.
    pub interval: Option<RawDuration>,
    pub timeout: RawDuration,
    pub stable_for: Option<RawDuration>,
}

/// Run `steps` once per item of `in`, with the item as `{VAR}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawForeach {
    pub var: String,
    /// A list, or a template that renders to a JSON array (e.g. an earlier step's output).
    #[serde(rename = "in")]
    pub items: RawForeachItems,
    pub steps: Vec<RawStep>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawForeachItems {
    List(Vec<Scalar>),
    Template(String),
}

/// Steps with their own setup and cleanup; the cleanup always runs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    #[serde(default)]
    pub setup: Vec<RawStep>,
    pub steps: Vec<RawStep>,
    #[serde(default)]
    pub cleanup: Vec<RawStep>,
}
