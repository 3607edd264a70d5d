//! Hostile agents: evalgate keeps their output, kills what they leave behind and stays
//! within its own limits (docs/reference.md, "Containment").

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Test, is_running, unindent};

/// A suite with one command agent `./agent.sh PROMPT` (timeout `timeout`) and `tasks`.
fn agent_suite(timeout: &str, tasks: &str) -> String {
    format!(
        "evalgate: 1\nsuite: test.containment\nagents:\n  bot: {{command: [./agent.sh, \"{{prompt}}\"], timeout: {timeout}}}\ntasks:\n{tasks}"
    )
}

/// `./daemon.sh NAME`: starts `sleep 60` in a new session behind a double fork (a daemon,
/// re-parented away from its parent), records its pid in `NAME.pid` and returns at once.
/// With `ENV=-i` the daemon also clears its environment.
const DAEMON: &str = "#!/bin/sh\n\
    (env $ENV setsid sh -c 'echo $$ > \"$1\".pid; exec sleep 60' daemon \"$1\" </dev/null >/dev/null 2>&1 &)\n\
    while [ ! -s \"$1\".pid ]; do sleep 0.01; done\n";

fn pid(run: &crate::common::Run, name: &str) -> i32 {
    run.read(&format!("{name}.pid")).trim().parse().unwrap()
}

fn notes(run: &crate::common::Run, task: &str) -> Vec<String> {
    let task = run.task(task);
    task["trials"][0]["notes"]
        .as_array()
        .map_or_else(Vec::new, |n| n.iter().map(|n| n.as_str().unwrap().to_owned()).collect())
}

/// Busy loops beside the run, killed when dropped.
struct CpuHogs(Vec<Child>);

impl CpuHogs {
    fn start(n: usize) -> Self {
        CpuHogs(
            (0..n)
                .map(|_| Command::new("sh").args(["-c", "while :; do :; done"]).stdout(Stdio::null()).spawn().unwrap())
                .collect(),
        )
    }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        for hog in &mut self.0 {
            let _ = hog.kill();
            let _ = hog.wait();
        }
    }
}

/// `ID: OUTPUT` of each task that did not pass.
fn not_passed(run: &crate::common::Run) -> Vec<String> {
    let results = run.results();
    let tasks = results["tasks"].as_array().unwrap();
    tasks
        .iter()
        .filter(|t| t["status"] != "passed")
        .map(|t| format!("{}: {}", t["id"], t["trials"][0]["output"]))
        .collect()
}

#[test]
fn every_agent_output_survives_a_thousand_agents_under_load() {
    // Starved of CPU (niced, beside two busy loops, 64 at once), evalgate used to stop
    // reading 250 ms after an agent exited and lose what it had printed.
    const TASKS: usize = 1000;
    let tasks: String = (0..TASKS)
        .map(|i| {
            unindent(
                "
            - {id: t<i>, prompt: p<i>, grade: [{type: contains, value: canary-p<i>}]}
            ",
            )
            .replace("<i>", &i.to_string())
        })
        .collect();
    let test = Test::new()
        .write("agent.sh", "#!/bin/sh\nprintf 'canary-%s\\n' \"$1\"\n")
        .write("evals.yaml", &agent_suite("120s", &tasks))
        .args(&["run", "evals.yaml", "-j", "64", "--quiet"]);
    let hogs = CpuHogs::start(2);
    let run = test.run_via(&["nice", "-n", "8"]);
    drop(hogs);
    let lost = not_passed(&run);
    assert!(lost.is_empty(), "{} of {TASKS} outputs lost: {:?}", lost.len(), &lost[..lost.len().min(5)]);
    run.expect_code(0);
}

