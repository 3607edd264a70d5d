//! Judge calibration through the binary (docs/llm.md "Calibrating a judge"): a local
//! stand-in judge scripted to agree with the human labels at a known rate; κ and its
//! interval against the values sklearn and statsmodels give (tests/fixtures/stats/kappa.py);
//! an advisory judge can neither fail nor pass the gate; an identity change makes the
//! calibration stale.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::server::{Request, Server};
use crate::common::{Test, indent, unindent};
use serde_json::{Value, json};

const KEY: &str = "sk-test-secret-value-5e7a";

fn reply(message: Value) -> String {
    json!({"id": "x", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    .to_string()
}

fn verdict(passed: bool) -> String {
    let args = json!({"passed": passed, "reason": "scripted"}).to_string();
    reply(json!({"role": "assistant", "content": null,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "record_verdict", "arguments": args}}]}))
}

/// The scripted judge: item N passes when N < 45 (items 0-44), `pass-*` always, `fail-*`
/// never; `flip-*` passes the first time and fails after. The agent answers `answer to <prompt>`.
/// Biased as the probes look for: a rubric's first criterion is met, whichever it is; a
/// padded answer or one echoing the reference passes an `llm` grader.
fn stand_in() -> Server {
    stand_in_with(Arc::default())
}

/// The stand-in, refusing every request with a 401 (a key it does not take) once `refusing`.
fn stand_in_with(refusing: Arc<AtomicBool>) -> Server {
    Server::start(scripted(refusing))
}

/// The stand-in's answers (see [`stand_in`]).
fn scripted(refusing: Arc<AtomicBool>) -> impl Fn(&Request) -> (u16, String) + Send + Sync + 'static {
    let calls: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    move |r: &Request| {
        if refusing.load(Ordering::SeqCst) {
            return (401, json!({"error": {"message": "Incorrect API key provided"}}).to_string());
        }
        let b: Value = serde_json::from_str(&r.body).unwrap();
        let user = b["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap();
        let text = user["content"].as_str().unwrap().to_owned();
        if b.get("tool_choice").is_none() {
            return (200, reply(json!({"role": "assistant", "content": format!("answer to {text}")})));
        }
        let prompt = text.split("Task given to the system:\n").nth(1).unwrap().lines().next().unwrap().to_owned();
        let seen = {
            let mut calls = calls.lock().unwrap();
            let n = calls.entry(prompt.clone()).or_default();
            *n += 1;
            *n
        };
        if b["tools"][0]["function"]["parameters"]["properties"].get("criteria").is_some() {
            // A rubric: the first criterion met, the others not.
            let n = text.matches("\n1. ").count() + 1;
            let criteria: Vec<Value> = (0..n).map(|i| json!({"index": i, "met": i == 0, "note": "scripted"})).collect();
            let args = json!({"criteria": criteria}).to_string();
            return (
                200,
                reply(json!({"role": "assistant", "content": null,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "record_verdict", "arguments": args}}]})),
            );
        }
        let biased = text.contains("comprehensive explanation") || text.contains("Reference answer:");
        let passed = match prompt.split_once(' ') {
            _ if biased => true,
            Some(("item", n)) => n.parse::<u32>().unwrap() < 45,
            Some(("pass", _)) => true,
            Some(("flip", _)) => seen == 1,
            _ => false,
        };
        (200, verdict(passed))
    }
}

fn header(server: &Server, judge_extra: &str) -> String {
    let yaml = format!(
        "
        evalgate: 1
        suite: t
        agents:
          bot: {{provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}}
        judge: {{provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY{judge_extra}}}
        "
    );
    unindent(&yaml).replace("<url>", &server.url())
}

/// 60 labelled items (the 2×2 table [[40, 5], [3, 12]]: judge rows, human columns), and two
/// repeated ones the judge judges twice, one of which it flips.
fn labelled_suite(server: &Server) -> String {
    let mut tasks = String::new();
    for n in 0..60 {
        tasks.push_str(&format!("- {{id: i{n:02}, prompt: 'item {n:02}', grade: [{{type: llm, contains: ok}}]}}\n"));
    }
    tasks.push_str("- {id: steady, prompt: 'pass 1', repeat: 2, grade: [{type: llm, contains: ok}]}\n");
    tasks.push_str("- {id: fickle, prompt: 'flip 1', repeat: 2, grade: [{type: llm, contains: ok}]}\n");
    header(server, "") + "tasks:\n" + &indent(&tasks, 2)
}

