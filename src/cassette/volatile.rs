//! What makes an agent's model requests comparable between runs: the text real agents put
//! in a request that changes from run to run, day to day, directory to directory and
//! machine to machine while the request means the same, replaced by a placeholder before
//! the request is keyed. Written down in docs/cassettes.md; anything else that differs is a
//! miss, shown with its difference.

use regex::Regex;
use serde_json::Value;

/// Text replaced wherever it stands in a request's strings, every form of the agent's
/// working directory and home first (longest first, so a directory below home stays whole).
#[derive(Debug, Clone, Default)]
pub struct Volatile {
    literals: Vec<(String, &'static str)>,
    /// The suite's own (`cassettes.normalize`), after the built-in ones.
    rules: Vec<(Regex, String)>,
}

/// Lines agents write that hold the date or the machine: Claude Code's date and month lines
/// and its OS version.
static PATTERNS: std::sync::LazyLock<[(Regex, &str); 3]> = std::sync::LazyLock::new(|| {
    let re = |r: &str| Regex::new(r).expect("a fixed pattern");
    [
        (re(r"Today's date is \d{4}[-/]\d{2}[-/]\d{2}"), "Today's date is <date>"),
        (re(r"The current month is [A-Z][a-z]+ \d{4}"), "The current month is <month>"),
        (re(r"OS Version: [^\n\\]*"), "OS Version: <os>"),
    ]
});

/// Fields that identify the run, replaced whole where they exist: Claude Code's
/// `metadata.user_id` (a device id and a session id).
const FIELDS: [&str; 1] = ["/metadata/user_id"];

impl Volatile {
    /// The volatile text of an agent run in `cwd`, with `home`: each as written and resolved,
    /// and in the form Claude Code names its project directory by (each character that is
    /// not a letter or a digit a `-`).
    pub fn of_run(cwd: &std::path::Path, home: Option<&std::path::Path>) -> Volatile {
        let mut literals = Vec::new();
        let mut add = |path: &std::path::Path, placeholder: &'static str, dashed: &'static str| {
            let resolved = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
            for form in [path.to_path_buf(), resolved] {
                let text = form.display().to_string();
                if text.len() > 3 && !literals.iter().any(|(t, _)| *t == text) {
                    let mangled: String =
                        text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
                    literals.push((mangled, dashed));
                    literals.push((text, placeholder));
                }
            }
        };
        add(cwd, "<cwd>", "<cwd-dashed>");
        if let Some(home) = home {
            add(home, "<home>", "<home-dashed>");
        }
        literals.sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
        Volatile { literals, rules: Vec::new() }
    }

    /// With the suite's own rules (`cassettes.normalize`): each pattern replaced after the
    /// built-in ones.
    pub fn with(mut self, rules: &[(Regex, String)]) -> Volatile {
        self.rules = rules.to_vec();
        self
    }

    /// A request's body with its volatile text replaced.
    pub fn normalize(&self, mut request: Value) -> Value {
        for field in FIELDS {
            if let Some(value) = request.pointer_mut(field) {
                *value = Value::String("<volatile>".into());
            }
        }
        self.walk(&mut request);
        request
    }

    fn walk(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                for (literal, placeholder) in &self.literals {
                    if text.contains(literal.as_str()) {
                        *text = text.replace(literal.as_str(), placeholder);
                    }
                }
                let rules =
                    PATTERNS.iter().map(|(p, r)| (p, *r)).chain(self.rules.iter().map(|(p, r)| (p, r.as_str())));
                for (pattern, placeholder) in rules {
                    if let std::borrow::Cow::Owned(replaced) = pattern.replace_all(text, placeholder) {
                        *text = replaced;
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.walk(v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn two_runs_in_two_directories_on_two_days_key_alike_and_a_real_change_does_not() {
        let request = |cwd: &str, day: &str, session: &str, ask: &str| {
            json!({
                "metadata": {"user_id": format!("{{\"device_id\":\"d\",\"session_id\":\"{session}\"}}")},
                "system": [{"text": format!(
                    "Primary working directory: {cwd}\n memory at `/root/.claude/projects/{}/memory/`\n\
                     # currentDate\nToday's date is {day}.\nThe current month is November 2026.\n - OS Version: Linux 6.{session}",
                    cwd.replace('/', "-"))}],
                "messages": [{"role": "user", "content": ask}],
            })
        };
        let one = Volatile::of_run(std::path::Path::new("/tmp/run-a"), Some(std::path::Path::new("/root")));
        let two = Volatile::of_run(std::path::Path::new("/tmp/run-a2"), Some(std::path::Path::new("/root")));
        let a = one.normalize(request("/tmp/run-a", "2026-11-29", "1", "hi"));
        let b = two.normalize(request("/tmp/run-a2", "2026-11-30", "2", "hi"));
        assert_eq!(a, b);
        assert_eq!(
            a["system"][0]["text"],
            "Primary working directory: <cwd>\n memory at `<home>/.claude/projects/<cwd-dashed>/memory/`\n\
             # currentDate\nToday's date is <date>.\nThe current month is <month>.\n - OS Version: <os>"
        );
        assert_ne!(a, two.normalize(request("/tmp/run-a2", "2026-11-30", "2", "hello")));
    }

    #[test]
    fn a_suites_own_rules_make_its_volatile_text_alike_and_nothing_else() {
        let rules = [(Regex::new(r"session-[0-9a-f]{8}").unwrap(), "session-<id>".to_owned())];
        let volatile = Volatile::of_run(std::path::Path::new("/tmp/w"), None).with(&rules);
        let ask = |id: &str, text: &str| json!({"messages": [{"role": "user", "content": format!("{text} in session-{id}")}]});
        let a = volatile.normalize(ask("0badc0de", "hi"));
        assert_eq!(a, volatile.normalize(ask("12345678", "hi")));
        assert_eq!(a["messages"][0]["content"], "hi in session-<id>");
        assert_ne!(a, volatile.normalize(ask("12345678", "hello")), "a real change still misses");
        assert_ne!(a, Volatile::of_run(std::path::Path::new("/tmp/w"), None).normalize(ask("12345678", "hi")));
    }
}
