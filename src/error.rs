//! The error a command stops with, and its exit code. A run that gets as far as a gate
//! exits with its outcome's code instead (`RunOutcome::exit_code`).

use crate::exit;
use crate::preflight::PreflightError;
use crate::report::writer::{ClaimError, WriteError};
use crate::suite::LoadError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n\n"))]
    Preflight(Vec<PreflightError>),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Load(_) => exit::INVALID_INPUT,
            Error::Preflight(_) => exit::PREFLIGHT_FAILED,
            Error::Write(_) | Error::Claim(_) | Error::Internal(_) => exit::ABORTED,
        }
    }

    /// The text for stderr: located diagnostics as they are, anything else after `error:`.
    pub fn render(&self) -> String {
        match self {
            Error::Load(LoadError::Invalid { .. }) | Error::Preflight(_) => self.to_string(),
            _ => format!("error: {self}"),
        }
    }
}

impl From<crate::plan::PlanError> for Error {
    fn from(e: crate::plan::PlanError) -> Self {
        Error::Usage(e.to_string())
    }
}

/// More than any `-j` a machine can run processes for (each thread reserves its stack's
/// address space, not memory).
const MAX_BLOCKING_THREADS: usize = 1 << 16;

/// The async runtime of a command: one thread. evalgate's own work per task (grading,
/// reporting) is small next to what it waits on; on one thread it never hands a task's
/// events between threads (a wake-up and a context switch each), and it leaves every other
/// core to the agents. Blocking file work, and each process from its spawn to its end
/// (`process::life`), go to tokio's blocking pool, which holds a thread per running
/// process: `-j` and the open-file limit bound those, not the pool (by default 512 threads,
/// past which `-j 1000` would run 512 agents and queue the rest behind them).
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the async runtime: {e}")))
}
