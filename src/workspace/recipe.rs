//! A workspace as the suite asks for it, compiled: where each trial's copy comes from, what
//! runs in it first, how it is confined, and what it is made of (its provenance).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How a trial's workspace is made and confined (`workspace:` on a suite or a task).
#[derive(Debug)]
pub struct WorkspaceSpec {
    pub origin: Origin,
    /// Repositories checked out below the workspace (after the origin is made), each at
    /// its pinned commit.
    pub repos: Vec<RepoCheckout>,
    /// Commands run, in order, before the agent (not confined: the suite's own commands).
    pub setup: Vec<SetupCommand>,
    pub keep: Keep,
    pub isolation: Isolation,
    pub network: Network,
    pub limits: Limits,
    /// Globs (relative to the workspace) of files the agent must leave as it found them:
    /// the tests a grader runs.
    pub protect: globset::GlobSet,
    /// The suite's directory: hidden from a confined agent, and checked for writes.
    pub suite_dir: PathBuf,
    pub provenance: Provenance,
    /// The template as last scanned: a trial's scan of it hashes only what changed since.
    pub(crate) template_tree: std::sync::Mutex<super::tree::Tree>,
}

/// What a workspace starts from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A directory copied whole (symbolic links as links, never followed).
    Template(PathBuf),
    /// A local git repository, cloned without hard links and checked out at `commit` (a
    /// full hash, resolved when the suite is read): no network at trial time.
    Repo { path: PathBuf, commit: String },
    /// An empty directory.
    Empty,
}

/// A local repository checked out at `commit` (a full hash, resolved when the suite is
/// read) into `dest`, a directory below the workspace.
#[derive(Debug, Clone)]
pub struct RepoCheckout {
    pub path: PathBuf,
    pub commit: String,
    pub dest: String,
}

/// One setup command. It runs in `workdir` (the workspace by default) and reads on stdin a
/// JSON object: `workspace_path` (the trial's workspace), `test_id` (the task's id), then
/// the `context` keys; `EVALGATE_WORKSPACE` in its environment names the workspace too.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetupCommand {
    pub argv: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workdir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<std::time::Duration>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub context: serde_json::Map<String, serde_json::Value>,
}

impl SetupCommand {
    /// An argv list and nothing more.
    pub fn is_plain(&self) -> bool {
        self.workdir.is_none() && self.timeout.is_none() && self.context.is_empty()
    }
}

/// When a trial's workspace is kept after the trial (default `on_failure`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    #[default]
    OnFailure,
    Always,
    Never,
}

/// How the agent is confined (default `bwrap`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Linux namespaces through bubblewrap: a read-only root, the suite hidden, a private
    /// `/tmp`, its own process and network namespaces.
    #[default]
    Bwrap,
    /// No confinement: the agent runs as it would without a workspace, in it. The checks
    /// after the agent still run.
    None,
}

/// What network a confined agent has (default `none`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// Only a loopback of its own; an attempt to reach anything else is an error.
    #[default]
    None,
    /// The host's network.
    Host,
}

/// What a confined agent may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Processes at once inside the sandbox (RLIMIT_NPROC in its own user namespace).
    pub processes: u32,
    /// The largest file it may write (RLIMIT_FSIZE), in bytes.
    pub file_size: u64,
    /// The most the workspace may hold after the agent, in bytes; and the size of its `/tmp`.
    pub disk: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { processes: 256, file_size: 256 << 20, disk: 1 << 30 }
    }
}

/// What a workspace is made of, in `results.json` and in every task's definition hash: a
/// changed environment makes a comparison "not comparable".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provenance {
    /// The template's hash (its paths, modes, link targets and contents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The commit checked out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The repositories checked out below the workspace: `DEST@COMMIT` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repos: Vec<String>,
    /// The hash of the setup commands and of how the agent is confined.
    pub setup: String,
}

impl Provenance {
    /// Worked out once, when the suite is read.
    pub fn of(
        origin: &Origin,
        repos: &[RepoCheckout],
        template_hash: Option<String>,
        setup: &[SetupCommand],
        confinement: &str,
    ) -> Provenance {
        let mut hash = Sha256::new();
        // A plain argv list hashes as it did before setup commands had more keys.
        let written: Vec<serde_json::Value> = setup
            .iter()
            .map(|c| match c.is_plain() {
                true => serde_json::json!(c.argv),
                false => serde_json::to_value(c).expect("strings are JSON"),
            })
            .collect();
        hash.update(serde_json::to_string(&written).expect("strings are JSON"));
        hash.update(confinement);
        Provenance {
            template: template_hash,
            commit: match origin {
                Origin::Repo { commit, .. } => Some(commit.clone()),
                _ => None,
            },
            repos: repos.iter().map(|r| format!("{}@{}", r.dest, r.commit)).collect(),
            setup: hex16(&hash.finalize()),
        }
    }

    /// One line that changes whenever any part does, for the definition hash.
    pub fn digest(&self) -> String {
        let repos = match self.repos.is_empty() {
            true => String::new(),
            false => format!(" repos={}", self.repos.join(",")),
        };
        format!(
            "template={} commit={}{repos} setup={}",
            self.template.as_deref().unwrap_or("-"),
            self.commit.as_deref().unwrap_or("-"),
            self.setup
        )
    }
}

/// The first 8 bytes of a digest, as 16 hex digits.
pub(super) fn hex16(digest: &[u8]) -> String {
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}
