//! A JavaScript `RegExp` (pattern and flags, as AgentV builds it with `new RegExp`) as the
//! Rust regular expression that matches the same texts, or why it cannot be one.
//!
//! JavaScript's classes are ASCII (`\d`, `\w`, `\b`) where Rust's are Unicode, its `\s` is
//! its own list, its `.` stops at every line terminator, and it reads `{` that starts no
//! quantifier and unknown letter escapes literally: each is written out. Back-references
//! and look-around have no Rust counterpart and are refused, as is the `v` flag.

/// JavaScript's `\s`: WhiteSpace and LineTerminator (ECMA-262 §22.2.2.9), inside a class.
const JS_SPACE: &str = r"\t\n\x0B\f\r \xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const JS_WORD: &str = "0-9A-Za-z_";

/// The Rust pattern for `pattern` with JavaScript `flags`.
pub fn translate(pattern: &str, flags: &str) -> Result<String, String> {
    let mut prefix = String::new();
    let mut sticky = false;
    let mut seen = String::new();
    for f in flags.chars() {
        if seen.contains(f) {
            return Err(format!("flag `{f}` is given twice (JavaScript refuses it)"));
        }
        seen.push(f);
        match f {
            'i' => prefix.push('i'),
            'm' => prefix.push('m'),
            's' => prefix.push('s'),
            // Global and indices change nothing about whether `test` matches a fresh regex.
            'g' | 'd' | 'u' => {}
            'y' => sticky = true,
            'v' => return Err("the `v` flag (set notation) cannot be reproduced".into()),
            other => return Err(format!("`{other}` is not a JavaScript regex flag")),
        }
    }
    let unicode = seen.contains('u');
    if !unicode && pattern.chars().any(|c| c > '\u{FFFF}') {
        return Err(
            "a character beyond U+FFFF without the `u` flag is two UTF-16 units to JavaScript, which Rust cannot match"
                .into(),
        );
    }
    let body = Translator { chars: pattern.chars().collect(), at: 0, dot_all: seen.contains('s'), unicode }.run()?;
    let flags = if prefix.is_empty() { String::new() } else { format!("(?{prefix})") };
    Ok(if sticky { format!(r"{flags}\A(?:{body})") } else { format!("{flags}{body}") })
}

struct Translator {
    chars: Vec<char>,
    at: usize,
    dot_all: bool,
    unicode: bool,
}

impl Translator {
    fn run(mut self) -> Result<String, String> {
        let mut out = String::new();
        let mut class: Option<char> = None; // inside `[…]`: the last character written
        while let Some(c) = self.next() {
            match (c, class) {
                ('\\', _) => out.push_str(&self.escape(class.is_some())?),
                (']', Some(_)) => {
                    out.push(']');
                    class = None;
                    continue;
                }
                ('[', None) => {
                    let negated = self.peek(0) == Some('^');
                    match (negated, self.peek(usize::from(negated))) {
                        (true, Some(']')) => {
                            self.at += 2;
                            out.push_str("(?s:.)");
                            continue;
                        }
                        (false, Some(']')) => return Err("the empty class `[]` cannot be reproduced".into()),
                        _ => {}
                    }
                    out.push('[');
                    if negated {
                        self.at += 1;
                        out.push('^');
                    }
                    class = Some('[');
                    continue;
                }
                // Rust reads these as nested classes and set operations inside a class.
                ('[' | '&' | '~', Some(_)) => {
                    out.push('\\');
                    out.push(c);
                }
                ('-', Some('-')) => out.push_str(r"\-"),
                (_, Some(_)) => out.push(c),
                ('.', None) if self.dot_all => out.push('.'),
                ('.', None) => out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
                ('(', None) if self.peek(0) == Some('?') => out.push_str(&self.group()?),
                ('{', None) => match self.quantifier() {
                    Some(len) => {
                        out.extend(self.chars[self.at - 1..self.at + len].iter());
                        self.at += len;
                    }
                    None => out.push_str(r"\{"),
                },
                ('}', None) => out.push_str(r"\}"),
                (']', None) => out.push_str(r"\]"),
                _ => out.push(c),
            }
            if class.is_some() {
                class = Some(c);
            }
        }
        if class.is_some() {
            return Err("a class `[` is not closed".into());
        }
        Ok(out)
    }

