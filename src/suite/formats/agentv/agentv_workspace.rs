//! AgentV's `workspace` (`template`, `repos`, hooks) as a native `workspace:` on each task.
//! AgentV makes a workspace when the file names a template, repositories or hooks, runs
//! the agent in it and gives its hooks and code graders its path; evalgate gives every
//! trial a fresh one, as AgentV's `isolation: per_test` does (`prepareEvalCaseWorkspace` in
//! AgentV 4.42.4): the template copied, the repositories checked out, `before_all` then
//! `before_each` run in it, then AgentV's baseline commit, each hook given AgentV's JSON
//! context on stdin with the trial's own `workspace_path`.

use serde_json::{Map, Value, json};

use super::super::Problems;

/// A test's workspace: AgentV's suite-level `workspace` with the test's over it
/// (`mergeWorkspaceConfigs`: `template` and `repos` replaced, each hook merged key by key),
/// and the pointer each merged key was written at.
pub(super) struct Merged {
    pub(super) template: Option<(String, String)>,
    pub(super) repos: Option<(Vec<Value>, String)>,
    /// The hooks as AgentV merges them, and the pointer of the object each came from.
    pub(super) hooks: Map<String, Value>,
    pub(super) hooks_at: Map<String, Value>,
    pub(super) enabled: bool,
}

impl Merged {
    /// `suite`: the file's `workspace` (an object or null); `test`: the test's, at `at`.
    pub(super) fn of(suite: &Value, test: Option<&Value>, at: &str) -> Option<Merged> {
        let test_at = format!("{at}/workspace");
        let pick = |key: &str| -> Option<(&Value, String)> {
            match test.and_then(|t| t.get(key)) {
                Some(v) => Some((v, format!("{test_at}/{key}"))),
                None => suite.get(key).map(|v| (v, format!("/workspace/{key}"))),
            }
        };
        let template = pick("template").and_then(|(v, p)| Some((v.as_str()?.to_owned(), p)));
        let repos = pick("repos").and_then(|(v, p)| Some((v.as_array()?.clone(), p)));
        let (mut hooks, mut hooks_at) = (Map::new(), Map::new());
        let mut any_hooks = false;
        for (side, side_at) in [
            (suite.get("hooks"), "/workspace/hooks".to_owned()),
            (test.and_then(|t| t.get("hooks")), format!("{test_at}/hooks")),
        ] {
            let Some(side) = side.and_then(Value::as_object) else { continue };
            any_hooks = true;
            for key in ["before_all", "before_each", "after_each", "after_all"] {
                let Some(hook) = side.get(key).and_then(Value::as_object) else { continue };
                let merged = hooks.entry(key).or_insert_with(|| json!({}));
                merged.as_object_mut().expect("an object").extend(hook.clone());
                hooks_at.insert(key.into(), json!(format!("{side_at}/{key}")));
            }
        }
        let enabled = test
            .and_then(|t| t.pointer("/hooks/enabled"))
            .or_else(|| suite.pointer("/hooks/enabled"))
            .and_then(Value::as_bool)
            .unwrap_or(true);
        if template.is_none() && repos.is_none() && !any_hooks {
            return None;
        }
        Some(Merged { template, repos, hooks, hooks_at, enabled })
    }

    /// The hook `key` with its pointer, when hooks are enabled.
    pub(super) fn hook(&self, key: &str) -> Option<(&Value, &str)> {
        let hook = self.hooks.get(key).filter(|_| self.enabled)?;
        Some((hook, self.hooks_at.get(key).and_then(Value::as_str).unwrap_or_default()))
    }
}

/// What a hook's command is given besides the workspace: the test's AgentV id, its input
/// text (AgentV's `question`) and its metadata.
pub(super) struct HookContext<'a> {
    pub(super) test_id: &'a str,
    pub(super) case_input: String,
    pub(super) case_metadata: Value,
    /// The eval file's directory, relative to the suite's.
    pub(super) rel_dir: &'a std::path::Path,
}

