//! `workspace:` on a suite or a task: as written, compiled into a [`WorkspaceSpec`] (the
//! template hashed and the commit resolved once, here), and checked.

use std::num::NonZeroU32;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::source::{KeyPath, ValidateCx};
use crate::workspace::{
    Isolation, Keep, Limits, Network, Origin, Provenance, RepoCheckout, SetupCommand, Tree, WorkspaceSpec,
};

/// A workspace made fresh for every trial: the agent works in it, confined, and the graders
/// grade what it left (docs/workspaces.md).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWorkspace {
    /// A directory (relative to the suite) copied for every trial.
    pub template: Option<String>,
    /// A local git repository checked out at a pinned commit for every trial.
    pub repo: Option<RawRepo>,
    /// Local git repositories checked out below the workspace (after `template` or `repo`),
    /// each at a pinned commit into its `dest`.
    #[serde(default)]
    pub repos: Vec<RawRepo>,
    /// Commands run, in order, before the agent: an argv list (run in the workspace), or
    /// `{argv, workdir, timeout, context}`. Each reads on stdin a JSON object with
    /// `workspace_path`, `test_id` and the `context` keys.
    #[serde(default)]
    pub setup: Vec<RawSetup>,
    /// When the workspace is kept after its trial: `on_failure` (default), `always`, `never`.
    pub keep: Option<Keep>,
    /// How the agent is confined: `bwrap` (default) or `none`.
    pub isolation: Option<Isolation>,
    /// The confined agent's network: `none` (default) or `host`.
    pub network: Option<Network>,
    /// Globs of workspace files the agent must not change (the tests a grader runs).
    #[serde(default)]
    pub protect: Vec<String>,
    /// What a confined agent may use.
    #[serde(default)]
    pub limits: RawLimits,
}

/// `workspace.repo`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRepo {
    /// The repository's directory, relative to the suite (never a URL: no network at trial time).
    pub path: String,
    /// The commit checked out (a hash, a tag or a branch; resolved to its hash when the suite is read).
    pub commit: String,
    /// In `repos`: the directory below the workspace it is checked out in.
    pub dest: Option<String>,
}

/// A setup command as written: an argv list, or one with its own directory, time limit
/// and stdin keys.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "a setup command: an argv list, or {argv, workdir, timeout, context}")]
pub enum RawSetup {
    Argv(Vec<String>),
    Full(RawSetupCommand),
}

/// `workspace.setup[]` in its long form.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSetupCommand {
    /// The command: the program, then its arguments.
    pub argv: Vec<String>,
    /// Its working directory, relative to the suite (default: the workspace).
    pub workdir: Option<String>,
    /// Its time limit (default: the task's timeout).
    pub timeout: Option<crate::values::RawDuration>,
    /// Keys added to the JSON object on its stdin.
    #[serde(default)]
    pub context: serde_json::Map<String, serde_json::Value>,
}

/// `workspace.limits`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Processes at once (default 256).
    pub processes: Option<NonZeroU32>,
    /// The largest file the agent may write, in MiB (default 256).
    pub file_size_mb: Option<NonZeroU32>,
    /// The most the workspace (and its `/tmp`) may hold, in MiB (default 1024).
    pub disk_mb: Option<NonZeroU32>,
}

