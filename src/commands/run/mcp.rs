//! What a run records of its MCP servers besides its tasks: the drift of each tool surface
//! from its snapshot, the lint of each tools/list, and the official conformance suite's
//! checks as tasks.

use std::collections::BTreeMap;

use crate::files::display_path;
use crate::mcp::servers::Servers;
use crate::results::Results;
use crate::suite::model::Suite;

/// Before the tasks: every started instance's handshake, and the drift and lint checks the
/// gate adds.
pub(super) async fn record_servers(results: &mut Results, suite: &Suite, servers: &Servers, update_snapshot: bool) {
    results.mcp_servers = servers.infos();
    results.mcp_drift = drift(suite, servers, update_snapshot);
    results.mcp_lint = crate::preflight::lint_servers(suite, servers).await;
}

/// Each server with a `snapshot`: its live tool surface compared with (or, with
/// `--update-snapshot`, written to) the lock file.
fn drift(suite: &Suite, servers: &Servers, update: bool) -> BTreeMap<String, crate::mcp::surface::Drift> {
    use crate::mcp::surface::{Drift, Surface};
    let mut drift = BTreeMap::new();
    for (name, spec) in &suite.mcp_servers {
        let (Some((path, written)), Some(server)) = (&spec.snapshot, servers.by_name.get(name)) else { continue };
        let live = Surface::of(&server.info, &server.tools);
        drift.insert(name.clone(), Drift::check(name, &live, path, written, spec.fail_on, update));
    }
    drift
}

/// Each server with `conformance`: the official conformance suite run against its URL (or
/// its recorded run read), as tasks, and what they came to for the gate.
pub(super) async fn conformance(
    suite: &Suite,
) -> (Vec<crate::results::TaskResult>, BTreeMap<String, crate::results::conformance_tasks::ConformanceRun>) {
    use crate::mcp::conformance::{Source, read, run};
    use crate::mcp::session::Endpoint;
    use crate::results::conformance_tasks::{TaskSite, judge};
    let several = suite.mcp_servers.values().filter(|s| s.conformance.is_some()).count() > 1;
    let (mut tasks, mut runs) = (Vec::new(), BTreeMap::new());
    for (name, spec) in &suite.mcp_servers {
        let Some(conf) = &spec.conformance else { continue };
        let url = match spec.endpoint() {
            Endpoint::Http { url, .. } => Some(url),
            Endpoint::Stdio { .. } => None,
        };
        // The URL as written: its `{env.X}` values stay out of the reports.
        let source = conf.source.describe(spec.url.as_ref().map(crate::template::Template::source));
        let scenarios = match (&conf.source, &url) {
            (Source::Recorded { path, .. }, _) => read(path),
            (Source::Run { command, cwd, timeout }, Some(url)) => {
                run(command, cwd, *timeout, url, &conf.scenarios).await
            }
            (Source::Run { .. }, None) => Err("the conformance suite needs the server's `url`".to_owned()),
        };
        let prefix = if several { format!("conformance/{name}") } else { "conformance".to_owned() };
        let site = TaskSite { server: name, prefix, file: display_path(&suite.file), line: conf.line };
        let (t, r) = judge(&site, source, scenarios, &conf.expected_failures);
        let check = r.check(name);
        crate::errln!("{}: {}", check.name, check.actual);
        tasks.extend(t);
        runs.insert(name.clone(), r);
    }
    (tasks, runs)
}
