//! `::add-mask::` for the values of the environment variables a suite reads, so the runner
//! hides them in the log whatever prints them later (an agent's stderr, a grader's reason).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::workflow_command::command;
use crate::suite::model::Suite;

/// `{env.NAME}` as written in a suite file (an escaped `{{env.X}}` matches too: harmless).
static ENV_REFERENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{env\.([A-Za-z_][A-Za-z0-9_]*)\}").expect("a valid regex"));

/// The variables preflight knows (`secret_env`: `env.required_env`, `{env.X}` in agents,
/// servers, steps and prompts, model and judge API keys), plus every `{env.X}` written in
/// the suite's files: graders keep their templates to themselves, so the text is the one
/// place that shows them all, and masking a variable the run does not read costs nothing.
pub fn suite_env_names(suite: &Suite) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = crate::preflight::secret_env(suite).into_iter().map(str::to_owned).collect();
    let mut files = vec![suite.file.clone()];
    files.extend(suite.tasks.iter().filter_map(|t| Some(suite.dir.join(&t.origin.as_ref()?.0))));
    files.sort();
    files.dedup();
    for file in files {
        // Loading read these files a moment ago; one that vanished since has nothing to add.
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        names.extend(ENV_REFERENCE.captures_iter(&text).map(|c| c[1].to_owned()));
    }
    names
}

/// One line per distinct value (each line of a multi-line value), set and non-blank only.
pub fn mask_lines<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut lines: Vec<String> = names
        .into_iter()
        .filter_map(|n| std::env::var(n).ok())
        // The runner masks line by line, so a multi-line secret (a PEM key) needs each line.
        .flat_map(|v| {
            v.lines().filter(|l| !l.trim().is_empty()).map(|l| command("add-mask", &[], l)).collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_references_in_suite_text() {
        let text = "run: echo {env.A_1} {vars.b} ${HOME} {env.} {{env.C}}";
        let names: Vec<&str> = ENV_REFERENCE.captures_iter(text).map(|c| c.get(1).unwrap().as_str()).collect();
        assert_eq!(names, ["A_1", "C"]);
    }
}