/// The compiled workspace, or `None` after recording what is wrong at `path`.
pub(super) fn compile_workspace(cx: &mut ValidateCx, raw: RawWorkspace, path: &KeyPath) -> Option<WorkspaceSpec> {
    let errors = cx.diagnostics.len();
    let (origin, template) = match (&raw.template, &raw.repo) {
        (Some(_), Some(_)) => {
            cx.error(path, "a workspace has one origin: `template` or `repo`, not both");
            (Origin::Empty, None)
        }
        (Some(template), None) => template_origin(cx, template, &path.key("template")),
        (None, Some(repo)) => {
            if repo.dest.is_some() {
                cx.error(
                    &path.key("repo").key("dest"),
                    "`repo` is the workspace itself: `dest` goes on an entry of `repos`",
                );
            }
            (
                repo_origin(cx, repo, &path.key("repo"))
                    .map_or(Origin::Empty, |(path, commit)| Origin::Repo { path, commit }),
                None,
            )
        }
        (None, None) => (Origin::Empty, None),
    };
    let (template_hash, template_tree) = template.unzip();
    let mut repos = Vec::new();
    for (i, repo) in raw.repos.iter().enumerate() {
        let at = path.key("repos").index(i);
        let dest = match repo.dest.as_deref().map(std::path::Path::new) {
            Some(d)
                if !d.as_os_str().is_empty()
                    && d.components()
                        .all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir)) =>
            {
                d
            }
            Some(_) => {
                cx.error(&at.key("dest"), "`dest` is a relative directory below the workspace (no `..`)");
                continue;
            }
            None => {
                cx.error(
                    &at,
                    "an entry of `repos` needs `dest`, the directory below the workspace it is checked out in",
                );
                continue;
            }
        };
        if let Some((path, commit)) = repo_origin(cx, repo, &at) {
            repos.push(RepoCheckout { path, commit, dest: dest.display().to_string() });
        }
    }
    let mut setup = Vec::new();
    for (i, written) in raw.setup.iter().enumerate() {
        let command = match written {
            RawSetup::Argv(argv) => {
                SetupCommand { argv: argv.clone(), workdir: None, timeout: None, context: Default::default() }
            }
            RawSetup::Full(c) => SetupCommand {
                argv: c.argv.clone(),
                workdir: c.workdir.as_deref().map(|w| cx.resolve_path(w)),
                timeout: c.timeout.as_ref().map(|t| t.0),
                context: c.context.clone(),
            },
        };
        if command.argv.first().is_none_or(String::is_empty) {
            cx.error(&path.key("setup").index(i), "a setup command is an argv list whose first word names the program");
        }
        setup.push(command);
    }
    let mut protect = globset::GlobSetBuilder::new();
    for (i, glob) in raw.protect.iter().enumerate() {
        match globset::Glob::new(glob) {
            Ok(g) => {
                protect.add(g);
            }
            Err(e) => {
                cx.error(&path.key("protect").index(i), format!("invalid glob: {e}"));
            }
        }
    }
    let defaults = Limits::default();
    let mib = |n: Option<NonZeroU32>, default: u64| n.map_or(default, |n| u64::from(n.get()) << 20);
    let limits = Limits {
        processes: raw.limits.processes.map_or(defaults.processes, NonZeroU32::get),
        file_size: mib(raw.limits.file_size_mb, defaults.file_size),
        disk: mib(raw.limits.disk_mb, defaults.disk),
    };
    let (isolation, network) = (raw.isolation.unwrap_or_default(), raw.network.unwrap_or_default());
    if cx.diagnostics.len() > errors {
        return None;
    }
    let confinement = format!("{isolation:?} {network:?} {limits:?} protect={:?}", raw.protect);
    let provenance = Provenance::of(&origin, &repos, template_hash, &setup, &confinement);
    Some(WorkspaceSpec {
        origin,
        repos,
        setup,
        keep: raw.keep.unwrap_or_default(),
        isolation,
        network,
        limits,
        protect: protect.build().ok()?,
        suite_dir: cx.dir.clone(),
        provenance,
        template_tree: std::sync::Mutex::new(template_tree.unwrap_or_default()),
    })
}

/// A template directory, hashed; refused when it holds the suite file (every trial would
/// get the graders' files).
fn template_origin(cx: &mut ValidateCx, template: &str, path: &KeyPath) -> (Origin, Option<(String, Tree)>) {
    let dir = cx.resolve_path(template);
    let dir = match std::fs::canonicalize(&dir) {
        Ok(dir) if dir.is_dir() => dir,
        Ok(_) => {
            cx.error(path, format!("`{template}` is not a directory"));
            return (Origin::Empty, None);
        }
        Err(e) => {
            cx.error(path, format!("cannot read `{template}`: {e}"));
            return (Origin::Empty, None);
        }
    };
    if std::fs::canonicalize(&cx.file).is_ok_and(|file| file.starts_with(&dir)) {
        cx.error(path, format!("`{template}` holds the suite file: every workspace would get the suite and its graders' files; make the template a directory of its own"));
        return (Origin::Empty, None);
    }
    match crate::workspace::template_hash(&dir) {
        Ok(hashed) => (Origin::Template(dir), Some(hashed)),
        Err(e) => {
            cx.error(path, format!("cannot read the template `{template}`: {e}"));
            (Origin::Empty, None)
        }
    }
}

/// A local repository and its commit, resolved to a full hash.
fn repo_origin(cx: &mut ValidateCx, repo: &RawRepo, path: &KeyPath) -> Option<(std::path::PathBuf, String)> {
    if repo.path.contains("://") || repo.path.starts_with("git@") {
        cx.error(
            &path.key("path"),
            format!("`{}` is a URL: name a local repository (no network at trial time)", repo.path),
        );
        return None;
    }
    let dir = cx.resolve_path(&repo.path);
    let resolved = std::process::Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["rev-parse", "--verify", "--quiet", &format!("{}^{{commit}}", repo.commit)])
        .stdin(std::process::Stdio::null())
        .output();
    match resolved {
        Ok(out) if out.status.success() => Some((dir, String::from_utf8_lossy(&out.stdout).trim().to_owned())),
        Ok(_) if !Path::new(&dir).join(".git").exists() && !dir.join("HEAD").exists() => {
            cx.error(&path.key("path"), format!("`{}` is not a git repository", repo.path));
            None
        }
        Ok(_) => {
            cx.error(&path.key("commit"), format!("no commit `{}` in `{}`", repo.commit, repo.path));
            None
        }
        Err(e) => {
            cx.error(&path.key("path"), format!("cannot run git: {e}"));
            None
        }
    }
}
