//! promptfoo's `file://` and `python:` script providers as command agents running the
//! assertion harness in provider mode: called as promptfoo calls them and read as promptfoo
//! reads them (the differential test compares 900 runs with promptfoo's own verdicts), and
//! what a command agent is promised: its whole process tree killed at the timeout,
//! evalgate's credentials never in its environment, what it prints never its answer, its
//! answer bounded. A script evalgate does not run is refused at its line.

use crate::common::{Test, sorted_statuses, unindent};

/// A JavaScript provider class and a Python module, beside a config using both.
fn providers(js: &str, py: &str) -> Test {
    Test::new().file("p.js", &unindent(js)).file("p.py", &unindent(py))
}

#[test]
fn script_providers_answer_as_promptfoo_reads_them() {
    let config = "
        prompts: ['{{ q }}']
        providers:
          - {id: file://p.js, label: js, config: {tone: warm}}
          - {id: 'python:p.py:named', label: py}
        tests:
          - {description: plain, vars: {q: Paris}, assert: [{type: contains, value: Paris}]}
          - {description: object, vars: {q: object}, assert: [{type: equals, value: '{\"a\":[1,\"b\"]}'}]}
          - {description: error, vars: {q: error}, assert: [{type: contains, value: Paris}]}
          - {description: nothing, vars: {q: nothing}, assert: [{type: not-contains, value: Paris}]}
          - {description: options, vars: {q: options}, assert: [{type: contains-any, value: 'e://p.js|warm,n:p.py:named|None'}]}
    ";
    let run = providers(
        "
        module.exports = class {
          constructor(options) { this.options = options; }
          async callApi(prompt) {
            if (prompt === 'object') return { output: { a: [1, 'b'] } };
            if (prompt === 'error') return { error: 'no', output: 'Paris' };
            if (prompt === 'nothing') return { output: null };
            if (prompt === 'options') return { output: `${this.options.id}|${this.options.config.tone}` };
            return { output: `js ${prompt}`, tokenUsage: { prompt: 2, completion: 3 }, cost: 0.5 };
          }
        };
        ",
        "
        def named(prompt, options, context):
            if prompt == 'object':
                return {'output': {'a': [1.0, 'b']}}
            if prompt == 'error':
                raise ValueError('no')
            if prompt == 'nothing':
                return {'error': ''}
            if prompt == 'options':
                return {'output': f\"{options['id']}|{options['config'].get('tone')}\"}
            return {'output': 'py ' + prompt}
        ",
    )
    .file("promptfooconfig.yaml", &unindent(config))
    .args(&["run", "promptfooconfig.yaml"])
    .run();
    run.expect_code(1);
    let statuses: Vec<(String, String)> = [
        ("error@js", "error"),
        ("error@py", "error"),
        ("nothing@js", "failed"),
        ("nothing@py", "failed"),
        ("object@js", "passed"),
        ("object@py", "passed"),
        ("options@js", "passed"),
        ("options@py", "passed"),
        ("plain@js", "passed"),
        ("plain@py", "passed"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(sorted_statuses(&run.results()), statuses);
    let plain = run.task("plain@js").to_string();
    assert!(plain.contains("\"cost_usd\":0.5") && plain.contains("\"input_tokens\":2"), "{plain}");
    assert!(run.task("error@py").to_string().contains("ValueError: no"), "{}", run.task("error@py"));
}

/// The config converted, with a suite timeout: the way to bound a file run on its own.
fn converted_with_timeout(test: &Test, timeout: &str) {
    let out = test.command().args(["convert", "promptfooconfig.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let suite = String::from_utf8(out.stdout).unwrap().replacen(
        "\nagents:",
        &format!("\ndefaults: {{timeout: {timeout}}}\nagents:"),
        1,
    );
    std::fs::write(test.path().join("suite.yaml"), suite).unwrap();
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
fn a_script_provider_that_hangs_is_killed_with_its_children_at_the_timeout() {
    let test = providers(
        "
        module.exports = class {
          callApi() { require('node:child_process').spawn('sleep', ['316']); while (true) {} }
        };
        ",
        "
        import subprocess, time
        def call_api(prompt, options, context):
            subprocess.Popen(['sleep', '317'])
            while True:
                time.sleep(0.1)
        ",
    )
    .file(
        "promptfooconfig.yaml",
        &unindent(
            "
            prompts: ['{{ q }}']
            providers: [{id: file://p.js, label: js}, {id: file://p.py, label: py}]
            tests: [{description: hangs, vars: {q: hi}, assert: [{type: contains, value: hi}]}]
            ",
        ),
    );
    converted_with_timeout(&test, "2s");
    let run = test.args(&["run", "suite.yaml"]).run();
    run.expect_code(1);
    for id in ["hangs@js", "hangs@py"] {
        assert_eq!(run.task(id)["status"], "error");
        assert!(run.task(id).to_string().contains("timed out after 2s"), "{}", run.task(id));
    }
    assert!(!alive(&["sleep", "316"]) && !alive(&["sleep", "317"]), "a provider's child outlived it");
}

#[test]
fn a_script_provider_never_sees_evalgate_s_credentials_and_its_prints_are_not_its_answer() {
    let run = providers(
        r#"
        module.exports = class {
          callApi() {
            console.log("token=none");
            process.stdout.write('{"output": "token=none"}\n');
            return { output: `token=${process.env.GITHUB_TOKEN ?? "none"} other=${process.env.PF3_OTHER}` };
          }
        };
        "#,
        r#"
        import os
        def call_api(prompt, options, context):
            print("token=none")
            return {"output": f"token={os.environ.get('GITHUB_TOKEN', 'none')} other={os.environ.get('PF3_OTHER')}"}
        "#,
    )
    .file(
        "promptfooconfig.yaml",
        &unindent(
            "
            prompts: ['{{ q }}']
            providers: [{id: file://p.js, label: js}, {id: file://p.py, label: py}]
            tests: [{description: env, vars: {q: hi}, assert: [{type: equals, value: token=none other=kept}]}]
            ",
        ),
    )
    .env("GITHUB_TOKEN", "ghp_pf3secret000000000000000000000000")
    .env("PF3_OTHER", "kept")
    .args(&["run", "promptfooconfig.yaml"])
    .run();
    run.expect_code(0);
}

#[test]
fn a_script_provider_answer_past_the_cap_is_an_error_not_a_crash() {
    let run = providers(
        "module.exports = class { callApi() { return { output: 'Paris '.repeat(3 << 20) }; } };",
        "def call_api(prompt, options, context):\n    return {'output': 'ok'}\n",
    )
    .file(
        "promptfooconfig.yaml",
        &unindent(
            "
            prompts: ['{{ q }}']
            providers: [file://p.js]
            tests: [{description: huge, vars: {q: hi}, assert: [{type: contains, value: Paris}]}]
            ",
        ),
    )
    .args(&["run", "promptfooconfig.yaml"])
    .run();
    run.expect_code(1);
    assert_eq!(run.task("huge")["status"], "error");
    assert!(run.task("huge").to_string().contains("trace"), "{}", run.task("huge"));
}

#[test]
fn script_providers_evalgate_does_not_run_are_refused_at_their_lines() {
    let config = unindent(
        "
        prompts: ['{{ q }}']
        providers:
          - file://p.js
          - file://gone.py
          - file://p.ts
          - file://providers.yaml
          - file://p.js:named
        tests: [{vars: {q: hi}}]
        ",
    );
    providers("module.exports = class {};", "")
        .file("p.ts", "")
        .file("promptfooconfig.yaml", &config)
        .args(&["run", "promptfooconfig.yaml"])
        .expect_messages(
            "error: promptfooconfig.yaml: invalid promptfoo config:
  promptfooconfig.yaml:4:5: /providers/1: provider `file://gone.py`: no script file `gone.py` (beside the config)
  promptfooconfig.yaml:5:5: /providers/2: provider `file://p.ts`: TypeScript is not run (node runs `.js`, `.cjs` and `.mjs`)
  promptfooconfig.yaml:6:5: /providers/3: provider `file://providers.yaml`: a `file://` provider evalgate runs is a JavaScript (`.js`, `.cjs`, `.mjs`) or Python (`.py`) script; a provider config file (`.yaml`, `.json`) and other files are not read
  promptfooconfig.yaml:7:5: /providers/4: provider `file://p.js:named`: a `file://` provider evalgate runs is a JavaScript (`.js`, `.cjs`, `.mjs`) or Python (`.py`) script; a provider config file (`.yaml`, `.json`) and other files are not read
1 error in the suite; nothing ran
",
        )
        .run()
        .expect_code(2);
}
