//! The redactor and the process's one instance of it: secrets and their encoded forms replaced
//! in text and data, the values learnt at run time, and the lines written to a stream.

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
    /// What `matcher` looks for, each form of each secret.
    patterns: Vec<String>,
    /// What each pattern of `matcher` becomes.
    pub(super) placeholders: Vec<String>,
    pub(super) matcher: Option<AhoCorasick>,
}

/// The shortest start of a secret [`Redactor::cut_end`] replaces at a cut edge: two
/// characters of a secret say nothing of it, and would match the end of much ordinary text.
const MIN_PARTIAL_LEN: usize = 3;

impl Redactor {
    /// Every secret as written, each line of a multi-line one (a PEM key printed line by
    /// line), and the forms JSON, XML and URL escaping give them (a password with a space in
    /// a URL reaches an HTTP client's error as `correct%20horse`), longest match first.
    pub fn new(secrets: &[Secret]) -> Redactor {
        let mut patterns: Vec<(String, &str)> = Vec::new();
        for secret in secrets.iter().filter(|s| !s.is_too_short()) {
            let lines = secret.value.lines().map(str::trim).filter(|l| l.chars().count() >= MIN_SECRET_LEN);
            for form in std::iter::once(secret.value.as_str()).chain(lines) {
                let json = serde_json::to_string(form).unwrap_or_default();
                let json = json.trim_matches('"').to_owned();
                for variant in [form.to_owned(), json, xml_escaped(form)].into_iter().chain(url_encoded(form)) {
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
        let placeholders = patterns.iter().map(|(_, p)| (*p).to_owned()).collect();
        Redactor { patterns: patterns.into_iter().map(|(p, _)| p).collect(), placeholders, matcher }
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

    /// `text`, cut short at its end by a cap (the rest was never read), with an end that is
    /// the start of a secret (at least `MIN_PARTIAL_LEN` characters of it) replaced: no
    /// later redaction can know it is one. The rest is left as it is, for graders to read
    /// (a `no_leak` must see a whole canary); every sink redacts it.
    pub fn cut_end<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let partial = self
            .patterns
            .iter()
            .zip(&self.placeholders)
            .filter_map(|(pattern, placeholder)| {
                // Each start shorter than the whole (which `text` replaced), the longest found.
                let ends = pattern.char_indices().skip(MIN_PARTIAL_LEN).map(|(i, _)| i);
                ends.filter(|&i| text.ends_with(&pattern[..i])).last().map(|len| (len, placeholder))
            })
            .max_by_key(|(len, _)| *len);
        match partial {
            Some((len, placeholder)) => Cow::Owned(format!("{}{placeholder}", &text[..text.len() - len])),
            None => Cow::Borrowed(text),
        }
    }

    /// Redacts every string and key of `value`; whether anything changed.
    pub fn value(&self, value: &mut serde_json::Value) -> bool {
        self.walk(value, &|s| match self.text(s) {
            Cow::Owned(redacted) => Some(redacted),
            Cow::Borrowed(_) => None,
        })
    }

    /// Every string of `value` replaced by what `string` makes of it (`None`: unchanged),
    /// every key redacted as text; whether anything changed.
    pub(super) fn walk(&self, value: &mut serde_json::Value, string: &dyn Fn(&str) -> Option<String>) -> bool {
        use serde_json::Value;
        match value {
            Value::String(s) => match string(s) {
                Some(redacted) => {
                    *s = redacted;
                    true
                }
                None => false,
            },
            Value::Array(items) => items.iter_mut().fold(false, |changed, item| self.walk(item, string) | changed),
            Value::Object(map) => {
                let mut changed = false;
                for (key, mut v) in std::mem::take(map) {
                    changed |= self.walk(&mut v, string);
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

/// The forms URL encoding gives `text` where they differ from it: as the `url` crate (and
/// so reqwest's errors) writes a query, a path and userinfo, every byte but the unreserved
/// ones escaped (`encodeURIComponent`), and a form body's (space as `+`).
fn url_encoded(text: &str) -> Vec<String> {
    use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
    const QUERY: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b'#').add(b'<').add(b'>');
    const PATH: &AsciiSet = &QUERY.add(b'?').add(b'`').add(b'{').add(b'}').add(b'\'');
    const USERINFO: &AsciiSet =
        &PATH.add(b'/').add(b':').add(b';').add(b'=').add(b'@').add(b'[').add(b'\\').add(b']').add(b'^').add(b'|');
    const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    let component = utf8_percent_encode(text, COMPONENT).to_string();
    let form = component.replace("%20", "+");
    let mut forms: Vec<String> = [QUERY, PATH, USERINFO].map(|set| utf8_percent_encode(text, set).to_string()).into();
    forms.extend([component, form]);
    forms.retain(|form| form != text);
    forms
}

fn xml_escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// Whether `name` is one of evalgate's own credentials on a runner, which the system under
/// test never inherits: the PR-write token, the action's inputs, the runner's tokens. A
/// suite that needs one passes it explicitly (`env: {GH_TOKEN: "{env.GITHUB_TOKEN}"}`).
pub fn is_own_credential(name: &str) -> bool {
    name == "GITHUB_TOKEN"
        || name == "ACTIONS_RUNTIME_TOKEN"
        || name.starts_with("ACTIONS_ID_TOKEN_REQUEST_")
        || name.starts_with("INPUT_")
}

static CURRENT: LazyLock<RwLock<Arc<Redactor>>> = LazyLock::new(|| RwLock::new(Arc::new(own_credentials())));

/// evalgate's own tokens, known from the start: the PR-write token and the runner's.
fn own_credentials() -> Redactor {
    Redactor::new(&credential_secrets())
}

fn credential_secrets() -> Vec<Secret> {
    std::env::vars()
        .filter(|(name, value)| is_own_credential(name) && name.contains("TOKEN") && !value.is_empty())
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

/// `text`, cut short at its end by a cap, with a start of a secret at its end replaced by
/// the installed redactor: see [`Redactor::cut_end`].
pub fn cut_end(text: &str) -> Cow<'_, str> {
    match current().cut_end(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// `value` with each placeholder of a secret this run knows replaced by the secret: an
/// answer recorded redacted (a cassette) is replayed as the model gave it, so a leak it
/// recorded is a leak again, for the graders that look for one. In memory only: what
/// leaves the run is redacted again. Returns the placeholders left, of secrets this run
/// does not know (their answer cannot be replayed as given).
pub fn restore(value: &mut serde_json::Value) -> Vec<String> {
    let known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let secrets: Vec<&Secret> = known.installed.iter().chain(&known.learnt).filter(|s| !s.is_too_short()).collect();
    fn walk(value: &mut serde_json::Value, secrets: &[&Secret]) {
        match value {
            serde_json::Value::String(s) => {
                for secret in secrets {
                    if s.contains(&secret.placeholder) {
                        *s = s.replace(&secret.placeholder, &secret.value);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| walk(v, secrets)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| walk(v, secrets)),
            _ => {}
        }
    }
    walk(value, &secrets);
    static PLACEHOLDER: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"\[secret:[^\]\n]{1,200}\]|\[canary #[0-9]+\]").expect("a valid regex"));
    let text = value.to_string();
    let mut left: Vec<String> = PLACEHOLDER.find_iter(&text).map(|m| m.as_str().to_owned()).collect();
    left.sort();
    left.dedup();
    left
}

/// `value` redacted on its decoded content, as recorded traffic is kept: each JSON document
/// or stream of events a string holds parsed, redacted and written again (see
/// [`Redactor::decoded`]).
pub fn decoded(mut value: serde_json::Value) -> serde_json::Value {
    current().decoded(&mut value);
    value
}

/// The placeholders of the secrets `value` still holds in any decoding the redactor knows,
/// joined streams and base64 included (see [`Redactor::hidden`]): none, for what may be kept.
pub fn hidden(value: &serde_json::Value) -> Vec<String> {
    current().hidden(value)
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

/// A line on its way to stdout or stderr (`outln!`, `errln!`, the terminal's progress):
/// redacted, and no runner command in it. GitHub's legacy `##[command]` (`##[add-mask]`,
/// `##[stop-commands]`) and Azure Pipelines' `##vso[…]` are read anywhere in a line; a
/// `::command` at a line's start (after blanks), so every line of the text — a value can
/// hold a line break, and the runner reads `\r` as one too — that would start with `::`
/// starts with `: :` instead. Evalgate's own commands go through [`command_line`] alone:
/// a name, an id or an agent's text in a message, an error or a FAIL line is only text.
pub fn stream_line(line: &str) -> Cow<'_, str> {
    let line = legacy_inert(text(line));
    let starts_command = |l: &str| l.trim_start().starts_with("::");
    if !line.split(['\n', '\r']).any(starts_command) {
        return line;
    }
    let mut out = String::with_capacity(line.len() + 8);
    for piece in line.split_inclusive(['\n', '\r']) {
        if starts_command(piece) {
            let blanks = piece.len() - piece.trim_start().len();
            out.push_str(&piece[..blanks]);
            out.push_str(": :");
            out.push_str(&piece[blanks + 2..]);
        } else {
            out.push_str(piece);
        }
    }
    Cow::Owned(out)
}

/// A runner command evalgate composed (`github::workflow_command::Command`, its message and
/// properties escaped): redacted, the legacy commands made inert, its `::` kept.
pub fn command_line(line: &str) -> Cow<'_, str> {
    legacy_inert(text(line))
}

fn legacy_inert(line: Cow<'_, str>) -> Cow<'_, str> {
    if line.contains("##[") || line.contains("##vso[") {
        Cow::Owned(line.replace("##[", "## [").replace("##vso[", "## vso["))
    } else {
        line
    }
}

#[doc(hidden)]
#[allow(clippy::disallowed_methods)] // `outln!`/`errln!`: the line made inert first
pub fn print_line(stderr: bool, line: &str) {
    write_line(stderr, &stream_line(line));
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
    fn no_line_of_a_stream_line_starts_a_runner_command() {
        assert_eq!(
            stream_line("name `a\n::error::x` and\r  ::warning::y"),
            "name `a\n: :error::x` and\r  : :warning::y"
        );
        assert_eq!(stream_line("::error::at the start"), ": :error::at the start");
        assert_eq!(stream_line("a ::b:: in a line ##[add-mask]x"), "a ::b:: in a line ## [add-mask]x");
        assert!(matches!(stream_line("plain"), Cow::Borrowed(_)));
        assert_eq!(command_line("::error file=a::m ##vso[x]"), "::error file=a::m ## vso[x]");
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
    fn a_secret_in_a_url_is_redacted_as_the_url_crate_writes_it() {
        let r = redactor(&[("correct horse\"staple;1=2", "[secret:PW]")]);
        for raw in [
            "http://127.0.0.1:1/hook/correct horse\"staple;1=2/x",
            "http://127.0.0.1:1/?pw=correct horse\"staple;1=2",
            "http://user:correct horse\"staple;1=2@127.0.0.1:1/",
        ] {
            let written = reqwest::Url::parse(raw).unwrap().to_string();
            assert!(!written.contains("correct horse"), "{written}");
            let shown = r.text(&written);
            assert!(shown.contains("[secret:PW]") && !shown.contains("horse"), "{written} -> {shown}");
        }
        assert_eq!(r.text("pw=correct%20horse%22staple%3B1%3D2&x"), "pw=[secret:PW]&x");
        assert_eq!(r.text("pw=correct+horse%22staple%3B1%3D2&x"), "pw=[secret:PW]&x");
    }

    #[test]
    fn at_a_cut_end_the_start_of_a_secret_is_replaced_too() {
        let r = redactor(&[("sk-live-0123456789", "[secret:K]")]);
        assert_eq!(r.cut_end("output sk-live-01"), "output [secret:K]");
        // A whole one is left for graders (a `no_leak` must find it); sinks redact it.
        assert_eq!(r.cut_end("output sk-live-0123456789 and sk-l"), "output sk-live-0123456789 and [secret:K]");
        // Two characters say nothing of the secret; text that merely ends is left alone.
        assert_eq!(r.cut_end("ends in sk"), "ends in sk");
        assert!(matches!(r.cut_end("nothing here"), Cow::Borrowed(_)));
        assert_eq!(r.text("output sk-live-01"), "output sk-live-01", "only a cut end is treated so");
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
