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
        "error: evalgate.yaml:9:14: tasks[0].timeout: invalid duration `soon`: expected e.g. 30s, 500ms, 2m or none\n  |\n9 |     timeout: soon\n  |              ^\n\nerror: evalgate.yaml:9:14: tasks[1].timeout: invalid duration `soon`: expected e.g. 30s, 500ms, 2m or none\n  |\n9 |     timeout: soon\n  |              ^\n\nerror: evalgate.yaml:13:30: tasks[1].grade[0].valeu: unknown key `valeu`\n   |\n13 |     grade: [{type: contains, valeu: x}]\n   |                              ^\n  help: did you mean `value`?\n\n3 errors in the suite; nothing ran\n"
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
        "error: evalgate.yaml:12:30: tasks[1].grade[0].valeu: unknown key `valeu`\n   |\n12 |     grade: [{type: contains, valeu: x}]\n   |                              ^\n  help: did you mean `value`?\n\nerror: evalgate.yaml:8:5: tasks[0]: no agent for this task: set `agent` here or `defaults.agent`\n  |\n8 |   - {id: a, prompt: p,\n  |     ^\n\nerror: evalgate.yaml:10:5: tasks[1]: no agent for this task: set `agent` here or `defaults.agent`\n   |\n10 |   - id: b\n   |     ^\n\n3 errors in the suite; nothing ran\n"
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

/// Runs `check` on `bytes` as `evalgate.yaml`; it must fail with exit 2 at once. The bound
/// here is a hang guard (these inputs took 40 s and more before the limits), loose enough
/// for a loaded CI machine; the sub-second figure is the release build's, not a test's.
/// Returns stderr.
fn refused_at_once(bytes: &[u8]) -> String {
    let test = Test::new().write("agent.sh", ECHO_AGENT);
    std::fs::write(test.path().join("evalgate.yaml"), bytes).unwrap();
    let started = std::time::Instant::now();
    let run = test.args(&["check"]).run();
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    run.expect_code(2);
    run.stderr
}

const HEAD: &str =
    "evalgate: 1\nsuite: t\nagents:\n  bot: {command: [./agent.sh, \"{prompt}\"]}\ndefaults: {agent: bot}\n";
const TASKS: &str = "tasks:\n  - id: a\n    prompt: x\n    grade: [{type: contains, value: x}]\n";

fn first_line(stderr: &str) -> &str {
    stderr.lines().next().unwrap_or_default()
}

#[test]
fn deep_nesting_flow_or_block_is_refused_at_once_naming_the_limit() {
    let n = 5000;
    let flow_map = format!("{HEAD}x: {}1{}\n{TASKS}", "{a: ".repeat(n), "}".repeat(n));
    let flow_seq = format!("{HEAD}x: {}1{}\n{TASKS}", "[".repeat(n), "]".repeat(n));
    let block: String = (1..=1000).map(|i| format!("{}a:\n", "  ".repeat(i))).collect();
    let block = format!("{HEAD}x:\n{block}{TASKS}");
    let json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for (yaml, at) in [(flow_map, "6:513"), (flow_seq, "6:132"), (block, "134:257"), (json, "1:129")] {
        let stderr = refused_at_once(yaml.as_bytes());
        assert_eq!(
            first_line(&stderr),
            format!("error: evalgate.yaml:{at}: invalid YAML: nested more than 128 levels deep (the limit)")
        );
    }
}

#[test]
fn text_that_is_not_utf8_is_refused_where_it_stops_being_utf8() {
    let mut non_utf8 = format!("{HEAD}{TASKS}  - id: b\n    prompt: é").into_bytes();
    non_utf8.extend(b"\xFF\n");
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(format!("{HEAD}{TASKS}").encode_utf16().flat_map(u16::to_le_bytes));
    let binary = b"\x7FELF\x02\x01\x01\0\0\0".to_vec();
    for (bytes, expected) in [
        (non_utf8, "error: evalgate.yaml:11:14: byte 0xFF is not UTF-8; save the file as UTF-8"),
        (
            utf16,
            "error: evalgate.yaml:1:1: the file is UTF-16 or UTF-32 (it starts with that byte-order mark); save it as UTF-8",
        ),
        (binary, "error: evalgate.yaml:1:8: a NUL byte: this is a binary file (or UTF-16), not UTF-8 text"),
    ] {
        assert_eq!(first_line(&refused_at_once(&bytes)), expected);
    }
}

#[test]
fn a_bom_crlf_line_endings_and_tabs_in_strings_load() {
    let yaml = format!("\u{feff}{HEAD}tasks:\n  - id: a\n    prompt: \"say\thi\"\n    grade: [{{type: contains, value: \"say\thi\"}}]\n")
        .replace('\n', "\r\n");
    let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    assert_eq!(run.task("a")["status"], "passed", "{}", run.stderr);
}

