//! Bias probes: the judge asked again, live and uncached, on outputs of the run changed in a
//! way that must not change its verdict — the rubric's criteria reversed (position), the
//! answer padded with a restatement of itself (verbosity), the reference echoed after it
//! (reference leak) — and how often its verdict flipped. No labels needed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;

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

/// Probes the judge `name` on the first output of up to `most` of its judged items. Every
/// call is asked at once: the judge's client holds them to its `max_concurrency` and its
/// rate-limit headers (`llm::limiter`), as a run's calls are; progress goes to stderr. A
/// probe that could not be asked (the judge unreachable, no key, a cassette that does not
/// hold it), or no output to probe, is an error: flip rates over what happened to answer
/// would read as a judge that does not flip.
pub async fn probe(
    suite: &Suite,
    results: &Results,
    name: &str,
    most: usize,
    llm: &LlmRuntime,
) -> Result<BiasProbes, String> {
    let vars = Arc::new(suite.vars.clone());
    let items = results.tasks.iter().filter_map(|r| Some((r, suite.tasks.iter().find(|t| t.id == r.id)?)));
    let items = items.flat_map(|(r, task)| {
        let judged = task.graders.iter().filter(|g| g.judge(suite.judge.as_ref()).is_some_and(|(n, _)| n == name));
        let first = r.trials.iter().find(|t| t.output.is_some() && t.status != Status::Error);
        judged.filter_map(move |g| Some((task, first?, g.judge_check()?)))
    });
    let items: Vec<Item> = items
        .take(most)
        .map(|(task, trial, check)| {
            let mut bindings = Bindings::new(vars.clone(), &task.id);
            bindings.prompt = trial.prompt.clone().unwrap_or_default();
            let output = trial.output.clone().unwrap_or_default();
            bindings.agent_output = Some(output.clone());
            let leaked = check.reference(&bindings).map(|r| format!("{output}\n\nReference answer: {r}"));
            Item {
                task,
                reversed: check.reversed(),
                check: check.clone(),
                padded: padded(&output),
                output,
                leaked,
                bindings,
            }
        })
        .collect();
    if items.is_empty() {
        return Err(format!(
            "bias probes of judge `{name}`: the results hold no output it judged to probe (`--probes 0` skips the probes)"
        ));
    }
    let calls = items.iter().map(|i| 2 + usize::from(i.reversed.is_some()) + usize::from(i.leaked.is_some())).sum();
    let progress = Progress { judge: name, calls, done: AtomicUsize::new(0) };
    crate::errln!("bias probes of judge `{name}`: {calls} calls on {} outputs", items.len());
    let progress = &progress;
    let mut asked: FuturesUnordered<_> =
        items.iter().enumerate().map(|(i, item)| async move { (i, item.ask(suite, llm, progress).await) }).collect();
    let mut answers = Vec::with_capacity(items.len());
    while let Some(answered) = asked.next().await {
        answers.push(answered);
    }
    // In suite order, so the probe named when one could not be asked is always the same.
    answers.sort_by_key(|(i, _)| *i);
    let mut probes = BiasProbes::default();
    for (i, answered) in answers {
        let [base, position, verbosity, leak] = answered.map_err(|e| {
            format!("bias probes of judge `{name}` on task `{}`: {e} (`--probes 0` skips the probes)", items[i].task.id)
        })?;
        let base = base.expect("every item asks the base verdict");
        probes.items += 1;
        let probed =
            [(&mut probes.position, position), (&mut probes.verbosity, verbosity), (&mut probes.reference_leak, leak)];
        for (flips, verdicts) in probed {
            if let Some(verdicts) = verdicts {
                flips.add(&base, &verdicts);
            }
        }
    }
    Ok(probes)
}

/// One judged output to probe, with each changed form of it.
struct Item<'a> {
    task: &'a Task,
    check: JudgeCheck,
    /// The rubric's criteria reversed (a rubric of two or more).
    reversed: Option<JudgeCheck>,
    output: String,
    padded: String,
    /// The output with the reference after it (a check with a reference).
    leaked: Option<String>,
    bindings: Bindings,
}

/// Verdicts per criterion, or none where the probe does not apply.
type Answered = Result<[Option<BTreeMap<String, bool>>; 4], String>;

impl Item<'_> {
    /// The base verdicts and each probe's, asked at once.
    async fn ask(&self, suite: &Suite, llm: &LlmRuntime, progress: &Progress<'_>) -> Answered {
        let ask = Asker { suite, task: self.task, bindings: &self.bindings, llm };
        let (base, position, verbosity, leak) = tokio::join!(
            ask.counted(Some(&self.check), Some(&self.output), progress),
            ask.counted(self.reversed.as_ref(), Some(&self.output), progress),
            ask.counted(Some(&self.check), Some(&self.padded), progress),
            ask.counted(Some(&self.check), self.leaked.as_deref(), progress),
        );
        Ok([base?, position?, verbosity?, leak?])
    }
}

/// The probe calls done so far (answered or not), on stderr: about every tenth of them, and the last.
struct Progress<'a> {
    judge: &'a str,
    calls: usize,
    done: AtomicUsize,
}

impl Progress<'_> {
    fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let step = (self.calls / 10).max(1);
        if done.is_multiple_of(step) || done == self.calls {
            crate::errln!("bias probes of judge `{}`: {done} of {} calls done", self.judge, self.calls);
        }
    }
}

struct Asker<'a> {
    suite: &'a Suite,
    task: &'a Task,
    bindings: &'a Bindings,
    llm: &'a LlmRuntime,
}

impl Asker<'_> {
    /// The verdicts of `check` on `output` counted in `progress`, or none when the probe
    /// does not apply (no check or no output for it).
    async fn counted(
        &self,
        check: Option<&JudgeCheck>,
        output: Option<&str>,
        progress: &Progress<'_>,
    ) -> Result<Option<BTreeMap<String, bool>>, String> {
        let (Some(check), Some(output)) = (check, output) else { return Ok(None) };
        let verdicts = self.verdicts(check, output).await;
        progress.tick();
        verdicts.map(Some)
    }

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
            workspace: None,
            timeout: self.task.timeout,
            llm: self.llm,
            tool_result: None,
            tool_error: None,
            judge: self.suite.judge.as_ref(),
        };
        check.grade(&input, &mut Vec::new()).await.map(|g| verdicts(&g))
    }
}
