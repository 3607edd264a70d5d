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

/// Probes the judge `name` on the first output of up to `most` of its judged items.
pub async fn probe(suite: &Suite, results: &Results, name: &str, most: usize, llm: &LlmRuntime) -> BiasProbes {
    let vars = Arc::new(suite.vars.clone());
    let mut probes = BiasProbes::default();
    let items = results.tasks.iter().filter_map(|r| Some((r, suite.tasks.iter().find(|t| t.id == r.id)?)));
    let items = items.flat_map(|(r, task)| {
        let judged = task.graders.iter().filter(|g| g.judge(suite.judge.as_ref()).is_some_and(|(n, _)| n == name));
        let first = r.trials.iter().find(|t| t.output.is_some() && t.status != Status::Error);
        judged.filter_map(move |g| Some((task, first?, g.judge_check()?)))
    });
    for (task, trial, check) in items.take(most) {
        let mut bindings = Bindings::new(vars.clone(), &task.id);
        bindings.prompt = trial.prompt.clone().unwrap_or_default();
        let output = trial.output.clone().unwrap_or_default();
        bindings.agent_output = Some(output.clone());
        let ask = Asker { suite, task, bindings: &bindings, llm };
        let Some(base) = ask.verdicts(check, &output).await else { continue };
        probes.items += 1;
        if let Some(reversed) = check.reversed()
            && let Some(v) = ask.verdicts(&reversed, &output).await
        {
            probes.position.add(&base, &v);
        }
        if let Some(v) = ask.verdicts(check, &padded(&output)).await {
            probes.verbosity.add(&base, &v);
        }
        if let Some(reference) = check.reference(&bindings)
            && let Some(v) = ask.verdicts(check, &format!("{output}\n\nReference answer: {reference}")).await
        {
            probes.reference_leak.add(&base, &v);
        }
    }
    probes
}

struct Asker<'a> {
    suite: &'a Suite,
    task: &'a Task,
    bindings: &'a Bindings,
    llm: &'a LlmRuntime,
}

impl Asker<'_> {
    /// The verdicts of `check` on `output`; none when the judge could not answer.
    async fn verdicts(&self, check: &JudgeCheck, output: &str) -> Option<BTreeMap<String, bool>> {
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
        check.grade(&input, &mut Vec::new()).await.ok().map(|g| verdicts(&g))
    }
}