/// The human's labels: pass for items 0-39 and 45-47. Written every way a label may be: a
/// pass/fail verdict, or agree/disagree with the judge's verdict shown; plus one unsure.
fn labels() -> String {
    let mut lines = String::new();
    for n in 0..60u32 {
        let (judge, human) = (n < 45, n < 40 || (45..48).contains(&n));
        let word = |b: bool| if b { "pass" } else { "fail" };
        let verdict = if n % 2 == 0 {
            word(human)
        } else if judge == human {
            "agree"
        } else {
            "disagree"
        };
        lines.push_str(
            &json!({"task": format!("i{n:02}"), "grader": "llm", "judge": word(judge), "verdict": verdict,
                "labeller": "ana", "date": "2026-11-27", "note": format!("item {n}")})
            .to_string(),
        );
        lines.push('\n');
    }
    lines.push_str(
        r#"{"task": "steady", "grader": "llm", "verdict": "unsure", "labeller": "bo", "date": "2026-11-27"}"#,
    );
    lines.push('\n');
    lines
}

/// Runs evalgate in the test's directory.
fn evalgate(t: &Test, args: &[&str]) -> (i32, String, String) {
    let out = t.command().env("EVALGATE_TEST_KEY", KEY).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// A calibrated directory: the labelled suite run, its labels, `judge calibrate` run.
fn calibrated(server: &Server) -> (Test, Value) {
    let t = Test::new().write("evalgate.yaml", &labelled_suite(server)).write("labels.jsonl", &labels());
    let (code, _, stderr) = evalgate(&t, &["run", "-j", "1", "--no-cache", "evalgate.yaml"]);
    assert_eq!(code, 1, "items the judge fails fail: {stderr}");
    let (code, stdout, stderr) = evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "labels.jsonl"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("judge-calibration.json")).unwrap()).unwrap();
    (t, file)
}

#[test]
fn kappa_and_its_interval_match_the_reference_and_bind_the_judge() {
    let server = stand_in();
    let (_t, file) = calibrated(&server);
    let judge = &file["judges"][0];
    assert_eq!(judge["name"], "judge");
    assert_eq!(judge["identity"]["provider"], "openai");
    assert_eq!(judge["identity"]["model"], "gpt-4o-mini");
    assert_eq!(judge["identity"]["temperature"], 0.0);
    assert_eq!(judge["identity"]["prompt_sha256"].as_str().unwrap().len(), 64);
    let f = &judge["overall"];
    assert_eq!(f["n"], 60);
    assert_eq!(
        f["confusion"],
        json!({"judge_pass_human_pass": 40, "judge_pass_human_fail": 5, "judge_fail_human_pass": 3, "judge_fail_human_fail": 12})
    );
    // tests/fixtures/stats/kappa.py on [[40, 5], [3, 12]].
    let close = |v: &Value, x: f64| (v.as_f64().unwrap() - x).abs() < 1e-8;
    assert!(close(&f["kappa"], 0.6595744680851063), "{f}");
    assert!(close(&f["kappa_interval"][0], 0.44377576085441495), "{f}");
    assert!(close(&f["kappa_interval"][1], 0.8753731753157982), "{f}");
    assert!(close(&f["base_rate"], 43.0 / 60.0) && close(&f["agreement"], 52.0 / 60.0), "{f}");
    assert_eq!(judge["unsure"], 1);
    // The items it got wrong: 40-47, with the labeller's note.
    let wrong: Vec<&str> = judge["wrong"].as_array().unwrap().iter().map(|w| w["task"].as_str().unwrap()).collect();
    assert_eq!(wrong, ["i40", "i41", "i42", "i43", "i44", "i45", "i46", "i47"]);
    assert_eq!(judge["wrong"][0]["judge"], "pass");
    assert_eq!(judge["wrong"][0]["human"], "fail");
    // Judged twice: `steady` and `fickle`, one flip.
    assert_eq!(judge["self_consistency"], json!({"items": 2, "flips": 1, "flip_rate": 0.5}));
}

/// The gate suite: `ok` passes on a contains alone, the judge failing it; `short` fails its
/// contains and the judge passes it, the task's threshold met only with the judge's score;
/// `only` has nothing but the judge, which passes it.
fn gate_suite(server: &Server, judge_extra: &str) -> String {
    let tasks = "
        - id: ok
          prompt: fail 1
          grade: [{type: contains, value: answer}, {type: llm, contains: ok}]
        - id: short
          prompt: pass 2
          threshold: 0.5
          grade: [{type: contains, value: missing}, {type: llm, contains: ok}]
        - {id: only, prompt: pass 3, grade: [{type: llm, contains: ok}]}
        ";
    header(server, judge_extra) + "tasks:\n" + &indent(&unindent(tasks), 2)
}

fn gate(t: &Test, server: &Server, judge_extra: &str) -> (i32, String, Value) {
    std::fs::write(t.path().join("gate.yaml"), gate_suite(server, judge_extra)).unwrap();
    let (code, stdout, stderr) = evalgate(t, &["run", "-j", "1", "--no-cache", "gate.yaml"]);
    let results = std::fs::read_to_string(t.path().join("evalgate-out/results.json")).unwrap_or_default();
    (code, format!("{stdout}{stderr}"), serde_json::from_str(&results).unwrap_or(Value::Null))
}

fn task<'a>(results: &'a Value, id: &str) -> &'a Value {
    results["tasks"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap()
}

