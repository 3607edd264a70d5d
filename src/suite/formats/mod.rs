//! Foreign suite formats, turned into a native suite (as JSON) so everything downstream
//! works on the one model. One conversion serves the three uses: `imports` take its tasks,
//! environment requirements and hooks; a direct run and `evalgate convert` take it whole.

pub mod agentv;
pub mod mcp_evals;
pub mod mcpchecker;
pub mod openwop;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Problems with a foreign file, as `(JSON pointer, message)`.
pub type Problems = Vec<(String, String)>;

/// `problems` as lines `SHOWN:LINE:COLUMN: POINTER: message`, each at the node its pointer
/// names in `source` (see [`PositionIndex::pointer`]); `SHOWN: POINTER: message` without a
/// source, as for evals a server listed.
///
/// [`PositionIndex::pointer`]: crate::suite::positions::PositionIndex::pointer
pub fn describe(problems: &Problems, source: Option<&str>, shown: &str) -> Vec<String> {
    let index = source.map(crate::suite::positions::PositionIndex::build);
    problems
        .iter()
        .map(|(pointer, message)| {
            let at = if pointer.is_empty() { "/" } else { pointer };
            match &index {
                Some(index) => {
                    let p = index.pointer(pointer).unwrap_or(crate::suite::positions::Position { line: 1, column: 1 });
                    format!("{shown}:{}:{}: {at}: {message}", p.line, p.column)
                }
                None => format!("{shown}: {at}: {message}"),
            }
        })
        .collect()
}

/// What a conversion needs to know besides the document.
pub struct ConvertCx<'a> {
    /// The file, absolute.
    pub file: &'a Path,
    /// Its directory relative to the directory of the suite the result belongs to, which
    /// paths in the result are relative to (empty for a direct run or `convert`).
    pub rel_dir: PathBuf,
    /// The importing suite's agent for the tasks; `None` when the file runs on its own.
    pub agent: Option<&'a str>,
    /// Whether that agent is a model (`provider`), which is offered the MCP tools.
    pub model_agent: bool,
    /// The importing suite's MCP server the evals are about (MCP evals).
    pub server: Option<&'a str>,
}

/// Where a converted task came from: a file and the key path of the task in it.
pub struct Origin {
    pub file: PathBuf,
    pub at: String,
}

pub struct Converted {
    pub suite: Value,
    /// One per task of `suite`, in order.
    pub origins: Vec<Origin>,
}

/// `doc` as a native suite.
pub fn convert(format: Format, doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    match format {
        Format::OpenWop => openwop::convert(doc, cx),
        Format::McpEvals => mcp_evals::convert(doc, cx),
        Format::McpChecker => mcpchecker::convert(doc, cx),
        Format::AgentV => agentv::convert(doc, cx),
        other => Err(vec![(
            String::new(),
            format!("{} files are recognised but not run by this evalgate yet", other.name()),
        )]),
    }
}

/// The format an `imports` entry names.
pub fn by_import_name(name: &str) -> Option<Format> {
    Some(match name {
        "openwop" => Format::OpenWop,
        "mcp-evals" => Format::McpEvals,
        "mcpchecker" => Format::McpChecker,
        "agentv" => Format::AgentV,
        _ => return None,
    })
}

pub const IMPORT_NAMES: &str = "openwop, mcp-evals, mcpchecker, agentv";

/// The formats evalgate recognises from a file's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Native,
    OpenWop,
    McpChecker,
    McpEvals,
    AgentV,
    Unknown,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "evalgate",
            Format::OpenWop => "OpenWOP AgentEvalSuite",
            Format::McpChecker => "mcpchecker",
            Format::McpEvals => "MCP evals",
            Format::AgentV => "AgentV EVAL.yaml",
            Format::Unknown => "unknown",
        }
    }
}

pub fn detect(doc: &Value) -> Format {
    let has = |k: &str| doc.get(k).is_some();
    if has("evalgate") {
        Format::Native
    } else if has("suiteId") && doc.pointer("/tasks/0/expected/kind").is_some() {
        Format::OpenWop
    } else if matches!(doc.get("kind").and_then(Value::as_str), Some("Task" | "Eval")) {
        Format::McpChecker
    } else if doc.get("evals").is_some_and(Value::is_array) {
        Format::McpEvals
    } else if agentv::TESTS.iter().any(|k| doc.pointer(k).is_some_and(Value::is_array)) {
        Format::AgentV
    } else {
        Format::Unknown
    }
}

/// Escapes text for a template field: a foreign file's braces are literal.
pub fn literal(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}

/// A native task id for a foreign name: lowercase, other characters as `-`.
pub fn task_id(name: &str) -> String {
    name.to_lowercase().replace(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')), "-")
}

/// The files `pattern` (a path or a glob such as `tasks/*/task.yaml`) matches under `dir`,
/// sorted.
pub fn glob_files(dir: &Path, pattern: &str) -> Result<Vec<PathBuf>, String> {
    let full = format!("{}/{pattern}", glob::Pattern::escape(&dir.to_string_lossy()));
    let paths = glob::glob(&full).map_err(|e| format!("invalid glob `{pattern}`: {e}"))?;
    let mut files: Vec<_> = paths.filter_map(Result::ok).filter(|p| p.is_file()).collect();
    files.sort();
    Ok(files)
}
