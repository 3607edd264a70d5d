//! `--changed-since`'s choices, pure: whether a base run may be carried from at all (its
//! age, how far behind it is), for each task whether it runs (and why) or is carried, and
//! the seeded audit sample of carried tasks that runs anyway.

use std::collections::BTreeSet;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::results::carry::{Carried, TaskFingerprint, age};
use crate::results::{Results, Status, TaskResult};

/// Carry from a base run at most this old (`--max-carry-age`).
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// Carry from a base run at most this many commits behind (`--max-carry-commits`).
pub const DEFAULT_MAX_COMMITS: u64 = 50;
/// The share of carried tasks the audit runs anyway (`--audit-rate`).
pub const DEFAULT_AUDIT_RATE: f64 = 0.1;

/// Why no task may be carried from `base`: it is older than `max_age` (as of `now`, RFC
/// 3339), or `behind` (commits from its commit to this one, when known) is more than
/// `max_commits`, or its start cannot be read.
pub fn expired(base: &Results, now: &str, max_age: Duration, behind: Option<u64>, max_commits: u64) -> Option<String> {
    let Some(age) = age(&base.started_at, now) else {
        return Some(format!("the base run's start ({:?}) cannot be read", base.started_at));
    };
    if age > max_age {
        return Some(format!(
            "the base run is {} old, older than --max-carry-age {}",
            humantime::format_duration(Duration::from_secs(age.as_secs())),
            humantime::format_duration(max_age)
        ));
    }
    match behind {
        Some(n) if n > max_commits => {
            Some(format!("the base run is {n} commits behind, more than --max-carry-commits {max_commits}"))
        }
        _ => None,
    }
}

/// A task with fingerprint `now`, `was` its result in the run `base`: carried when its
/// fingerprint there is the same and its evidence whole ([`Carried::take`]), else why it runs.
pub fn choose(base: &Results, was: Option<&TaskResult>, now: &TaskFingerprint) -> Result<Carried, String> {
    let Some(task) = was else {
        return Err("new: not in the base run".into());
    };
    let Some(was) = &task.fingerprint else {
        return Err("the base run recorded no fingerprint".into());
    };
    let changed = now.changed_since(was);
    if !changed.is_empty() {
        return Err(format!("changed: {}", changed.join(", ")));
    }
    Carried::take(task, base, now.clone())
}

/// The carried tasks the audit runs: `rate` of `ids` (at least one when `rate` > 0 and
/// there is one), chosen by `seed` alone, so a run can be repeated.
pub fn audit_sample<'a>(ids: impl IntoIterator<Item = &'a str>, rate: f64, seed: u64) -> BTreeSet<String> {
    let mut ranked: Vec<(u64, &str)> = ids
        .into_iter()
        .map(|id| {
            let digest = Sha256::digest(format!("{seed}\0{id}").as_bytes());
            (u64::from_be_bytes(digest[..8].try_into().expect("8 bytes")), id)
        })
        .collect();
    ranked.sort_unstable();
    let want = match rate {
        r if r <= 0.0 || ranked.is_empty() => 0,
        r => ((r.min(1.0) * ranked.len() as f64).ceil() as usize).max(1),
    };
    ranked.into_iter().take(want).map(|(_, id)| id.to_owned()).collect()
}

/// The audited tasks whose fresh verdict is not the carried one: `(id, carried, now)`.
pub fn mismatches<'a>(
    carried: impl IntoIterator<Item = (&'a str, Status)>,
    fresh: &'a [TaskResult],
) -> Vec<(String, Status, Status)> {
    let fresh: std::collections::HashMap<&str, Status> = fresh.iter().map(|t| (t.id.as_str(), t.status)).collect();
    carried
        .into_iter()
        .filter_map(|(id, was)| {
            let now = *fresh.get(id)?;
            (now != was).then(|| (id.to_owned(), was, now))
        })
        .collect()
}

/// A seed from a text (the commit under test, else the run's start): the same commit
/// audits the same tasks.
pub fn seed_of(text: &str) -> u64 {
    u64::from_be_bytes(Sha256::digest(text.as_bytes())[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::results;

    #[test]
    fn the_audit_takes_its_rate_at_least_one_and_the_same_for_a_seed() {
        let ids: Vec<String> = (0..200).map(|i| format!("t{i}")).collect();
        let sample = |rate, seed| audit_sample(ids.iter().map(String::as_str), rate, seed);
        assert_eq!(sample(0.1, 1).len(), 20);
        assert_eq!(sample(0.1, 1), sample(0.1, 1));
        assert_ne!(sample(0.1, 1), sample(0.1, 2));
        assert_eq!(audit_sample(["a"], 0.01, 1).len(), 1);
        assert!(sample(0.0, 1).is_empty());
    }

    #[test]
    fn an_old_or_far_behind_base_is_expired() {
        let base = Results { started_at: "2026-01-01T00:00:00Z".into(), ..results(vec![]) };
        let now = "2026-01-03T00:00:00Z";
        assert_eq!(expired(&base, now, DEFAULT_MAX_AGE, Some(3), 50), None);
        assert!(expired(&base, now, Duration::from_secs(3600), None, 50).unwrap().contains("--max-carry-age"));
        assert!(expired(&base, now, DEFAULT_MAX_AGE, Some(51), 50).unwrap().contains("51 commits behind"));
        let unreadable = Results { started_at: "yesterday".into(), ..results(vec![]) };
        assert!(expired(&unreadable, now, DEFAULT_MAX_AGE, None, 50).is_some());
    }
}
