//! `evalgate mcp tools|snapshot|diff`: a suite's MCP servers' tool surfaces, printed,
//! snapshotted to a lock file, or compared with one.

use crate::cli::{McpArgs, McpCommand};
use crate::error::Error;
use crate::exit;
use crate::mcp::servers::Servers;
use crate::mcp::surface::{Drift, FORMAT, Lock, Surface};
use crate::suite::model::Suite;

/// What a subcommand does with the started servers; returns the exit code.
type Print = fn(&Suite, &Servers, &McpCommand) -> i32;

pub fn mcp(command: &McpCommand) -> Result<i32, Error> {
    let (args, print): (&McpArgs, Print) = match command {
        McpCommand::Tools(args) => (args, tools),
        McpCommand::Snapshot(args) => (args, snapshot),
        McpCommand::Diff(d) => (&d.servers, drift),
    };
    let (path, names) = args.suite_and_servers();
    let suite = crate::suite::load_suite(&path, &crate::suite::LoadOptions::servers_only())?;
    for name in names {
        if !suite.mcp_servers.contains_key(name) {
            let known: Vec<&str> = suite.mcp_servers.keys().map(String::as_str).collect();
            return Err(Error::Usage(format!(
                "{} has no MCP server `{name}` (it has: {})",
                path.display(),
                known.join(", ")
            )));
        }
    }
    let specs = suite.mcp_servers.values().filter(|s| names.is_empty() || names.contains(&s.name)).map(|s| s.spec());
    let runtime = crate::error::runtime()?;
    let servers = match runtime.block_on(Servers::start(specs)) {
        Ok(servers) => servers,
        Err((name, e)) => {
            crate::errln!("error: MCP server `{name}` did not start: {e}");
            return Ok(exit::PREFLIGHT_FAILED);
        }
    };
    let code = print(&suite, &servers, command);
    runtime.block_on(servers.close());
    Ok(code)
}

fn surface(servers: &Servers, name: &str) -> Surface {
    let server = &servers.by_name[name];
    Surface::of(&server.info, &server.tools)
}

/// Each tool: its name, description, annotations and schemas.
fn tools(_: &Suite, servers: &Servers, _: &McpCommand) -> i32 {
    for (name, server) in &servers.by_name {
        let info = &server.info;
        let by = [info.name.as_deref(), info.version.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
        crate::outln!("{name} ({by}, protocol {}): {} tool(s)", info.protocol_version, server.tools.len());
        for (tool, t) in &surface(servers, name).tools {
            crate::outln!("\n  {tool}");
            if !t.description.is_empty() {
                crate::outln!("    {}", t.description.replace('\n', "\n    "));
            }
            crate::outln!("    input:  {}", t.input_schema);
            if let Some(output) = &t.output_schema {
                crate::outln!("    output: {output}");
            }
            if !t.annotations.is_null() {
                crate::outln!("    annotations (hints, untrusted): {}", t.annotations);
            }
        }
        crate::outln!("");
    }
    exit::SUCCESS
}

/// The lock file of the servers, on stdout.
fn snapshot(_: &Suite, servers: &Servers, _: &McpCommand) -> i32 {
    let lock = Lock {
        format: FORMAT.into(),
        servers: servers.by_name.keys().map(|n| (n.clone(), surface(servers, n))).collect(),
    };
    crate::outln!("{}", lock.to_json().trim_end());
    exit::SUCCESS
}

/// Each server against its snapshot (`--snapshot`, else its `snapshot` in the suite): the
/// changes, and exit 1 when one fails `drift.fail_on`.
fn drift(suite: &Suite, servers: &Servers, command: &McpCommand) -> i32 {
    let McpCommand::Diff(args) = command else { return exit::INVALID_INPUT };
    let mut code = exit::SUCCESS;
    for name in servers.by_name.keys() {
        let spec = &suite.mcp_servers[name];
        let (path, written) = match (&args.snapshot, &spec.snapshot) {
            (Some(p), _) => (p.clone(), p.display().to_string()),
            (None, Some((p, written))) => (p.clone(), written.clone()),
            (None, None) => {
                crate::errln!("{name}: no snapshot (`mcp_servers.{name}.snapshot` or --snapshot FILE)");
                code = code.max(exit::INVALID_INPUT);
                continue;
            }
        };
        // The run's own comparison (`Drift::check`), never writing the lock.
        let drift = Drift::check(name, &surface(servers, name), &path, &written, spec.fail_on, false);
        if let Some(e) = &drift.error {
            crate::errln!("error: {e}");
            code = code.max(exit::INVALID_INPUT);
            continue;
        }
        let changes = drift.changes;
        crate::outln!("{name} vs {written}: {} change(s)", changes.len());
        for change in &changes {
            crate::outln!("  {}", change.line());
        }
        if changes.iter().any(|c| spec.fail_on.fails(c.class)) {
            code = code.max(exit::GATE_FAILED);
        }
    }
    code
}
