//! `::add-mask::` for every secret value the run knows (the redactor's), so the runner
//! also hides them in the log whatever prints them: a process evalgate does not read.

use super::workflow_command::{Command, command};
use crate::redact::Secret;

/// Prints the lines on stdout, the one place a secret is written as it is: the runner reads
/// them and hides the values from the log. Secrets learnt later (an MCP server's access
/// token) are masked as they are learnt.
pub fn add_masks(secrets: &[Secret]) {
    print_masks(secrets);
    crate::redact::on_learn(|secret| print_masks(std::slice::from_ref(secret)));
}

#[allow(clippy::disallowed_methods)] // unredacted, on purpose: the runner must read the value to hide it
fn print_masks(secrets: &[Secret]) {
    for line in mask_lines(secrets) {
        crate::redact::write_line(false, line.as_str());
    }
}

/// One line per distinct value (each line of a multi-line value), non-blank only.
fn mask_lines(secrets: &[Secret]) -> Vec<Command> {
    let mut lines: Vec<Command> = secrets
        .iter()
        // The runner masks line by line, so a multi-line secret (a PEM key) needs each line.
        .flat_map(|s| s.value.lines().filter(|l| !l.trim().is_empty()).map(|l| command("add-mask", &[], l)))
        .collect();
    lines.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    lines.dedup();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mask_per_line_of_each_value() {
        let secrets = [Secret::env("A", "abcdef".into()), Secret::env("K", "line-one\n\nline-two".into())];
        assert_eq!(mask_lines(&secrets), ["::add-mask::abcdef", "::add-mask::line-one", "::add-mask::line-two"]);
    }
}
