//! `EVALGATE_REPORT_URL`: where the HTML report can be opened. The action sets it to the URL
//! of the uploaded `report.html` artifact; the step summary and the PR comment then link to
//! it (docs/reports.md).

pub const VAR: &str = "EVALGATE_REPORT_URL";

/// The Markdown line linking to the report, when the variable holds a plain http(s) URL
/// (anything else — a `javascript:` URL, spaces, brackets that would end the link — is
/// ignored rather than pasted into Markdown).
pub fn line() -> Option<String> {
    markdown_line(&std::env::var(VAR).ok()?)
}

fn markdown_line(url: &str) -> Option<String> {
    let url = url.trim();
    let scheme = url.starts_with("https://") || url.starts_with("http://");
    let plain = !url.contains(|c: char| c.is_whitespace() || c.is_control() || "()<>[]\"'`".contains(c));
    (scheme && plain).then(|| format!("📊 [Open the HTML report]({url}): traces, diffs and charts of this run"))
}

#[cfg(test)]
mod tests {
    use super::markdown_line;

    #[test]
    fn only_plain_http_urls_become_a_link() {
        assert_eq!(
            markdown_line(" https://github.com/o/r/actions/runs/1/artifacts/2\n").as_deref(),
            Some(
                "📊 [Open the HTML report](https://github.com/o/r/actions/runs/1/artifacts/2): traces, diffs and charts of this run"
            )
        );
        for bad in ["", "javascript:alert(1)", "https://x/a) [y](z", "https://x/<b>", "file:///etc/passwd"] {
            assert_eq!(markdown_line(bad), None, "{bad}");
        }
    }
}
