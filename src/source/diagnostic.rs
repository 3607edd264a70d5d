//! One problem found in a suite file, with where it is and how to fix it.

use std::fmt;
use std::path::PathBuf;

use super::Position;

#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// Dotted key path inside the file, e.g. `tasks[2].grade[0].value`; empty for the whole file.
    pub key_path: String,
    pub position: Option<Position>,
    pub message: String,
    pub help: Option<String>,
    /// The source line the position points into, for the caret display.
    pub source_line: Option<String>,
}

impl Diagnostic {
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(pos) = self.position {
            write!(f, ":{}:{}", pos.line, pos.column)?;
        }
        f.write_str(": ")?;
        if !self.key_path.is_empty() {
            write!(f, "{}: ", self.key_path)?;
        }
        f.write_str(&self.message)?;
        if let (Some(pos), Some(line)) = (self.position, &self.source_line) {
            let gutter = pos.line.to_string().len();
            write!(f, "\n{:gutter$} |\n{} | {}\n{:gutter$} | {:>col$}", "", pos.line, line, "", "^", col = pos.column)?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}
