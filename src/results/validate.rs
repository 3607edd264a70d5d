//! Reading a `results.json` that came from elsewhere (a pull request, an artifact): checked
//! against the published schema (`evalgate schema --results`), then for what a schema cannot
//! say (unique ids, counts that match the tasks), every problem with its key path.

use std::collections::HashSet;
use std::sync::LazyLock;

use serde_json::Value;

use super::run_results::{RESULTS_FORMAT, Results, Status};
use super::score::TaskScore;
use super::totals;

/// The JSON Schema of `results.json`.
pub fn schema() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<Results>()
}

static VALIDATOR: LazyLock<jsonschema::Validator> =
    LazyLock::new(|| jsonschema::validator_for(&schema().to_value()).expect("the results schema compiles"));

/// `text` as results, or every problem found, each `key.path: what`.
pub fn parse(text: &str) -> Result<Results, Vec<String>> {
    let value: Value = serde_json::from_str(text).map_err(|e| vec![format!("not JSON: {e}")])?;
    match value.get("format").and_then(Value::as_str) {
        Some(RESULTS_FORMAT) => {}
        Some(other) => {
            return Err(vec![format!(
                "format: unknown results format `{other}`; this evalgate reads `{RESULTS_FORMAT}`"
            )]);
        }
        None => return Err(vec![format!("format: missing; a results file says `\"format\": \"{RESULTS_FORMAT}\"`")]),
    }
    let problems: Vec<String> =
        VALIDATOR.iter_errors(&value).map(|e| located(&e.instance_path().to_string(), &e.to_string())).collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut results: Results = serde_json::from_value(value).map_err(|e| vec![e.to_string()])?;
    let problems = consistency(&results);
    if !problems.is_empty() {
        return Err(problems);
    }
    // An adaptive task's score is made from its trials, whatever the file says: an earlier
    // evalgate wrote the raw share, which its stopping rule biases (`TaskScore`).
    for task in results.tasks.iter_mut().filter(|t| t.adaptive.is_some() && !t.trials.is_empty()) {
        task.score = TaskScore::of(&task.trials, task.adaptive);
        task.trials_passed = Some(task.trials.iter().filter(|t| t.status == Status::Passed).count() as u32);
    }
    Ok(results)
}

/// A JSON pointer (`/tasks/3/score`) as a key path (`tasks[3].score`) before `message`.
fn located(pointer: &str, message: &str) -> String {
    let path = crate::json::dotted(pointer);
    if path.is_empty() { message.to_owned() } else { format!("{path}: {message}") }
}

/// What the schema cannot check: task ids are unique, the totals count the tasks, and
/// `verdict.passed` is its outcome's. (Whether the verdict is the one the tasks give is
/// worked out by the gate, which the commands reading a file ask: `read_results`.)
fn consistency(results: &Results) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (i, task) in results.tasks.iter().enumerate() {
        if !seen.insert(task.id.as_str()) {
            problems.push(format!("tasks[{i}].id: duplicate task id `{}`", task.id));
        }
        if let Some(problem) = task.adaptive.and_then(|d| d.problem(task.trials.len() as u32)) {
            problems.push(format!("tasks[{i}].adaptive: {problem}"));
        }
        // Reports subtract the trials run from the trials planned.
        if let Some(planned) = task.trials_planned.filter(|&p| p < task.repeat) {
            problems.push(format!(
                "tasks[{i}].trials_planned: {planned}, but the task ran {} trials (`repeat`): a plan holds at least the trials run",
                task.repeat
            ));
        }
    }
    let counted = totals(&results.tasks);
    let (written, counted) = (&results.totals, &counted);
    for (key, written, counted) in [
        ("tasks", written.tasks, counted.tasks),
        ("passed", written.passed, counted.passed),
        ("failed", written.failed, counted.failed),
        ("errors", written.errors, counted.errors),
        ("skipped", written.skipped, counted.skipped),
        ("flaky", written.flaky, counted.flaky),
    ] {
        if written != counted {
            problems.push(format!("totals.{key}: {written}, but the tasks count {counted}"));
        }
    }
    let verdict = &results.verdict;
    if verdict.passed != verdict.outcome.passed() {
        problems.push(format!("verdict.passed: {}, but the outcome is `{}`", verdict.passed, verdict.outcome.label()));
    }
    problems
}
