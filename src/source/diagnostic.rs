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
    /// The source line the position points into (a window of it when it is long), for the
    /// caret display.
    pub source_line: Option<String>,
    /// The 1-based column of the caret in `source_line`.
    pub caret: usize,
}

/// Source lines longer than this many characters are shown as a window around the column:
/// a minified JSON suite is one line of any length.
const SHOWN_CHARS: usize = 100;

impl Diagnostic {
    /// The part of `line` shown under a diagnostic at `column`, and the caret's column in it.
    pub fn excerpt(line: &str, column: usize) -> (String, usize) {
        let chars = line.chars().count();
        if chars <= SHOWN_CHARS {
            return (line.to_owned(), column.min(chars + 1));
        }
        let start = column.saturating_sub(SHOWN_CHARS / 2).min(chars - SHOWN_CHARS);
        let mut shown: String = line.chars().skip(start).take(SHOWN_CHARS).collect();
        let mut caret = column - start;
        if start > 0 {
            shown.insert(0, '…');
            caret += 1;
        }
        if start + SHOWN_CHARS < chars {
            shown.push('…');
        }
        (shown, caret.min(SHOWN_CHARS + 2))
    }

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
            write!(f, "\n{:gutter$} |\n{} | {}\n{:gutter$} | {:>col$}", "", pos.line, line, "", "^", col = self.caret)?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}
