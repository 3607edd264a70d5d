//! Values and shell code, kept apart by construction.
//!
//! A value (an agent's answer, a `--var`, a step's output, a variable of the environment)
//! reaches a shell only as an environment variable with a documented name
//! ([`env_name`]: `EVALGATE_AGENT_OUTPUT`, `EVALGATE_VAR_NAME`, …), which the shell expands
//! without reading it as code. A `run:` string compiles once, at load, into a
//! [`ShellScript`]: the text `sh -c` runs, which never holds a value, and the variables to
//! set. A placeholder written in the text is rewritten to a reference only where the
//! reading of the text up to it is certain (plain words, `'…'`, `"…"` without
//! substitutions, comments); after a heredoc, a `$(…)`, a backtick or a `${…}` with more
//! than a name, or where the word is code (a command name, the script of `sh -c`, `eval`'s
//! arguments, …: [`code_position`]), it is refused with the variable to write instead.
//! Nothing here guesses.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::language::{Names, Scope, Segment, Template, TemplateError, Var};

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
            let var = template.vars().next().cloned().unwrap_or(Var::AgentOutput);
            TemplateError {
                column: placeholder_column(template.source(), &var.to_string(), 1),
                message: format!("`{{{var}}}` {}", refused.why),
                help: Some(as_data(&env_name(&var))),
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

/// How to give a program a value as data instead of code.
fn as_data(name: &str) -> String {
    format!(
        "pass it as data: an argument after the code (`sh -c '… \"$1\" …' sh \"${name}\"`), or read `{name}` from \
         the environment inside the program (`os.environ`, `process.env`, a single-quoted `sh -c` script)"
    )
}

/// The 1-based column of the `nth` placeholder `{var}` in `source` (not one inside `{{…}}`).
fn placeholder_column(source: &str, var: &str, nth: usize) -> usize {
    let needle = format!("{{{var}}}");
    let found = source
        .match_indices(&needle)
        .filter(|(i, _)| !source[..*i].ends_with('{'))
        .nth(nth.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    source[..found].chars().count() + 1
}

/// Where a value is placed: outside quotes, inside `"…"` or inside `'…'`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Quoted {
    #[default]
    Not,
    Double,
    Single,
}

/// A POSIX shell's reading of a script's text, only as far as it is certain. It knows
/// words, blanks, the operators that end a command, redirections, `'…'`, `"…"`,
/// backslashes and comments; at the first construct whose reading needs more (a heredoc,
/// a `$(…)`, a backtick, a `${…}` with more than a name, `$'…'`) it stops knowing, and
/// says which.
#[derive(Default)]
pub struct ShellReader {
    quoted: Quoted,
    /// The next character is escaped by a backslash.
    escaped: bool,
    /// In a `#` comment, up to the end of its line.
    comment: bool,
    /// A `$` was read, its meaning decided by the next character.
    dollar: bool,
    /// In a `${…}`: the text so far after `${`.
    braced: Option<String>,
    /// The last character was `<` or `>` outside quotes (`<<` is a heredoc, `>&` one
    /// redirection).
    redirecting: Option<char>,
    /// The word being read is a redirection's file, not one of the command's words.
    redirect_target: bool,
    /// The last character was `(` outside quotes (`((` is arithmetic, which bash evaluates
    /// a variable's value in, as code).
    paren: bool,
    /// The last character was a `|` outside quotes (a second makes `||`, no pipe).
    pipe: bool,
    /// A value was placed in the command being read, or flows into it through a pipe from
    /// an earlier command of its pipeline.
    value_here: bool,
    value_piped: bool,
    /// Why a value placed earlier becomes code through a pipe (`echo {x} | sh`).
    piped_into_code: Option<String>,
    /// In a `$(…)`: its text is read by a reader of its own up to the `)` that closes it,
    /// and the reading goes on after it where it was.
    subst: Option<Box<Substitution>>,
    /// Why the text past this point cannot be read with certainty.
    lost: Option<&'static str>,
    /// The words of the command being read, as the shell sees them (`None` for one holding
    /// a value), and the word being read.
    words: Vec<Option<String>>,
    word: Option<Option<String>>,
}

/// A `$(…)` being read: its own reader, the parentheses it opened, whether nothing was read.
#[derive(Default)]
struct Substitution {
    reader: ShellReader,
    depth: u32,
    read_any: bool,
}

/// Why a value cannot be placed where a [`ShellReader`] is, and what to write instead.
#[derive(Debug)]
pub struct Refused {
    /// Completes "`{agent.output}` …".
    pub why: String,
    pub help: String,
}

impl ShellReader {
    /// The reference to the shell variable `name` (`EVALGATE_AGENT_OUTPUT`, `1`) that puts its
    /// value here as one word of text, quoted for where it stands; the reader goes on past
    /// it. `Err` where the place is not certain or the word is code.
    pub fn reference(&mut self, name: &str) -> Result<String, Refused> {
        let reference = match self.place() {
            Ok(Quoted::Not) => format!("\"${{{name}}}\""),
            Ok(Quoted::Double) => format!("${{{name}}}"),
            Ok(Quoted::Single) => format!("'\"${{{name}}}\"'"),
            Err(why) => return Err(Refused { why, help: format!("write `{}` instead", self.suggestion(name)) }),
        };
        if let Some(why) = self.code_position() {
            return Err(Refused { why: format!("would be code here: {why}"), help: as_data(name) });
        }
        self.value_in_word();
        Ok(reference)
    }

    /// Reads `text`, shell code written as is.
    pub fn read(&mut self, text: &str) {
        for c in text.chars() {
            if self.lost.is_some() {
                return;
            }
            self.char(c);
            if self.lost.is_some() && self.value_piped && self.piped_into_code.is_none() {
                self.piped_into_code = Some("is piped into a command evalgate cannot read with certainty".into());
            }
        }
    }

    /// Ends the text: `Err` when a value placed in it is piped into a program that runs its
    /// input as code (`echo {x} | sh`, `| xargs sh -c`, `| python3`).
    pub fn finish(&mut self) -> Result<(), Refused> {
        if self.lost.is_none() {
            self.end_command(false);
        }
        match self.piped_into_code.take() {
            None => Ok(()),
            Some(why) => Err(Refused {
                why,
                help: "pass it as data the program reads as such: an argument (`sh -c '…' sh \"$NAME\"`), or an \
                       environment variable it reads"
                    .into(),
            }),
        }
    }

    fn char(&mut self, c: char) {
        if let Some(sub) = self.subst.as_mut() {
            let inner = &sub.reader;
            let top = inner.quoted == Quoted::Not
                && !inner.escaped
                && !inner.comment
                && !inner.dollar
                && inner.braced.is_none()
                && inner.subst.is_none();
            match c {
                ')' if top && sub.depth == 0 => {
                    self.subst = None;
                    return self.in_word(c);
                }
                '(' if top && !sub.read_any => {
                    return self.lost = Some("after a `$((…))` (arithmetic evaluates a value as code)");
                }
                '(' if top => sub.depth += 1,
                ')' if top => sub.depth -= 1,
                _ => {}
            }
            sub.read_any = true;
            sub.reader.char(c);
            // A `case` pattern's `)` would close the substitution early: not read.
            let case = sub.reader.words.first().is_some_and(|w| w.as_deref() == Some("case"));
            if sub.reader.lost.is_some() || case {
                self.lost = Some("after a `$(…)` whose text it cannot read with certainty");
            }
            return;
        }
        if self.comment {
            if c == '\n' {
                self.comment = false;
                self.end_command(false);
            }
            return;
        }
        if let Some(inner) = self.braced.as_mut() {
            if c == '}' {
                let simple = !inner.is_empty()
                    && (inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        || matches!(inner.as_str(), "@" | "*" | "#" | "?" | "-" | "$" | "!"));
                if !simple {
                    self.lost = Some("after a `${…}` that is more than a variable's name");
                }
                self.braced = None;
            } else {
                inner.push(c);
            }
            return self.in_word(c);
        }
        if std::mem::take(&mut self.escaped) {
            return self.in_word(c);
        }
        if std::mem::take(&mut self.dollar) {
            match c {
                '(' => {
                    self.subst = Some(Box::default());
                    return self.in_word(c);
                }
                '{' => {
                    self.braced = Some(String::new());
                    return self.in_word(c);
                }
                '\'' if self.quoted == Quoted::Not => return self.lost = Some("after a `$'…'`"),
                _ => {}
            }
        }
        let redirecting = self.redirecting.take();
        let paren = std::mem::take(&mut self.paren);
        let pipe = std::mem::take(&mut self.pipe);
        match (self.quoted, c) {
            (Quoted::Single, '\'') => self.quoted = Quoted::Not,
            (Quoted::Single, _) => self.in_word(c),
            (_, '`') => self.lost = Some("after a backtick"),
            (_, '\\') => {
                self.escaped = true;
                self.start_word();
            }
            (_, '$') => {
                self.dollar = true;
                self.in_word(c);
            }
            (Quoted::Double, '"') => self.quoted = Quoted::Not,
            (Quoted::Double, _) => self.in_word(c),
            (Quoted::Not, '\'') => {
                self.quoted = Quoted::Single;
                self.start_word();
            }
            (Quoted::Not, '"') => {
                self.quoted = Quoted::Double;
                self.start_word();
            }
            (Quoted::Not, '#') if self.word.is_none() => self.comment = true,
            (Quoted::Not, '<') if redirecting == Some('<') => self.lost = Some("after a heredoc (`<<`)"),
            (Quoted::Not, '>' | '&' | '|') if redirecting.is_some() => self.redirecting = Some(c),
            (Quoted::Not, '<' | '>') => {
                // `2>file`: the `2` is the redirection's, not a word.
                if self
                    .word
                    .as_ref()
                    .is_some_and(|w| w.as_deref().is_some_and(|w| w.chars().all(|c| c.is_ascii_digit())))
                {
                    self.word = None;
                }
                self.end_word();
                self.redirecting = Some(c);
                self.redirect_target = true;
            }
            (Quoted::Not, ' ' | '\t') => self.end_word(),
            (Quoted::Not, '(') if paren => self.lost = Some("after `((` (arithmetic evaluates a value as code)"),
            // `||`: the first `|` ended a command as a pipe would; no data flows on.
            (Quoted::Not, '|') if pipe => self.value_piped = false,
            (Quoted::Not, ';' | '&' | '|' | '(' | ')' | '\n') => {
                self.paren = c == '(';
                self.pipe = c == '|';
                self.end_command(c == '|');
            }
            (Quoted::Not, _) => self.in_word(c),
        }
    }

    fn start_word(&mut self) {
        self.word.get_or_insert_with(|| Some(String::new()));
    }

    fn in_word(&mut self, c: char) {
        if let Some(word) = self.word.get_or_insert_with(|| Some(String::new())) {
            word.push(c);
        }
    }

    /// A value is in the word being read: it is no program's name, and no literal
    /// argument (an assignment's `NAME=` before it still makes the word an assignment).
    fn value_in_word(&mut self) {
        self.value_here = true;
        if !matches!(&self.word, Some(Some(text)) if is_assignment(text)) {
            self.word = Some(None);
        }
    }

    fn end_word(&mut self) {
        let Some(word) = self.word.take() else { return };
        if word.as_deref() == Some("[[") {
            // bash evaluates `[[ $V -eq 1 ]]`'s operands as arithmetic, which runs code.
            self.lost = Some("after `[[` (its arithmetic evaluates a value as code)");
        }
        if std::mem::take(&mut self.redirect_target) {
            return;
        }
        // A keyword that starts a command (`then`, `do`, `!`, …) leaves the next word in
        // command position.
        let keyword = word.as_deref().is_some_and(|w| {
            matches!(w, "if" | "then" | "else" | "elif" | "while" | "until" | "do" | "!" | "{" | "time")
        });
        if !(keyword && self.words.is_empty()) {
            self.words.push(word);
        }
    }

    /// Ends the command being read; `pipe`: its output goes to the next one's input, and
    /// with it any value placed in it.
    fn end_command(&mut self, pipe: bool) {
        self.end_word();
        if self.value_piped && self.piped_into_code.is_none() {
            let words: Vec<Option<&str>> = self.words.iter().map(|w| w.as_deref()).collect();
            self.piped_into_code = stdin_is_code(&words);
        }
        self.value_piped = pipe && (self.value_piped || self.value_here);
        self.value_here = false;
        self.word = None;
        self.redirect_target = false;
        self.words.clear();
    }

    /// How a value placed here is quoted; `Err` when that is not certain.
    fn place(&self) -> Result<Quoted, String> {
        if let Some(why) = self.lost {
            return Err(format!("stands {why}, where evalgate cannot be certain how the shell reads it"));
        }
        if self.escaped || self.dollar || self.braced.is_some() {
            return Err("follows a `\\` or a `$`, which would change how it is read".into());
        }
        if self.subst.is_some() {
            return Err("stands inside a `$(…)`, where evalgate does not place values".into());
        }
        Ok(if self.comment { Quoted::Not } else { self.quoted })
    }

    /// Why the word being read is code when a value is in it; `None` when it is an
    /// argument, a redirection's file or a comment.
    fn code_position(&self) -> Option<String> {
        if self.comment || self.redirect_target {
            return None;
        }
        let words: Vec<Option<&str>> = self.words.iter().map(|w| w.as_deref()).collect();
        let current = match &self.word {
            Some(Some(text)) => Some(text.as_str()),
            _ => None,
        };
        code_position(&words, current)
    }

    /// The reference to write in place of a placeholder that was refused.
    fn suggestion(&self, name: &str) -> String {
        if self.lost.is_some() {
            // Where the reading was lost (in a `$(…)`, a heredoc), the quoting is unknown:
            // the reference a script writes where a word is not quoted.
            return format!("\"${name}\"");
        }
        match self.quoted {
            Quoted::Single => format!("'\"${name}\"'"),
            Quoted::Double => format!("${name}"),
            Quoted::Not => format!("\"${name}\""),
        }
    }
}

/// Programs some of whose words are code.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "busybox"];
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "Rscript",
    "tclsh",
    "pwsh",
    "osascript",
    "jshell",
];
/// Text-processing languages that can run commands (`system()`, sed's `e`).
const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk", "busybox-awk", "sed", "gsed"];
/// Programs that run the rest of their words as a command (after their own options).
const WRAPPERS: &[&str] = &[
    "env", "command", "exec", "nohup", "time", "nice", "sudo", "doas", "setsid", "stdbuf", "timeout", "xargs",
    "ionice", "chrt", "taskset", "unbuffer", "builtin", "strace", "ltrace", "flock", "chroot", "runuser",
];
/// Programs whose words are a command line run by a shell (or a remote one).
/// (`let`, `declare`, `typeset`: bash's arithmetic, which runs `a[$(…)]` in a value.)
const COMMAND_STRINGS: &[&str] =
    &["eval", ".", "source", "trap", "watch", "ssh", "su", "script", "parallel", "let", "declare", "typeset"];

