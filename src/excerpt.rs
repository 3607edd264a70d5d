//! Short one-line excerpts of long texts, for reasons and reports.

/// Shortens `text` to at most `max` characters for a one-line reason.
pub fn excerpt(text: &str, max: usize) -> String {
    let one_line = text.trim().replace(['\n', '\r'], " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}
