//! The state shared while compiling one suite file: where keys are, the names in reach, and
//! the problems found.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::{Diagnostic, Locate, Nowhere, Position};

pub struct ValidateCx<'a> {
    pub file: PathBuf,
    /// The suite file's directory, absolute.
    pub dir: PathBuf,
    source: &'a str,
    positions: Box<dyn Locate + 'a>,
    pub vars: BTreeMap<String, String>,
    /// Step ids in reach of the templates being validated, with their declared outputs.
    pub step_outputs: BTreeMap<String, BTreeSet<String>>,
    /// `foreach` variables in reach.
    pub locals: Vec<String>,
    /// The suite has a default judge.
    pub has_judge: bool,
    /// Names of the suite's MCP servers.
    pub mcp_servers: Vec<String>,
    /// Imported tasks, by index in `tasks`: the file (relative to the suite) and line.
    pub task_origins: HashMap<usize, (String, usize)>,
    pub diagnostics: Vec<Diagnostic>,
}

impl<'a> ValidateCx<'a> {
    pub fn new(file: &Path, dir: PathBuf, source: &'a str, positions: Box<dyn Locate + 'a>) -> Self {
        ValidateCx {
            file: file.to_owned(),
            dir,
            source,
            positions,
            vars: BTreeMap::new(),
            step_outputs: BTreeMap::new(),
            locals: Vec::new(),
            has_judge: false,
            mcp_servers: Vec::new(),
            task_origins: HashMap::new(),
            diagnostics: Vec::new(),
        }
    }

    /// Drops the source: the suite being validated was converted from another format, so
    /// its key paths have no position in the file.
    pub fn forget_positions(&mut self) {
        self.source = "";
        self.positions = Box::new(Nowhere);
    }

    /// The suite file's text (empty once its positions are forgotten).
    pub fn source(&self) -> &'a str {
        self.source
    }

    pub fn value_position(&self, path: &str) -> Option<Position> {
        self.positions.value(path)
    }

    pub fn diagnostic_at(&self, path: &str, position: Option<Position>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: self.file.clone(),
            key_path: path.to_owned(),
            position,
            message: message.into(),
            help: None,
            source_line: position.and_then(|p| self.source.lines().nth(p.line - 1)).map(str::to_owned),
        }
    }

    /// Records a diagnostic already made.
    pub fn push(&mut self, diagnostic: Diagnostic) -> &mut Diagnostic {
        self.diagnostics.push(diagnostic);
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Records an error about the value at `path`.
    pub fn error(&mut self, path: &str, message: impl Into<String>) -> &mut Diagnostic {
        let d = self.diagnostic_at(path, self.positions.value(path), message);
        self.push(d)
    }

    /// Records an error about the key at `path` (an unknown key, say).
    pub fn key_error(&mut self, path: &str, message: impl Into<String>) -> &mut Diagnostic {
        let d = self.diagnostic_at(path, self.positions.key(path), message);
        self.push(d)
    }

    pub fn resolve_path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }
}
