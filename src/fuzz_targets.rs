//! The fuzz targets' bodies, in one place: `fuzz/fuzz_targets/*.rs` (cargo fuzz) call
//! [`run`] with the fuzzer's bytes, and `cargo test` replays every file of the seed corpus
//! `fuzz/corpus/<target>/` through its target. A target panics when a property fails; an
//! error returned for bad input is fine (that is what the input is for).

use std::path::{Path, PathBuf};

use crate::report::markdown;

/// Every target, by the name of its corpus directory and its file in `fuzz/fuzz_targets/`.
pub const TARGETS: &[&str] = &[
    "suite",
    "convert_openwop",
    "convert_mcpchecker",
    "convert_mcp_evals",
    "convert_agentv",
    "template",
    "results",
    "command_reply",
    "judge_reply",
    "report_escaping",
];

/// Runs target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match name {
        "suite" => suite(data),
        "convert_openwop" => convert("openwop", &text),
        "convert_mcpchecker" => convert("mcpchecker", &text),
        "convert_mcp_evals" => convert("mcp-evals", &text),
        "convert_agentv" => convert("agentv", &text),
        "template" => template(&text),
        "results" => results(&text),
        "command_reply" => command_reply(&text),
        "judge_reply" => judge_reply(&text),
        "report_escaping" => report_escaping(&text),
        _ => panic!("no fuzz target `{name}`; the targets are {TARGETS:?}"),
    }
}

/// A directory for the files a target writes, one per thread, kept for the process.
fn scratch() -> PathBuf {
    thread_local! {
        static DIR: tempfile::TempDir = tempfile::tempdir().expect("a temp dir for fuzzing");
    }
    DIR.with(|d| d.path().to_owned())
}

/// The native loader on a file of these bytes (not text: reading it is part of the target).
fn suite(data: &[u8]) {
    let path = scratch().join("evalgate.yaml");
    std::fs::write(&path, data).expect("write the suite");
    let _ = crate::suite::load_suite(&path, &crate::suite::LoadOptions::default());
}

/// `evalgate convert --format FORMAT`: conversion, then loading the converted suite.
fn convert(format: &str, text: &str) {
    let path = scratch().join("foreign.yaml");
    let _ = crate::commands::convert::convert_text(&path, text, Some(format));
}

/// The template language: whatever parses renders, and `escape` reads back as itself.
fn template(text: &str) {
    use crate::template::{Names, Scope, Template, escape};
    let vars = std::collections::BTreeMap::from([("x".to_owned(), "1".to_owned())]);
    let names = Names { vars: Some(&vars), step_outputs: None, locals: &[], turns: None };
    if let Ok(t) = Template::parse(text, Scope::AfterAgent, names) {
        let _ = t.render(&|_| "v".into());
    }
    let names = Names { vars: Some(&vars), step_outputs: None, locals: &[], turns: None };
    let literal = Template::parse(&escape(text), Scope::AfterAgent, names)
        .unwrap_or_else(|e| panic!("escape({text:?}) does not parse: {e:?}"));
    assert_eq!(literal.render(&|_| "v".into()), text, "escape({text:?}) does not read back as itself");
}

/// The results-file reader (`report`, `compare`, `merge`, `comment`, `--baseline`).
fn results(text: &str) {
    let _ = crate::results::validate::parse(text);
}

/// A command grader's stdout, after exit 0 and after exit 1.
fn command_reply(text: &str) {
    for passed in [true, false] {
        if let Ok(g) = crate::grade::read_command_reply(text, passed, "exited with 1") {
            assert!((0.0..=1.0).contains(&g.score), "score {} from {text:?}", g.score);
        }
    }
}

/// A judge's reply, as the `record_verdict` arguments and as its text.
fn judge_reply(text: &str) {
    let criteria = [("cites the policy", 0.5), ("polite", 0.25), ("short", 0.25)];
    // Through the wire reader, which reads the arguments (a JSON string) as a judge's are read.
    let reply = serde_json::json!({"choices": [{"message": {"tool_calls": [
        {"id": "c", "function": {"name": "record_verdict", "arguments": text}}]}}]});
    let calls = crate::llm::openai::from_wire(200, &reply.to_string()).map(|r| r.tool_calls).unwrap_or_default();
    for (calls, text) in [(calls.as_slice(), ""), (&[][..], text)] {
        if let Ok(g) = crate::grade::JudgeCheck::read_rubric_reply(&criteria, calls, text) {
            assert!((0.0..=1.0).contains(&g.score), "score {} from {text:?}", g.score);
        }
    }
}