#[test]
fn an_advisory_judge_can_neither_fail_nor_pass_the_gate() {
    let server = stand_in();
    let (t, _) = calibrated(&server);

    // Calibrated enough (κ 0.66 ≥ 0.6 on 60 ≥ 50 labels): the judge gates, and fails both.
    let (code, out, results) = gate(&t, &server, ", calibration: {min_kappa: 0.6}");
    assert_eq!(code, 1, "{out}");
    assert_eq!(task(&results, "ok")["status"], "failed", "{out}");
    assert!(!out.contains("advisory"), "{out}");

    // Under the floor: advisory. Its fail of `ok` does not fail the run, and its pass of
    // `short` does not lift the score to the threshold.
    let (code, out, results) = gate(&t, &server, ", calibration: {file: judge-calibration.json, min_kappa: 0.7}");
    assert!(out.contains("judge `judge` is advisory: κ 0.66 < 0.7 on 60 labels"), "{out}");
    let ok = task(&results, "ok");
    assert_eq!(ok["status"], "passed", "{out}");
    let judged = &ok["trials"][0]["graders"][1];
    assert_eq!((&judged["status"], &judged["advisory"]), (&json!("failed"), &json!(true)), "reported: {judged}");
    let short = task(&results, "short");
    assert_eq!(short["status"], "failed", "{out}");
    assert_eq!(short["trials"][0]["graders"][1]["status"], "passed");
    assert_eq!(code, 1, "`short` fails on its own graders: {out}");
    // Nothing but an advisory judge decides `only`: an error, never a pass.
    assert_eq!(task(&results, "only")["status"], "error", "{out}");
    assert!(task(&results, "only")["reason"].as_str().unwrap().contains("advisory judge"), "{out}");
    assert_eq!(results["judges"]["judge"]["advisory"], "κ 0.66 < 0.7 on 60 labels");
    let summary = std::fs::read_to_string(t.path().join("evalgate-out/summary.md")).unwrap();
    assert!(
        // `<` as Markdown shows it: the reason is text, escaped as any.
        summary.contains("judge `judge` is advisory: κ 0.66 &lt; 0.7 on 60 labels; its graders are reported"),
        "{summary}"
    );
    // Every report says what it means and how the judge comes to gate: the terminal, the
    // summary and the HTML report (where a reader of a red run looks).
    let how = "to let it gate, label the items of `evalgate judge sample` and run `evalgate judge calibrate`";
    assert!(out.contains(how) && summary.contains(how), "{out}\n{summary}");
    let html = std::fs::read_to_string(t.path().join("evalgate-out/report.html")).unwrap();
    assert!(
        html.contains("judge <code>judge</code> is advisory: κ 0.66 &lt; 0.7 on 60 labels; its graders are reported, not gated on, and a task only they grade is an error; to let it gate, label the items of <code>evalgate judge sample</code>"),
        "{html}"
    );

    // Too few labels.
    let (_, out, _) = gate(&t, &server, ", calibration: {min_kappa: 0.6, min_labels: 100}");
    assert!(out.contains("judge `judge` is advisory: 60 labels < 100"), "{out}");

    // `required`: a preflight miss, nothing runs.
    let (code, out, _) = gate(&t, &server, ", calibration: {min_kappa: 0.7, required: true}");
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("judge calibration `judge`: κ 0.66 < 0.7 on 60 labels (required)"), "{out}");
}

#[test]
fn an_identity_change_makes_the_calibration_stale() {
    let server = stand_in();
    let (t, _) = calibrated(&server);
    // The same judge at another temperature, then with another system prompt.
    for (extra, why) in [
        (", temperature: 0.3, calibration: {min_kappa: 0.6}", "calibration is stale (temperature 0 → 0.3)"),
        (", system: Be kind., calibration: {min_kappa: 0.6}", "calibration is stale (system prompt changed)"),
    ] {
        let (code, out, results) = gate(&t, &server, extra);
        assert!(out.contains(&format!("judge `judge` is advisory: {why}")), "{out}");
        assert_eq!(task(&results, "ok")["status"], "passed", "{out}");
        assert_eq!(code, 1, "`short` still fails: {out}");
    }
    // No calibration file at all.
    let (_, out, _) = gate(&t, &server, ", calibration: {file: other.json}");
    assert!(out.contains("judge `judge` is advisory: no calibration: other.json does not exist"), "{out}");
}

