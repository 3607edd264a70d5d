//! A `run:` string compiled for `sh -c`, and the variables its values reach the shell as.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::reader::ShellReader;
use crate::template::language::{Names, Scope, Segment, Template, TemplateError, Var};

/// The environment variable a value reaches a shell as.
pub fn env_name(var: &Var) -> String {
    match var {
        Var::AgentOutput => "EVALGATE_AGENT_OUTPUT".into(),
        Var::Prompt => "EVALGATE_PROMPT".into(),
        Var::PromptFile => "EVALGATE_PROMPT_FILE".into(),
        Var::TaskId => "EVALGATE_TASK_ID".into(),
        Var::RandomId => "EVALGATE_RANDOM_ID".into(),
        Var::RandomPort => "EVALGATE_RANDOM_PORT".into(),
        Var::McpConfig => "EVALGATE_MCP_CONFIG".into(),
        Var::TurnOutput(n) => format!("EVALGATE_TURN_{n}_OUTPUT"),
        Var::Vars(name) => format!("EVALGATE_VAR_{}", identifier(name)),
        Var::Env(name) => format!("EVALGATE_ENV_{}", identifier(name)),
        Var::Local(name) => format!("EVALGATE_LOCAL_{}", identifier(name)),
        Var::StepOutput { step, name } => format!("EVALGATE_STEP_{}_{}", identifier(step), identifier(name)),
    }
}

/// A name as a shell variable's: every character that cannot be in one becomes `_`.
fn identifier(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// A `run:` string compiled for `sh -c`.
#[derive(Debug, Clone)]
pub struct ShellScript {
    /// As written, for what the suite uses (preflight, secrets) and for display.
    template: Template,
    /// What `sh -c` runs: the text with each placeholder replaced by a quoted reference.
    script: String,
    /// The variables set for it: every value it refers to, by placeholder or by name.
    values: Template,
}

impl ShellScript {
    /// Compiles `template` (parsed with `scope` and `names`, its `{vars.X}` not bound).
    pub fn compile(template: Template, scope: Scope, names: Names<'_>) -> Result<Self, TemplateError> {
        let mut reader = ShellReader::default();
        let mut script = String::new();
        let mut values: Vec<Var> = Vec::new();
        let mut nth: BTreeMap<String, usize> = BTreeMap::new();
        for segment in &template.segments {
            match segment {
                Segment::Literal(text) => {
                    script.push_str(text);
                    reader.read(text);
                }
                Segment::Var(var) => {
                    let seen = nth.entry(var.to_string()).or_default();
                    *seen += 1;
                    let reference = reader.reference(&env_name(var)).map_err(|refused| TemplateError {
                        column: placeholder_column(template.source(), &var.to_string(), *seen),
                        message: format!("`{{{var}}}` {}", refused.why),
                        help: Some(refused.help),
                    })?;
                    script.push_str(&reference);
                    if !values.contains(var) {
                        values.push(var.clone());
                    }
                }
            }
        }
        reader.finish().map_err(|refused| {
            // The value piped on: the placeholder whose variable it is.
            let var = values.iter().find(|v| refused.value.as_deref() == Some(env_name(v).as_str()));
            let var = var.map(ToString::to_string).unwrap_or_default();
            TemplateError {
                column: placeholder_column(template.source(), &var, 1),
                message: format!("`{{{var}}}` {}", refused.why),
                help: Some(refused.help),
            }
        })?;
        for var in named(&template, scope, names)? {
            if !values.contains(&var) {
                values.push(var);
            }
        }
        let values = Template { source: String::new(), segments: values.into_iter().map(Segment::Var).collect() };
        Ok(ShellScript { template, script, values })
    }

    /// The script as written.
    pub fn template(&self) -> &Template {
        &self.template
    }

    /// The values it refers to, as a template of them (for what the suite uses).
    pub fn values(&self) -> &Template {
        &self.values
    }

    /// The script `sh -c` runs, and the variables to set, each value from `lookup`.
    pub fn render(&self, lookup: &dyn Fn(&Var) -> String) -> (String, Vec<(String, String)>) {
        (self.script.clone(), self.values.vars().map(|var| (env_name(var), lookup(var))).collect())
    }
}

/// The variables a script names in its text (`$EVALGATE_VAR_X`), as the placeholders they
/// stand for, each checked as its placeholder is (in scope, defined).
fn named(template: &Template, scope: Scope, names: Names<'_>) -> Result<Vec<Var>, TemplateError> {
    static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"EVALGATE_[A-Za-z0-9_]+").expect("valid regex"));
    let mut found = Vec::new();
    for segment in &template.segments {
        let Segment::Literal(text) = segment else { continue };
        for m in NAME.find_iter(text) {
            let Some(placeholder) = placeholder_for(m.as_str(), names)? else { continue };
            let var = Template::parse(&format!("{{{placeholder}}}"), scope, names).map_err(|e| TemplateError {
                column: template.source().find(m.as_str()).map_or(1, |i| template.source()[..i].chars().count() + 1),
                message: format!("`${}` stands for `{{{placeholder}}}`: {}", m.as_str(), e.message),
                help: e.help,
            })?;
            found.extend(var.vars().cloned());
        }
    }
    Ok(found)
}