/// Why a command (its `words`) runs what it reads on its input as code, when that input
/// holds a value: a shell or interpreter given no script (`| sh`, `| python3`), `source
/// /dev/stdin`, or `xargs` making the input a code word of its command (`| xargs sh -c`).
fn stdin_is_code(words: &[Option<&str>]) -> Option<String> {
    let option = |w: &&Option<&str>| w.is_some_and(|w| w.starts_with('-') && w.len() > 1);
    let mut i = 0;
    while let Some(Some(w)) = words.get(i) {
        if basename(w) == "xargs" {
            let mut j = i + 1;
            while words.get(j).is_some_and(|w| option(&w)) {
                j += 1;
            }
            // Its input becomes the next words of its command (`echo` when it has none).
            return (j < words.len())
                .then(|| code_position(&words[j..], None))
                .flatten()
                .map(|why| format!("is piped into `xargs`, where {why}"));
        }
        if !(is_assignment(w) || WRAPPERS.contains(&basename(w)) || option(&&Some(*w))) {
            break;
        }
        i += 1;
    }
    let program = basename((*words.get(i)?)?);
    if program.contains('$') {
        return Some(format!("is piped into `{program}`, a command known only when it runs"));
    }
    let args = &words[i + 1..];
    let operands: Vec<&str> = args.iter().filter(|w| !option(w)).map(|w| w.unwrap_or("")).collect();
    let no_script = operands.is_empty() || operands == ["-"];
    let code_flag = args
        .iter()
        .any(|w| w.is_some_and(|w| w.starts_with('-') && !w.starts_with("--") && (w.contains('c') || w.contains('e'))));
    let runs_input = match program {
        p if SHELLS.contains(&p) || INTERPRETERS.contains(&p) => no_script && !code_flag,
        "." | "source" | "eval" => operands.iter().any(|o| matches!(*o, "/dev/stdin" | "-")),
        _ => false,
    };
    runs_input.then(|| format!("is piped into `{program}`, which runs its input as code"))
}

