//! `evalgate check`: validation and preflight (MCP servers started and stopped); no task runs.

use super::suites::{install_redactor, load_and_plan, preflight_all, selection, uses_of};
use crate::cli::{CassetteFlags, SelectArgs};
use crate::error::{Error, runtime};
use crate::exit;
use crate::files::display_path;
use crate::llm::pricing::PriceTable;
use crate::results::baseline_comparison::Baseline;
use crate::suite::model::{Agent, Suite};

pub fn check(select: &SelectArgs) -> Result<i32, Error> {
    let mut planned = load_and_plan(select, &selection(select))?;
    let uses = uses_of(&planned);
    for secret in install_redactor(&uses).iter().filter(|s| s.is_too_short()) {
        crate::errln!(
            "warning: {} is shorter than {} characters: reports are not redacted of it (too many false hits)",
            secret.placeholder,
            crate::redact::MIN_SECRET_LEN
        );
    }
    for p in &planned {
        for warning in budget_warnings(&p.suite) {
            crate::errln!("warning: {}: {warning}", p.suite.id);
        }
    }
    preflight_all(&uses)?;
    let mut lint_failed = false;
    if planned.iter().any(|p| !p.suite.mcp_servers.is_empty()) {
        runtime()?.block_on(async {
            for p in &mut planned {
                // A replayed server is checked as the run will see it: from the cassette.
                let cassette =
                    super::cassettes::open(&mut p.suite, CassetteFlags::default())?.filter(|c| !c.mode.live());
                let servers = crate::preflight::start_servers(&p.suite, cassette.as_ref())
                    .await
                    .map_err(|e| Error::Preflight(vec![e]))?;
                // `lint: true` servers: their tool lists are checked here too.
                for (server, lint) in crate::preflight::lint_servers(&p.suite, &servers).await {
                    for finding in &lint.findings {
                        let failing = lint.fail_on.fails(finding.level);
                        lint_failed |= failing;
                        let level = if failing { "error" } else { "warning" };
                        crate::errln!("{level}: MCP server `{server}` tools/list: {}", finding.line());
                    }
                }
                servers.close().await;
            }
            Ok::<(), Error>(())
        })?;
    }
    // Extensions start, and every operation a step calls is checked against its manifest.
    if planned.iter().any(|p| !p.suite.extensions.is_empty()) {
        runtime()?.block_on(async {
            for p in &planned {
                let extensions =
                    crate::preflight::start_extensions(&p.suite).await.map_err(|e| Error::Preflight(vec![e]))?;
                extensions.shutdown().await;
            }
            Ok::<(), Error>(())
        })?;
    }
    if lint_failed {
        crate::errln!("the tools/list lint failed (`mcp_servers.NAME.lint`); nothing ran");
        return Ok(exit::GATE_FAILED);
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
    if select.verbose {
        planned.iter().for_each(|p| incomplete_fingerprints(&p.suite));
    }
    std::mem::forget(planned);
    Ok(exit::SUCCESS)
}

/// `check -v`: the tasks whose fingerprint may miss an input (`--changed-since` would carry
/// them past a change it cannot see), each with what to declare.
fn incomplete_fingerprints(suite: &Suite) {
    let all: Vec<usize> = (0..suite.tasks.len()).collect();
    let prints = crate::fingerprint::fingerprints(suite, &all, None);
    let incomplete: Vec<_> = suite.tasks.iter().zip(&prints).filter(|(_, p)| !p.incomplete.is_empty()).collect();
    if incomplete.is_empty() {
        crate::errln!("fingerprints: {}: every task's inputs are known", suite.id);
        return;
    }
    crate::errln!(
        "fingerprints: {}: {} task(s) may have inputs evalgate cannot see; --changed-since carries them past a change to one unless the task lists them in `inputs:`",
        suite.id,
        incomplete.len()
    );
    for (task, print) in incomplete {
        crate::errln!(
            "  {} ({}:{}): {}",
            task.id,
            display_path(&suite.file),
            task.position.line,
            print.incomplete.join("; ")
        );
    }
}

/// Budgets that cannot be measured the way they read: a cost budget no agent of the suite
/// is known to report cost for, a latency percentage on a baseline p95 so small that
/// jitter alone moves it (and no `min_latency_increase_ms` floor).
pub fn budget_warnings(suite: &Suite) -> Vec<String> {
    let mut warnings = Vec::new();
    if suite.thresholds.as_ref().is_some_and(|t| t.max_cost_usd.is_some()) {
        let mut prices = PriceTable::default();
        prices.overrides.extend(suite.pricing.clone());
        let agents: Vec<&Agent> = suite.tasks.iter().map(|t| &*t.agent).collect();
        let reports = |a: &&Agent| match a {
            Agent::Llm(llm) => prices.price(&llm.spec.model).is_some(),
            Agent::Command(_) | Agent::Acp(_) | Agent::Http(_) | Agent::Call(_) => false,
        };
        if !agents.is_empty() && !agents.iter().any(reports) {
            warnings.push(
                "thresholds.max_cost_usd is set, but no agent is known to report cost: a command agent reports it by \
                 writing {\"usage\": {\"cost_usd\": …}} (or tokens and a model with a known price) to $EVALGATE_TRACE; \
                 an llm agent needs a priced model (`pricing:`); else set thresholds.unknown_cost: ignore"
                    .to_owned(),
            );
        }
    }
    if let Some(config) = &suite.regression
        && let Some(max) = config.budget.max_p95_latency_increase_pct
        && config.budget.min_latency_increase_ms.is_none()
        && let Some(p95) =
            config.baseline.as_deref().and_then(|b| Baseline::load(b).ok()).and_then(|b| b.p95_latency_ms)
        && p95 < SMALL_LATENCY_MS
    {
        let jitter = (max.get() / 100.0 * p95 as f64).round() as u64;
        warnings.push(format!(
            "regression.max_p95_latency_increase_pct: {} is measured on a baseline p95 of {p95} ms: a rise of {jitter} ms fails it; \
             set regression.min_latency_increase_ms (a rise that small never fails)",
            max.get()
        ));
    }
    warnings
}

/// Below this baseline p95, a latency percentage is mostly jitter.
const SMALL_LATENCY_MS: u64 = 1000;
