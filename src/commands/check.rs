//! `evalgate check`: validation and preflight (MCP servers started and stopped); no task runs.

use super::suites::{install_redactor, load_and_plan, preflight_all, selection};
use crate::cli::SelectArgs;
use crate::error::{Error, runtime};
use crate::exit;
use crate::run::task::display_path;

pub fn check(select: &SelectArgs) -> Result<i32, Error> {
    let planned = load_and_plan(select, &selection(select))?;
    for secret in install_redactor(&planned).iter().filter(|s| s.is_too_short()) {
        crate::errln!(
            "warning: {} is shorter than {} characters: reports are not redacted of it (too many false hits)",
            secret.placeholder,
            crate::redact::MIN_SECRET_LEN
        );
    }
    preflight_all(&planned)?;
    if planned.iter().any(|p| !p.suite.mcp_servers.is_empty()) {
        runtime()?.block_on(async {
            for p in &planned {
                let servers = crate::preflight::start_servers(&p.suite).await.map_err(|e| Error::Preflight(vec![e]))?;
                servers.close().await;
            }
            Ok::<(), Error>(())
        })?;
    }
    if !select.quiet {
        for p in &planned {
            crate::errln!(
                "ok: {} ({}): {} task(s), {} agent(s); preflight passed",
                p.suite.id,
                display_path(&p.suite.file),
                p.suite.tasks.len(),
                p.suite.agents.len()
            );
        }
    }
    std::mem::forget(planned);
    Ok(exit::SUCCESS)
}