#[test]
fn calibrate_refuses_verdicts_of_another_judge_and_names_bad_labels() {
    let server = stand_in();
    let (t, _) = calibrated(&server);
    // The suite's judge changed since the run: its verdicts are another judge's.
    let changed = labelled_suite(&server)
        .replace("judge: {provider: openai, model: gpt-4o-mini", "judge: {provider: openai, model: gpt-4o");
    std::fs::write(t.path().join("changed.yaml"), changed).unwrap();
    let (code, _, stderr) = evalgate(&t, &["judge", "calibrate", "changed.yaml", "--labels", "labels.jsonl"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("was judged by another judge `judge` (model gpt-4o-mini → gpt-4o)"), "{stderr}");

    std::fs::write(
        t.path().join("bad.jsonl"),
        "{\"task\": \"i00\", \"grader\": \"llm\", \"verdict\": \"pass\", \"labeller\": \"a\", \"date\": \"2026-11-27\"}\n\
         {\"task\": \"i01\", \"grader\": \"llm\", \"verdict\": \"yes\"}\n\
         {\"task\": \"i02\", \"grader\": \"llm\", \"colour\": \"red\"}\n",
    )
    .unwrap();
    let (code, _, stderr) = evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "bad.jsonl"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("bad.jsonl:2: `verdict`: expected agree, disagree, unsure, pass or fail, got `yes`"),
        "{stderr}"
    );
    assert!(stderr.contains("bad.jsonl:3: unknown key `colour`"), "{stderr}");
    std::fs::write(
        t.path().join("bad.jsonl"),
        "{\"task\": \"nope\", \"grader\": \"llm\", \"verdict\": \"pass\", \"labeller\": \"a\", \"date\": \"2026-11-27\"}\n",
    )
    .unwrap();
    let (code, _, stderr) = evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "bad.jsonl"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bad.jsonl:1: task `nope` is not in the suite"), "{stderr}");
}

