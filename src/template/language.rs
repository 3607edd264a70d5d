//! `{namespace.name}` templates: parsed and checked at load time, rendered per task run.
//! `{{` and `}}` are literal braces; `${NAME}` is left for the shell.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Where a template is used, which decides the variables it may reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `hooks.before_all` / `after_all`: no task.
    Hook,
    /// The prompt, and setup steps.
    Task,
    /// An agent's command line and environment.
    Agent,
    /// Graders and cleanup steps: they also see the agent's output.
    AfterAgent,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Var {
    Vars(String),
    Env(String),
    TaskId,
    RandomId,
    RandomPort,
    Prompt,
    PromptFile,
    AgentOutput,
    /// `{steps.ID.outputs.NAME}`
    StepOutput {
        step: String,
        name: String,
    },
    /// A `foreach` loop variable.
    Local(String),
    /// The MCP client config file of a command agent with `mcp: [...]`.
    McpConfig,
    /// `{turns.N.output}`: the answer of a conversation's turn N (1-based), an earlier one.
    TurnOutput(u32),
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Var::Vars(n) => write!(f, "vars.{n}"),
            Var::Env(n) => write!(f, "env.{n}"),
            Var::TaskId => f.write_str("task.id"),
            Var::RandomId => f.write_str("random.id"),
            Var::RandomPort => f.write_str("random.port"),
            Var::Prompt => f.write_str("prompt"),
            Var::PromptFile => f.write_str("prompt_file"),
            Var::AgentOutput => f.write_str("agent.output"),
            Var::StepOutput { step, name } => write!(f, "steps.{step}.outputs.{name}"),
            Var::Local(n) => f.write_str(n),
            Var::McpConfig => f.write_str("mcp_config"),
            Var::TurnOutput(n) => write!(f, "turns.{n}.output"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Segment {
    Literal(String),
    Var(Var),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub(super) source: String,
    pub(super) segments: Vec<Segment>,
}

/// Why a template is invalid; `column` is the 1-based character offset in the template text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub column: usize,
    pub message: String,
    pub help: Option<String>,
}

/// The names a template may use besides the fixed namespaces.
#[derive(Debug, Default, Clone, Copy)]
pub struct Names<'a> {
    pub vars: Option<&'a BTreeMap<String, String>>,
    /// Step ids in reach, with the outputs each declares.
    pub step_outputs: Option<&'a BTreeMap<String, BTreeSet<String>>>,
    /// `foreach` variables in reach.
    pub locals: &'a [String],
    /// In a conversation: the turns whose answers are in reach (`{turns.1.output}` up to
    /// this one); `None` outside a conversation.
    pub turns: Option<u32>,
}

const KNOWN: [&str; 10] = [
    "vars.NAME",
    "env.NAME",
    "task.id",
    "random.id",
    "random.port",
    "prompt",
    "prompt_file",
    "agent.output",
    "steps.ID.outputs.NAME",
    "turns.N.output",
];

