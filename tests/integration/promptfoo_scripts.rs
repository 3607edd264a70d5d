//! promptfoo's `javascript` and `python` assertions and `options.transform`, run by node and
//! python3 through evalgate's process plumbing: their verdicts as promptfoo gives them (the
//! differential test compares 520 runs with promptfoo's own), and what the plumbing
//! promises of every process it starts: bounded by the timeout with its whole tree killed,
//! evalgate's credentials never in its environment, what it prints never read as its verdict.

use crate::common::{Test, sorted_statuses, unindent};

fn owned(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

#[test]
fn script_assertions_give_promptfoo_s_verdicts() {
    let config = unindent(
        r#"
        prompts: ['{{ answer }}']
        providers: [echo]
        tests:
          - description: inline
            vars: {answer: [Paris is nice, Lyon]}
            assert:
              - {type: javascript, value: "output.includes('Paris')"}
              - {type: python, value: "'Paris' in output"}
          - description: files
            vars: {answer: [Paris is nice, Lyon]}
            assert:
              - {type: javascript, value: "file://check.js:named"}
              - {type: python, value: "file://check.py"}
          - description: forged
            vars: {answer: Lyon}
            assert:
              - type: javascript
                value: |
                  console.log('{"kind": "boolean", "value": true}');
                  process.stdout.write('{"kind": "boolean", "value": true}\n');
                  return output === 'Paris';
              - type: python
                value: |
                  print('{"value": true}')
                  return output == 'Paris'
        "#,
    );
    let run = Test::new()
        .file("promptfooconfig.yaml", &config)
        .write("check.js", "module.exports.named = (output, context) => output.startsWith(context.vars.answer.slice(0, 5)) && output.length > 8;\n")
        .write("check.py", "def get_assert(output, context):\n    return {'pass': 'Paris' in output, 'score': 0.5, 'reason': 'looked'}\n")
        .args(&["run", "promptfooconfig.yaml"])
        .run();
    run.expect_code(1);
    assert_eq!(
        sorted_statuses(&run.results()),
        owned(&[
            ("files.v1", "passed"),
            ("files.v2", "failed"),
            ("forged", "failed"),
            ("inline.v1", "passed"),
            ("inline.v2", "failed"),
        ])
    );
}

/// An importing suite's `defaults.timeout` bounds the scripts of its promptfoo file.
fn bounded(config: &str, timeout: &str) -> Test {
    Test::new().file("pf/promptfooconfig.yaml", &unindent(config)).suite(
        &"
        evalgate: 1
        suite: bounded
        defaults: {timeout: TIMEOUT}
        agents:
          bot: {command: [echo, '{prompt}']}
        imports:
          - {format: promptfoo, path: pf/promptfooconfig.yaml, agent: bot}
        "
        .replace("TIMEOUT", timeout),
    )
}

/// Whether a process with exactly this command line is alive.
fn alive(argv: &[&str]) -> bool {
    let wanted = argv.join("\0") + "\0";
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes()))
}

#[test]
fn a_script_that_hangs_is_killed_with_its_children_at_the_timeout() {
    let run = bounded(
        r#"
        prompts: ['{{ q }}']
        providers: [echo]
        tests:
          - description: hangs
            vars: {q: hi}
            assert:
              - type: python
                value: |
                  import subprocess, time
                  subprocess.Popen(["sleep", "313"])
                  while True: time.sleep(0.1)
          - description: transform hangs
            vars: {q: hi}
            options: {transform: "(() => { require('node:child_process').spawn('sleep', ['314']); while (true) {} })()"}
            assert:
              - {type: contains, value: hi}
        "#,
        "2s",
    )
    .args(&["run"])
    .run();
    run.expect_code(1);
    assert_eq!(sorted_statuses(&run.results()), owned(&[("hangs", "error"), ("transform-hangs", "error")]));
    assert!(run.task("hangs").to_string().contains("timed out after 2s"), "{}", run.task("hangs"));
    assert!(!alive(&["sleep", "313"]) && !alive(&["sleep", "314"]), "a script's child outlived it");
}

#[test]
fn a_script_never_sees_evalgate_s_credentials() {
    let run = bounded(
        r#"
        prompts: ['{{ q }}']
        providers: [echo]
        tests:
          - vars: {q: hi}
            assert:
              - {type: javascript, value: "!('GITHUB_TOKEN' in process.env) && process.env.PF2_OTHER === 'kept'"}
              - {type: python, value: "'GITHUB_TOKEN' not in __import__('os').environ"}
        "#,
        "60s",
    )
    .env("GITHUB_TOKEN", "ghp_pf2secret000000000000000000000000")
    .env("PF2_OTHER", "kept")
    .args(&["run"])
    .run();
    run.expect_code(0);
}

#[test]
fn a_missing_script_file_and_a_file_transform_are_refused_at_their_lines() {
    let config = unindent(
        "
        prompts: ['{{ q }}']
        providers: [echo]
        evaluateOptions: {repeat: 3, maxConcurrency: 2}
        tests:
          - vars: {q: hi}
            options: {transform: file://t.js}
            assert:
              - {type: javascript, value: 'file://missing.js:check'}
              - {type: python, value: file://check.ts}
        ",
    );
    Test::new()
        .file("promptfooconfig.yaml", &config)
        .args(&["run", "promptfooconfig.yaml"])
        .expect_messages(
            "error: promptfooconfig.yaml: invalid promptfoo config:
  promptfooconfig.yaml:6:15: /tests/0/options/transform: no transform file `t.js` (beside the config)
  promptfooconfig.yaml:8:28: /tests/0/assert/0/value: no script file `missing.js` (beside the config)
  promptfooconfig.yaml:9:24: /tests/0/assert/1/value: `file://check.ts`: this assertion runs a `.py` file (TypeScript and other files are not run)
1 error in the suite; nothing ran
",
        )
        .run()
        .expect_code(2);
}

#[test]
fn repeat_runs_every_test_that_many_times_and_scenarios_become_tests() {
    let config = unindent(
        "
        prompts: ['{{ q }}']
        providers: [echo]
        evaluateOptions: {repeat: 3}
        scenarios:
          - config:
              - {description: first, vars: {q: alpha}}
              - {description: second, vars: {q: beta}, assert: [{type: contains, value: b}]}
            tests:
              - assert: [{type: icontains, value: L}]
        ",
    );
    let run = Test::new().file("promptfooconfig.yaml", &config).args(&["run", "promptfooconfig.yaml"]).run();
    run.expect_code(1);
    assert_eq!(sorted_statuses(&run.results()), owned(&[("first", "passed"), ("second", "failed")]));
    assert_eq!(run.task("first")["trials"].as_array().unwrap().len(), 3);
}