#[test]
fn six_hundred_agents_run_at_once_with_j_600() {
    // Each agent's whole life holds a thread of the blocking pool: tokio's default of 512
    // threads would run 512 and queue the rest, and these agents wait for one another.
    const TASKS: usize = 600;
    let tasks: String = (0..TASKS)
        .map(|i| format!("  - {{id: t{i}, prompt: a{i}, grade: [{{type: contains, value: together {TASKS}}}]}}\n"))
        .collect();
    let agent = format!(
        "#!/bin/sh\ntouch \"started/$1\"\nn=0\n\
         while [ \"$(ls started | wc -l)\" -lt {TASKS} ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done\n\
         echo \"together $(ls started | wc -l)\"\n"
    );
    let run = Test::new()
        .write("agent.sh", &agent)
        .write("started/.keep", "")
        .write("evals.yaml", &agent_suite("120s", &tasks))
        .args(&["run", "evals.yaml", "-j", "600", "--quiet"])
        .run();
    let apart = not_passed(&run);
    assert!(
        apart.is_empty(),
        "{} of {TASKS} agents did not run together: {:?}",
        apart.len(),
        &apart[..apart.len().min(3)]
    );
    run.expect_code(0);
}

#[test]
fn escaped_daemons_of_agents_and_setup_steps_are_killed_when_their_task_ends() {
    let tasks = "
        - id: t
          prompt: x
          setup:
            - run: ./daemon.sh setup
          grade: [{type: contains, value: setup-daemon-alive}]
        ";
    let agent = "#!/bin/sh\n./daemon.sh agent\nkill -0 \"$(cat setup.pid)\" && echo setup-daemon-alive\n";
    let run = Test::new()
        .write("daemon.sh", DAEMON)
        .write("agent.sh", agent)
        .write("evals.yaml", &agent_suite("30s", tasks))
        .args(&["run", "evals.yaml"])
        .run();
    // The setup step's daemon lived while the agent ran (a service for the task) …
    run.expect_code(0);
    // … and neither outlived the task: each is noted on the trial, killed there, not at the
    // end of the run.
    let (setup, agent) = (pid(&run, "setup"), pid(&run, "agent"));
    assert!(!is_running(setup) && !is_running(agent));
    let notes = notes(&run, "t");
    for pid in [setup, agent] {
        assert!(
            notes.iter().any(|n| n.contains("left a background process: killed") && n.contains(&format!("pid {pid}:"))),
            "{pid}: {notes:?}"
        );
    }
    assert!(run.stderr_lacks("left behind"), "{}", run.stderr);
}

#[test]
fn a_daemon_that_clears_its_environment_is_killed_when_the_run_ends() {
    let run = Test::new()
        .write("daemon.sh", DAEMON)
        .write("agent.sh", "#!/bin/sh\nENV=-i ./daemon.sh free\necho done\n")
        .write(
            "evals.yaml",
            &agent_suite(
                "30s",
                "
            - {id: t, prompt: x, grade: [{type: contains, value: done}]}
            ",
            ),
        )
        .args(&["run", "evals.yaml"])
        .run();
    run.expect_code(0);
    assert!(!is_running(pid(&run, "free")));
    assert!(run.stderr_has("killed 1 background process(es) left behind"), "{}", run.stderr);
}

#[test]
fn a_daemon_holding_stdout_open_is_a_recorded_leak_not_a_hang() {
    // The daemon keeps the agent's stdout and cleared the variable that names its owner,
    // so only the end of the run may kill it: capture ends shortly after the agent exits.
    let agent = "#!/bin/sh\necho answer\nenv -i setsid sh -c 'echo $$ > leak.pid; exec sleep 60' &\nwhile [ ! -s leak.pid ]; do sleep 0.01; done\n";
    let started = Instant::now();
    let run = Test::new()
        .write("agent.sh", agent)
        .write(
            "evals.yaml",
            &agent_suite(
                "60s",
                "
            - {id: t, prompt: x, grade: [{type: equals, value: answer}]}
            ",
            ),
        )
        .args(&["run", "evals.yaml"])
        .run();
    // The pid varies from run to run.
    run.expect_stderr_contains(&["killed 1 background process(es) left behind: pid ", ": sleep 60\n"]);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    run.expect_code(0);
    let notes = notes(&run, "t");
    assert!(notes.iter().any(|n| n.starts_with("LEAK: ") && n.contains("kept its output open")), "{notes:?}");
    assert!(!is_running(pid(&run, "leak")));
}

