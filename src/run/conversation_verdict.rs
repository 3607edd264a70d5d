//! A conversation trial's verdict from its turns and its whole-conversation graders, by
//! the task's `conversation.verdict` rule (docs/conversations.md).

use crate::results::{Status, TurnAuthor, TurnResult};
use crate::suite::model::{Aggregation, Verdict};

/// The whole-conversation graders' verdict (`score_task` over them); `None` without any.
pub type Whole = Option<(Status, f64, Option<String>)>;

/// The trial's status, score and reason. The scripted turns are the turns of the rule (a
/// skipped one fails and scores 0); the simulated user's turns have no graders and count in
/// no rule: with a simulated user the whole-conversation graders must pass under every
/// rule, so reaching `max_turns`, or the simulator's word, never passes by itself.
/// `threshold`: the task's, the bar of `{score: …}` (default 1).
pub fn conversation_verdict(
    rule: Verdict,
    turns: &[TurnResult],
    whole: Whole,
    threshold: Option<f64>,
    simulated: bool,
) -> (Status, f64, Option<String>) {
    let scripted: Vec<&TurnResult> = turns.iter().filter(|t| t.by == TurnAuthor::Script).collect();
    if let Some(t) = scripted.iter().find(|t| t.status == Status::Error) {
        let reason = format!("turn {}: {}", t.turn, t.reason.as_deref().unwrap_or("error"));
        return (Status::Error, 0.0, Some(reason));
    }
    if let Some((Status::Error, _, reason)) = &whole {
        // A conversation stopped at a failed turn has failed: a whole-conversation grader
        // that could not judge what never ran does not make it an error (retried away).
        let stopped = scripted
            .iter()
            .find(|t| t.status == Status::Failed)
            .filter(|_| scripted.iter().any(|t| t.status == Status::Skipped));
        if let Some(t) = stopped {
            let why = format!("turn {}: {}", t.turn, t.reason.as_deref().unwrap_or("failed"));
            return (Status::Failed, 0.0, Some(why));
        }
        return (Status::Error, 0.0, reason.clone());
    }
    let whole_passed = whole.as_ref().is_none_or(|(s, _, _)| *s == Status::Passed);
    let whole_failure = || match &whole {
        Some((_, _, reason)) => format!("the whole conversation: {}", reason.as_deref().unwrap_or("failed")),
        None => "the whole conversation failed".to_owned(),
    };
    let first_failed = |list: &[&TurnResult]| {
        list.iter().find(|t| t.status != Status::Passed).map(|t| {
            let why = t.reason.as_deref().unwrap_or(t.status.label());
            format!("turn {}: {why}", t.turn)
        })
    };
    let mean_with_whole = |list: &[&TurnResult]| {
        let mut scores: Vec<f64> = list.iter().map(|t| t.score).collect();
        scores.extend(whole.as_ref().map(|(_, s, _)| *s));
        if scores.is_empty() { 0.0 } else { scores.iter().sum::<f64>() / scores.len() as f64 }
    };
    match rule {
        Verdict::All => {
            let score = mean_with_whole(&scripted);
            match first_failed(&scripted) {
                Some(why) => (Status::Failed, score, Some(why)),
                None if !whole_passed => (Status::Failed, score, Some(whole_failure())),
                None => (Status::Passed, score, None),
            }
        }
        Verdict::Final => {
            let last = scripted.iter().rev().find(|t| t.status != Status::Skipped).copied();
            let list: Vec<&TurnResult> = last.into_iter().collect();
            let score = mean_with_whole(&list);
            match (last, first_failed(&list)) {
                (_, Some(why)) => (Status::Failed, score, Some(format!("the final {why}"))),
                _ if !whole_passed => (Status::Failed, score, Some(whole_failure())),
                (None, None) if !simulated => (Status::Failed, score, Some("no turn ran".into())),
                _ => (Status::Passed, score, None),
            }
        }
        Verdict::Share(share) => {
            let score = mean_with_whole(&scripted);
            let passed = scripted.iter().filter(|t| t.status == Status::Passed).count();
            let n = scripted.len();
            let reached = n == 0 || passed as f64 + 1e-9 >= share.get() * n as f64;
            if !reached {
                let why = format!("{passed}/{n} turns passed, a share of {} required", share.get());
                (Status::Failed, score, Some(why))
            } else if !whole_passed {
                (Status::Failed, score, Some(whole_failure()))
            } else {
                (Status::Passed, score, None)
            }
        }
        Verdict::Score(aggregation) => {
            let mut scores: Vec<f64> = scripted.iter().map(|t| t.score).collect();
            scores.extend(whole.as_ref().map(|(_, s, _)| *s));
            let score = match aggregation {
                _ if scores.is_empty() => 0.0,
                // `f64::min` and `max` pass a NaN over: one NaN makes the score NaN (a fail).
                _ if scores.iter().any(|s| s.is_nan()) => f64::NAN,
                Aggregation::Mean => mean_with_whole(&scripted),
                Aggregation::Min => scores.iter().copied().fold(f64::INFINITY, f64::min),
                Aggregation::Max => scores.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            };
            let bar = threshold.unwrap_or(1.0);
            // A NaN score (a grader's, or their mean) compares to nothing: it fails.
            if score.is_nan() || score + 1e-9 < bar {
                (Status::Failed, score, Some(format!("score {score:.2} below threshold {bar:.2}")))
            } else if simulated && !whole_passed {
                (Status::Failed, score, Some(whole_failure()))
            } else {
                (Status::Passed, score, None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::Rate;

    fn turn(n: u32, status: Status, score: f64) -> TurnResult {
        TurnResult {
            turn: n,
            by: TurnAuthor::Script,
            status,
            score,
            reason: None,
            prompt: None,
            output: None,
            output_truncated: false,
            latency_ms: None,
            tool_calls: Vec::new(),
            graders: Vec::new(),
        }
    }

    fn passed(whole: &Whole, rule: Verdict, turns: &[TurnResult], simulated: bool) -> Status {
        conversation_verdict(rule, turns, whole.clone(), Some(0.6), simulated).0
    }

    #[test]
    fn each_rule_reads_the_turns_and_the_whole_conversation() {
        let turns = [turn(1, Status::Passed, 1.0), turn(2, Status::Failed, 0.0), turn(3, Status::Passed, 1.0)];
        let ok: Whole = Some((Status::Passed, 1.0, None));
        let bad: Whole = Some((Status::Failed, 0.0, Some("`g` failed".into())));
        let share = |x: f64| Verdict::Share(Rate::new(x).unwrap());
        assert_eq!(passed(&ok, Verdict::All, &turns, false), Status::Failed);
        assert_eq!(passed(&ok, Verdict::Final, &turns, false), Status::Passed);
        assert_eq!(passed(&bad, Verdict::Final, &turns, false), Status::Failed);
        assert_eq!(passed(&ok, share(0.6), &turns, false), Status::Passed);
        assert_eq!(passed(&ok, share(0.7), &turns, false), Status::Failed);
        assert_eq!(passed(&bad, share(0.6), &turns, false), Status::Failed);
        // mean of 1, 0, 1 and the whole's 1 is 0.75 ≥ 0.6; min is 0; max is 1.
        assert_eq!(passed(&bad, Verdict::Score(Aggregation::Mean), &turns, false), Status::Failed);
        assert_eq!(passed(&ok, Verdict::Score(Aggregation::Mean), &turns, false), Status::Passed);
        assert_eq!(passed(&ok, Verdict::Score(Aggregation::Min), &turns, false), Status::Failed);
        assert_eq!(passed(&ok, Verdict::Score(Aggregation::Max), &turns, false), Status::Passed);
        // A skipped turn (stopped) fails and scores 0; `final` reads the last turn run.
        let stopped = [turn(1, Status::Failed, 0.0), turn(2, Status::Skipped, 0.0)];
        assert_eq!(passed(&None, Verdict::Final, &stopped, false), Status::Failed);
        assert_eq!(passed(&None, share(0.5), &stopped, false), Status::Failed);
        // A whole-conversation grader that could not judge the turns never run: still a fail.
        let error: Whole = Some((Status::Error, 0.0, Some("uses {turns.2.output}".into())));
        assert_eq!(passed(&error, Verdict::All, &stopped, false), Status::Failed);
        assert_eq!(passed(&error, Verdict::All, &turns, false), Status::Error);
        // A NaN score compares to nothing: under every aggregation it fails.
        let nan = [turn(1, Status::Passed, f64::NAN)];
        for aggregation in [Aggregation::Mean, Aggregation::Min, Aggregation::Max] {
            assert_eq!(passed(&None, Verdict::Score(aggregation), &nan, false), Status::Failed);
        }
    }

    /// A simulated user's turns count in no rule: the whole-conversation graders decide,
    /// even where the turns' scores alone would pass.
    #[test]
    fn a_simulated_conversation_passes_only_on_its_graders() {
        let mut simulated = turn(1, Status::Passed, 1.0);
        simulated.by = TurnAuthor::SimulatedUser;
        let turns = [turn(1, Status::Passed, 1.0), simulated.clone(), simulated];
        let bad: Whole = Some((Status::Failed, 0.0, None));
        for rule in [Verdict::All, Verdict::Final, Verdict::Share(Rate::new(0.1).unwrap())] {
            assert_eq!(passed(&bad, rule, &turns, true), Status::Failed, "{rule:?}");
        }
        let (status, score, _) = conversation_verdict(Verdict::Score(Aggregation::Max), &turns, bad, Some(0.5), true);
        assert_eq!((status, score), (Status::Failed, 1.0));
    }
}
