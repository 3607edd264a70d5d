//! Which pull request a workflow run belongs to: `--pr`, else `$GITHUB_EVENT_PATH`, else
//! `$GITHUB_REF` (`refs/pull/N/merge`); the repository from `$GITHUB_REPOSITORY`; and the
//! commit the run tested.

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
        payload().as_ref().and_then(number_from_event).or_else(|| number_from_ref(&std::env::var("GITHUB_REF").ok()?))
    })?;
    Some(PullRequest { owner: owner.to_owned(), repo: repo.to_owned(), number })
}

/// The event that started the workflow (`$GITHUB_EVENT_PATH`), when there is one.
pub fn payload() -> Option<Value> {
    let path = std::path::PathBuf::from(std::env::var_os("GITHUB_EVENT_PATH")?);
    let text = crate::files::read::text(&path, crate::files::read::EVENT).ok()?;
    serde_json::from_str(&text).ok()
}

/// The commit the run tested: the pull request's head (`$GITHUB_SHA` is the merge commit
/// GitHub made for the run, which no one pushed), else `$GITHUB_SHA`.
pub fn head_sha() -> Option<String> {
    let event = payload().unwrap_or(Value::Null);
    sha_from_event(&event, std::env::var("GITHUB_SHA").ok())
}

/// `pull_request.head.sha`, `workflow_run.head_sha`, else the runner's sha — except on an
/// `issue_comment`, where that is the default branch's, not the pull request's. Only hex
/// is taken: the payload of a fork's pull request is not ours to print in a link.
pub fn sha_from_event(event: &Value, runner_sha: Option<String>) -> Option<String> {
    let from_event = event
        .pointer("/pull_request/head/sha")
        .or_else(|| event.pointer("/workflow_run/head_sha"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    hex_sha(&from_event.or_else(|| runner_sha.filter(|_| event.get("issue").is_none()))?)
}

/// `text` when it is a commit id (7 to 64 hex digits), lowercased.
pub fn hex_sha(text: &str) -> Option<String> {
    ((7..=64).contains(&text.len()) && text.chars().all(|c| c.is_ascii_hexdigit())).then(|| text.to_ascii_lowercase())
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
    fn the_tested_commit_is_the_pull_requests_head_not_the_merge_commit() {
        let head = "0123456789abcdef0123456789abcdef01234567";
        let merge = Some("fedcba9876543210fedcba9876543210fedcba98".to_owned());
        let pr = json!({"pull_request": {"number": 7, "head": {"sha": head}}});
        assert_eq!(sha_from_event(&pr, merge.clone()).as_deref(), Some(head));
        let run = json!({"workflow_run": {"head_sha": head, "pull_requests": []}});
        assert_eq!(sha_from_event(&run, merge.clone()).as_deref(), Some(head));
        assert_eq!(sha_from_event(&json!({"ref": "refs/heads/main"}), merge.clone()), merge);
        assert_eq!(sha_from_event(&Value::Null, merge.clone()), merge);
        assert_eq!(sha_from_event(&json!({"issue": {"number": 9, "pull_request": {}}}), merge), None);
        let forged = json!({"pull_request": {"head": {"sha": "abc1234) [click](https://evil"}}});
        assert_eq!(sha_from_event(&forged, None), None);
    }

    #[test]
    fn pull_request_numbers_from_refs() {
        assert_eq!(number_from_ref("refs/pull/12/merge"), Some(12));
        assert_eq!(number_from_ref("refs/heads/main"), None);
        assert_eq!(number_from_ref("refs/pull/x/merge"), None);
    }
}
