//! `evalgate judge sample`: the stratified items to label, written as a labels file to fill.

use std::fmt::Write as _;

use crate::cli::JudgeSampleArgs;
use crate::error::Error;

use super::labels::Label;

pub(super) fn sample(args: &JudgeSampleArgs) -> Result<i32, Error> {
    let (suite, results) = super::judged_run::load(&args.suite, &args.results)?;
    // A grader of the suite whose verdicts are its judge's (a task of another suite: none).
    let judged = |task: &str, g: &crate::results::GraderResult| {
        let task = suite.tasks.iter().find(|t| t.id == task);
        task.and_then(|t| t.graders.iter().find(|x| x.name == g.name))
            .is_some_and(|x| x.judge(suite.judge.as_ref()).is_some())
    };
    let picked = crate::results::judge_sample::judge_sample(&results, args.n, judged);
    if picked.is_empty() {
        return Err(Error::Usage(format!("{} has no judged item of the suite's judges", args.results.display())));
    }
    let mut text = String::new();
    for item in &picked {
        let label = Label {
            line: 0,
            task: item.task.to_owned(),
            grader: item.grader.to_owned(),
            criterion: item.criterion.clone(),
            trial: Some(item.trial),
            output_sha256: Some(item.output_sha256.clone()),
            judge: Some(item.judge),
            human: None,
            verdict: String::new(),
            labeller: String::new(),
            date: String::new(),
            note: String::new(),
        };
        let _ = writeln!(text, "{}", label.to_line(Some(item.output)));
    }
    // Through the redactor, as every output: outputs are the agent's.
    let text = crate::redact::text(&text).into_owned();
    match &args.output {
        Some(path) => {
            crate::files::write_atomic(path, text.as_bytes())?;
            crate::errln!("{} items to label written to {}", picked.len(), path.display());
        }
        None => crate::outln!("{}", text.trim_end()),
    }
    Ok(crate::exit::SUCCESS)
}