#[test]
fn an_unknown_tag_is_a_located_error_not_dropped() {
    for (value, at, tag) in [("!include /etc/passwd", "8:22", "!include"), ("!!binary aGk=", "8:22", "!!binary")] {
        let yaml = format!("{HEAD}tasks:\n  - id: a\n    prompt: {value}\n    grade: [{{type: contains, value: x}}]\n");
        let stderr = check_fails(&yaml);
        assert!(
            stderr.starts_with(&format!("error: evalgate.yaml:{at}: invalid YAML: unsupported YAML tag `{tag}`")),
            "{stderr}"
        );
    }
    // `!!str` is what it always was: the value as a string.
    let yaml = format!("{HEAD}tasks:\n  - id: a\n    prompt: !!str 5\n    grade: [{{type: contains, value: \"5\"}}]\n");
    let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
}

#[test]
fn a_line_past_65535_columns_and_a_minified_json_suite_are_shown_as_a_window() {
    let long = format!(
        "{HEAD}tasks:\n  - id: a\n    prompt: {} {{vars.nope}}\n    grade: [{{type: contains, value: x}}]\n",
        "x".repeat(70_000)
    );
    let stderr = refused_at_once(long.as_bytes());
    let window = format!("8 | …{} {{vars.nope}}", "x".repeat(88));
    assert!(
        stderr.starts_with("error: evalgate.yaml:8:70014: tasks[0].prompt: unknown variable `{vars.nope}`"),
        "{stderr}"
    );
    assert!(stderr.contains(&window), "{stderr}");
    assert!(stderr.contains(&format!("\n  | {}^\n", " ".repeat(90))), "{stderr}");
    let minified = serde_json::json!({
        "evalgate": 1, "suite": "t", "agents": {"bot": {"command": ["./agent.sh"]}}, "defaults": {"agent": "bot"},
        "tasks": [{"id": "a", "prompt": "x".repeat(70_000), "grade": [{"type": "contains", "value": "x"}], "nope": 1}],
    });
    let stderr = refused_at_once(minified.to_string().as_bytes());
    assert!(stderr.starts_with("error: evalgate.yaml:1:70171: tasks[0].nope: unknown key `nope`"), "{stderr}");
}

#[test]
fn too_many_tasks_a_huge_file_and_thousands_of_duplicate_ids_are_refused_at_once() {
    // Counted before any task is read, so the tasks themselves need not be valid.
    let tasks = "  - {}\n".repeat(10_001);
    let stderr = refused_at_once(format!("{HEAD}tasks:\n{tasks}").as_bytes());
    assert_eq!(
        first_line(&stderr),
        "error: evalgate.yaml:7:3: tasks: 10001 tasks: more than 10000, the limit for a suite"
    );
    let huge = format!("{HEAD}{TASKS}# {}\n", "x".repeat(9 << 20));
    let stderr = refused_at_once(huge.as_bytes());
    assert_eq!(
        first_line(&stderr),
        "error: evalgate.yaml:1:1: the file is larger than 8 MiB, the limit for a file evalgate reads"
    );
    let dups = "  - {id: a, prompt: x, grade: [{type: contains, value: x}]}\n".repeat(3000);
    let stderr = refused_at_once(format!("{HEAD}tasks:\n{dups}").as_bytes());
    assert!(stderr.ends_with("2999 errors in the suite; nothing ran\n"), "{}", &stderr[stderr.len() - 200..]);
}

#[test]
fn every_value_of_the_wrong_type_is_reported_at_once() {
    let yaml = format!(
        "{HEAD}tasks:\n  - id: a\n    prompt: x\n    repeat: abc\n    timeout: [1]\n    threshold: x\n    tags: 5\n    level: {{a: 1}}\n    grade: [{{type: contains, value: x, weight: z}}]\n"
    );
    let stderr = check_fails(&yaml);
    let paths: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error: evalgate.yaml:"))
        .map(|l| l.split(": ").nth(1).unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "tasks[0].repeat",
            "tasks[0].timeout",
            "tasks[0].threshold",
            "tasks[0].tags",
            "tasks[0].level",
            "tasks[0].grade[0].weight"
        ]
    );
    assert!(stderr.ends_with("6 errors in the suite; nothing ran\n"), "{stderr}");
}

#[test]
fn a_null_key_is_located() {
    let stderr = check_fails(&format!("{HEAD}~: 1\n{TASKS}"));
    assert_eq!(first_line(&stderr), "error: evalgate.yaml:6:1: ~: unknown key `~`");
}