    fn next(&mut self) -> Option<char> {
        let c = self.chars.get(self.at).copied();
        self.at += 1;
        c
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    /// The length after the `{` just read of the quantifier it starts (`{n}`, `{n,}`,
    /// `{n,m}`), if it starts one.
    fn quantifier(&self) -> Option<usize> {
        let rest: String = self.chars[self.at..].iter().take_while(|c| **c != '}').collect();
        let closed = self.chars.get(self.at + rest.len()) == Some(&'}');
        let (lo, hi) = rest.split_once(',').unwrap_or((&rest, "0"));
        let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
        (closed && !lo.is_empty() && digits(lo) && digits(hi)).then_some(rest.len() + 1)
    }

    /// `(?…` after the `(`: non-capturing and named groups pass; look-around is refused.
    fn group(&mut self) -> Result<String, String> {
        let rest: String = self.chars[self.at..].iter().take(3).collect();
        match ["?=", "?!", "?<=", "?<!"].iter().find(|look| rest.starts_with(**look)) {
            Some(look) => Err(format!("look-around `({look}…)` cannot be reproduced (Rust's regex has none)")),
            None => Ok("(".into()),
        }
    }

    /// The escape after a `\`, inside a class or not.
    fn escape(&mut self, in_class: bool) -> Result<String, String> {
        let Some(c) = self.next() else { return Err("the pattern ends with a lone `\\`".into()) };
        let class = |inner: &str, negated: bool| match (in_class, negated) {
            (true, false) => inner.to_owned(),
            (_, true) => format!("[^{inner}]"),
            (false, false) => format!("[{inner}]"),
        };
        Ok(match c {
            'd' => class("0-9", false),
            'D' => class("0-9", true),
            'w' => class(JS_WORD, false),
            'W' => class(JS_WORD, true),
            's' => class(JS_SPACE, false),
            'S' => class(JS_SPACE, true),
            'b' if in_class => r"\x08".into(),
            'b' => r"(?-u:\b)".into(),
            'B' => r"(?-u:\B)".into(),
            'n' | 'r' | 't' | 'f' | 'v' => format!("\\{c}"),
            '0' if !self.peek(0).is_some_and(|d| d.is_ascii_digit()) => r"\x00".into(),
            '1'..='9' => {
                return Err(format!("the back-reference `\\{c}` cannot be reproduced (Rust's regex has none)"));
            }
            'k' if self.peek(0) == Some('<') => {
                return Err("the named back-reference `\\k<…>` cannot be reproduced (Rust's regex has none)".into());
            }
            'c' if self.peek(0).is_some_and(|l| l.is_ascii_alphabetic()) => {
                let l = self.next().unwrap_or('@');
                format!(r"\x{:02X}", (l as u32) % 32)
            }
            'x' if self.hex(2).is_some() => format!(r"\x{{{}}}", self.take_hex(2)),
            'u' if self.hex(4).is_some() => format!(r"\x{{{}}}", self.take_hex(4)),
            'u' if self.unicode && self.peek(0) == Some('{') => {
                let digits: String = self.chars[self.at + 1..].iter().take_while(|c| **c != '}').collect();
                self.at += digits.len() + 2;
                format!(r"\x{{{digits}}}")
            }
            'p' | 'P' if self.unicode && self.peek(0) == Some('{') => {
                let name: String = self.chars[self.at..].iter().take_while(|c| **c != '}').collect();
                self.at += name.len() + 1;
                format!("\\{c}{name}}}")
            }
            c if c.is_ascii_alphanumeric() && self.unicode => {
                return Err(format!("`\\{c}` is not an escape JavaScript allows with the `u` flag"));
            }
            // JavaScript without `u` reads an unknown escape as the character itself.
            c => regex_syntax_escape(c),
        })
    }

    fn hex(&self, n: usize) -> Option<()> {
        (0..n).all(|i| self.peek(i).is_some_and(|h| h.is_ascii_hexdigit())).then_some(())
    }

    fn take_hex(&mut self, n: usize) -> String {
        let digits: String = self.chars[self.at..self.at + n].iter().collect();
        self.at += n;
        digits
    }
}

/// `c` as a literal in a Rust pattern.
fn regex_syntax_escape(c: char) -> String {
    regex::escape(&c.to_string())
}

#[cfg(test)]
mod tests {
    use super::translate;

    fn matches(pattern: &str, flags: &str, text: &str) -> bool {
        let rust = translate(pattern, flags).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        regex::Regex::new(&rust).unwrap_or_else(|e| panic!("{pattern} → {rust}: {e}")).is_match(text)
    }

    /// Each row was checked in Node (`new RegExp(pattern, flags).test(text)`).
    #[test]
    fn classes_anchors_and_flags_match_as_javascript_matches_them() {
        let rows: &[(&str, &str, &str, bool)] = &[
            (r"^\w+$", "", "café", false),
            (r"^\w+$", "", "cafe_1", true),
            (r"\d", "", "٣", false),
            (r"\bé", "", "café", true),
            (r"^\bé", "", "é", false),
            (r"\bé\b", "", "x é y", false),
            (r"caf\b", "", "café", true),
            (r"a\sb", "", "a\u{FEFF}b", true),
            (r"a\sb", "", "a\u{85}b", false),
            ("a.b", "", "a\rb", false),
            ("a.b", "s", "a\nb", true),
            ("^Dear", "", "\nDear User", false),
            ("^Dear", "m", "\nDear User", true),
            ("dear", "i", "DEAR", true),
            ("b", "y", "ab", false),
            ("a", "gy", "ab", true),
            ("a{", "", "a{", true),
            ("x{2}", "", "xx", true),
            (r"[\w-]+@", "", "a-b@", true),
            (r"[^]", "", "\n", true),
            (r"\/path", "", "/path", true),
            (r"\u00e9", "", "é", true),
            (r"\q", "", "q", true),
            ("[a[]", "", "[", true),
            (r"\p{L}", "u", "é", true),
        ];
        for (pattern, flags, text, expected) in rows {
            assert_eq!(matches(pattern, flags, text), *expected, "/{pattern}/{flags} on {text:?}");
        }
    }

    #[test]
    fn what_rust_cannot_match_is_refused() {
        for (pattern, flags) in [
            (r"(a)\1", ""),
            ("a(?=b)", ""),
            ("(?<!a)b", ""),
            ("a", "v"),
            ("a", "ii"),
            ("a", "x"),
            ("[]", ""),
            ("😀", ""),
        ] {
            assert!(translate(pattern, flags).is_err(), "/{pattern}/{flags}");
        }
    }
}