/// Text from a hostile agent in every report field it reaches: JUnit always parses as XML
/// with exactly the one test case; in Markdown, a table cell stays one cell on one line, a
/// `<pre>` block cannot be closed, and a fenced block cannot be closed early.
fn report_escaping(text: &str) {
    use crate::results::Status;
    use crate::results::testing::{results, task};

    let cell = markdown::escape(text);
    assert!(!cell.contains(['\n', '\r', '<', '>']), "a table cell breaks out: {cell:?}");
    let unescaped = |c: char| cell.match_indices(c).any(|(i, _)| !cell[..i].ends_with('\\'));
    assert!(!unescaped('|') && !unescaped('`'), "a table cell breaks out: {cell:?}");
    // Nor does it make a link, an image, emphasis, a heading, a bare-URL link or a mention.
    let markup = ['[', ']', '!', '*', '_', '#', '~'].into_iter().find(|&c| unescaped(c));
    assert_eq!(markup, None, "markup in a table cell: {cell:?}");
    assert!(!cell.contains("://") && !cell.to_lowercase().contains("www."), "a bare URL links: {cell:?}");
    assert!(cell.match_indices('@').all(|(i, _)| cell[i + 1..].starts_with('\u{200b}')), "a mention: {cell:?}");
    let pre = markdown::escape_block(text);
    assert!(!pre.contains('<'), "a <pre> block can be closed: {pre:?}");
    let block = markdown::fenced(text);
    let fence: String = block.chars().take_while(|&c| c == '`').collect();
    let inner: Vec<&str> = block.lines().skip(1).collect();
    let closes = |line: &str| {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = line.trim_start_matches(' ');
        indent <= 3 && rest.starts_with(&fence) && rest.trim_start_matches('`').trim().is_empty()
    };
    let first_close = inner.iter().position(|l| closes(l));
    assert_eq!(first_close, Some(inner.len() - 1), "a fenced block closes early: {block:?}");

    let mut t = task("t", Status::Failed);
    t.description = Some(text.to_owned());
    t.reason = Some(text.to_owned());
    t.tags = vec![text.to_owned()];
    t.trials.push(trial(text));
    let mut r = results(vec![t]);
    r.aborted = Some(text.to_owned());
    crate::gate::regate(&mut r);
    let _ = markdown::render(&r);
    let xml = crate::report::junit::render(&r);
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut cases = 0;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e))
                if e.name().as_ref() == b"testcase" =>
            {
                cases += 1;
            }
            Ok(_) => {}
            Err(e) => panic!("JUnit is not XML at {}: {e}\n{xml}", reader.buffer_position()),
        }
    }
    assert_eq!(cases, 1, "text made JUnit test cases:\n{xml}");
    // XML 1.0's `Char`: quick-xml reads what a strict reader (xmllint, Surefire's) refuses.
    let char_ok =
        |c: char| matches!(c, '\t' | '\n' | '\r' | ' '..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..);
    assert!(xml.chars().all(char_ok), "JUnit holds a character XML forbids: {xml:?}");
}

fn trial(text: &str) -> crate::results::TrialResult {
    let json = serde_json::json!({"status": "failed", "score": 0.0, "reason": text, "output": text, "stderr": text});
    serde_json::from_value(json).expect("a trial")
}

/// The seed corpus of `target`: `fuzz/corpus/<target>/*`.
pub fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a corpus entry").path())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What CI runs of the fuzzers: every target on every file of its seed corpus (the
    /// files a fuzzing run found and kept are added there, crashes as regressions).
    #[test]
    fn every_target_replays_its_seed_corpus() {
        for target in TARGETS {
            let files = corpus(target);
            assert!(!files.is_empty(), "fuzz/corpus/{target}/ is empty");
            for file in files {
                let data = std::fs::read(&file).unwrap();
                let result = std::panic::catch_unwind(|| run(target, &data));
                assert!(result.is_ok(), "{target} panicked on {}", file.display());
            }
        }
    }

    #[test]
    fn every_target_has_a_cargo_fuzz_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
        for target in TARGETS {
            let source = std::fs::read_to_string(dir.join(format!("{target}.rs"))).unwrap();
            assert!(source.contains(&format!("run(\"{target}\", data)")), "fuzz/fuzz_targets/{target}.rs");
        }
    }
}
