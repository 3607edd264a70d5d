//! Grading MCP tool results without ambiguity: a tool error asserted directly
//! (`call.expect.is_error`, `json` on `isError`), every grader saying when the tool returned
//! an error, and `json`'s `of:` choosing the whole result, `structuredContent` or the text
//! (parsed as JSON). Against the Python SDK fixture server and server-filesystem.

use crate::common::{Run, Test, indent, unindent};
use crate::mcp::mcp_suite;

/// Runs `tasks` (a block, which may name the fixtures as `mcp_suite` does) against the fixture
/// server `fx` and server-filesystem `files`.
#[track_caller]
fn run(tasks: &str) -> Run {
    let header = "
        evalgate: 1
        suite: t
        mcp_servers:
          fx: {command: [<python>, fixture_server.py]}
          files: {command: [<filesystem>, '<fixtures>']}
        tasks:
        ";
    Test::new()
        .write("fixture_server.py", include_str!("../fixtures/mcp/fixture_server.py"))
        .write("evalgate.yaml", &mcp_suite(&(unindent(header) + &indent(tasks, 2))))
        .args(&["run"])
        .run()
}

#[test]
fn a_tool_error_can_be_asserted_directly_and_every_reason_says_so() {
    let run = run("
        - id: expected-error
          level: execution
          call: {server: fx, tool: refuse, arguments: {reason: quota}, expect: {is_error: true}}
          grade: [{type: contains, value: 'refused: quota'}]
        - id: is-error-path
          level: execution
          call: {server: fx, tool: refuse, arguments: {reason: quota}}
          grade: [{type: json, path: isError, equals: true}, {type: json, of: result, path: 'content[0].text', matches: quota}]
        - id: no-error-came
          level: execution
          call: {server: fx, tool: add, arguments: {a: 1, b: 2}, expect: {is_error: true}}
          grade: [{type: contains, value: '3'}]
        - id: unexpected-error
          level: execution
          call: {server: fx, tool: refuse, arguments: {reason: quota}}
          grade: [{type: contains, value: 'all good'}]
        ");
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
    let run = run("
        - id: ambiguous
          level: execution
          call: {server: files, tool: read_text_file, arguments: {path: '<fixtures>/package.json'}}
          grade: [{type: json, path: content, matches: x}]
        - id: structured
          level: execution
          call: {server: files, tool: read_text_file, arguments: {path: '<fixtures>/package.json'}}
          grade: [{type: json, of: structured_content, path: content, matches: server-everything}]
        - id: whole-result
          level: execution
          call: {server: files, tool: read_text_file, arguments: {path: '<fixtures>/package.json'}}
          grade: [{type: json, of: result, path: 'content[0].text', matches: server-everything}, {type: json, of: result, path: isError, exists: false}]
        - id: text-as-json
          level: execution
          call: {server: fx, tool: protocol}
          grade: [{type: json, of: text, path: version, matches: '^20'}]
        - id: text-not-json
          level: execution
          call: {server: fx, tool: add, arguments: {a: 1, b: 2}}
          grade: [{type: json, of: text, equals: 3}]
        ");
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