impl Template {
    /// Parses `source` and checks every variable against `scope` and the suite's `vars`.
    pub fn parse(source: &str, scope: Scope, names: Names<'_>) -> Result<Self, TemplateError> {
        // Without a `{` there is no variable, escape or `${…}`: the text is one literal (what
        // the walk below makes of it, without its char-by-char copy).
        if !source.contains('{') {
            let segments = if source.is_empty() { Vec::new() } else { vec![Segment::Literal(source.to_owned())] };
            return Ok(Template { source: source.to_owned(), segments });
        }
        let mut segments = Vec::new();
        let mut literal = String::new();
        let chars: Vec<char> = source.chars().collect();
        // `{{` escapes opened and not yet closed: only those make a `}}` an escape, so shell
        // and JSON text ending in `}}` reaches its reader unchanged.
        let mut open_escapes = 0usize;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '{' if chars.get(i + 1) == Some(&'{') => {
                    literal.push('{');
                    open_escapes += 1;
                    i += 2;
                }
                '}' if chars.get(i + 1) == Some(&'}') && open_escapes > 0 => {
                    literal.push('}');
                    open_escapes -= 1;
                    i += 2;
                }
                // `${…}` is the shell's, whole (nested braces included), never a template.
                '$' if chars.get(i + 1) == Some(&'{') => {
                    let end = closing_brace(&chars, i + 1).unwrap_or(chars.len() - 1);
                    literal.extend(&chars[i..=end]);
                    i = end + 1;
                }
                '{' => {
                    let end = chars[i + 1..].iter().position(|&c| c == '}' || c == '{').map(|p| i + 1 + p);
                    let inner: Option<String> =
                        end.filter(|&e| chars[e] == '}').map(|e| chars[i + 1..e].iter().collect());
                    match inner.as_deref().map(|inner| classify(inner, names)) {
                        Some(Braces::Variable) => {
                            let name = inner.expect("classified");
                            let var = resolve(&name, scope, names).map_err(|(m, h)| err(i, &m, h))?;
                            if !literal.is_empty() {
                                segments.push(Segment::Literal(std::mem::take(&mut literal)));
                            }
                            segments.push(Segment::Var(var));
                            i = end.expect("closed") + 1;
                        }
                        Some(Braces::NearMiss { message, help }) => return Err(err(i, &message, Some(help))),
                        Some(Braces::Text) | None => {
                            literal.push('{');
                            i += 1;
                        }
                    }
                }
                _ => {
                    literal.push(c);
                    i += 1;
                }
            }
        }
        if !literal.is_empty() {
            segments.push(Segment::Literal(literal));
        }
        Ok(Template { source: source.to_owned(), segments })
    }

    /// A template with no variables, standing for itself.
    pub fn literal(text: &str) -> Self {
        Template { source: text.to_owned(), segments: vec![Segment::Literal(text.to_owned())] }
    }

    /// Replaces each `{vars.X}` by its value. Suite variables are constants of the run, so
    /// a template compiled with them renders them the same wherever it is rendered: in a
    /// task, a hook, or a model's `base_url` read once per run.
    pub fn bind_vars(self, vars: &BTreeMap<String, String>) -> Self {
        let binds = |s: &Segment| matches!(s, Segment::Var(Var::Vars(name)) if vars.contains_key(name));
        if !self.segments.iter().any(binds) {
            // Nothing to bind: the segments stay as they are (a parsed template never has
            // two literals in a row to join).
            return self;
        }
        let mut segments: Vec<Segment> = Vec::with_capacity(self.segments.len());
        for segment in self.segments {
            let segment = match segment {
                Segment::Var(Var::Vars(name)) if vars.contains_key(&name) => Segment::Literal(vars[&name].clone()),
                other => other,
            };
            match (segments.last_mut(), segment) {
                (Some(Segment::Literal(before)), Segment::Literal(text)) => before.push_str(&text),
                (_, segment) => segments.push(segment),
            }
        }
        Template { source: self.source, segments }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn vars(&self) -> impl Iterator<Item = &Var> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Var(v) => Some(v),
            Segment::Literal(_) => None,
        })
    }

    pub fn uses(&self, var: &Var) -> bool {
        self.vars().any(|v| v == var)
    }

    /// Renders with `lookup` giving each variable's value.
    pub fn render(&self, lookup: &dyn Fn(&Var) -> String) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Var(var) => out.push_str(&lookup(var)),
            }
        }
        out
    }
}

/// The lookup of a template rendered once, outside any task (a model's settings, a server's
/// or an extension's command and environment): `{env.X}` is read (empty when unset) and
/// nothing else has a value (`{vars.X}` is bound at load).
pub fn env_only(var: &Var) -> String {
    match var {
        Var::Env(name) => std::env::var(name).unwrap_or_default(),
        _ => String::new(),
    }
}

fn err(index: usize, message: &str, help: Option<String>) -> TemplateError {
    TemplateError { column: index + 1, message: message.to_owned(), help }
}

