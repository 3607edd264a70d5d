//! The state shared while validating one suite file: where keys are, and the problems found.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::diagnostic::Diagnostic;
use super::positions::{Position, PositionIndex};
use super::template::{Names, Scope, Template};

pub struct ValidateCx<'a> {
    pub file: PathBuf,
    /// The suite file's directory, absolute.
    pub dir: PathBuf,
    source: &'a str,
    /// Positions down to the tasks (for JUnit and annotations), built on every load.
    shallow: PositionIndex,
    /// Every position, built when the first error needs one.
    full: std::cell::OnceCell<PositionIndex>,
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
    pub task_origins: std::collections::HashMap<usize, (String, usize)>,
    pub diagnostics: Vec<Diagnostic>,
}

impl<'a> ValidateCx<'a> {
    pub fn new(file: &Path, dir: PathBuf, source: &'a str) -> Self {
        ValidateCx {
            file: file.to_owned(),
            dir,
            source,
            shallow: PositionIndex::build_to_depth(source, 2),
            full: std::cell::OnceCell::new(),
            vars: BTreeMap::new(),
            step_outputs: BTreeMap::new(),
            locals: Vec::new(),
            has_judge: false,
            mcp_servers: Vec::new(),
            task_origins: std::collections::HashMap::new(),
            diagnostics: Vec::new(),
        }
    }

    /// Drops the source: the suite being validated was converted from another format, so
    /// its key paths have no position in the file.
    pub fn forget_positions(&mut self) {
        self.source = "";
        self.shallow = PositionIndex::build_to_depth("", 2);
        self.full = std::cell::OnceCell::from(PositionIndex::build(""));
    }

    /// The suite file's text (empty once its positions are forgotten).
    pub fn source(&self) -> &'a str {
        self.source
    }

    pub fn value_position(&self, path: &str) -> Option<Position> {
        self.shallow.value(path).or_else(|| self.positions().value(path))
    }

    fn positions(&self) -> &PositionIndex {
        self.full.get_or_init(|| PositionIndex::build(self.source))
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

    /// Records an error about the value at `path`.
    pub fn error(&mut self, path: &str, message: impl Into<String>) -> &mut Diagnostic {
        let d = self.diagnostic_at(path, self.positions().value(path), message);
        self.diagnostics.push(d);
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Records an error about the key at `path` (an unknown key, say).
    pub fn key_error(&mut self, path: &str, message: impl Into<String>) -> &mut Diagnostic {
        let d = self.diagnostic_at(path, self.positions().key(path), message);
        self.diagnostics.push(d);
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Parses a template found at `path`, recording an error when it is invalid.
    pub fn template(&mut self, text: &str, scope: Scope, path: &str) -> Option<Template> {
        let names = Names { vars: Some(&self.vars), step_outputs: Some(&self.step_outputs), locals: &self.locals };
        match Template::parse(text, scope, names) {
            Ok(t) => Some(t),
            Err(e) => {
                let mut position = self.positions().value(path);
                // Point at the offending character when the value sits on one line.
                if let Some(p) = position.as_mut() {
                    let line = self.source.lines().nth(p.line - 1).unwrap_or("");
                    if let Some(offset) = line.chars().skip(p.column - 1).collect::<String>().find(text) {
                        p.column += offset + e.column - 1;
                    }
                }
                let mut d = self.diagnostic_at(path, position, e.message);
                d.help = e.help;
                self.diagnostics.push(d);
                None
            }
        }
    }

    pub fn templates(&mut self, texts: &[String], scope: Scope, path: &str) -> Option<Vec<Template>> {
        let parsed: Vec<_> =
            texts.iter().enumerate().map(|(i, t)| self.template(t, scope, &format!("{path}[{i}]"))).collect();
        parsed.into_iter().collect()
    }

    pub fn env_templates(
        &mut self,
        env: &BTreeMap<String, String>,
        scope: Scope,
        path: &str,
    ) -> Vec<(String, Template)> {
        env.iter().filter_map(|(k, v)| Some((k.clone(), self.template(v, scope, &format!("{path}.{k}"))?))).collect()
    }

    pub fn resolve_path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// Checks a 0..1 value, recording an error when it is outside.
    pub fn unit_interval(&mut self, value: Option<f64>, path: &str) -> Option<f64> {
        let v = value?;
        if (0.0..=1.0).contains(&v) {
            Some(v)
        } else {
            self.error(path, format!("must be between 0 and 1, got {v}"));
            None
        }
    }
}
