//! The one redactor between evalgate and every sink. It knows every secret value the run
//! uses (folded from `uses()`, plus evalgate's own tokens) and replaces each with a stable
//! placeholder: `[secret:OPENAI_API_KEY]`, `[secret:header Authorization]`, `[canary #1]`.
//!
//! Two layers, both through the one installed `Redactor`:
//! - data: a task's result and the run's results are redacted before any report renders
//!   them (`data`), so a reason cut to 300 characters or an escaped string never shows a
//!   piece of a secret;
//! - bytes: every file evalgate writes for people, each line on stdout and stderr (`outln!`
//!   and `errln!`; `println!` is refused by clippy), the step summary, the step outputs and
//!   the PR comment pass `text` on the way out.
//!
//! Values shorter than `MIN_SECRET_LEN` characters are not redacted: they would match too
//! much ordinary text. `evalgate check` warns about them.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, Mutex, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The shortest value redacted, in characters.
pub const MIN_SECRET_LEN: usize = 6;

/// A secret value and the placeholder reports show instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub value: String,
    pub placeholder: String,
}

impl Secret {
    /// The value of an environment variable: `[secret:NAME]`.
    pub fn env(name: &str, value: String) -> Secret {
        Secret { value, placeholder: format!("[secret:{name}]") }
    }

    pub fn is_too_short(&self) -> bool {
        self.value.trim().chars().count() < MIN_SECRET_LEN
    }
}

#[derive(Debug, Default)]
pub struct Redactor {
    /// What each pattern of `matcher` becomes.
    placeholders: Vec<String>,
    matcher: Option<AhoCorasick>,
}

