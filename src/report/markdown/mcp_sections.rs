//! The MCP servers' sections of the Markdown summary: lint findings, protocol versions and
//! drift against the snapshot.

use std::fmt::Write;

use super::{code, escape};
use crate::excerpt::cut;
use crate::results::Results;

/// A server's `tools/list` lint findings, worst first.
pub(super) fn lint_section(server: &str, lint: &crate::mcp::lint::Lint, max_rows: usize) -> String {
    let mut md =
        format!("### MCP tools/list lint of `{}` (protocol {})\n\n", code(server), escape(&lint.protocol_version));
    if lint.findings.is_empty() {
        md.push_str("No finding.\n\n");
        return md;
    }
    for finding in lint.findings.iter().take(max_rows) {
        let mark = if lint.fail_on.fails(finding.level) { "❌" } else { "⚠️" };
        let level = match finding.level {
            crate::mcp::lint::Level::Error => "error",
            crate::mcp::lint::Level::Review => "review",
        };
        let tool = if finding.tool.is_empty() { String::new() } else { format!("`{}`: ", code(&finding.tool)) };
        let _ = writeln!(md, "- {mark} {level}: {tool}{}", escape(&finding.what));
    }
    if lint.findings.len() > max_rows {
        let _ = writeln!(md, "- … and {} more (results.json has them all)", lint.findings.len() - max_rows);
    }
    md.push('\n');
    md
}

/// Per protocol version, for the tasks of a server with a protocol list.
pub(super) fn eras_section(results: &Results) -> String {
    let eras = crate::results::eras::eras(results);
    if eras.is_empty() {
        return String::new();
    }
    let mut md =
        String::from("### MCP protocol versions\n\n| server | version | tasks passed | verdict |\n|---|---|---|---|\n");
    for era in &eras {
        let verdict = match &era.first_failure {
            None if era.passes() => "✅ passes".to_owned(),
            None => "⚠️ did not finish".to_owned(),
            Some(why) => format!("❌ fails: {}", escape(&cut(why, 300))),
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {}/{} | {verdict} |",
            code(&era.server),
            escape(&era.version),
            era.passed,
            era.tasks
        );
    }
    md.push('\n');
    md
}

/// A server's tool surface against its snapshot: each change, the worst first (`diff`'s order).
pub(super) fn drift_section(server: &str, drift: &crate::mcp::surface::Drift, max_rows: usize) -> String {
    use crate::mcp::surface::Class;
    let mut md = format!("### MCP tool surface of `{}` vs `{}`\n\n", code(server), code(&drift.snapshot));
    if let Some(error) = &drift.error {
        let _ = writeln!(md, "❌ {}\n", escape(error));
        return md;
    }
    if drift.changes.is_empty() {
        md.push_str(if drift.updated { "Snapshot written.\n\n" } else { "No change.\n\n" });
        return md;
    }
    for change in drift.changes.iter().take(max_rows) {
        let mark = match (drift.fail_on.fails(change.class), change.class) {
            (true, _) => "❌",
            (false, Class::Info) => "ℹ️",
            (false, _) => "⚠️",
        };
        let tool = if change.tool.is_empty() { String::new() } else { format!("`{}`: ", code(&change.tool)) };
        let _ = writeln!(md, "- {mark} {}: {tool}{}", change.class, escape(&change.what));
    }
    if drift.changes.len() > max_rows {
        let _ = writeln!(md, "- … and {} more (results.json has them all)", drift.changes.len() - max_rows);
    }
    if drift.updated {
        md.push_str("\nThe snapshot was updated with this surface.\n");
    }
    md.push('\n');
    md
}
