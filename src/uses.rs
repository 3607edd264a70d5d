//! What a kind (grader, step, agent, MCP server, model) uses from the world: the templates
//! it renders (and through them the `{env.X}` it reads), the MCP tools it calls, the judge
//! it needs, the secret values it carries and the values that must not be empty.
//! Preflight, masking, redaction and `check` fold over it instead of searching the suite's
//! text (`suite::uses` folds a whole suite).

use crate::llm::spec::LlmSpec;
use crate::template::{Template, Var};

#[derive(Debug, Default, Clone)]
pub struct Uses<'a> {
    /// Every template the kind renders.
    pub templates: Vec<&'a Template>,
    /// MCP tools called, as `(server, tool)`.
    pub mcp_tools: Vec<(&'a str, &'a str)>,
    /// Extension operations called, checked against the running extension's manifest at
    /// preflight.
    pub extension_calls: Vec<crate::extension::params::Call<'a>>,
    pub judges: Vec<Judge<'a>>,
    /// Templates whose rendered values are secrets (never to be shown).
    pub secrets: Vec<Secret<'a>>,
    /// Environment variables whose values are secrets without a template naming them: the
    /// API keys behind `api_key_env`.
    pub secret_env: Vec<&'a str>,
    /// Environment variables read by name, outside any template (an MCP server's
    /// `client_id_env` and `client_secret_env`): like a template's `{env.X}`, each must be
    /// set and its value is a secret.
    pub named_env: Vec<&'a str>,
    /// Templates that make the check vacuous when they render empty, with what they are
    /// (``a `contains` value``): an empty needle is found in any output.
    pub non_empty: Vec<(&'a Template, &'static str)>,
    /// Programs it starts, which must exist before anything runs.
    pub programs: Vec<Program<'a>>,
    /// MCP tools it names without calling them (a tool grader's `server.tool`), as
    /// `(server, tool)`, or `(None, tool)` for a bare name: they must exist, and may be
    /// destructive.
    pub tool_names: Vec<(Option<&'a str>, &'a str)>,
    /// MCP servers whose tools a model agent is offered: a bare name in `tool_names` is a
    /// tool of one of them.
    pub offered: Vec<&'a str>,
    /// Files it reads by name, resolved (a schema file, a calibration file): their content
    /// is part of a task's fingerprint (`fingerprint::task_inputs`).
    pub files: Vec<&'a std::path::Path>,
}

/// A program a kind starts, looked up before anything runs: on `PATH`, or relative to
/// `workdir` (default: the suite's directory) when it has a `/`.
#[derive(Debug, Clone, Copy)]
pub struct Program<'a> {
    /// What starts it, for the message: "agent command", "command grader".
    pub what: &'static str,
    pub command: ProgramCommand<'a>,
    pub workdir: Option<&'a std::path::Path>,
}

