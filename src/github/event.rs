//! Which pull request a workflow run belongs to: `--pr`, else `$GITHUB_EVENT_PATH`, else
//! `$GITHUB_REF` (`refs/pull/N/merge`); the repository from `$GITHUB_REPOSITORY`.

use serde_json::Value;

/// The repository (`owner/name`) and pull request number, when the run is for a PR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub owner: String,
    pub repo: String,
    pub number: u64,
}

/// `explicit` (from `--pr`) wins over anything the runner says.
pub fn current(explicit: Option<u64>) -> Option<PullRequest> {
    let repository = std::env::var("GITHUB_REPOSITORY").ok()?;
    let (owner, repo) = repository.split_once('/').filter(|(o, r)| !o.is_empty() && !r.is_empty())?;
    let number = explicit.or_else(|| {
        let event = std::env::var_os("GITHUB_EVENT_PATH")
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str::<Value>(&t).ok());
        event.as_ref().and_then(number_from_event).or_else(|| number_from_ref(&std::env::var("GITHUB_REF").ok()?))
    })?;
    Some(PullRequest { owner: owner.to_owned(), repo: repo.to_owned(), number })
}

/// `pull_request` / `pull_request_target`, `issue_comment` on a pull request, and
/// `workflow_run` of a same-repository pull request (GitHub leaves a fork's list empty).
pub fn number_from_event(event: &Value) -> Option<u64> {
    let issue_on_pr = || event.get("issue").filter(|i| i.get("pull_request").is_some())?.get("number")?.as_u64();
    event
        .pointer("/pull_request/number")
        .and_then(Value::as_u64)
        .or_else(issue_on_pr)
        .or_else(|| event.pointer("/workflow_run/pull_requests/0/number").and_then(Value::as_u64))
}

/// `refs/pull/<n>/merge` (or `/head`).
pub fn number_from_ref(git_ref: &str) -> Option<u64> {
    git_ref.strip_prefix("refs/pull/")?.split('/').next()?.parse().ok()
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
        assert_eq!(number_from_event(&json!({"workflow_run": {"pull_requests": [{"number": 4}]}})), Some(4));
        assert_eq!(number_from_event(&json!({"workflow_run": {"pull_requests": []}})), None);
        assert_eq!(number_from_event(&json!({"ref": "refs/heads/main"})), None);
    }

    #[test]
    fn pull_request_numbers_from_refs() {
        assert_eq!(number_from_ref("refs/pull/12/merge"), Some(12));
        assert_eq!(number_from_ref("refs/heads/main"), None);
        assert_eq!(number_from_ref("refs/pull/x/merge"), None);
    }
}
