//! Grading MCP tool results without ambiguity: a tool error asserted directly
//! (`call.expect.is_error`, `json` on `isError`), every grader saying when the tool returned
//! an error, and `json`'s `of:` choosing the whole result, `structuredContent` or the text
//! (parsed as JSON). Against the Python SDK fixture server and server-filesystem.

use crate::common::Test;
use crate::mcp::{bin, python};

fn run(tasks: &str) -> crate::common::Run {
    let files = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  fx: {{command: [{}, fixture_server.py]}}\n  files: {{command: [{}, '{}']}}\ntasks:\n{tasks}",
        python(),
        bin("mcp-server-filesystem"),
        files.display()
    );
    Test::new()
        .write("fixture_server.py", include_str!("../fixtures/mcp/fixture_server.py"))
        .write("evalgate.yaml", &yaml)
        .args(&["run"])
        .run()
}

fn package_json() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/package.json").display().to_string()
}

#[test]
fn a_tool_error_can_be_asserted_directly_and_every_reason_says_so() {
    let run = run(
        "  - id: expected-error\n    level: execution\n    call: {server: fx, tool: refuse, arguments: {reason: quota}, expect: {is_error: true}}\n    grade: [{type: contains, value: 'refused: quota'}]\n  - id: is-error-path\n    level: execution\n    call: {server: fx, tool: refuse, arguments: {reason: quota}}\n    grade: [{type: json, path: isError, equals: true}, {type: json, of: result, path: 'content[0].text', matches: quota}]\n  - id: no-error-came\n    level: execution\n    call: {server: fx, tool: add, arguments: {a: 1, b: 2}, expect: {is_error: true}}\n    grade: [{type: contains, value: '3'}]\n  - id: unexpected-error\n    level: execution\n    call: {server: fx, tool: refuse, arguments: {reason: quota}}\n    grade: [{type: contains, value: 'all good'}]\n",
    );
    run.expect_code(1);
    assert_eq!(run.task("expected-error")["status"], "passed", "{}", run.task("expected-error"));
    // The newcomer's `{type: json, path: isError, equals: true}` passes on a tool error.
    assert_eq!(run.task("is-error-path")["status"], "passed", "{}", run.task("is-error-path"));
    let no_error = run.task("no-error-came");
    assert_eq!(no_error["status"], "failed");
    assert!(
        no_error["reason"]
            .as_str()
            .unwrap()
            .starts_with("expected a tool error (`call.expect.is_error: true`), but the tool returned a result: "),
        "{no_error}"
    );
    let unexpected = run.task("unexpected-error");
    assert_eq!(unexpected["status"], "failed");
    let reason = unexpected["trials"][0]["graders"][0]["reason"].as_str().unwrap();
    assert!(reason.ends_with("(the tool returned an error)"), "{reason}");
}

#[test]
fn json_of_says_which_part_of_a_result_is_graded_and_an_ambiguous_path_is_an_error() {
    let read = format!("call: {{server: files, tool: read_text_file, arguments: {{path: '{}'}}}}", package_json());
    let run = run(&format!(
        "  - id: ambiguous\n    level: execution\n    {read}\n    grade: [{{type: json, path: content, matches: x}}]\n  - id: structured\n    level: execution\n    {read}\n    grade: [{{type: json, of: structured_content, path: content, matches: server-everything}}]\n  - id: whole-result\n    level: execution\n    {read}\n    grade: [{{type: json, of: result, path: 'content[0].text', matches: server-everything}}, {{type: json, of: result, path: isError, exists: false}}]\n  - id: text-as-json\n    level: execution\n    call: {{server: fx, tool: protocol}}\n    grade: [{{type: json, of: text, path: version, matches: '^20'}}]\n  - id: text-not-json\n    level: execution\n    call: {{server: fx, tool: add, arguments: {{a: 1, b: 2}}}}\n    grade: [{{type: json, of: text, equals: 3}}]\n"
    ));
    let ambiguous = run.task("ambiguous");
    assert_eq!(ambiguous["status"], "error", "{ambiguous}");
    assert!(
        ambiguous["reason"].as_str().unwrap().contains("`path: content` is ambiguous: the output (the tool's structuredContent) has a `content` key too; say `of: result`"),
        "{ambiguous}"
    );
    for id in ["structured", "whole-result", "text-as-json", "text-not-json"] {
        assert_eq!(run.task(id)["status"], "passed", "{}", run.task(id));
    }
}