#[derive(Debug, Clone, Copy)]
pub enum ProgramCommand<'a> {
    /// The program as written (an MCP server's `command[0]`).
    Literal(&'a str),
    /// An argv list's first item.
    Argv0(&'a Template),
    /// A shell command line, whose first word is the program when it is a plain one.
    Shell(&'a Template),
}

impl Program<'_> {
    /// The program's name as it is now; `None` when it is not known before a task runs (it
    /// depends on the task, or a shell line starts with a builtin, a keyword or an
    /// assignment).
    pub fn name(&self) -> Option<String> {
        let name = match self.command {
            ProgramCommand::Literal(name) => name.to_owned(),
            ProgramCommand::Argv0(template) => render_static(template)?,
            ProgramCommand::Shell(line) => first_shell_word(&render_static(line)?)?.to_owned(),
        };
        (!name.is_empty()).then_some(name)
    }
}

/// The program a shell line starts, when its first word is plainly one (`./grade.sh x`,
/// `python3 g.py`); not a builtin, a keyword, an assignment or anything quoted or expanded.
fn first_shell_word(line: &str) -> Option<&str> {
    const BUILTINS: &[&str] = &[
        ".", ":", "[", "alias", "bg", "break", "case", "cd", "command", "continue", "echo", "eval", "exec", "exit",
        "export", "false", "fg", "for", "getopts", "hash", "if", "jobs", "kill", "local", "printf", "pwd", "read",
        "readonly", "return", "set", "shift", "source", "test", "times", "trap", "true", "type", "ulimit", "umask",
        "unalias", "unset", "until", "wait", "while",
    ];
    let word = line.split_whitespace().next()?;
    let plain = word.chars().all(|c| c.is_ascii_alphanumeric() || "._/+-@%,".contains(c));
    (plain && !BUILTINS.contains(&word)).then_some(word)
}

/// A secret value a kind carries, and how reports name it instead.
#[derive(Debug, Clone, Copy)]
pub struct Secret<'a> {
    pub template: &'a Template,
    pub kind: SecretKind<'a>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind<'a> {
    /// An HTTP header's value (of an agent's model, an MCP server, an `http` step).
    Header(&'a str),
    /// A `no_leak` or safety canary.
    Canary,
}

/// The judge a grader asks.
#[derive(Debug, Clone, Copy)]
pub enum Judge<'a> {
    /// The suite's `judge`.
    SuiteDefault,
    /// A judge set on the grader itself.
    Own(&'a LlmSpec),
}

impl<'a> Uses<'a> {
    pub fn templates(templates: impl IntoIterator<Item = &'a Template>) -> Self {
        Uses { templates: templates.into_iter().collect(), ..Uses::default() }
    }

    /// Header values: rendered, and secrets.
    pub fn headers(headers: &'a [(String, Template)]) -> Self {
        Uses {
            templates: headers.iter().map(|(_, t)| t).collect(),
            secrets: headers.iter().map(|(name, t)| Secret { template: t, kind: SecretKind::Header(name) }).collect(),
            ..Uses::default()
        }
    }

    /// Canaries: rendered, secrets, and never empty (an empty canary is in every output).
    pub fn canaries(canaries: impl IntoIterator<Item = &'a Template>) -> Self {
        let canaries: Vec<&Template> = canaries.into_iter().collect();
        Uses {
            secrets: canaries.iter().map(|t| Secret { template: t, kind: SecretKind::Canary }).collect(),
            non_empty: canaries.iter().map(|t| (*t, "a canary")).collect(),
            templates: canaries,
            ..Uses::default()
        }
    }

    /// Values a text check looks for: rendered, and never empty.
    pub fn needles(needles: impl IntoIterator<Item = &'a Template>, what: &'static str) -> Self {
        let needles: Vec<&Template> = needles.into_iter().collect();
        Uses { non_empty: needles.iter().map(|t| (*t, what)).collect(), ..Uses::templates(needles) }
    }

    /// Adds what `other` uses to this. `other` is taken apart whole, so a new kind of use
    /// does not compile until it is added here too.
    pub fn and(mut self, other: Uses<'a>) -> Self {
        let Uses {
            templates,
            mcp_tools,
            extension_calls,
            judges,
            secrets,
            secret_env,
            named_env,
            non_empty,
            programs,
            tool_names,
            offered,
            files,
        } = other;
        append(&mut self.templates, templates);
        append(&mut self.mcp_tools, mcp_tools);
        append(&mut self.extension_calls, extension_calls);
        append(&mut self.judges, judges);
        append(&mut self.secrets, secrets);
        append(&mut self.secret_env, secret_env);
        append(&mut self.non_empty, non_empty);
        append(&mut self.named_env, named_env);
        append(&mut self.programs, programs);
        append(&mut self.tool_names, tool_names);
        append(&mut self.offered, offered);
        append(&mut self.files, files);
        self
    }

    /// The environment variables read as `{env.X}`, then those read by name.
    pub fn env_vars(&self) -> impl Iterator<Item = &'a str> + '_ {
        let templated = self.templates.iter().flat_map(|t| t.vars()).filter_map(|v| match v {
            Var::Env(name) => Some(name.as_str()),
            _ => None,
        });
        templated.chain(self.named_env.iter().copied())
    }

    /// The judges set on the kinds themselves (not the suite's default).
    pub fn own_judges(&self) -> impl Iterator<Item = &'a LlmSpec> + '_ {
        self.judges.iter().filter_map(|j| match j {
            Judge::Own(spec) => Some(*spec),
            Judge::SuiteDefault => None,
        })
    }
}

/// `theirs` after `mine`; an empty `mine` takes `theirs` whole (folding a suite's uses
/// starts from empty lists, and most kinds add to one or two).
fn append<T>(mine: &mut Vec<T>, theirs: Vec<T>) {
    if mine.is_empty() {
        *mine = theirs;
    } else {
        mine.extend(theirs);
    }
}

impl<'a> FromIterator<Uses<'a>> for Uses<'a> {
    fn from_iter<I: IntoIterator<Item = Uses<'a>>>(iter: I) -> Self {
        iter.into_iter().fold(Uses::default(), Uses::and)
    }
}

/// The value of a template that reads nothing but the environment (suite `vars` are bound
/// when it is compiled), as preflight and the redactor see it before any task runs; `None`
/// when it depends on a task (`{task.id}`, `{random.id}`, a step's output…).
pub fn render_static(template: &Template) -> Option<String> {
    if template.vars().any(|v| !matches!(v, Var::Env(_))) {
        return None;
    }
    Some(template.render(&crate::template::env_only))
}
