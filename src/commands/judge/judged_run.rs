//! The suite and the run a judge subcommand reads, checked to belong together: the suite's
//! judges as results.json records them, and the refusal of another suite's or judge's verdicts.

use crate::error::Error;
use crate::results::Results;
use crate::results::judges::JudgeRun;
use crate::suite::model::Suite;

/// Every judge the suite's graders ask, by name, as results.json records them.
pub fn judges(suite: &Suite) -> std::collections::BTreeMap<String, JudgeRun> {
    let graders = suite.tasks.iter().flat_map(|t| &t.graders);
    graders
        .filter_map(|g| g.judge(suite.judge.as_ref()))
        .map(|(name, spec)| {
            let advisory = spec.calibration.as_ref().and_then(|c| c.advisory.clone());
            (name.to_owned(), JudgeRun { identity: crate::llm::judge_calibration::identity(spec), advisory })
        })
        .collect()
}

/// The suite, and the results of a run of it: every judge subcommand reads them here, so
/// none compares a judge's verdicts from another suite, another judge or other tasks.
pub(super) fn load(suite: &std::path::Path, results: &std::path::Path) -> Result<(Suite, Results), Error> {
    let suite = crate::suite::load_suite(suite, &crate::suite::LoadOptions::default())?;
    let read = crate::commands::results_file::read_results(results)?;
    same_suite(&suite, &read, results)?;
    Ok((suite, read))
}

/// The verdicts in `results` must be this suite's judges' on this suite's tasks as they are
/// now: the same suite id, each judge's identity as recorded, and each judged task's
/// definition hash (the task, its agent, the judge, the servers, the variables) as when it
/// ran. Labels bound to another suite's outputs, or a calibration bound to one judge from
/// another's verdicts, would be a lie.
fn same_suite(suite: &Suite, results: &Results, file: &std::path::Path) -> Result<(), Error> {
    let file = file.display();
    if results.suite.id != suite.id {
        return Err(Error::Usage(format!(
            "{file} is a run of suite `{}`, not of `{}`: give the results of a run of this suite",
            results.suite.id, suite.id
        )));
    }
    for (name, judge) in judges(suite) {
        match results.judges.get(&name).map(|r| &r.identity) {
            Some(identity) if *identity == judge.identity => {}
            Some(identity) => {
                return Err(Error::Usage(format!(
                    "{file} was judged by another judge `{name}` ({}): run the suite again",
                    judge.identity.changes_from(identity)
                )));
            }
            None => {
                return Err(Error::Usage(format!(
                    "{file} does not record judge `{name}` (written by an older evalgate, or another suite): run the suite again"
                )));
            }
        }
    }
    let judged =
        |task: &crate::suite::model::Task| task.graders.iter().any(|g| g.judge(suite.judge.as_ref()).is_some());
    let changed: Vec<&str> = results
        .tasks
        .iter()
        .filter_map(|r| Some((r, suite.tasks.iter().find(|t| t.id == r.id).filter(|t| judged(t))?)))
        .filter(|(r, task)| r.definition.as_deref() != Some(suite.task_definition(task, &r.agent).as_str()))
        .map(|(r, _)| r.id.as_str())
        .collect();
    if let Some(first) = changed.first() {
        return Err(Error::Usage(format!(
            "{file}: task `{first}`{} ran as defined otherwise than in the suite now (another suite, an edit since, or `--var` values): run the suite again",
            match changed.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            }
        )));
    }
    Ok(())
}