#[test]
fn a_sample_covers_both_verdicts_and_reads_back_as_labels() {
    let server = stand_in();
    let (t, _) = calibrated(&server);
    let (code, _, stderr) = evalgate(&t, &["judge", "sample", "evalgate.yaml", "--n", "6", "-o", "sample.jsonl"]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = std::fs::read_to_string(t.path().join("sample.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    // Hard case first: `fickle`'s output got both verdicts.
    assert_eq!(lines[0]["task"], "fickle", "{lines:?}");
    let verdicts: std::collections::BTreeSet<&str> = lines.iter().map(|l| l["judge"].as_str().unwrap()).collect();
    assert_eq!(verdicts.into_iter().collect::<Vec<_>>(), ["fail", "pass"]);
    assert!(lines.iter().all(|l| l["verdict"] == "" && l["output"].as_str().unwrap().starts_with("answer to")));
    // Filled in (every item agreed), it is a labels file `calibrate` reads.
    let filled: String = lines
        .iter()
        .map(|l| {
            let mut l = l.clone();
            l["verdict"] = "agree".into();
            l["labeller"] = "ana".into();
            l["date"] = "2026-11-28".into();
            l.to_string() + "\n"
        })
        .collect();
    std::fs::write(t.path().join("sample.jsonl"), filled).unwrap();
    let (code, _, stderr) =
        evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "sample.jsonl", "-o", "c.json"]);
    assert_eq!(code, 0, "{stderr}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(t.path().join("c.json")).unwrap()).unwrap();
    assert_eq!(c["judges"][0]["overall"]["n"], 6);
    assert_eq!(c["judges"][0]["overall"]["agreement"], 1.0);
}

#[test]
fn the_reports_labelling_mode_exports_labels_that_calibrate_reads() {
    let server = stand_in();
    let tasks = "
        - id: refund
          prompt: pass 1
          grade: [{type: rubric, criteria: [polite, cites the window]}]
        - id: eta
          prompt: fail 2
          grade: [{type: contains, value: answer}, {type: llm, contains: a date}]
        ";
    let yaml = header(&server, "") + "tasks:\n" + &indent(&unindent(tasks), 2);
    let t = Test::new().write("evalgate.yaml", &yaml);
    let (code, _, stderr) = evalgate(&t, &["run", "-j", "1", "evalgate.yaml"]);
    assert_eq!(code, 1, "{stderr}");
    let exported = t.path().join("exported.jsonl");
    let seen =
        crate::html::browse(&t.path().join("evalgate-out/report.html"), &["--label", exported.to_str().unwrap()]);
    assert_eq!(seen["consoleErrors"], json!([]), "{seen:#}");
    assert_eq!(seen["pageErrors"], json!([]), "{seen:#}");
    assert_eq!(seen["requests"], json!([]), "no request leaves the file: {seen:#}");
    let l = &seen["labelling"];
    assert_eq!((&l["labelable"], &l["before"], &l["rows"]), (&json!("3"), &json!("0"), &json!(3)), "{l}");
    assert_eq!(l["refused"], "Type your name first: every label records its labeller.");
    assert_eq!((&l["after"], &l["message"]), (&json!("3"), &json!("3 labels exported.")), "{l}");
    // A reload resumes every label, note and the labeller from this browser.
    let r = &l["resumed"];
    assert_eq!((&r["labelled"], &r["labeller"]), (&json!("3"), &json!("ana")), "{r}");
    assert_eq!(r["message"], "3 labels resumed from this browser.");
    assert_eq!(r["verdicts"], json!(["disagree", "unsure", "agree"]), "{r}");
    assert_eq!(r["notes"], json!(["too lenient", "", ""]), "{r}");

    let lines: Vec<Value> =
        std::fs::read_to_string(&exported).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let first = &lines[0];
    assert_eq!(
        (&first["task"], &first["grader"], &first["criterion"], &first["judge"], &first["verdict"], &first["note"]),
        (
            &json!("refund"),
            &json!("rubric"),
            &json!("polite"),
            &json!("pass"),
            &json!("disagree"),
            &json!("too lenient")
        ),
        "{first}"
    );
    assert_eq!(first["labeller"], "ana");
    assert_eq!(first["output_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(lines[1]["verdict"], "unsure");
    assert_eq!(
        (&lines[2]["task"], &lines[2]["grader"], &lines[2]["verdict"]),
        (&json!("eta"), &json!("llm"), &json!("agree"))
    );

    // `calibrate` reads the export: 2 labels (one unsure), the disagreement is the item it got wrong.
    let (code, stdout, stderr) = evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "exported.jsonl"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("judge-calibration.json")).unwrap()).unwrap();
    let judge = &c["judges"][0];
    assert_eq!((&judge["overall"]["n"], &judge["unsure"]), (&json!(2), &json!(1)), "{judge}");
    assert_eq!(judge["wrong"][0]["criterion"], "polite");
    assert_eq!(judge["wrong"][0]["note"], "too lenient");
}

#[test]
fn the_report_offers_the_sample_judge_sample_picks_and_imports_a_labels_file() {
    let server = stand_in();
    let (t, _) = calibrated(&server);
    // 62 judged items (64 judged trials: `steady` and `fickle` gave one output twice): the
    // default sample of 60 leaves two out.
    let (code, _, stderr) = evalgate(&t, &["judge", "sample", "evalgate.yaml", "-o", "sample.jsonl"]);
    assert_eq!(code, 0, "{stderr}");
    let sample: Vec<Value> = std::fs::read_to_string(t.path().join("sample.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(sample.len(), 60);
    let key = |l: &Value| json!([l["task"], l["grader"], l["criterion"], l["trial"]]);
    let mut picked: Vec<Value> = sample.iter().map(key).collect();
    picked.sort_by_key(Value::to_string);

    // The sample filled in, every way a line may be: agree, a pass/fail verdict, a hostile
    // note; plus a line of another suite's task and one that is not JSON.
    let mut file = String::new();
    for (i, l) in sample.iter().enumerate() {
        let mut l = l.clone();
        l["verdict"] = match i {
            0 => "fail".into(),
            1 => "pass".into(),
            _ => "agree".into(),
        };
        l["labeller"] = "bo".into();
        if i == 2 {
            l["note"] = "<img src=x onerror=\"window.__pwned=1\">".into();
        }
        file += &(l.to_string() + "\n");
    }
    file += "{\"task\": \"nope\", \"grader\": \"llm\", \"trial\": 1, \"verdict\": \"agree\"}\nnot json\n";
    std::fs::write(t.path().join("filled.jsonl"), file).unwrap();

    let report = t.path().join("evalgate-out/report.html");
    let seen =
        crate::html::browse(&report, &["--offered", "--import", t.path().join("filled.jsonl").to_str().unwrap()]);
    assert_eq!((&seen["consoleErrors"], &seen["pageErrors"]), (&json!([]), &json!([])), "{seen:#}");
    let o = &seen["offered"];
    let mut offered: Vec<Value> = o["items"].as_array().unwrap().clone();
    offered.sort_by_key(Value::to_string);
    assert_eq!(offered, picked, "the report offers exactly the items `judge sample` picks");
    assert_eq!(o["count"], "60");
    assert_eq!((&o["every"]["count"], &o["every"]["items"]), (&json!("64"), &json!(64)), "{o}");

    let i = &seen["imported"];
    assert_eq!(i["message"], "60 labels imported, 1 match no item of this report, 1 unreadable.", "{i}");
    assert_eq!((&i["labelled"], &i["labeller"]), (&json!("60"), &json!("bo")), "{i}");
    assert_eq!(seen["pwnedAfter"], Value::Null, "a note is text, never markup");
    // Each row of a labelled item holds the human's verdict as agree or disagree with the
    // verdict the judge gave that row (`fickle`'s two trials: one of each); the rest are empty.
    let human = |i: usize| match i {
        0 => "fail".to_owned(),
        1 => "pass".to_owned(),
        _ => sample[i]["judge"].as_str().unwrap().to_owned(),
    };
    let humans: HashMap<&str, String> =
        sample.iter().enumerate().map(|(i, l)| (l["task"].as_str().unwrap(), human(i))).collect();
    let rows = i["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 64);
    for row in rows {
        let (task, judge, verdict) = (row[0].as_str().unwrap(), row[2].as_str().unwrap(), row[3].as_str().unwrap());
        let expected = match humans.get(task) {
            Some(h) if h == judge => "agree",
            Some(_) => "disagree",
            None => "",
        };
        assert_eq!(verdict, expected, "{row}");
    }
    assert!(
        rows.iter().any(|r| r[0] == "fickle" && r[3] == "agree")
            && rows.iter().any(|r| r[0] == "fickle" && r[3] == "disagree"),
        "{rows:?}"
    );
}

#[test]
fn bias_probes_report_the_flip_rates_of_a_biased_judge() {
    let server = stand_in();
    let tasks = "
        - id: r
          prompt: pass 1
          grade: [{type: rubric, criteria: [polite, cites the window]}]
        - {id: a, prompt: pass 2, grade: [{type: llm, contains: ok}]}
        - {id: b, prompt: fail 3, grade: [{type: llm, contains: ok}]}
        - {id: c, prompt: fail 4, grade: [{type: llm, contains: ok}]}
        ";
    let yaml = header(&server, "") + "tasks:\n" + &indent(&unindent(tasks), 2);
    let labels = r#"{"task": "a", "grader": "llm", "verdict": "pass", "labeller": "ana", "date": "2026-11-27"}"#;
    let t = Test::new().write("evalgate.yaml", &yaml).write("labels.jsonl", labels);
    let (code, _, stderr) = evalgate(&t, &["run", "-j", "1", "evalgate.yaml"]);
    assert_eq!(code, 1, "{stderr}");
    let (code, stdout, stderr) = evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "labels.jsonl"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("judge-calibration.json")).unwrap()).unwrap();
    let probes = &c["judges"][0]["probes"];
    assert_eq!(probes["items"], 4, "{probes}");
    // Reversed, the rubric's met criterion moves: both of its verdicts flip.
    assert_eq!(probes["position"], json!({"compared": 2, "flips": 2, "flip_rate": 1.0}), "{probes}");
    // Padded, the two failed `llm` answers pass (the rubric's two criteria hold).
    assert_eq!(probes["verbosity"], json!({"compared": 5, "flips": 2, "flip_rate": 0.4}), "{probes}");
    // The expected text echoed: the two failed answers pass (the rubric has no reference).
    assert_eq!(probes["reference_leak"], json!({"compared": 3, "flips": 2, "flip_rate": 0.666666667}), "{probes}");
    assert!(
        stdout.contains("bias probes on 4 outputs (flips): position 2 of 2, verbosity 2 of 5, reference leak 2 of 3"),
        "{stdout}"
    );

    // Progress on stderr: the calls, then how many are answered.
    assert!(stderr.contains("bias probes of judge `judge`: 12 calls on 4 outputs"), "{stderr}");
    assert!(stderr.contains("bias probes of judge `judge`: 12 of 12 calls done"), "{stderr}");

    // Recorded once, the probes replay from the suite's cassette: the same flip rates, no call.
    let probe_args = ["judge", "calibrate", "evalgate.yaml", "--labels", "labels.jsonl", "-o", "probes.json"];
    let (code, _, stderr) = evalgate(&t, &[&probe_args[..], &["--record"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let calls = server.requests();
    let (code, _, stderr) = evalgate(&t, &[&probe_args[..], &["--replay"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(server.requests(), calls, "a replayed probe asked the judge");
    let replayed: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("probes.json")).unwrap()).unwrap();
    assert_eq!(&replayed["judges"][0]["probes"], probes);

    // `--probes 0`: none asked.
    let (code, _, _) = evalgate(
        &t,
        &["judge", "calibrate", "evalgate.yaml", "--labels", "labels.jsonl", "--probes", "0", "-o", "none.json"],
    );
    assert_eq!(code, 0);
    let none: Value = serde_json::from_str(&std::fs::read_to_string(t.path().join("none.json")).unwrap()).unwrap();
    assert!(none["judges"][0].get("probes").is_none());
}

/// The probes are asked at once, as many at a time as the judge's `max_concurrency` allows
/// and no more (a slow judge answered one call at a time made calibrate take a minute).
#[test]
fn bias_probes_are_asked_concurrently_within_the_judges_limit() {
    let (in_flight, most, probing) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let answer = scripted(Arc::default());
    let (counted, seen, on) = (in_flight.clone(), most.clone(), probing.clone());
    let server = Server::start(move |r: &Request| {
        if !on.load(Ordering::SeqCst) {
            return answer(r);
        }
        let now = counted.fetch_add(1, Ordering::SeqCst) + 1;
        seen.fetch_max(now, Ordering::SeqCst);
        // Slow enough that calls asked at once overlap.
        std::thread::sleep(std::time::Duration::from_millis(150));
        counted.fetch_sub(1, Ordering::SeqCst);
        answer(r)
    });
    let tasks: String =
        (0..6).map(|i| format!("- {{id: t{i}, prompt: 'fail {i}', grade: [{{type: llm, contains: ok}}]}}\n")).collect();
    let yaml = header(&server, ", max_concurrency: 4") + "tasks:\n" + &indent(&tasks, 2);
    let labels = r#"{"task": "t0", "grader": "llm", "verdict": "fail", "labeller": "ana", "date": "2026-11-27"}"#;
    let t = Test::new().write("evalgate.yaml", &yaml).write("labels.jsonl", labels);
    let (code, _, stderr) = evalgate(&t, &["run", "evalgate.yaml"]);
    assert_eq!(code, 1, "{stderr}");
    probing.store(true, Ordering::SeqCst);
    let (code, stdout, stderr) = evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "labels.jsonl"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("bias probes of judge `judge`: 18 of 18 calls done"), "{stderr}");
    assert_eq!(most.load(Ordering::SeqCst), 4, "calls in flight at once, at most the judge's max_concurrency");
}

#[test]
fn an_unreadable_calibration_file_is_located_invalid_input() {
    let server = stand_in();
    let t = Test::new().write("judge-calibration.json", "{not json");
    std::fs::write(t.path().join("gate.yaml"), gate_suite(&server, ", calibration: {min_kappa: 0.7}")).unwrap();
    let (code, stdout, stderr) = evalgate(&t, &["run", "gate.yaml"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("gate.yaml:5:") && stderr.contains(": judge.calibration: "), "located: {stderr}");
    assert!(stderr.contains("judge-calibration.json is not a judge calibration file"), "{stderr}");
    std::fs::write(t.path().join("gate.yaml"), gate_suite(&server, ", calibration: {min_kappa: 2}")).unwrap();
    let (code, _, stderr) = evalgate(&t, &["run", "gate.yaml"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("min_kappa is a κ, from -1 to 1; got 2"), "{stderr}");
}

/// `labels()` for items `from..60` only, each written `times` times.
fn labels_of(from: u32, times: usize) -> String {
    let all = labels();
    let lines: Vec<&str> = all.lines().skip(from as usize).take(60 - from as usize).collect();
    let mut out = String::new();
    for _ in 0..times {
        for line in &lines {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn an_item_labelled_twice_is_one_label_and_two_verdicts_on_it_are_refused() {
    let server = stand_in();
    let (t, _) = calibrated(&server);
    // Items 30-59, each labelled twice: 60 lines, 30 items.
    std::fs::write(t.path().join("twice.jsonl"), labels_of(30, 2)).unwrap();
    let (code, stdout, stderr) =
        evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "twice.jsonl", "--probes", "0"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("counted once: 30 label(s) of an item already labelled the same (lines 31, 32,"),
        "{stdout}"
    );
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("judge-calibration.json")).unwrap()).unwrap();
    let judge = &file["judges"][0];
    assert_eq!(judge["overall"]["n"], 30, "{judge}");
    assert_eq!(judge["merged"].as_array().unwrap().len(), 30);
    // The same item given another verdict: refused, both lines named.
    let mut conflicting = labels_of(59, 1);
    conflicting.push_str(&labels_of(59, 1).replace("\"fail\"", "\"pass\""));
    std::fs::write(t.path().join("conflict.jsonl"), &conflicting).unwrap();
    let (code, stdout, stderr) =
        evalgate(&t, &["judge", "calibrate", "evalgate.yaml", "--labels", "conflict.jsonl", "--probes", "0"]);
    assert_eq!(code, 2, "{conflicting}{stdout}{stderr}");
    assert!(
        stderr.contains(
            "conflict.jsonl:2: labels the item of line 1 (task `i59`, grader `llm`, the same output) with another verdict: one label per item, keep one"
        ),
        "{stderr}"
    );
    // κ is defined on these 30 and over the floor, but 30 labels are fewer than 50.
    let (_, out, _) = gate(&t, &server, ", calibration: {min_kappa: 0.0, min_labels: 50}");
    assert!(out.contains("judge `judge` is advisory: 30 labels < 50"), "{out}");
}

#[test]
fn a_calibration_file_is_believed_only_as_far_as_its_table_goes() {
    let server = stand_in();
    let (t, file) = calibrated(&server);
    let write = |edit: &dyn Fn(&mut Value)| {
        let mut edited = file.clone();
        edit(&mut edited["judges"][0]);
        std::fs::write(t.path().join("judge-calibration.json"), edited.to_string()).unwrap();
    };
    // κ 0.99 on 500 labels claimed over a table of 4 with κ 0.
    write(&|j| {
        j["overall"]["n"] = json!(500);
        j["overall"]["kappa"] = json!(0.99);
        j["overall"]["confusion"] = json!({"judge_pass_human_pass": 1, "judge_pass_human_fail": 1, "judge_fail_human_pass": 1, "judge_fail_human_fail": 1});
    });
    let (code, out, _) = gate(&t, &server, ", calibration: {min_kappa: 0.6}");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("judge-calibration.json: judge `judge`: the file says κ 0.99 on 500 labels, its confusion table gives κ 0.00 on 4 labels; figures are computed, never edited: run `evalgate judge calibrate` again"),
        "{out}"
    );
    // A table and figures that agree, inflated together: not the sum of its criteria's.
    write(&|j| {
        let big = json!({"judge_pass_human_pass": 250, "judge_pass_human_fail": 0, "judge_fail_human_pass": 0, "judge_fail_human_fail": 250});
        j["overall"] = json!({"n": 500, "base_rate": 0.5, "agreement": 1.0, "kappa": 1.0, "kappa_interval": [1.0, 1.0], "confusion": big});
    });
    let (code, out, _) = gate(&t, &server, ", calibration: {min_kappa: 0.6}");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("judge `judge`: its overall table (500 labels) is not the sum of its criteria's (60 labels)"),
        "{out}"
    );
    // A criterion's own figures are checked as well.
    write(&|j| j["criteria"][0]["kappa"] = json!(0.95));
    let (code, out, _) = gate(&t, &server, ", calibration: {min_kappa: 0.6}");
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("judge `judge` (llm): the file says κ 0.95 on 60 labels"), "{out}");
}

#[test]
fn labels_are_compared_only_with_a_run_of_the_same_suite_and_tasks() {
    let server = stand_in();
    let (t, _) = calibrated(&server);
    let args = ["--labels", "labels.jsonl", "--probes", "0", "-o", "other.json"];
    // Another suite (another id), whose tasks and judge happen to match.
    std::fs::write(t.path().join("b.yaml"), labelled_suite(&server).replace("suite: t\n", "suite: b\n")).unwrap();
    let (code, _, stderr) = evalgate(&t, &[&["judge", "calibrate", "b.yaml"][..], &args].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("evalgate-out/results.json is a run of suite `t`, not of `b`"), "{stderr}");
    // The same suite, a judged task edited since the run.
    std::fs::write(t.path().join("c.yaml"), labelled_suite(&server).replace("'item 03'", "'item 03, reworded'"))
        .unwrap();
    let (code, _, stderr) = evalgate(&t, &[&["judge", "calibrate", "c.yaml"][..], &args].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("evalgate-out/results.json: task `i03` ran as defined otherwise than in the suite now"),
        "{stderr}"
    );
    // `judge sample` reads the results through the same door.
    let (code, _, stderr) = evalgate(&t, &["judge", "sample", "c.yaml", "--n", "3"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("task `i03` ran as defined otherwise"), "{stderr}");
    assert!(!t.path().join("other.json").exists());
}

#[test]
fn probes_follow_the_suites_cassette_mode_and_never_run_on_nothing() {
    let refusing = Arc::new(AtomicBool::new(false));
    let server = stand_in_with(refusing.clone());
    let tasks = "
        - {id: a, prompt: pass 2, grade: [{type: llm, contains: ok}]}
        - {id: b, prompt: fail 3, grade: [{type: llm, contains: ok}]}
        ";
    let yaml = header(&server, "") + "cassettes: {mode: replay}\ntasks:\n" + &indent(&unindent(tasks), 2);
    let labels = r#"{"task": "a", "grader": "llm", "verdict": "pass", "labeller": "ana", "date": "2026-11-27"}"#;
    let t = Test::new().write("evalgate.yaml", &yaml).write("labels.jsonl", labels);
    let (code, _, stderr) = evalgate(&t, &["run", "--record", "evalgate.yaml"]);
    assert_eq!(code, 1, "{stderr}");
    let calibrate = ["judge", "calibrate", "evalgate.yaml", "--labels", "labels.jsonl"];
    // No flag: the suite replays, and its cassette does not hold the probes: an error, no
    // live request, no file.
    let asked = server.requests();
    let (code, stdout, stderr) = evalgate(&t, &calibrate);
    let cassette = std::fs::read_to_string(t.path().join("cassettes/t.jsonl")).unwrap_or_default();
    assert_eq!(code, 2, "{stdout}{stderr}{cassette}");
    assert_eq!(server.requests(), asked, "a replaying suite's probes were asked live");
    assert!(stderr.contains("bias probes of judge `judge` on task `a`: "), "{stderr}");
    assert!(stderr.contains("(`--probes 0` skips the probes)"), "{stderr}");
    assert!(!t.path().join("judge-calibration.json").exists());
    // Recorded, then replayed with no flag: no request.
    let (code, _, stderr) = evalgate(&t, &[&calibrate[..], &["--record-missing"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let asked = server.requests();
    let (code, _, stderr) = evalgate(&t, &calibrate);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(server.requests(), asked);
    // The judge refuses the key: the probes cannot run, an error, not an empty table.
    refusing.store(true, Ordering::SeqCst);
    let (code, stdout, stderr) = evalgate(&t, &[&calibrate[..], &["--record", "-o", "gone.json"]].concat());
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("bias probes of judge `judge` on task `a`: judge: "), "{stderr}");
    assert!(stderr.contains("401"), "{stderr}");
    assert!(!t.path().join("gone.json").exists());
}
