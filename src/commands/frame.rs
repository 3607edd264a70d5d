//! The frame every subcommand runs in (`commands::main` runs nothing outside it): signals
//! are listened for from the start to the exit, the command runs on a thread of its own,
//! and the frame races its end against them. A command that answers a signal itself
//! (`run`: it cancels, cleans up and writes reports that say interrupted) has until the
//! second signal and [`AFTER_SECOND`] more; any other is abandoned at the first. Either way
//! the processes evalgate started (agents, steps, MCP servers, each in a process group it
//! tracks, and what escaped them) are killed before the exit, whose code is then 4.

use std::time::Duration;

use crate::error::{Error, runtime};
use crate::exit;
use crate::process::reaper;
use crate::run::signal::Stop;

/// How a command answers SIGINT and SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    /// It reads [`Stop`] and ends itself, reports written (`run`, `calibrate`).
    Answers,
    /// It does not: the frame ends it at the first signal.
    Abandoned,
}

/// How long a command that answers signals has after the second to write its reports.
const AFTER_SECOND: Duration = Duration::from_secs(5);

/// The command's thread's stack: the main thread's (8 MiB), which the parsers' recursion
/// (YAML, JSON) was sized for.
const STACK: usize = 8 << 20;

/// Runs `command` in the frame and returns the process's exit code.
pub fn run(on_signal: OnSignal, command: impl FnOnce(&Stop) -> Result<i32, Error> + Send + 'static) -> i32 {
    // Escaped descendants come back to evalgate, which kills them (`process::reaper`).
    reaper::become_subreaper();
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(e) => return failed(&e),
    };
    let stop = Stop::default();
    // Listening before the command starts: a signal at any moment of it is seen (the task
    // runs in the `block_on` below; the handlers are in place from here).
    runtime.block_on(async { listen(&stop, on_signal) });
    let (done, ended) = tokio::sync::oneshot::channel();
    let for_command = stop.clone();
    let started = std::thread::Builder::new().name("command".into()).stack_size(STACK).spawn(move || {
        let _ = done.send(command(&for_command));
    });
    if let Err(e) = started {
        return failed(&Error::Internal(format!("cannot start the command's thread: {e}")));
    }
    let ended = runtime.block_on(async {
        let mut ended = std::pin::pin!(ended);
        let interrupted = async {
            match on_signal {
                OnSignal::Abandoned => stop.cancel.cancelled().await,
                OnSignal::Answers => {
                    stop.now.cancelled().await;
                    tokio::time::sleep(AFTER_SECOND).await;
                }
            }
        };
        tokio::select! {
            ended = &mut ended => ended.ok(),
            () = interrupted => None,
        }
    });
    let code = match ended {
        Some(Ok(code)) => code,
        Some(Err(e)) => failed(&e),
        // The thread panicked (its message is printed), or the command was abandoned.
        None if stop.signals() == 0 => exit::ABORTED,
        None => {
            crate::process::stop_everything();
            exit::ABORTED
        }
    };
    let killed = reaper::kill_everything();
    if !killed.is_empty() {
        crate::errln!("killed {} background process(es) left behind: {}", killed.len(), killed.join("; "));
    }
    // Not waiting for the blocking pool, nor the command's thread: an abandoned command may
    // be blocked for ever, and nothing there is ours to wait for.
    runtime.shutdown_background();
    code
}

fn failed(e: &Error) -> i32 {
    crate::errln!("{}", e.render());
    e.exit_code()
}

/// Listens for SIGINT and SIGTERM for as long as the runtime lives: each is recorded on
/// `stop` (`Stop::signal`), and said on stderr.
fn listen(stop: &Stop, on_signal: OnSignal) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        crate::errln!("evalgate: warning: cannot listen for signals");
        return;
    };
    let stop = stop.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            match (on_signal, stop.signals()) {
                (OnSignal::Abandoned, _) => crate::errln!("evalgate: interrupted; stopping every process it started"),
                (OnSignal::Answers, 0) => {
                    crate::errln!(
                        "evalgate: interrupted; cancelling running tasks, running their cleanup and writing results"
                    );
                    crate::errln!("evalgate: a second signal stops everything at once");
                }
                (OnSignal::Answers, _) => {
                    crate::errln!("evalgate: second signal; killing every process now and writing results");
                }
            }
            stop.signal();
        }
    });
}
