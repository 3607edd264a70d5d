//! Runs the planned tasks concurrently (at most `jobs` at once) and reports each as it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::events::RunEvent;
use super::task::{run_task, skipped};
use crate::results::Status;
use crate::suite::model::Suite;

#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    pub jobs: usize,
    pub fail_fast: bool,
}

/// Runs `plan` (indices into `suite.tasks`); event indices are positions in `plan`.
pub async fn schedule(
    suite: Arc<Suite>,
    plan: Vec<usize>,
    options: RunOptions,
    events: mpsc::UnboundedSender<RunEvent>,
    cancel: CancellationToken,
) {
    let _ = events.send(RunEvent::Started { suite_id: suite.id.clone(), tasks: plan.len() });
    let vars = Arc::new(suite.vars.clone());
    // Prompt and trace files of every agent run; removed when the run ends.
    let scratch = match tempfile::Builder::new().prefix("evalgate-").tempdir() {
        Ok(dir) => Arc::new(dir),
        Err(e) => {
            eprintln!("evalgate: cannot create a temporary directory: {e}");
            for (index, &task_index) in plan.iter().enumerate() {
                let mut result = skipped(&suite, &suite.tasks[task_index], "cannot create a temporary directory");
                result.status = Status::Error;
                let _ = events.send(RunEvent::TaskFinished { index, result: Box::new(result) });
            }
            let _ = events.send(RunEvent::Finished { interrupted: false });
            return;
        }
    };
    let permits = Arc::new(Semaphore::new(options.jobs.max(1)));
    let stop = Arc::new(AtomicBool::new(false));
    let mut running = tokio::task::JoinSet::new();
    for (index, &task_index) in plan.iter().enumerate() {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.ok(),
            () = cancel.cancelled() => None,
        };
        let task = &suite.tasks[task_index];
        let reason = if cancel.is_cancelled() || permit.is_none() {
            Some("run interrupted")
        } else if stop.load(Ordering::SeqCst) {
            Some("not run: --fail-fast stopped the run after a failure")
        } else {
            None
        };
        if let Some(reason) = reason {
            let result = skipped(&suite, task, reason);
            let _ = events.send(RunEvent::TaskFinished { index, result: Box::new(result) });
            continue;
        }
        let _ = events.send(RunEvent::TaskStarted { index, id: task.id.clone() });
        let (suite, vars, events, cancel, stop) =
            (suite.clone(), vars.clone(), events.clone(), cancel.clone(), stop.clone());
        let scratch = scratch.clone();
        running.spawn(async move {
            let _permit = permit;
            let task = &suite.tasks[task_index];
            let result = run_task(scratch.path(), &suite, &vars, task, &cancel).await;
            if options.fail_fast && matches!(result.status, Status::Failed | Status::Error) {
                stop.store(true, Ordering::SeqCst);
            }
            let _ = events.send(RunEvent::TaskFinished { index, result: Box::new(result) });
        });
    }
    while let Some(joined) = running.join_next().await {
        if let Err(e) = joined {
            // A panicking task is a bug; its result is missing, which the dispatcher reports.
            eprintln!("evalgate: internal error in a task: {e}");
        }
    }
    let _ = events.send(RunEvent::Finished { interrupted: cancel.is_cancelled() });
}
