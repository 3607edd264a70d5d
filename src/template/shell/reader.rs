//! A POSIX shell's reading of a script's text, as far as it is certain.

use super::words::{code_position, is_assignment, stdin_is_code};

/// How to give a program a value as data instead of code.
pub(super) fn as_data(name: &str) -> String {
    format!(
        "pass it as data: an argument after the code (`sh -c '… \"$1\" …' sh \"${name}\"`), or read `{name}` from \
         the environment inside the program (`os.environ`, `process.env`, a single-quoted `sh -c` script)"
    )
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
    /// The variable of a value placed in the command being read, and of one that flows
    /// into it through a pipe from an earlier command of its pipeline.
    value_here: Option<String>,
    value_piped: Option<String>,
    /// Why a value placed earlier becomes code through a pipe (`echo {x} | sh`), and its
    /// variable.
    piped_into_code: Option<(String, String)>,
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
    /// The variable of the value refused when the refusal came after it was placed (piped
    /// into `sh`); `None` for the value just asked for.
    pub value: Option<String>,
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
            Err(why) => {
                return Err(Refused { why, help: format!("write `{}` instead", self.suggestion(name)), value: None });
            }
        };
        if let Some(why) = self.code_position() {
            return Err(Refused { why: format!("would be code here: {why}"), help: as_data(name), value: None });
        }
        self.value_in_word(name);
        Ok(reference)
    }

    /// Reads `text`, shell code written as is.
    pub fn read(&mut self, text: &str) {
        for c in text.chars() {
            if self.lost.is_some() {
                return;
            }
            self.char(c);
            if let (Some(_), Some(name), None) = (self.lost, &self.value_piped, &self.piped_into_code) {
                let why = "is piped into a command evalgate cannot read with certainty".to_owned();
                self.piped_into_code = Some((why, name.clone()));
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
            Some((why, name)) => Err(Refused { why, help: as_data(&name), value: Some(name) }),
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
            (Quoted::Not, '|') if pipe => self.value_piped = None,
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
    fn value_in_word(&mut self, name: &str) {
        self.value_here = Some(name.to_owned());
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
        if let (Some(name), None) = (&self.value_piped, &self.piped_into_code) {
            let words: Vec<Option<&str>> = self.words.iter().map(|w| w.as_deref()).collect();
            self.piped_into_code = stdin_is_code(&words).map(|why| (why, name.clone()));
        }
        let here = self.value_here.take();
        self.value_piped = if pipe { here.or(self.value_piped.take()) } else { None };
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
