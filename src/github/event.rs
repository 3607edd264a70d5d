//! Which pull request a workflow run belongs to, from `$GITHUB_EVENT_PATH` or `$GITHUB_REF`.

use serde_json::Value;

/// The repository (`owner/name`) and pull request number, when the run is for a PR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub owner: String,
    pub repo: String,
    pub number: u64,
}

pub fn current() -> Option<PullRequest> {
    let repository = std::env::var("GITHUB_REPOSITORY").ok()?;
    let (owner, repo) = repository.split_once('/')?;
    let event = std::env::var_os("GITHUB_EVENT_PATH")
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let number = event.as_ref().and_then(number_from_event).or_else(|| {
        // refs/pull/<n>/merge
        let r = std::env::var("GITHUB_REF").ok()?;
        r.strip_prefix("refs/pull/")?.split('/').next()?.parse().ok()
    })?;
    Some(PullRequest { owner: owner.to_owned(), repo: repo.to_owned(), number })
}

/// `pull_request` / `pull_request_target` events, and `issue_comment` on a pull request.
pub fn number_from_event(event: &Value) -> Option<u64> {
    event
        .pointer("/pull_request/number")
        .and_then(Value::as_u64)
        .or_else(|| event.get("issue").filter(|i| i.get("pull_request").is_some())?.get("number")?.as_u64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pull_request_numbers_from_events() {
        assert_eq!(number_from_event(&json!({"number": 7, "pull_request": {"number": 7}})), Some(7));
        assert_eq!(number_from_event(&json!({"issue": {"number": 9, "pull_request": {"url": "x"}}})), Some(9));
        assert_eq!(number_from_event(&json!({"issue": {"number": 9}})), None);
        assert_eq!(number_from_event(&json!({"ref": "refs/heads/main"})), None);
    }
}
