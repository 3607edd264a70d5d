//! Workflow commands (`::error file=…::message`), escaped as the runner expects.

/// Escapes a command's message: `%`, CR and LF.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a property value: as data, plus `:` and `,` (they separate properties).
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// A workflow command evalgate composed, its message and properties escaped: the only text
/// printed with a `::` at a line's start (`emit`); `outln!`/`errln!` make any other inert
/// (`redact::stream_line`), so no name, id or message can start a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command(String);

impl Command {
    /// Prints the command on stdout, where the runner reads it (redacted).
    #[allow(clippy::disallowed_methods)] // the one way evalgate's own commands are printed
    pub fn emit(&self) {
        crate::redact::write_line(false, &crate::redact::command_line(&self.0));
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<&str> for Command {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// `::NAME key=value,…::message`
pub fn command(name: &str, properties: &[(&str, String)], message: &str) -> Command {
    let props: Vec<String> = properties.iter().map(|(k, v)| format!("{k}={}", escape_property(v))).collect();
    Command(if props.is_empty() {
        format!("::{name}::{}", escape_data(message))
    } else {
        format!("::{name} {}::{}", props.join(","), escape_data(message))
    })
}

/// `text` with no line of it read as a command: between `::stop-commands::TOKEN` and
/// `::TOKEN::`, a token drawn at random (and not in `text`), so a text from a results file
/// cannot end the pause it is shown in.
pub fn inert(text: &str) -> Command {
    use std::hash::{BuildHasher, Hasher};
    // Each `RandomState` is keyed from the OS's randomness: two give 128 bits.
    let random = || std::collections::hash_map::RandomState::new().build_hasher().finish();
    let token = loop {
        let token = format!("evalgate-{:016x}{:016x}", random(), random());
        if !text.contains(&token) {
            break token;
        }
    };
    Command(format!("{}\n{text}\n::{token}::", command("stop-commands", &[], &token)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_data_and_properties() {
        assert_eq!(
            command("error", &[("file", "a,b:c.yaml".into()), ("line", "3".into())], "50% done\r\nnext: x, y"),
            "::error file=a%2Cb%3Ac.yaml,line=3::50%25 done%0D%0Anext: x, y"
        );
        assert_eq!(command("add-mask", &[], "s3cr3t"), "::add-mask::s3cr3t");
    }

    #[test]
    fn an_inert_text_is_shown_between_a_fresh_stop_token_and_its_end() {
        let text = "a\n::error::b";
        let (first, second) = (inert(text).to_string(), inert(text).to_string());
        let token = first.strip_prefix("::stop-commands::").unwrap().split('\n').next().unwrap();
        assert_eq!(first, format!("::stop-commands::{token}\n{text}\n::{token}::"));
        assert_eq!(token.len(), "evalgate-".len() + 32);
        assert_ne!(first, second, "a token is never reused");
    }
}