impl Redactor {
    /// Every secret as written, each line of a multi-line one (a PEM key printed line by
    /// line), and the forms JSON and XML escaping give them, longest match first.
    pub fn new(secrets: &[Secret]) -> Redactor {
        let mut patterns: Vec<(String, &str)> = Vec::new();
        for secret in secrets.iter().filter(|s| !s.is_too_short()) {
            let lines = secret.value.lines().map(str::trim).filter(|l| l.chars().count() >= MIN_SECRET_LEN);
            for form in std::iter::once(secret.value.as_str()).chain(lines) {
                let json = serde_json::to_string(form).unwrap_or_default();
                let json = json.trim_matches('"').to_owned();
                for variant in [form.to_owned(), json, xml_escaped(form)] {
                    patterns.push((variant, &secret.placeholder));
                }
            }
        }
        patterns.sort();
        patterns.dedup_by(|a, b| a.0 == b.0);
        let matcher = (!patterns.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(patterns.iter().map(|(p, _)| p))
                .expect("literal patterns always build")
        });
        Redactor { placeholders: patterns.iter().map(|(_, p)| (*p).to_owned()).collect(), matcher }
    }

    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(matcher) = &self.matcher else { return Cow::Borrowed(text) };
        if !matcher.is_match(text) {
            return Cow::Borrowed(text);
        }
        Cow::Owned(matcher.replace_all(text, &self.placeholders))
    }

    /// Redacts every string and key of `value`; whether anything changed.
    pub fn value(&self, value: &mut serde_json::Value) -> bool {
        use serde_json::Value;
        match value {
            Value::String(s) => match self.text(s) {
                Cow::Owned(redacted) => {
                    *s = redacted;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            Value::Array(items) => {
                let mut changed = false;
                for item in items {
                    changed |= self.value(item);
                }
                changed
            }
            Value::Object(map) => {
                let mut changed = false;
                for (key, mut v) in std::mem::take(map) {
                    changed |= self.value(&mut v);
                    let key = match self.text(&key) {
                        Cow::Owned(redacted) => {
                            changed = true;
                            redacted
                        }
                        Cow::Borrowed(_) => key,
                    };
                    map.insert(key, v);
                }
                changed
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }
}

fn xml_escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

static CURRENT: LazyLock<RwLock<Arc<Redactor>>> = LazyLock::new(|| RwLock::new(Arc::new(own_credentials())));

/// evalgate's own tokens, known from the start: the PR-write token and the runner's.
fn own_credentials() -> Redactor {
    Redactor::new(&credential_secrets())
}

fn credential_secrets() -> Vec<Secret> {
    std::env::vars()
        .filter(|(name, value)| crate::process::is_own_credential(name) && name.contains("TOKEN") && !value.is_empty())
        .map(|(name, value)| Secret::env(&name, value))
        .collect()
}

/// The secrets behind the current redactor: those installed, and those learnt since.
#[derive(Default)]
struct Known {
    installed: Vec<Secret>,
    /// Values only known at run time (an MCP server's access token), kept across `install`.
    learnt: Vec<Secret>,
    /// Told of every secret learnt (the runner's `::add-mask::`).
    on_learn: Option<fn(&Secret)>,
}

// Before `install`, evalgate's own tokens, as `CURRENT` starts.
static KNOWN: LazyLock<Mutex<Known>> =
    LazyLock::new(|| Mutex::new(Known { installed: credential_secrets(), ..Known::default() }));

impl Known {
    fn rebuild(&self) {
        let all: Vec<Secret> = self.installed.iter().chain(&self.learnt).cloned().collect();
        *CURRENT.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(Redactor::new(&all));
    }
}

/// Installs the redactor for the rest of the process: `secrets` (the run's suites'),
/// evalgate's own tokens, and every secret learnt so far.
pub fn install(mut secrets: Vec<Secret>) {
    secrets.extend(credential_secrets());
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    known.installed = secrets;
    known.rebuild();
}

/// Adds a secret found while the run goes (an access token fetched for an MCP server): from
/// now on it is redacted wherever the installed redactor is, and `on_learn` is told.
pub fn learn(secret: Secret) {
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if known.installed.iter().chain(&known.learnt).any(|s| s.value == secret.value) {
        return;
    }
    if let Some(hook) = known.on_learn {
        hook(&secret);
    }
    known.learnt.push(secret);
    known.rebuild();
}

/// Calls `hook` with every secret learnt so far and every one learnt later.
pub fn on_learn(hook: fn(&Secret)) {
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    known.learnt.iter().for_each(hook);
    known.on_learn = Some(hook);
}

pub fn current() -> Arc<Redactor> {
    CURRENT.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// `text` through the installed redactor.
pub fn text(text: &str) -> Cow<'_, str> {
    // An `Arc` clone per call keeps the lock out of the replacement.
    match current().text(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// `data` with every string redacted.
pub fn data<T: Serialize + DeserializeOwned>(data: T) -> T {
    redacted(&data).unwrap_or(data)
}

/// `data` with every string redacted, borrowed when there was nothing to redact.
pub fn data_ref<T: Serialize + DeserializeOwned + Clone>(data: &T) -> Cow<'_, T> {
    redacted(data).map_or(Cow::Borrowed(data), Cow::Owned)
}

/// A copy of `data` with its secrets replaced, or `None` when it holds none (checked on its
/// JSON, which has every string in raw or escaped form).
fn redacted<T: Serialize + DeserializeOwned>(data: &T) -> Option<T> {
    let redactor = current();
    if redactor.is_empty() {
        return None;
    }
    let json = serde_json::to_string(data).ok()?;
    if matches!(redactor.text(&json), Cow::Borrowed(_)) {
        return None;
    }
    let mut value: serde_json::Value = serde_json::from_str(&json).expect("serde_json reads what it wrote");
    // Only numbers matched (a secret of digits): nothing to replace.
    if !redactor.value(&mut value) {
        return None;
    }
    // Placeholders are plain strings where strings were: the type reads them back.
    Some(serde_json::from_value(value).expect("a redacted value keeps its shape"))
}

/// `println!` through the redactor: the one way evalgate writes to stdout.
#[macro_export]
macro_rules! outln {
    () => { $crate::redact::print_line(false, "") };
    ($($arg:tt)*) => { $crate::redact::print_line(false, &format!($($arg)*)) };
}

/// `eprintln!` through the redactor: the one way evalgate writes to stderr.
#[macro_export]
macro_rules! errln {
    () => { $crate::redact::print_line(true, "") };
    ($($arg:tt)*) => { $crate::redact::print_line(true, &format!($($arg)*)) };
}

#[doc(hidden)]
pub fn print_line(stderr: bool, line: &str) {
    write_line(stderr, &text(line));
}

/// Writes one line as it is (the redacting callers are `outln!`/`errln!`). A stream that
/// cannot be written (its reader gone, as in `evalgate schema | head -1`) loses the line
/// and nothing else: no panic, and the command goes on to its reports and its exit code.
pub fn write_line(stderr: bool, line: &str) {
    use std::io::Write;
    let _ = if stderr {
        writeln!(std::io::stderr().lock(), "{line}")
    } else {
        writeln!(std::io::stdout().lock(), "{line}")
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(secrets: &[(&str, &str)]) -> Redactor {
        Redactor::new(
            &secrets.iter().map(|(v, p)| Secret { value: (*v).into(), placeholder: (*p).into() }).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn replaces_every_occurrence_longest_first() {
        let r = redactor(&[("sk-abcdef", "[secret:A]"), ("sk-abcdef-long", "[secret:B]")]);
        assert_eq!(r.text("x sk-abcdef-long y sk-abcdef z"), "x [secret:B] y [secret:A] z");
        assert!(matches!(r.text("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_values_are_left_alone() {
        let r = redactor(&[("12345", "[secret:PIN]")]);
        assert!(r.is_empty());
        assert_eq!(r.text("pin 12345"), "pin 12345");
    }

    #[test]
    fn escaped_forms_and_lines_of_multi_line_secrets() {
        let r = redactor(&[
            ("a\"b<c>&d", "[secret:Q]"),
            ("-----BEGIN KEY-----\nMIIEvQIBADAN\n-----END KEY-----", "[secret:K]"),
        ]);
        assert_eq!(r.text(r#"{"v":"a\"b<c>&d"}"#), r#"{"v":"[secret:Q]"}"#);
        assert_eq!(r.text("<v>a&quot;b&lt;c&gt;&amp;d</v>"), "<v>[secret:Q]</v>");
        assert_eq!(r.text("line: MIIEvQIBADAN"), "line: [secret:K]");
        assert_eq!(r.text(r#""-----BEGIN KEY-----\nMIIEvQIBADAN\n-----END KEY-----""#), r#""[secret:K]""#);
    }

    #[test]
    fn a_secret_learnt_at_run_time_is_redacted_kept_across_install_and_announced_once() {
        static ANNOUNCED: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let secret = |value: &str, placeholder: &str| Secret { value: value.into(), placeholder: placeholder.into() };
        learn(secret("learnt-before-install-91f3", "[secret:early]"));
        on_learn(|s| ANNOUNCED.lock().unwrap().push(s.value.clone()));
        install(vec![Secret::env("X", "installed-value-4c1d".into())]);
        learn(secret("learnt-after-install-7e2a", "[secret:late]"));
        // Already known: neither replaced nor announced again.
        learn(secret("installed-value-4c1d", "[secret:again]"));
        learn(secret("learnt-after-install-7e2a", "[secret:again]"));
        assert_eq!(
            text("a learnt-before-install-91f3 b installed-value-4c1d c learnt-after-install-7e2a"),
            "a [secret:early] b [secret:X] c [secret:late]"
        );
        assert_eq!(*ANNOUNCED.lock().unwrap(), ["learnt-before-install-91f3", "learnt-after-install-7e2a"]);
    }

    #[test]
    fn data_redacts_strings_and_keys_and_keeps_the_shape() {
        #[derive(Debug, Serialize, serde::Deserialize, PartialEq)]
        struct Result {
            output: String,
            score: f64,
            args: serde_json::Value,
        }
        let r = redactor(&[("hunter22", "[secret:P]")]);
        let mut value = serde_json::to_value(Result {
            output: "the password is hunter22".into(),
            score: 0.5,
            args: serde_json::json!({"hunter22": ["x hunter22"]}),
        })
        .unwrap();
        assert!(r.value(&mut value));
        let back: Result = serde_json::from_value(value).unwrap();
        assert_eq!(back.output, "the password is [secret:P]");
        assert_eq!(back.args, serde_json::json!({"[secret:P]": ["x [secret:P]"]}));
    }
}