/// Text written so that a template reads it back as itself: every `{` is escaped, and each
/// `}` that would otherwise be read as the end of an escape too; `${…}` stays as it is
/// (the template leaves it to the shell whole). Converters write foreign text with it.
pub fn escape(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut open_escapes = 0usize;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '$' if chars.get(i + 1) == Some(&'{') => {
                let end = closing_brace(&chars, i + 1).unwrap_or(chars.len() - 1);
                out.extend(&chars[i..=end]);
                i = end + 1;
                continue;
            }
            '{' => {
                out.push_str("{{");
                open_escapes += 1;
            }
            '}' if open_escapes > 0 => {
                out.push_str("}}");
                open_escapes -= 1;
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// The namespaces a `{` must be followed by to start a variable.
const NAMESPACES: [&str; 10] =
    ["vars", "env", "task", "random", "steps", "agent", "prompt", "prompt_file", "mcp_config", "turns"];

/// What the text between a `{` and the next `}` is.
enum Braces {
    /// A variable (a known namespace, or a loop variable in reach): resolved, so an unknown
    /// name in a known namespace is still an error.
    Variable,
    /// Almost a variable (`{var.x}`, `{vars.x }`, `{promt}`): an error with a suggestion,
    /// never silently literal text.
    NearMiss { message: String, help: String },
    /// Anything else is text: `awk '{print $1}'`, `jq '{a: .b}'`, `{.spec.x}`, JSON.
    Text,
}

fn classify(inner: &str, names: Names<'_>) -> Braces {
    let namespace = |name: &str| name.split_once('.').map_or(name, |(ns, _)| ns).to_owned();
    let known = |name: &str| NAMESPACES.contains(&namespace(name).as_str()) || names.locals.iter().any(|l| l == name);
    if is_identifier(inner) {
        if known(inner) {
            return Braces::Variable;
        }
        // One letter off a namespace or a loop variable: a typo, not text.
        let ns = namespace(inner);
        let candidates = NAMESPACES.iter().copied().chain(names.locals.iter().map(String::as_str));
        if let Some(close) = candidates.into_iter().find(|c| strsim::damerau_levenshtein(&ns, c) == 1) {
            let rest = inner.strip_prefix(ns.as_str()).unwrap_or_default();
            return Braces::NearMiss {
                message: format!("unknown variable `{{{inner}}}`"),
                help: format!("did you mean `{{{close}{rest}}}`?"),
            };
        }
        return Braces::Text;
    }
    let trimmed = inner.trim();
    if trimmed != inner && is_identifier(trimmed) && known(trimmed) {
        return Braces::NearMiss {
            message: format!("spaces inside `{{{inner}}}`"),
            help: format!("write `{{{trimmed}}}`"),
        };
    }
    Braces::Text
}

/// The index of the `}` closing the `{` at `open`, counting nested braces.
fn closing_brace(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in chars.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn resolve(name: &str, scope: Scope, names: Names<'_>) -> Result<Var, (String, Option<String>)> {
    let unknown = |help: Option<String>| (format!("unknown variable `{{{name}}}`"), help);
    if names.locals.iter().any(|l| l == name) {
        return Ok(Var::Local(name.to_owned()));
    }
    let empty = BTreeMap::new();
    let vars = names.vars.unwrap_or(&empty);
    let (namespace, rest) = name.split_once('.').unwrap_or((name, ""));
    let var = match (namespace, rest) {
        ("steps", rest) => return step_output(rest, names.step_outputs),
        ("turns", rest) => return turn_output(rest, names.turns),
        ("vars", n) if !n.is_empty() => {
            if !vars.contains_key(n) {
                let help = crate::source::unknown(n, vars.keys().map(String::as_str))
                    .written(|s| format!("{{vars.{s}}}"))
                    .help("defined vars", "the suite defines no `vars`; add it there or pass --var");
                return Err(unknown(Some(help)));
            }
            Var::Vars(n.to_owned())
        }
        ("env", n) if !n.is_empty() => Var::Env(n.to_owned()),
        ("task", "id") => Var::TaskId,
        ("random", "id") => Var::RandomId,
        ("random", "port") => Var::RandomPort,
        ("prompt", "") => Var::Prompt,
        ("prompt_file", "") => Var::PromptFile,
        ("agent", "output") => Var::AgentOutput,
        ("mcp_config", "") => Var::McpConfig,
        _ => {
            let help = crate::source::unknown(name, KNOWN).written(|s| format!("{{{s}}}")).help("known variables", "");
            return Err(unknown(Some(help)));
        }
    };
    let allowed = match var {
        Var::Prompt | Var::PromptFile => !matches!(scope, Scope::Task | Scope::Hook),
        Var::AgentOutput => scope == Scope::AfterAgent,
        Var::TaskId => scope != Scope::Hook,
        Var::McpConfig => scope == Scope::Agent,
        _ => true,
    };
    if !allowed {
        let where_ = match var {
            Var::AgentOutput => "graders and cleanup steps",
            Var::TaskId => "tasks, not in hooks",
            Var::McpConfig => "agent commands and their env",
            _ => "agent commands, graders and cleanup steps",
        };
        return Err((format!("`{{{var}}}` is only available in {where_}"), None));
    }
    Ok(var)
}

/// `{turns.N.output}`: a conversation's turn N, one whose answer is known by then.
fn turn_output(rest: &str, reach: Option<u32>) -> Result<Var, (String, Option<String>)> {
    let full = format!("{{turns.{rest}}}");
    let Some(n) = rest.strip_suffix(".output").and_then(|n| n.parse::<u32>().ok()).filter(|n| *n > 0) else {
        return Err((format!("invalid turn reference `{full}`"), Some("write `{turns.N.output}`, N from 1".into())));
    };
    match reach {
        None => Err((format!("`{full}` is only available in a conversation's turns and graders (`turns`)"), None)),
        Some(0) => {
            Err((format!("`{full}` refers to a turn not answered yet: the first turn has no earlier turn"), None))
        }
        Some(k) if n > k => {
            Err((format!("`{full}` refers to a turn not answered yet: only turns 1 to {k} are answered here"), None))
        }
        Some(_) => Ok(Var::TurnOutput(n)),
    }
}

/// `{steps.ID.outputs.NAME}`: the step must come earlier and declare the output.
fn step_output(
    rest: &str,
    known: Option<&BTreeMap<String, BTreeSet<String>>>,
) -> Result<Var, (String, Option<String>)> {
    let full = format!("{{steps.{rest}}}");
    let Some((step, name)) = rest.split_once(".outputs.") else {
        return Err((format!("invalid step reference `{full}`"), Some("write `{steps.STEP_ID.outputs.NAME}`".into())));
    };
    let empty = BTreeMap::new();
    let known = known.unwrap_or(&empty);
    let Some(outputs) = known.get(step) else {
        let help = crate::source::unknown(step, known.keys().map(String::as_str))
            .written(|s| format!("{{steps.{s}.outputs.{name}}}"))
            .help("steps in reach", "no earlier step has an `id` here");
        return Err((format!("`{full}` refers to no earlier step `{step}`"), Some(help)));
    };
    if !outputs.contains(name) {
        let help = crate::source::unknown(name, outputs.iter().map(String::as_str))
            .written(|s| format!("{{steps.{step}.outputs.{s}}}"))
            .help("its outputs", &format!("step `{step}` declares no `outputs`"));
        return Err((format!("step `{step}` has no output `{name}`"), Some(help)));
    }
    Ok(Var::StepOutput { step: step.to_owned(), name: name.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([("greeting".to_owned(), "hello".to_owned())])
    }

    fn names(vars: &BTreeMap<String, String>) -> Names<'_> {
        Names { vars: Some(vars), ..Names::default() }
    }

    fn render(src: &str) -> String {
        let vars = vars();
        Template::parse(src, Scope::AfterAgent, names(&vars)).unwrap().render(&|v| match v {
            Var::Vars(n) => vars[n].clone(),
            other => format!("<{other}>"),
        })
    }

    #[test]
    fn renders_variables_braces_and_shell_parameters() {
        assert_eq!(render("{vars.greeting} {{x}} ${HOME} {task.id}"), "hello {x} ${HOME} <task.id>");
        assert_eq!(render("{{\"k\": 1}}"), "{\"k\": 1}");
    }

    #[test]
    fn rejects_unknown_variables_with_a_suggestion() {
        let e = Template::parse("hi {vars.greting}", Scope::Task, names(&vars())).unwrap_err();
        assert_eq!(e.column, 4);
        assert_eq!(e.message, "unknown variable `{vars.greting}`");
        assert_eq!(e.help.as_deref(), Some("did you mean `{vars.greeting}`?"));
        let e = Template::parse("{taks.id}", Scope::Task, names(&vars())).unwrap_err();
        assert_eq!(e.help.as_deref(), Some("did you mean `{task.id}`?"));
    }

    #[test]
    fn shell_and_json_braces_are_text() {
        for text in [
            "awk '{print $1}'",
            "awk '{print}'",
            "a } b",
            "kubectl get pod -o jsonpath='{.spec.x}'",
            "jq '{a: .b, c: {d: .e}}'",
            r#"{"k": {"n": 1}}"#,
            "${NS:-default} ${X} $(date) ${A:-${B}}",
            "if x; then { y; }; fi",
            "${{NS}}",
        ] {
            assert_eq!(render(text), text, "{text}");
        }
        // `{{`/`}}` stay the escape, for a literal variable.
        assert_eq!(render("{{vars.greeting}} is {vars.greeting}"), "{vars.greeting} is hello");
    }

    #[test]
    fn escaped_text_reads_back_as_itself() {
        let pieces = ["{", "}", "{{", "}}", "$", "${", "vars.greeting", "env.X", "prompt", "a", " ", ".", "$1"];
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..20_000 {
            let text: String = (0..rng.usize(0..12)).map(|_| pieces[rng.usize(..pieces.len())]).collect();
            let escaped = escape(&text);
            let t = Template::parse(&escaped, Scope::AfterAgent, names(&vars()))
                .unwrap_or_else(|e| panic!("{text:?} escaped as {escaped:?}: {e:?}"));
            assert_eq!(t.vars().count(), 0, "{text:?} escaped as {escaped:?}");
            assert_eq!(t.render(&|_| String::new()), text, "escaped as {escaped:?}");
        }
    }

    #[test]
    fn near_misses_are_errors_with_a_suggestion() {
        for (text, help) in [
            ("{var.greeting}", "did you mean `{vars.greeting}`?"),
            ("{evn.HOME}", "did you mean `{env.HOME}`?"),
            ("{promt}", "did you mean `{prompt}`?"),
            ("{vars.greeting }", "write `{vars.greeting}`"),
        ] {
            let e = Template::parse(text, Scope::AfterAgent, names(&vars())).unwrap_err();
            assert_eq!(e.help.as_deref(), Some(help), "{text}: {e:?}");
        }
    }

    #[test]
    fn rejects_out_of_scope_variables() {
        let e = Template::parse("{agent.output}", Scope::Task, names(&vars())).unwrap_err();
        assert!(e.message.contains("only available in graders"));
        assert!(Template::parse("{prompt}", Scope::Agent, names(&vars())).is_ok());
    }

    #[test]
    fn step_outputs_and_loop_variables() {
        let steps = BTreeMap::from([("ns".to_owned(), BTreeSet::from(["name".to_owned()]))]);
        let locals = ["user".to_owned()];
        let n = Names { vars: None, step_outputs: Some(&steps), locals: &locals, turns: None };
        let t = Template::parse("add {user} to {steps.ns.outputs.name}", Scope::Task, n).unwrap();
        assert!(t.uses(&Var::Local("user".into())));
        assert!(t.uses(&Var::StepOutput { step: "ns".into(), name: "name".into() }));
        let e = Template::parse("{steps.nss.outputs.name}", Scope::Task, n).unwrap_err();
        assert_eq!(e.help.as_deref(), Some("did you mean `{steps.ns.outputs.name}`?"));
        let e = Template::parse("{steps.ns.outputs.nmae}", Scope::Task, n).unwrap_err();
        assert_eq!(e.message, "step `ns` has no output `nmae`");
        assert!(Template::parse("{task.id}", Scope::Hook, n).is_err());
    }
}