/// The native workspace of a test whose AgentV workspace is `merged`.
pub(super) fn native(merged: &Merged, cx: &HookContext, problems: &mut Problems) -> Value {
    let mut ws = Map::new();
    if let Some((template, _)) = &merged.template {
        ws.insert("template".into(), json!(cx.rel_dir.join(template)));
    }
    if let Some((repos, at)) = &merged.repos {
        let list: Vec<Value> =
            repos.iter().enumerate().filter_map(|(i, r)| repo(r, &format!("{at}/{i}"), cx, problems)).collect();
        if !list.is_empty() {
            ws.insert("repos".into(), Value::Array(list));
        }
    }
    let mut setup: Vec<Value> = ["before_all", "before_each"]
        .into_iter()
        .filter_map(|key| merged.hook(key))
        .filter_map(|(hook, at)| setup_command(hook, at, cx, problems))
        .collect();
    // AgentV's baseline (`initializeBaseline`): the agent finds a git repository of one
    // commit, and `file_changes` is the diff against it.
    setup.push(json!([
        "sh",
        "-c",
        "git init -q && git add -A && git -c user.email=agentv@localhost -c user.name=agentv commit -q --allow-empty -m agentv-baseline"
    ]));
    ws.insert("setup".into(), Value::Array(setup));
    // AgentV runs its agents unconfined; `convert` the file and set `isolation: bwrap` to
    // confine them.
    ws.insert("isolation".into(), json!("none"));
    Value::Object(ws)
}

/// One entry of `repos`: a local repository at its commit, checked out at its `path`.
fn repo(r: &Value, at: &str, cx: &HookContext, problems: &mut Problems) -> Option<Value> {
    // AgentV skips an entry without `repo` (a repository a Docker image holds).
    let source = r.get("repo").and_then(Value::as_str)?;
    static SHORTHAND: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$").expect("valid"));
    // AgentV's `resolveRepoCloneUrl`: `owner/name` is GitHub's.
    if source.contains("://") || source.starts_with("git@") || SHORTHAND.is_match(source.trim()) {
        problems.push((
            format!("{at}/repo"),
            format!("`{source}` is a remote repository: evalgate checks out only local repositories (no network at trial time)"),
        ));
        return None;
    }
    for key in ["sparse", "ancestor"] {
        if r.get(key).is_some() {
            problems.push((format!("{at}/{key}"), format!("`{key}` on a workspace repository is not supported")));
        }
    }
    let Some(dest) = r.get("path").and_then(Value::as_str) else {
        problems.push((at.to_owned(), "a workspace repository needs `path`, where it is checked out".into()));
        return None;
    };
    let commit = r.get("commit").or_else(|| r.get("base_commit")).and_then(Value::as_str).unwrap_or("HEAD");
    Some(json!({"path": cx.rel_dir.join(source), "commit": commit, "dest": dest}))
}

/// A `before_*` hook as a native setup command: its argv (a string split on whitespace, as
/// AgentV splits it) with AgentV's `{{name}}` arguments filled in, run in its `cwd` (the
/// eval file's directory by default) within its `timeout_ms` (AgentV's 60 s by default),
/// given AgentV's context on stdin.
fn setup_command(hook: &Value, at: &str, cx: &HookContext, problems: &mut Problems) -> Option<Value> {
    let argv = super::hooks::argv(hook)?;
    let metadata = match &cx.case_metadata {
        Value::Null => String::new(),
        m => m.to_string(),
    };
    let filled = [("test_id", cx.test_id), ("case_input", cx.case_input.as_str()), ("case_metadata", &metadata)];
    static VAR: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\{\{(\w+)\}\}").expect("valid"));
    let mut words = Vec::new();
    for word in &argv {
        if let Some(c) = VAR.captures_iter(word).find(|c| matches!(&c[1], "workspace_path" | "eval_run_id")) {
            problems.push((
                format!("{at}/command"),
                format!("`{{{{{}}}}}` in a hook's command is not supported: read `workspace_path` from the JSON on the hook's stdin (or `$EVALGATE_WORKSPACE`)", &c[1]),
            ));
            return None;
        }
        let word = VAR.replace_all(word, |c: &regex::Captures| {
            filled.iter().find(|(name, _)| *name == &c[1]).map_or_else(|| c[0].to_owned(), |(_, v)| (*v).to_owned())
        });
        words.push(word.into_owned());
    }
    let cwd = hook.get("cwd").and_then(Value::as_str).unwrap_or("");
    let workdir = cx.rel_dir.join(cwd);
    let ms = hook.get("timeout_ms").or_else(|| hook.get("timeoutMs")).and_then(Value::as_u64).unwrap_or(60_000);
    Some(json!({
        "argv": words,
        "workdir": if workdir.as_os_str().is_empty() { std::path::PathBuf::from(".") } else { workdir },
        "timeout": format!("{ms}ms"),
        "context": {"test_id": cx.test_id, "case_input": cx.case_input, "case_metadata": cx.case_metadata},
    }))
}
