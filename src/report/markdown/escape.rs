//! Text that is not evalgate's own, made safe for Markdown: it renders as the same text and
//! as nothing else (no link, image, heading, mention, table break or closing fence).

/// Escapes text that is not evalgate's own (ids, reasons, outputs, baseline fields) for a
/// table cell or paragraph of GitHub-flavoured Markdown: it renders as the same text and as
/// nothing else — no table break, HTML, code span, emphasis, link or image (`[`, `![`), bare
/// URL link (`https://`, `www.`), @mention or heading; one line.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // GitHub links mentions in the rendered text, whatever escaping came before.
            '@' => out.push_str("@\u{200b}"),
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '!' | '#' | '~' | '|' => {
                out.push('\\');
                out.push(c);
            }
            // A bare URL is linked in the rendered text too: `://` and `www.` are broken.
            '/' if out.ends_with(':') => out.push_str("\u{200b}/"),
            '.' if out.get(out.len().saturating_sub(3)..).is_some_and(|w| w.eq_ignore_ascii_case("www")) => {
                out.push_str("\u{200b}.");
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as a fenced code block: the fence is longer than any run of backticks in it, so
/// nothing inside can close it (CommonMark); inside, text is shown as is (no entities).
pub(crate) fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{text}\n{fence}")
}

/// Escapes text for a `<pre>` block: HTML and mentions, newlines kept. Only inside `<pre>`
/// (an HTML block that only `</pre>` ends): anywhere else a blank line in the text would end
/// the HTML block and what follows would be Markdown (`details` composes one).
pub(crate) fn escape_block(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('@', "@\u{200b}")
}

/// A folded block: `<details><summary>{title} <code>{name}</code></summary>` over `body` in
/// a `<pre>`. The name is one line (a blank line in it would end the HTML block, and the
/// rest — `## ✅ All gates passed` — would render as a heading inside the summary); the body
/// keeps its lines inside the `<pre>`. `title` is evalgate's own.
pub(crate) fn details(title: &str, name: &str, body: &str) -> String {
    let name = escape_block(name).replace(['\n', '\r'], " ");
    format!(
        "<details><summary>{title} <code>{name}</code></summary>\n\n<pre>{}</pre>\n</details>\n",
        escape_block(body)
    )
}

/// For text inside a code span (in a table cell, often): a backtick would close it and
/// cannot be escaped there, a `|` would end the cell (GFM splits cells before code spans,
/// and reads `\|` as a pipe inside them), a line break would end the row.
pub(crate) fn code(text: &str) -> String {
    text.replace('`', "'").replace('|', "\\|").replace(['\n', '\r'], " ").replace('@', "@\u{200b}")
}
