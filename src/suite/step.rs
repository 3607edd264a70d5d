//! Validated steps: what setup, cleanup and hooks do, and the `http` / `file` checks that
//! graders share with them.

use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::model::RunExpect;
use crate::json::JsonPath;
use crate::json::PathExpect;
use crate::template::CommandLine;
use crate::template::{Template, Var};
use crate::uses::Uses;

/// Default time limit of a `run` step.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time limit of an HTTP request.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct Step {
    pub id: Option<String>,
    pub continue_on_error: bool,
    /// A failing `before_all` hook marked so means the environment is not ready (exit 3).
    pub preflight: bool,
    pub timeout: Option<Duration>,
    pub outputs: Vec<(String, OutputSpec)>,
    pub action: Action,
}

#[derive(Debug)]
pub enum Action {
    Run(RunAction),
    Http(HttpRequest),
    Mcp(McpAction),
    File(FileAction),
    Wait(Box<WaitAction>),
    Foreach(Box<ForeachAction>),
    AnyOf(Vec<Step>),
    Group(Box<GroupAction>),
}

impl Action {
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Run(_) => "run",
            Action::Http(_) => "http",
            Action::Mcp(_) => "mcp",
            Action::File(_) => "file",
            Action::Wait(_) => "wait",
            Action::Foreach(_) => "foreach",
            Action::AnyOf(_) => "any_of",
            Action::Group(_) => "group",
        }
    }
}

#[derive(Debug)]
pub struct RunAction {
    pub command: CommandLine,
    pub env: Vec<(String, Template)>,
    pub workdir: PathBuf,
    pub expect: RunExpect,
}

#[derive(Debug)]
pub struct HttpRequest {
    pub url: Template,
    pub method: String,
    pub headers: Vec<(String, Template)>,
    pub body: Option<HttpBody>,
    pub timeout: Duration,
    pub expect: HttpExpect,
}

#[derive(Debug)]
pub enum HttpBody {
    Text(Template),
    Json(JsonTemplate),
}

#[derive(Debug, Default)]
pub struct HttpExpect {
    /// `None`: any 2xx.
    pub status: Option<u16>,
    pub body: Vec<ContentCheck>,
}

/// A check on a body or file content.
#[derive(Debug)]
pub enum ContentCheck {
    Contains(Template),
    Matches(Regex),
    Json(JsonExpect),
}

#[derive(Debug)]
pub struct JsonExpect {
    pub path: Option<JsonPath>,
    pub expect: PathExpect,
}

#[derive(Debug)]
pub struct McpAction {
    pub server: String,
    pub tool: String,
    pub arguments: JsonTemplate,
    pub is_error: bool,
    pub output: Vec<ContentCheck>,
}

#[derive(Debug)]
pub struct FileAction {
    pub path: Template,
    pub op: FileOp,
}

#[derive(Debug)]
pub enum FileOp {
    Create { content: Template, mode: Option<u32> },
    Remove,
    Check(FileExpect),
}

#[derive(Debug)]
pub struct FileExpect {
    pub exists: bool,
    pub content: Vec<ContentCheck>,
}

#[derive(Debug)]
pub struct WaitAction {
    pub step: Step,
    pub interval: Duration,
    pub timeout: Duration,
    pub stable_for: Option<Duration>,
}

#[derive(Debug)]
pub struct ForeachAction {
    pub var: String,
    pub items: ForeachItems,
    pub steps: Vec<Step>,
}

#[derive(Debug)]
pub enum ForeachItems {
    List(Vec<Template>),
    /// Renders to a JSON array.
    Json(Template),
}

#[derive(Debug)]
pub struct GroupAction {
    pub setup: Vec<Step>,
    pub steps: Vec<Step>,
    pub cleanup: Vec<Step>,
}

/// What a step output captures.
#[derive(Debug, Clone)]
pub enum OutputSpec {
    Stdout(Option<JsonPath>),
    Stderr(Option<JsonPath>),
    ExitCode,
    Status,
    Body,
    Header(String),
    Json(JsonPath),
}

/// A JSON value whose strings are templates.
#[derive(Debug)]
pub enum JsonTemplate {
    Literal(Value),
    String(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
}

impl JsonTemplate {
    pub fn render(&self, lookup: &dyn Fn(&Var) -> String) -> Value {
        match self {
            JsonTemplate::Literal(v) => v.clone(),
            JsonTemplate::String(t) => Value::String(t.render(lookup)),
            JsonTemplate::Array(items) => Value::Array(items.iter().map(|i| i.render(lookup)).collect()),
            JsonTemplate::Object(fields) => {
                Value::Object(fields.iter().map(|(k, v)| (k.clone(), v.render(lookup))).collect())
            }
        }
    }

    pub fn templates(&self) -> Vec<&Template> {
        match self {
            JsonTemplate::Literal(_) => Vec::new(),
            JsonTemplate::String(t) => vec![t],
            JsonTemplate::Array(items) => items.iter().flat_map(JsonTemplate::templates).collect(),
            JsonTemplate::Object(fields) => fields.iter().flat_map(|(_, v)| v.templates()).collect(),
        }
    }
}

impl Step {
    /// What this step (and the steps inside it) uses.
    pub fn uses(&self) -> Uses<'_> {
        match &self.action {
            Action::Run(r) => Uses::templates(r.command.templates().into_iter().chain(r.env.iter().map(|(_, t)| t))),
            Action::Http(h) => h.uses(),
            Action::Mcp(m) => m.uses(),
            Action::File(f) => Uses::templates([&f.path]).and(match &f.op {
                FileOp::Create { content, .. } => Uses::templates([content]),
                FileOp::Remove => Uses::default(),
                FileOp::Check(e) => e.uses(),
            }),
            Action::Wait(w) => w.step.uses(),
            Action::Foreach(f) => {
                let items = match &f.items {
                    ForeachItems::Json(t) => Uses::templates([t]),
                    ForeachItems::List(items) => Uses::templates(items),
                };
                items.and(f.steps.iter().map(Step::uses).collect())
            }
            Action::AnyOf(steps) => steps.iter().map(Step::uses).collect(),
            Action::Group(g) => g.setup.iter().chain(&g.steps).chain(&g.cleanup).map(Step::uses).collect(),
        }
    }
}

impl HttpRequest {
    pub fn uses(&self) -> Uses<'_> {
        let mut templates = vec![&self.url];
        templates.extend(self.headers.iter().map(|(_, t)| t));
        match &self.body {
            Some(HttpBody::Text(t)) => templates.push(t),
            Some(HttpBody::Json(j)) => templates.extend(j.templates()),
            None => {}
        }
        templates.extend(content_templates(&self.expect.body));
        Uses::templates(templates)
    }
}

impl McpAction {
    pub fn uses(&self) -> Uses<'_> {
        let templates = self.arguments.templates().into_iter().chain(content_templates(&self.output));
        Uses { mcp_tools: vec![(self.server.as_str(), self.tool.as_str())], ..Uses::templates(templates) }
    }
}

impl FileExpect {
    pub fn uses(&self) -> Uses<'_> {
        Uses::templates(content_templates(&self.content))
    }
}

fn content_templates(checks: &[ContentCheck]) -> impl Iterator<Item = &Template> {
    checks.iter().filter_map(|c| match c {
        ContentCheck::Contains(t) => Some(t),
        _ => None,
    })
}
