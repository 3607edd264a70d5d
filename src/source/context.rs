//! The state shared while compiling one suite file: where keys are, the names in reach, and
//! the problems found.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::{Diagnostic, KeyPath, Locate, Nowhere, Position};

/// Bytes a compiled user regular expression (and each of its lazy DFAs) may take.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Nesting a user regular expression may have (groups in groups).
const REGEX_NEST_LIMIT: u32 = 64;

pub struct ValidateCx<'a> {
    pub file: PathBuf,
    /// The suite file's directory, absolute.
    pub dir: PathBuf,
    source: &'a str,
    /// Where each line of `source` starts, so a diagnostic finds its line at once.
    line_starts: Vec<usize>,
    positions: Box<dyn Locate + 'a>,
    pub vars: BTreeMap<String, String>,
    /// Step ids in reach of the templates being validated, with their declared outputs.
    pub step_outputs: BTreeMap<String, BTreeSet<String>>,
    /// `foreach` variables in reach.
    pub locals: Vec<String>,
    /// In a conversation's turn: the turns whose answers are in reach (`{turns.N.output}`).
    pub turns: Option<u32>,
    /// The suite has a default judge.
    pub has_judge: bool,
    /// Names of the suite's MCP servers.
    pub mcp_servers: Vec<String>,
    /// The suite's `extensions`, by name.
    pub extensions: Vec<String>,
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
            line_starts: line_starts(source),
            positions,
            vars: BTreeMap::new(),
            step_outputs: BTreeMap::new(),
            locals: Vec::new(),
            turns: None,
            has_judge: false,
            mcp_servers: Vec::new(),
            extensions: Vec::new(),
            task_origins: HashMap::new(),
            diagnostics: Vec::new(),
        }
    }

    /// Drops the source: the suite being validated was converted from another format, so
    /// its key paths have no position in the file.
    pub fn forget_positions(&mut self) {
        self.source = "";
        self.line_starts = line_starts("");
        self.positions = Box::new(Nowhere);
    }

    /// The suite file's text (empty once its positions are forgotten).
    pub fn source(&self) -> &'a str {
        self.source
    }

    pub fn value_position(&self, path: &KeyPath) -> Option<Position> {
        self.positions.value(path.as_str())
    }

    /// Where the key of `path` is written (its last segment).
    pub fn key_position(&self, path: &KeyPath) -> Option<Position> {
        self.positions.key(path.as_str())
    }

    pub fn diagnostic_at(&self, path: &KeyPath, position: Option<Position>, message: impl Into<String>) -> Diagnostic {
        let message: String = message.into();
        if let Some(d) = self.in_imported_task(path, &message) {
            return d;
        }
        let excerpt = position.and_then(|p| Some(Diagnostic::excerpt(self.line(p.line)?, p.column)));
        let (source_line, caret) = excerpt.map_or((None, 0), |(line, caret)| (Some(line), caret));
        Diagnostic {
            file: self.file.clone(),
            key_path: path.to_string(),
            position,
            message,
            help: None,
            source_line,
            caret,
        }
    }

    /// Line `n` (1-based) of the source, without its line break.
    fn line(&self, n: usize) -> Option<&'a str> {
        let start = *self.line_starts.get(n.checked_sub(1)?)?;
        let end = self.line_starts.get(n).map_or(self.source.len(), |&next| next - 1);
        let line = self.source.get(start..end)?;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }

    /// Records a diagnostic already made.
    pub fn push(&mut self, diagnostic: Diagnostic) -> &mut Diagnostic {
        self.diagnostics.push(diagnostic);
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Whether `name` is one of the suite's MCP servers; if not, an error at `path` says so,
    /// with a "did you mean".
    pub fn known_mcp_server(&mut self, path: &KeyPath, name: &str) -> bool {
        if self.mcp_servers.iter().any(|s| s == name) {
            return true;
        }
        let help = super::unknown(name, self.mcp_servers.iter().map(String::as_str))
            .help("servers", "the suite defines no `mcp_servers`");
        self.error(path, format!("unknown MCP server `{name}`")).help = Some(help);
        false
    }

    /// Whether `name` is one of the suite's extensions; if not, an error at `path` says so,
    /// with a "did you mean".
    pub fn known_extension(&mut self, path: &KeyPath, name: &str) -> bool {
        if self.extensions.iter().any(|s| s == name) {
            return true;
        }
        let help = super::unknown(name, self.extensions.iter().map(String::as_str))
            .help("extensions", "the suite defines no `extensions`");
        self.error(path, format!("unknown extension `{name}`")).help = Some(help);
        false
    }

    /// Records an error about the value at `path`.
    pub fn error(&mut self, path: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        let d = self.diagnostic_at(path, self.value_position(path), message);
        self.push(d)
    }

    /// A problem in a task converted from another file is reported at that task in that
    /// file (the user never wrote the native key path), naming the converted key.
    fn in_imported_task(&self, path: &KeyPath, message: &str) -> Option<Diagnostic> {
        let rest = path.as_str().strip_prefix("tasks[")?;
        let (index, rest) = rest.split_once(']')?;
        let (file, line) = self.task_origins.get(&index.parse::<usize>().ok()?)?;
        let shown = self.file.parent().map_or_else(|| PathBuf::from(file), |p| p.join(file));
        let rest = rest.trim_start_matches('.');
        Some(Diagnostic {
            file: shown,
            key_path: if rest.is_empty() { "this task".into() } else { format!("this task's converted `{rest}`") },
            position: Some(Position { line: *line, column: 1 }),
            message: message.to_owned(),
            help: Some("`evalgate convert` prints the task as converted".into()),
            source_line: None,
            caret: 0,
        })
    }

    /// Records an error about the key at `path` (an unknown key, say).
    pub fn key_error(&mut self, path: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        let d = self.diagnostic_at(path, self.key_position(path), message);
        self.push(d)
    }

    /// Compiles a regular expression the suite gives, bounded so that a pathological pattern
    /// is refused here instead of taking the time and memory of the run; an error is
    /// recorded at `path`.
    pub fn regex(&mut self, path: &KeyPath, pattern: &str, ignore_case: bool) -> Option<regex::Regex> {
        let built = regex::RegexBuilder::new(pattern)
            .case_insensitive(ignore_case)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .nest_limit(REGEX_NEST_LIMIT)
            .build();
        match built {
            Ok(regex) => Some(regex),
            Err(regex::Error::CompiledTooBig(limit)) => {
                let message = format!(
                    "the regular expression compiles to more than {} MiB, the limit; repetitions such as `(a{{1000}}){{1000}}` multiply its size",
                    limit >> 20
                );
                self.error(path, message);
                None
            }
            Err(e) => {
                self.error(path, format!("invalid regular expression: {e}"));
                None
            }
        }
    }

    pub fn resolve_path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }
}

fn line_starts(source: &str) -> Vec<usize> {
    std::iter::once(0).chain(source.match_indices('\n').map(|(i, _)| i + 1)).collect()
}
