//! Short excerpts of long texts, for reasons and reports. Every cut is made on redacted
//! text (`crate::redact`): a secret that a cut would split is replaced whole first, so no
//! piece of it survives at the edge.

use crate::redact;

/// Shortens `text` to at most `max` characters for a one-line reason.
pub fn excerpt(text: &str, max: usize) -> String {
    marked(&visible_controls(redact::text(text).trim().replace(['\n', '\r'], " ")), max)
}

/// Like [`excerpt`], but a text too long for `max` keeps its last non-empty line after
/// the cut (`Traceback (most recent call last): … ValueError: bad input`): where a crash
/// says what went wrong.
pub fn excerpt_with_last_line(text: &str, max: usize) -> String {
    let whole = excerpt(text, max);
    if !whole.ends_with('…') {
        return whole;
    }
    let Some(last) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) else { return whole };
    let last = excerpt(last, max / 2);
    let head = excerpt(text, max.saturating_sub(last.chars().count()).max(max / 4));
    format!("{head} {last}")
}

/// The first `max` characters of `text`, redacted, with `…` when it was cut.
pub fn cut(text: &str, max: usize) -> String {
    marked(&redact::text(text), max)
}

/// The first `max` characters of `text`, redacted, without a mark (the caller says it was cut).
pub fn first(text: &str, max: usize) -> String {
    let text = redact::text(text);
    head(&text, max).unwrap_or(&text).to_owned()
}

/// The last `max` characters of `text`, redacted, with `…` before them when it was cut
/// (an erroring process's stderr, where the error usually is).
pub fn last(text: &str, max: usize) -> String {
    let text = redact::text(text);
    let count = text.chars().count();
    match text.char_indices().nth(count.saturating_sub(max)) {
        Some((start, _)) if start > 0 => format!("…{}", &text[start..]),
        _ => text.into_owned(),
    }
}

/// The first `max` characters of `text`, when it has more.
fn head(text: &str, max: usize) -> Option<&str> {
    text.char_indices().nth(max).map(|(end, _)| &text[..end])
}

fn marked(text: &str, max: usize) -> String {
    head(text, max).map_or_else(|| text.to_owned(), |head| format!("{head}…"))
}

/// `text` with every control character but newline and tab written out (`\u{1b}`), as are
/// the two non-characters XML forbids: an agent's raw bytes (a terminal escape, NUL) never
/// reach a terminal, Markdown or XML, where they are invalid or act.
pub fn visible_controls(text: String) -> String {
    let hidden = |c: char| (c.is_control() && c != '\n' && c != '\t') || c == '\u{fffe}' || c == '\u{ffff}';
    // Bytes first (a report is megabytes): only these can start a hidden character in
    // UTF-8, C0 controls and DEL, C1 controls (0xC2 0x80..0x9F), U+FFFE and U+FFFF (0xEF …).
    let may_hide = |b: &u8| (*b < 0x20 && *b != b'\n' && *b != b'\t') || matches!(*b, 0x7f | 0xc2 | 0xef);
    if !text.as_bytes().iter().any(may_hide) || !text.contains(hidden) {
        return text;
    }
    text.chars().map(|c| if hidden(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(
            visible_controls("a\u{1b}[31m\0b\r\n\tc\u{85}\u{ffff}".into()),
            "a\\u{1b}[31m\\u{0}b\\u{d}\n\tc\\u{85}\\u{ffff}"
        );
        // Each alone, past the byte check; other text with the same first bytes is kept.
        for (alone, shown) in [("\u{85}", "\\u{85}"), ("\u{7f}", "\\u{7f}"), ("\u{fffe}", "\\u{fffe}")] {
            assert_eq!(visible_controls(format!("é{alone}©")), format!("é{shown}©"));
        }
        assert_eq!(visible_controls("é © \u{f000}".into()), "é © \u{f000}");
        assert_eq!(excerpt("x\u{7}y", 10), "x\\u{7}y");
    }

    #[test]
    fn a_long_text_keeps_its_last_line() {
        let traceback = format!(
            "Traceback (most recent call last):\n{}ValueError: bad input\n",
            "  File \"g.py\", line 3\n".repeat(20)
        );
        let e = excerpt_with_last_line(&traceback, 120);
        assert!(e.starts_with("Traceback (most recent call last):"), "{e}");
        assert!(e.ends_with("… ValueError: bad input"), "{e}");
        assert!(e.chars().count() <= 122, "{e}");
        assert_eq!(excerpt_with_last_line("short\nlast", 120), "short last");
    }
}
