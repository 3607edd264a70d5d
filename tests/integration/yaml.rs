//! YAML as people write it: anchors, aliases and merge keys, flow style, document markers,
//! and alias bombs. Every error points at the line where the offending value is written.

use crate::common::{ECHO_AGENT, Run, Test, unindent};

/// Runs `check` on the suite `yaml`, written as an indented block; it must fail (exit 2).
#[track_caller]
fn check(yaml: &str) -> Run {
    let run = Test::new().write("agent.sh", ECHO_AGENT).suite(yaml).args(&["check"]).run();
    run.expect_code(2);
    run
}

/// Runs `check` on `yaml` as `evalgate.yaml` and returns its stderr (exit 2 expected).
fn check_fails(yaml: &str) -> String {
    check(yaml).take_stderr()
}

#[test]
fn an_error_in_an_aliased_grader_list_points_at_where_it_is_written() {
    check(
        r#"
        evalgate: 1
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
    )
    .expect_stderr(
        r#"
            error: evalgate.yaml:10:32: tasks[0].grade[1].pattern: invalid regular expression: regex parse error:
                (
                ^
            error: unclosed group
               |
            10 |       - {type: regex, pattern: "("}
               |                                ^

            error: evalgate.yaml:10:32: tasks[1].grade[1].pattern: invalid regular expression: regex parse error:
                (
                ^
            error: unclosed group
               |
            10 |       - {type: regex, pattern: "("}
               |                                ^

            2 errors in the suite; nothing ran
            "#,
    );
}

#[test]
fn an_error_in_a_merged_mapping_points_at_where_it_is_written() {
    check(
        r#"
        evalgate: 1
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
    )
    .expect_stderr(
        r#"
            error: evalgate.yaml:9:14: tasks[0].timeout: invalid duration `soon`: expected e.g. 30s, 500ms, 2m or none
              |
            9 |     timeout: soon
              |              ^

            error: evalgate.yaml:9:14: tasks[1].timeout: invalid duration `soon`: expected e.g. 30s, 500ms, 2m or none
              |
            9 |     timeout: soon
              |              ^

            error: evalgate.yaml:13:30: tasks[1].grade[0].valeu: unknown key `valeu`
               |
            13 |     grade: [{type: contains, valeu: x}]
               |                              ^
              help: did you mean `value`?

            3 errors in the suite; nothing ran
            "#,
    );
}

#[test]
fn errors_after_flow_mappings_and_a_document_marker_keep_their_line_and_column() {
    check(
        r#"
        %YAML 1.2
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
    )
    .expect_stderr(
        r#"
            error: evalgate.yaml:12:30: tasks[1].grade[0].valeu: unknown key `valeu`
               |
            12 |     grade: [{type: contains, valeu: x}]
               |                              ^
              help: did you mean `value`?

            error: evalgate.yaml:8:5: tasks[0]: no agent for this task: set `agent` here or `defaults.agent`
              |
            8 |   - {id: a, prompt: p,
              |     ^

            error: evalgate.yaml:10:5: tasks[1]: no agent for this task: set `agent` here or `defaults.agent`
               |
            10 |   - id: b
               |     ^

            3 errors in the suite; nothing ran
            "#,
    );
}

#[test]
fn a_second_document_is_refused_where_it_starts() {
    let yaml = "
        evalgate: 1
        suite: t
        tasks: []
        ---
        evalgate: 1
        ";
    check(yaml).expect_stderr(
        "
        error: evalgate.yaml:4:1: invalid YAML: a second YAML document: a suite file holds one
          |
        4 | ---
          | ^

        1 error in the suite; nothing ran
        ",
    );
}

#[test]
fn an_alias_bomb_is_refused_at_once_with_a_located_error() {
    let mut yaml = unindent(
        "
        evalgate: 1
        suite: t
        tasks: []
        x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]
        ",
    );
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        yaml.push_str(&format!("x{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let started = std::time::Instant::now();
    let run = check(&yaml);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    run.expect_stderr(
        r#"
        error: evalgate.yaml:9:15: invalid YAML: refused: aliases expand this file past 250000 copied nodes; is it a "YAML bomb"?
          |
        9 | x5: &a5 [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]
          |               ^

        1 error in the suite; nothing ran
        "#,
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
    run.take_stderr()
}

/// A suite's first five lines: the agent `bot`, every task's.
const HEAD: &str = r#"
    evalgate: 1
    suite: t
    agents:
      bot: {command: [./agent.sh, "{prompt}"]}
    defaults: {agent: bot}
    "#;

/// One valid task, under `tasks:`.
const TASKS: &str = "
    tasks:
      - id: a
        prompt: x
        grade: [{type: contains, value: x}]
    ";

/// [`HEAD`] then `rest`, each written as an indented block.
fn with_head(rest: &str) -> String {
    unindent(HEAD) + &unindent(rest)
}

fn first_line(stderr: &str) -> &str {
    stderr.lines().next().unwrap_or_default()
}

#[test]
fn deep_nesting_flow_or_block_is_refused_at_once_naming_the_limit() {
    let n = 5000;
    let nested = |x: String| unindent(HEAD) + &x + &unindent(TASKS);
    let flow_map = nested(format!("x: {}1{}\n", "{a: ".repeat(n), "}".repeat(n)));
    let flow_seq = nested(format!("x: {}1{}\n", "[".repeat(n), "]".repeat(n)));
    let block: String = (1..=1000).map(|i| format!("{}a:\n", "  ".repeat(i))).collect();
    let block = nested(format!("x:\n{block}"));
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
    let mut non_utf8 = with_head(
        "
        tasks:
          - id: a
            prompt: x
            grade: [{type: contains, value: x}]
          - id: b
            prompt: é",
    )
    .into_bytes();
    non_utf8.extend(b"\xFF\n");
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(with_head(TASKS).encode_utf16().flat_map(u16::to_le_bytes));
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
    let tasks = r#"
        tasks:
          - id: a
            prompt: "say<tab>hi"
            grade: [{type: contains, value: "say<tab>hi"}]
        "#;
    let yaml = format!("\u{feff}{}", with_head(tasks)).replace("<tab>", "\t").replace('\n', "\r\n");
    let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    assert_eq!(run.task("a")["status"], "passed", "{}", run.stderr);
}

#[test]
fn an_unknown_tag_is_a_located_error_not_dropped() {
    for (value, at, tag) in [("!include /etc/passwd", "8:22", "!include"), ("!!binary aGk=", "8:22", "!!binary")] {
        let tasks = "
            tasks:
              - id: a
                prompt: <value>
                grade: [{type: contains, value: x}]
            ";
        let stderr = check_fails(&with_head(tasks).replace("<value>", value));
        assert!(
            stderr.starts_with(&format!("error: evalgate.yaml:{at}: invalid YAML: unsupported YAML tag `{tag}`")),
            "{stderr}"
        );
    }
    // `!!str` is what it always was: the value as a string.
    let tasks = r#"
        tasks:
          - id: a
            prompt: !!str 5
            grade: [{type: contains, value: "5"}]
        "#;
    let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &with_head(tasks)).args(&["run"]).run();
    run.expect_code(0);
}

#[test]
fn a_line_past_65535_columns_and_a_minified_json_suite_are_shown_as_a_window() {
    let tasks = "
        tasks:
          - id: a
            prompt: <long> {vars.nope}
            grade: [{type: contains, value: x}]
        ";
    let long = with_head(tasks).replace("<long>", &"x".repeat(70_000));
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
    let stderr = refused_at_once(with_head(&format!("tasks:\n{tasks}")).as_bytes());
    assert_eq!(
        first_line(&stderr),
        "error: evalgate.yaml:7:3: tasks: 10001 tasks: more than 10000, the limit for a suite"
    );
    let huge = with_head(TASKS) + "# " + &"x".repeat(9 << 20) + "\n";
    let stderr = refused_at_once(huge.as_bytes());
    assert_eq!(
        first_line(&stderr),
        "error: cannot read suite file evalgate.yaml: larger than 8 MiB, the most evalgate reads of a suite or another text input"
    );
    let dups = "  - {id: a, prompt: x, grade: [{type: contains, value: x}]}\n".repeat(3000);
    let stderr = refused_at_once(with_head(&format!("tasks:\n{dups}")).as_bytes());
    assert!(stderr.ends_with("2999 errors in the suite; nothing ran\n"), "{}", &stderr[stderr.len() - 200..]);
}

#[test]
fn every_value_of_the_wrong_type_is_reported_at_once() {
    let tasks = "
        tasks:
          - id: a
            prompt: x
            repeat: abc
            timeout: [1]
            threshold: x
            tags: 5
            level: {a: 1}
            grade: [{type: contains, value: x, weight: z}]
        ";
    let stderr = check_fails(&with_head(tasks));
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
    let stderr = check_fails(&(unindent(HEAD) + "~: 1\n" + &unindent(TASKS)));
    assert_eq!(first_line(&stderr), "error: evalgate.yaml:6:1: ~: unknown key `~`");
}
