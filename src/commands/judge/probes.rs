//! Bias probes: the judge asked again, live and uncached, on outputs of the run changed in a
//! way that must not change its verdict — the rubric's criteria reversed (position), the
//! answer padded with a restatement of itself (verbosity), the reference echoed after it
//! (reference leak) — and how often its verdict flipped. No labels needed.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::grade::{Grade, GradeInput, Graded, JudgeCheck};
use crate::llm::runtime::LlmRuntime;
use crate::results::judges::{BiasProbes, Flips};
use crate::results::{Results, Status};
use crate::stats::round;
use crate::suite::model::{Suite, Task};
use crate::template::Bindings;
use crate::trace::Trace;

/// The padding of the verbosity probe: the answer again, and words that add nothing.
fn padded(output: &str) -> String {
    format!(
        "{output}\n\nTo put it another way, and in more detail: {output}\n\nI hope this thorough and \
         comprehensive explanation fully addresses every aspect of the question."
    )
}

/// A verdict per criterion (a rubric), or the grader's (key "").
fn verdicts(g: &Graded) -> BTreeMap<String, bool> {
    match g.evidence.as_ref().and_then(serde_json::Value::as_array) {
        Some(criteria) => criteria
            .iter()
            .filter_map(|c| Some((c.get("criterion")?.as_str()?.to_owned(), c.get("met")?.as_bool()?)))
            .collect(),
        None => BTreeMap::from([(String::new(), g.passed)]),
    }
}

impl Flips {
    fn add(&mut self, base: &BTreeMap<String, bool>, probed: &BTreeMap<String, bool>) {
        for (k, v) in base {
            if let Some(w) = probed.get(k) {
                self.compared += 1;
                self.flips += u64::from(v != w);
            }
        }
        self.flip_rate = (self.compared > 0).then(|| round(self.flips as f64 / self.compared as f64));
    }
}

/// Probes the judge `name` on the first output of up to `most` of its judged items. A probe
/// that could not be asked (the judge unreachable, no key, a cassette that does not hold
/// it), or no output to probe, is an error: flip rates over what happened to answer would
/// read as a judge that does not flip.
pub async fn probe(
    suite: &Suite,
    results: &Results,
    name: &str,
    most: usize,
    llm: &LlmRuntime,
) -> Result<BiasProbes, String> {
    let vars = Arc::new(suite.vars.clone());
    let mut probes = BiasProbes::default();
    let items = results.tasks.iter().filter_map(|r| Some((r, suite.tasks.iter().find(|t| t.id == r.id)?)));
    let items = items.flat_map(|(r, task)| {
        let judged = task.graders.iter().filter(|g| g.judge(suite.judge.as_ref()).is_some_and(|(n, _)| n == name));
        let first = r.trials.iter().find(|t| t.output.is_some() && t.status != Status::Error);
        judged.filter_map(move |g| Some((task, first?, g.judge_check()?)))
    });
    let failed = |task: &Task, e: String| {
        format!("bias probes of judge `{name}` on task `{}`: {e} (`--probes 0` skips the probes)", task.id)
    };
    for (task, trial, check) in items.take(most) {
        let mut bindings = Bindings::new(vars.clone(), &task.id);
        bindings.prompt = trial.prompt.clone().unwrap_or_default();
        let output = trial.output.clone().unwrap_or_default();
        bindings.agent_output = Some(output.clone());
        let ask = Asker { suite, task, bindings: &bindings, llm };
        let base = ask.verdicts(check, &output).await.map_err(|e| failed(task, e))?;
        probes.items += 1;
        if let Some(reversed) = check.reversed() {
            let v = ask.verdicts(&reversed, &output).await.map_err(|e| failed(task, e))?;
            probes.position.add(&base, &v);
        }
        let v = ask.verdicts(check, &padded(&output)).await.map_err(|e| failed(task, e))?;
        probes.verbosity.add(&base, &v);
        if let Some(reference) = check.reference(&bindings) {
            let leaked = format!("{output}\n\nReference answer: {reference}");
            let v = ask.verdicts(check, &leaked).await.map_err(|e| failed(task, e))?;
            probes.reference_leak.add(&base, &v);
        }
    }
    if probes.items == 0 {
        return Err(format!(
            "bias probes of judge `{name}`: the results hold no output it judged to probe (`--probes 0` skips the probes)"
        ));
    }
    Ok(probes)
}

struct Asker<'a> {
    suite: &'a Suite,
    task: &'a Task,
    bindings: &'a Bindings,
    llm: &'a LlmRuntime,
}

impl Asker<'_> {
    /// The verdicts of `check` on `output`, or why the judge gave none.
    async fn verdicts(&self, check: &JudgeCheck, output: &str) -> Result<BTreeMap<String, bool>, String> {
        let trace = Trace::default();
        let input = GradeInput {
            output,
            output_cut: false,
            trace: &trace,
            latency: std::time::Duration::ZERO,
            started_at: std::time::SystemTime::now(),
            exit_code: None,
            bindings: self.bindings,
            workdir: &self.suite.dir,
            timeout: self.task.timeout,
            llm: self.llm,
            tool_result: None,
            tool_error: None,
            judge: self.suite.judge.as_ref(),
        };
        check.grade(&input, &mut Vec::new()).await.map(|g| verdicts(&g))
    }
}
