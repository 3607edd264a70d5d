//! Short one-line excerpts of long texts, for reasons and reports.

/// Shortens `text` to at most `max` characters for a one-line reason.
pub fn excerpt(text: &str, max: usize) -> String {
    let one_line = visible_controls(&text.trim().replace(['\n', '\r'], " "));
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// `text` with every control character but newline and tab written out (`\u{1b}`), as are
/// the two non-characters XML forbids: an agent's raw bytes (a terminal escape, NUL) never
/// reach a terminal, Markdown or XML, where they are invalid or act.
pub fn visible_controls(text: &str) -> String {
    let hidden = |c: char| (c.is_control() && c != '\n' && c != '\t') || c == '\u{fffe}' || c == '\u{ffff}';
    if !text.contains(hidden) {
        return text.to_owned();
    }
    text.chars().map(|c| if hidden(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(
            visible_controls("a\u{1b}[31m\0b\r\n\tc\u{85}\u{ffff}"),
            "a\\u{1b}[31m\\u{0}b\\u{d}\n\tc\\u{85}\\u{ffff}"
        );
        assert_eq!(excerpt("x\u{7}y", 10), "x\\u{7}y");
    }
}
