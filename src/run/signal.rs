//! SIGINT and SIGTERM, as nextest handles them. The first stops dispatching and cancels
//! running tasks, whose cleanup and `after_all` still run. The second (GitHub's cancel sends
//! SIGINT, then SIGTERM) kills every process group at once, skips what cleanup is left, and
//! the run writes its reports and exits 4. `commands::frame` listens for them, for every
//! subcommand.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio_util::sync::CancellationToken;

/// What the signals asked for so far; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    /// The first signal: cancel.
    pub cancel: CancellationToken,
    /// The second signal: stop now.
    pub now: CancellationToken,
    signals: Arc<AtomicU32>,
}

impl Stop {
    pub fn signals(&self) -> u32 {
        self.signals.load(Ordering::SeqCst)
    }

    /// Resolves at the next signal from now (never after the second, which stops all).
    pub async fn next_signal(&self) {
        match self.signals() {
            0 => self.cancel.cancelled().await,
            1 => self.now.cancelled().await,
            _ => {}
        }
    }

    /// Records one signal and acts on it: the first cancels, the second also kills every
    /// process group evalgate started and refuses new ones. The frame every subcommand runs
    /// in (`commands::frame`) listens for the signals and calls this.
    pub fn signal(&self) {
        let n = self.signals.fetch_add(1, Ordering::SeqCst) + 1;
        if n > 1 {
            crate::process::stop_everything();
            self.now.cancel();
        }
        self.cancel.cancel();
    }
}
