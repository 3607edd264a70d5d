//! Why a suite could not be loaded.

use std::fmt;
use std::path::PathBuf;

use crate::source::Diagnostic;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read suite file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", Invalid(diagnostics))]
    Invalid { diagnostics: Vec<Diagnostic> },
}

struct Invalid<'a>(&'a [Diagnostic]);

impl fmt::Display for Invalid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            write!(f, "error: {d}")?;
        }
        let n = self.0.len();
        write!(f, "\n\n{n} {} in the suite; nothing ran", if n == 1 { "error" } else { "errors" })
    }
}
