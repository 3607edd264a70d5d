//! YAML as people write it: anchors, aliases and merge keys, flow style, document markers,
//! and alias bombs. Every error points at the line where the offending value is written.

use crate::common::{ECHO_AGENT, Test};

/// Runs `check` on `yaml` as `evalgate.yaml` and returns its stderr (exit 2 expected).
fn check_fails(yaml: &str) -> String {
    let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", yaml).args(&["check"]).run();
    run.expect_code(2);
    run.stderr
}

#[test]
fn an_error_in_an_aliased_grader_list_points_at_where_it_is_written() {
    let stderr = check_fails(
        r#"evalgate: 1
suite: t
agents:
  bot: {command: [./agent.sh, "{prompt}"]}
tasks:
  - id: a
    prompt: x
    grade: &checks
      - {type: contains, value: x}
      - {type: regex, pattern: "("}
  - id: b
    prompt: y
    grade: *checks
"#,
    );
    assert_eq!(
        stderr,
        "error: evalgate.yaml:10:32: tasks[0].grade[1].pattern: invalid regular expression: regex parse error:\n    (\n    ^\nerror: unclosed group\n   |\n10 |       - {type: regex, pattern: \"(\"}\n   |                                ^\n\nerror: evalgate.yaml:10:32: tasks[1].grade[1].pattern: invalid regular expression: regex parse error:\n    (\n    ^\nerror: unclosed group\n   |\n10 |       - {type: regex, pattern: \"(\"}\n   |                                ^\n\n2 errors in the suite; nothing ran\n"
    );
}

#[test]
fn an_error_in_a_merged_mapping_points_at_where_it_is_written() {
    let stderr = check_fails(
        r#"evalgate: 1
suite: t
agents:
  bot: {command: [./agent.sh, "{prompt}"]}
tasks:
  - &task
    id: a
    prompt: x
    timeout: soon
    grade: [{type: contains, value: x}]
  - <<: *task
    id: b
    grade: [{type: contains, valeu: x}]
"#,
    );
    assert_eq!(
        stderr,
        "error: evalgate.yaml:9:14: tasks[0].timeout: invalid duration `soon`: expected e.g. 30s, 500ms or 2m\n  |\n9 |     timeout: soon\n  |              ^\n\nerror: evalgate.yaml:9:14: tasks[1].timeout: invalid duration `soon`: expected e.g. 30s, 500ms or 2m\n  |\n9 |     timeout: soon\n  |              ^\n\nerror: evalgate.yaml:13:30: tasks[1].grade[0].valeu: unknown key `valeu`\n   |\n13 |     grade: [{type: contains, valeu: x}]\n   |                              ^\n  help: did you mean `value`?\n\n3 errors in the suite; nothing ran\n"
    );
}

#[test]
fn errors_after_flow_mappings_and_a_document_marker_keep_their_line_and_column() {
    let stderr = check_fails(
        r#"%YAML 1.2
---
evalgate: 1
suite: t
agents: {bot: {command: [./agent.sh, "{prompt}"]},
  other: {command: [./agent.sh]}}
tasks:
  - {id: a, prompt: p,
     grade: [{type: contains, value: x}]}
  - id: b
    prompt: p
    grade: [{type: contains, valeu: x}]
...
"#,
    );
    assert_eq!(
        stderr,
        "error: evalgate.yaml:12:30: tasks[1].grade[0].valeu: unknown key `valeu`\n   |\n12 |     grade: [{type: contains, valeu: x}]\n   |                              ^\n  help: did you mean `value`?\n\n1 error in the suite; nothing ran\n"
    );
}

#[test]
fn a_second_document_is_refused_where_it_starts() {
    let stderr = check_fails("evalgate: 1\nsuite: t\ntasks: []\n---\nevalgate: 1\n");
    assert_eq!(
        stderr,
        "error: evalgate.yaml:4:1: invalid YAML: a second YAML document: a suite file holds one\n  |\n4 | ---\n  | ^\n\n1 error in the suite; nothing ran\n"
    );
}

#[test]
fn an_alias_bomb_is_refused_at_once_with_a_located_error() {
    let mut yaml =
        String::from("evalgate: 1\nsuite: t\ntasks: []\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        yaml.push_str(&format!("x{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let started = std::time::Instant::now();
    let stderr = check_fails(&yaml);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(
        stderr,
        "error: evalgate.yaml:9:15: invalid YAML: refused: aliases expand this file past 250000 copied nodes; is it a \"YAML bomb\"?\n  |\n9 | x5: &a5 [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]\n  |               ^\n\n1 error in the suite; nothing ran\n"
    );
}