/// Why a value in the word after `words` (the command's earlier words as the shell sees
/// them, `None` for one holding a value; `current`: the text of the word before the value)
/// is code: a command's name, the script of `sh -c` or `python -c`, the program of `awk`,
/// any word of `eval`. `None` when it is an argument: evalgate passes it as one word of
/// text, and what a program does with its arguments is the program's (SECURITY.md).
pub fn code_position(words: &[Option<&str>], current: Option<&str>) -> Option<String> {
    let mut i = 0;
    // Assignments before the command (`A=1 cmd`), and wrappers with their options.
    loop {
        match words.get(i) {
            None if current.is_some_and(is_assignment) => return None,
            None => return Some("it is a command's name (a value is never a program to run)".to_owned()),
            Some(Some(w)) if is_assignment(w) => i += 1,
            Some(Some(w)) if WRAPPERS.contains(&basename(w)) => {
                i += 1;
                while let Some(Some(w)) = words.get(i) {
                    let count = w.starts_with(|c: char| c.is_ascii_digit())
                        && w.chars().all(|c| c.is_ascii_digit() || ".smhd".contains(c));
                    if !(w.starts_with('-') || is_assignment(w) || count) {
                        break;
                    }
                    i += 1;
                }
            }
            Some(_) => break,
        }
    }
    let Some(program) = words[i].map(basename) else {
        return Some("its command's name holds a value".to_owned());
    };
    if program.contains('$') {
        return Some(format!("its command's name, `{program}`, is known only when it runs"));
    }
    let args = &words[i + 1..];
    let option = |w: &&Option<&str>| w.is_some_and(|w| w.starts_with('-') && w.len() > 1);
    if COMMAND_STRINGS.contains(&program) {
        return Some(format!("`{program}` runs its words as a command line"));
    }
    if program == "find" {
        // `find … -exec CMD …`: a command again.
        let exec = args.iter().rposition(|w| matches!(w, Some("-exec" | "-execdir" | "-ok" | "-okdir")));
        return exec.and_then(|at| code_position(&args[at + 1..], current));
    }
    if SHELLS.contains(&program) {
        // `sh -c SCRIPT [NAME ARGS…]`: the first operand after `-c` is code; the words
        // after it are the script's `$0`, `$1`, … (text: the way to pass it a value).
        let c_flag = args.iter().rposition(|w| {
            w.is_some_and(|w| w == "--command" || (w.starts_with('-') && !w.starts_with("--") && w.contains('c')))
        });
        return match c_flag {
            Some(at) if args[at + 1..].iter().filter(|w| !option(w)).count() == 0 => {
                Some(format!("it is the script `{program} -c` runs"))
            }
            None if !args.iter().any(|w| !option(&w)) => Some(format!("it names the script `{program}` runs")),
            _ => None,
        };
    }
    if INTERPRETERS.contains(&program) {
        let code_flag = |w: &Option<&str>| {
            matches!(
                w,
                Some("-c" | "-e" | "-E" | "-p" | "-r" | "--eval" | "--print" | "-Command" | "-command" | "eval")
            )
        };
        if args.last().is_some_and(code_flag) {
            return Some(format!("it is the code `{program}` runs"));
        }
        if !args.iter().any(code_flag) && !args.iter().any(|w| !option(&w)) {
            return Some(format!("it names the program `{program}` runs"));
        }
        return None;
    }
    if AWKS.contains(&program) {
        let program_flag = |w: &Option<&str>| matches!(w, Some("-e" | "--expression" | "-f" | "--file"));
        if args.last().is_some_and(program_flag)
            || (!args.iter().any(program_flag) && !args.iter().any(|w| !option(&w)))
        {
            return Some(format!("it is the program `{program}` runs"));
        }
    }
    None
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Checks an argv list's templates (parsed, `{vars.X}` not yet bound): a value is never a
/// program's name nor the code of an interpreter it starts (`[sh, -c, "… {x} …"]`).
/// `Err` has the index of the refused item.
pub fn check_argv(argv: &[Template]) -> Result<(), (usize, TemplateError)> {
    let words: Vec<Option<&str>> = argv.iter().map(|t| (t.vars().next().is_none()).then_some(t.source())).collect();
    for (i, t) in argv.iter().enumerate() {
        let Some(var) = t.vars().next() else { continue };
        if let Some(why) = code_position(&words[..i], None) {
            let help = format!(
                "pass it as data: an argument after the code ([sh, -c, '… \"$1\" …', sh, '{{{var}}}']), or in `env` (`X: \"{{{var}}}\"`) read from the environment inside the program"
            );
            let column = placeholder_column(t.source(), &var.to_string(), 1);
            return Err((
                i,
                TemplateError { column, message: format!("`{{{var}}}` would be code here: {why}"), help: Some(help) },
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    fn compile(src: &str) -> Result<ShellScript, TemplateError> {
        let vars = BTreeMap::from([("word".to_owned(), "w".to_owned()), ("branch".to_owned(), "b".to_owned())]);
        let steps = BTreeMap::from([("make-db".to_owned(), BTreeSet::from(["url".to_owned()]))]);
        let names = Names { vars: Some(&vars), step_outputs: Some(&steps), locals: &[] };
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

    #[test]
    fn an_argv_never_runs_a_value_as_code() {
        let parse = |items: &[&str]| -> Vec<Template> {
            items.iter().map(|s| Template::parse(s, Scope::AfterAgent, Names::default()).unwrap()).collect()
        };
        assert!(check_argv(&parse(&["sh", "-c", "echo \"$1\"", "sh", "{agent.output}"])).is_ok());
        assert!(check_argv(&parse(&["grep", "-q", "{agent.output}", "file"])).is_ok());
        for argv in [
            &["sh", "-c", "echo {agent.output}"][..],
            &["/bin/bash", "-ec", "{agent.output}"],
            &["env", "A=1", "python3", "-c", "{agent.output}"],
            &["{agent.output}"],
            &["node", "-e", "x('{agent.output}')"],
        ] {
            let (i, e) = check_argv(&parse(argv)).unwrap_err();
            assert!(argv[i].contains("{agent.output}"), "{argv:?}: {e:?}");
        }
    }
}