/// The placeholder an `EVALGATE_…` name stands for; `None` for a name that is no value's
/// (`EVALGATE_TRACE`, the script's own).
fn placeholder_for(name: &str, names: Names<'_>) -> Result<Option<String>, TemplateError> {
    let fixed =
        [Var::AgentOutput, Var::Prompt, Var::PromptFile, Var::TaskId, Var::RandomId, Var::RandomPort, Var::McpConfig];
    if let Some(var) = fixed.iter().find(|v| env_name(v) == name) {
        return Ok(Some(var.to_string()));
    }
    if let Some(env) = name.strip_prefix("EVALGATE_ENV_") {
        return Ok(Some(format!("env.{env}")));
    }
    let vars = names.vars.into_iter().flat_map(|v| v.keys()).map(|n| Var::Vars(n.clone()));
    let locals = names.locals.iter().map(|n| Var::Local(n.clone()));
    let outputs = names.step_outputs.into_iter().flat_map(|steps| {
        steps.iter().flat_map(|(step, outputs)| {
            outputs.iter().map(|name| Var::StepOutput { step: step.clone(), name: name.clone() })
        })
    });
    let matching: Vec<Var> = vars.chain(locals).chain(outputs).filter(|v| env_name(v) == name).collect();
    match matching.as_slice() {
        [var] => Ok(Some(var.to_string())),
        [] if ["EVALGATE_VAR_", "EVALGATE_STEP_", "EVALGATE_LOCAL_"].iter().any(|p| name.starts_with(p)) => {
            Err(TemplateError {
                column: 1,
                message: format!("`${name}` names no variable, step output or loop variable in reach"),
                help: Some(
                    "`EVALGATE_VAR_NAME` is `{vars.NAME}`, `EVALGATE_STEP_ID_NAME` is `{steps.ID.outputs.NAME}`".into(),
                ),
            })
        }
        [] => Ok(None),
        several => Err(TemplateError {
            column: 1,
            message: format!(
                "`${name}` could stand for {}: their names differ only in characters a shell variable cannot hold",
                several.iter().map(|v| format!("`{{{v}}}`")).collect::<Vec<_>>().join(" or ")
            ),
            help: Some("rename one of them".into()),
        }),
    }
}

