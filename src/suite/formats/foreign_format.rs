//! What a foreign format is to evalgate: a name, a shape to recognise and a conversion to a
//! native suite, plus what the loader must know to run or import its files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Problems;
use crate::mcp::session::Endpoint;

pub trait ForeignFormat: Sync {
    /// The format in messages: `OpenWOP AgentEvalSuite`.
    fn name(&self) -> &'static str;

    /// The format in an `imports` entry's `format` and in `convert --format`: `openwop`.
    fn import_name(&self) -> &'static str;

    /// Whether `doc` has this format's shape (formats are tried in `FORMATS` order).
    fn detect(&self, doc: &Value) -> bool;

    /// `doc` as a native suite.
    fn convert(&self, doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems>;

    /// Why `doc` cannot be run on its own, when it lacks something only an importing suite
    /// supplies; `None` when it can run (or is invalid, which `convert` then reports).
    fn unrunnable(&self, _doc: &Value) -> Option<Unrunnable> {
        None
    }

    /// For a format whose files are about one MCP server of the importing suite rather than
    /// run by its agent: an import of it names `server`, needs no `agent`, and without
    /// `path` takes the documents the server lists with this.
    fn server_listing(&self) -> Option<ServerListing> {
        None
    }
}

/// Reads a format's documents from a live MCP server.
pub type ServerListing = fn(&Endpoint) -> Result<Value, String>;

/// What a file lacks to run on its own, and the keys of an `imports` entry that supply it.
pub struct Unrunnable {
    pub why: &'static str,
    /// As written in the suggested import: `agent: NAME`.
    pub import_keys: &'static str,
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
    /// The line, for a file that is not one YAML document (a JSONL list of tests).
    pub line: Option<usize>,
}

pub struct Converted {
    pub suite: Value,
    /// One per task of `suite`, in order.
    pub origins: Vec<Origin>,
}