#[test]
fn an_agent_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let agent = "#!/bin/sh\ntrap '' TERM\necho $$ > stubborn.pid\nsleep 60\n";
    let started = Instant::now();
    let run = Test::new()
        .write("agent.sh", agent)
        .write(
            "evals.yaml",
            &agent_suite(
                "1s",
                "
            - {id: t, prompt: x, grade: [{type: contains, value: x}]}
            ",
            ),
        )
        .args(&["run", "evals.yaml"])
        .run();
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    let task = run.task("t");
    assert_eq!(task["status"], "error");
    assert!(task["reason"].as_str().unwrap().contains("timed out after 1s"), "{task}");
    assert!(!is_running(pid(&run, "stubborn")));
}

#[test]
fn half_a_gigabyte_of_stdout_is_capped_in_memory_and_noted() {
    let agent = "#!/bin/sh\nyes 0123456789012345678901234567890123456789 | head -c 500000000\n";
    let run = Test::new()
        .write("agent.sh", agent)
        .write(
            "evals.yaml",
            &agent_suite(
                "60s",
                "
            - {id: t, prompt: x, grade: [{type: contains, value: '0123'}]}
            ",
            ),
        )
        .args(&["run", "evals.yaml"])
        .run();
    run.expect_code(0);
    let task = run.task("t");
    assert_eq!(task["trials"][0]["output_truncated"], true);
    let notes = notes(&run, "t");
    assert!(notes.iter().any(|n| n.contains("printed 500000000 bytes on stdout, over the 1 MiB kept")), "{notes:?}");
    // The largest child this test waited for (evalgate) never held the half gigabyte.
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    assert!(usage.max_rss() < 200 * 1024, "max RSS {} KiB", usage.max_rss());
}

#[test]
fn control_bytes_and_invalid_utf8_are_kept_and_written_out_in_every_report() {
    let agent = "#!/bin/sh\nprintf 'ok \\033[31mred \\000nul \\377 </system-out>|\\n'\n";
    let run = Test::new()
        .write("agent.sh", agent)
        .write(
            "evals.yaml",
            &agent_suite(
                "10s",
                "
            - {id: t, prompt: x, grade: [{type: contains, value: absent}]}
            ",
            ),
        )
        .args(&["run", "evals.yaml"])
        .run();
    run.expect_code(1);
    let output = run.task("t")["trials"][0]["output"].as_str().unwrap().to_owned();
    assert_eq!(output, "ok \u{1b}[31mred \0nul \u{fffd} </system-out>|\n", "results.json keeps them (escaped by JSON)");
    for report in ["evalgate-out/summary.md", "evalgate-out/junit.xml"] {
        let text = run.read(report);
        let raw: Vec<char> = text.chars().filter(|c| c.is_control() && !matches!(c, '\n' | '\t')).collect();
        assert!(raw.is_empty(), "{report} has raw control characters {raw:?}");
    }
    // Markdown writes them out; JUnit (quick-junit) drops what XML cannot hold.
    assert!(run.read("evalgate-out/summary.md").contains("\\u{1b}[31mred"), "{}", run.read("evalgate-out/summary.md"));
    assert!(run.read("evalgate-out/junit.xml").contains("&lt;/system-out&gt;"));
}

#[test]
fn a_low_open_file_limit_slows_the_run_instead_of_failing_tasks() {
    const TASKS: usize = 200;
    let tasks: String = (0..TASKS)
        .map(|i| {
            unindent(
                "
            - {id: t<i>, prompt: p<i>, grade: [{type: contains, value: p<i>}]}
            ",
            )
            .replace("<i>", &i.to_string())
        })
        .collect();
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\nprintf '%s\\n' \"$1\"\n")
        .write("evals.yaml", &agent_suite("30s", &tasks))
        .args(&["run", "evals.yaml", "-j", "64", "--quiet"])
        .expect_messages(
            "the open-file limit (64) allows 1 task(s) at once: running 1, not 64 (raise it with `ulimit -n`)\n",
        )
        .run_via(&["sh", "-c", "ulimit -n 64 && exec \"$0\" \"$@\""]);
    run.expect_code(0);
    assert_eq!(run.stderr.matches("the open-file limit (64) allows").count(), 1, "{}", run.stderr);
    assert_eq!(run.results()["totals"]["passed"], TASKS);
}