pub(super) fn placeholder_column(source: &str, var: &str, nth: usize) -> usize {
    let needle = format!("{{{var}}}");
    let found = source
        .match_indices(&needle)
        .filter(|(i, _)| !source[..*i].ends_with('{'))
        .nth(nth.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    source[..found].chars().count() + 1
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn compile(src: &str) -> Result<ShellScript, TemplateError> {
        let vars = BTreeMap::from([("word".to_owned(), "w".to_owned()), ("branch".to_owned(), "b".to_owned())]);
        let steps = BTreeMap::from([("make-db".to_owned(), BTreeSet::from(["url".to_owned()]))]);
        let names = Names { vars: Some(&vars), step_outputs: Some(&steps), locals: &[], turns: None };
        let t = Template::parse(src, Scope::AfterAgent, names).unwrap();
        ShellScript::compile(t, Scope::AfterAgent, names)
    }

    /// A hostile value, run through `sh` in each quoting context evalgate is certain of: it
    /// comes out as the same text, and none of its shell code runs.
    #[test]
    fn a_value_in_a_shell_string_is_one_word_of_text_where_its_place_is_certain() {
        let dir = tempfile::tempdir().unwrap();
        let hostile = "a $(touch pwned1) `touch pwned2` 'c; touch pwned3; 'd\" ; touch pwned4; \"e \\ * ~";
        for (script, expected) in [
            (r#"printf '%s' {agent.output}"#, hostile.to_owned()),
            (r#"printf '%s' "[{agent.output}]""#, format!("[{hostile}]")),
            (r#"printf '%s' '[{agent.output}]'"#, format!("[{hostile}]")),
            (r#"printf '%s' "it's" \" '{agent.output}'"#, format!("it's\"{hostile}")),
            ("# it's a comment\nprintf '%s' {agent.output}", hostile.to_owned()),
            ("printf '%s' \"$EVALGATE_AGENT_OUTPUT\"", hostile.to_owned()),
            ("sh -c 'printf %s \"$1\"' sh {agent.output}", hostile.to_owned()),
            ("printf '%s' {agent.output} | sh -c 'cat' || sh -c 'exit 1'", hostile.to_owned()),
            ("printf '%s' {agent.output} | cat | xargs -0 printf '%s'", hostile.to_owned()),
            ("x=\"$(printf '%s' \")(\")\"; test \"$x\" = ')(' && printf '%s' {agent.output}", hostile.to_owned()),
            ("test \"$(echo $(echo a))\" = a && printf '%s' \"{agent.output}\"", hostile.to_owned()),
            ("X={vars.word}; printf '%s' \"$X\"", hostile.to_owned()),
            ("X=\"{vars.word}\" sh -c 'printf %s \"$X\"'", hostile.to_owned()),
        ] {
            let compiled = compile(script).unwrap_or_else(|e| panic!("{script}: {e:?}"));
            let (script, values) = compiled.render(&|_| hostile.to_owned());
            assert!(!script.contains("touch"), "{script}");
            let out = std::process::Command::new("sh")
                .args(["-c", &script])
                .envs(values)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                expected,
                "{script}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no command of the value ran");
    }

    /// Every place a value could become code, or where the reading is not certain, is
    /// refused, naming the variable to write instead; never rendered to a literal.
    #[test]
    fn a_placeholder_where_its_reading_is_not_certain_is_refused_with_the_variable_to_write() {
        for (script, why) in [
            ("cat <<EOF\n{agent.output}\nEOF", "heredoc"),
            ("cat <<'EOF'\nit's {agent.output}\nEOF", "heredoc"),
            ("x=\"$(echo 'a' {agent.output})\"", "inside a `$(…)`"),
            ("echo $(case x in a) echo ;; esac) {agent.output}", "after a `$(…)`"),
            ("echo $((1 + 2)) {agent.output}", "arithmetic"),
            ("x=`echo {agent.output}`", "backtick"),
            ("echo ${A:-'x'} {agent.output}", "${…}"),
            ("sh -c \"echo {agent.output}\"", "sh -c"),
            ("bash -lc 'echo {agent.output}'", "bash -c"),
            ("eval echo {agent.output}", "eval"),
            ("eval \"grep {vars.word}\"", "eval"),
            ("{agent.output} --version", "command's name"),
            ("X=1 {vars.branch}", "command's name"),
            ("true && env A=1 sh -c {agent.output}", "sh -c"),
            ("python3 -c \"print('{agent.output}')\"", "code"),
            ("awk '{print}' && awk {agent.output} file", "program"),
            ("find . -exec {agent.output} \\;", "command's name"),
            ("ssh host {agent.output}", "command line"),
            ("((x = {agent.output}))", "arithmetic"),
            ("[[ {agent.output} -eq 1 ]]", "arithmetic"),
            ("declare -i n={agent.output}", "command line"),
            ("echo {agent.output} | sh", "piped into `sh`"),
            ("test -n {vars.word} && echo {agent.output} | sh", "`{agent.output}` is piped into `sh`"),
            ("printf '%s' \"{agent.output}\" | tr a b | bash -s", "piped into `bash`"),
            ("echo {agent.output} | xargs -0 sh -c", "piped into `xargs`"),
            ("echo {agent.output} | python3 -", "piped into `python3`"),
            ("echo {agent.output} | $(cat runner)", "known only when it runs"),
            ("$RUNNER {agent.output}", "known only when it runs"),
            ("echo \\{agent.output}", "follows a `\\`"),
            ("echo ${agent.output}x$EVALGATE_VAR_nope", "names no variable"),
        ] {
            let error = match compile(script) {
                Ok(s) => panic!("{script:?} compiled to {:?}", s.script),
                Err(e) => e,
            };
            assert!(error.message.contains(why), "{script:?}: {error:?}");
            if !why.contains("names no") {
                assert!(error.help.as_deref().is_some_and(|h| h.contains("EVALGATE_")), "{script:?}: {error:?}");
            }
        }
    }

    #[test]
    fn a_script_that_names_a_value_gets_it_and_only_what_it_names() {
        let s = compile("test \"$EVALGATE_STEP_make_db_url\" = {vars.word} && echo $EVALGATE_TRACE").unwrap();
        let names: Vec<String> = s.values().vars().map(env_name).collect();
        assert_eq!(names, ["EVALGATE_VAR_word", "EVALGATE_STEP_make_db_url"]);
        assert_eq!(s.script, "test \"$EVALGATE_STEP_make_db_url\" = \"${EVALGATE_VAR_word}\" && echo $EVALGATE_TRACE");
    }
}
