//! One trial's workspace, from its making to its removal: copied or checked out fresh, set
//! up, handed to the agent (confined), checked after it, compared with how it started, then
//! kept or removed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::file_changes::FileChanges;
use super::recipe::{Isolation, Keep, Origin, Provenance, WorkspaceSpec};
use super::sandbox::{self, Confinement, Report};
use super::tree::{self, Tree};

use crate::process::{ProcessSpec, run_process};

/// What `results.json` records of a trial's workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkspaceRecord {
    pub provenance: Provenance,
    /// What the agent changed.
    pub file_changes: FileChanges,
    /// Where the workspace was kept (`keep`), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// What the checks after the agent found: each turned the trial into an error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
}

/// The working directory of an agent that has a directory of its own (`configured`: its
/// `workdir`, the suite's by default): the trial's workspace when there is one. Every kind of
/// agent that runs in a directory takes it from here.
pub fn agent_cwd<'a>(configured: &'a Path, workspace: Option<&'a TrialWorkspace>) -> &'a Path {
    workspace.map_or(configured, |w| &w.dir)
}

/// One trial's workspace.
#[derive(Debug)]
pub struct TrialWorkspace {
    spec: Arc<WorkspaceSpec>,
    /// Holds `dir` and `io`; removed at the end unless kept.
    root: PathBuf,
    /// The workspace itself.
    pub dir: PathBuf,
    /// The trial's own files (prompt, trace, MCP config), reachable by a confined agent.
    pub io: PathBuf,
    /// The workspace as the agent got it.
    base: Tree,
    /// The text of its small files the template does not hold as they are (a checkout's,
    /// what setup wrote or changed), for `file_changes`' earlier side.
    earlier: std::collections::BTreeMap<String, String>,
    /// The suite's directory before the agent (metadata only), for the write check.
    suite_before: Option<tree::StatTree>,
    nonce: String,
    violations: Mutex<Vec<String>>,
    changes: Mutex<FileChanges>,
}

impl TrialWorkspace {
    /// Makes the workspace below `parent` (the run's scratch directory) and runs the setup
    /// commands in it (`test_id`, the task's id, on their stdin). An error names what failed.
    pub async fn prepare(
        spec: &Arc<WorkspaceSpec>,
        parent: &Path,
        test_id: &str,
        timeout: Duration,
    ) -> Result<Self, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = parent.join(format!("workspace-{n}"));
        let (dir, io) = (root.join("work"), root.join("io"));
        let owner = (spec.isolation == Isolation::Bwrap && sandbox::as_root()).then_some(sandbox::SANDBOX_UID);
        let made = {
            let (spec, root, dir, io) = (spec.clone(), root.clone(), dir.clone(), io.clone());
            tokio::task::spawn_blocking(move || make(&spec, &root, &dir, &io, owner))
                .await
                .expect("the copy does not panic")
        };
        let copied = made.map_err(|e| format!("cannot make the workspace: {e}"))?;
        if let Origin::Repo { path, commit } = &spec.origin {
            let (from, to) = (path.display().to_string(), dir.display().to_string());
            checkout(&from, &to, commit, &root, timeout).await?;
        }
        for repo in &spec.repos {
            let (from, to) = (repo.path.display().to_string(), dir.join(&repo.dest).display().to_string());
            checkout(&from, &to, &repo.commit, &root, timeout).await?;
        }
        for command in &spec.setup {
            let mut stdin = serde_json::Map::new();
            stdin.insert("workspace_path".into(), dir.display().to_string().into());
            stdin.insert("test_id".into(), test_id.into());
            stdin.extend(command.context.clone());
            let mut step = ProcessSpec::argv(
                command.argv.clone(),
                command.workdir.clone().unwrap_or_else(|| dir.clone()),
                command.timeout.unwrap_or(timeout),
            );
            step.stdin = Some(serde_json::Value::Object(stdin).to_string().into_bytes());
            step.env.push(("EVALGATE_WORKSPACE".into(), dir.display().to_string()));
            run_step("setup", step).await?;
        }
        let cloned = matches!(spec.origin, Origin::Repo { .. }) || !spec.repos.is_empty();
        if let Some(uid) = owner.filter(|_| !spec.setup.is_empty() || cloned) {
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || tree::chown_all(&dir, uid))
                .await
                .expect("chown does not panic")
                .map_err(|e| format!("cannot give the workspace to the sandbox's user: {e}"))?;
        }
        let (base, earlier, suite_before) = {
            let (dir, suite_dir, root, spec) = (dir.clone(), spec.suite_dir.clone(), root.clone(), spec.clone());
            // A template's copy as it was made, unless setup (or the chown) may have changed
            // it: then scanned, hashing only what changed.
            let rescan = !spec.setup.is_empty() || copied.is_none();
            tokio::task::spawn_blocking(move || {
                let base = match copied {
                    Some(copied) if !rescan => Ok(copied),
                    copied => tree::scan(&dir, copied.as_ref()),
                };
                let earlier = base.as_ref().map(|b| snapshot(&spec, b, &dir)).unwrap_or_default();
                (base, earlier, tree::stat_scan(&suite_dir, &root))
            })
            .await
            .expect("a scan does not panic")
        };
        let base = base.map_err(|e| format!("cannot read the workspace: {e}"))?;
        let nonce = {
            use sha2::Digest;
            let seed = format!("{n} {:?} {}", std::time::SystemTime::now(), std::process::id());
            super::recipe::hex16(&sha2::Sha256::digest(seed))
        };
        Ok(TrialWorkspace {
            spec: spec.clone(),
            root,
            dir,
            io,
            base,
            earlier,
            suite_before,
            nonce,
            violations: Mutex::new(Vec::new()),
            changes: Mutex::new(FileChanges::default()),
        })
    }

    /// `spec` (an agent's process, its working directory from [`agent_cwd`]) as it runs in
    /// this workspace: confined unless `isolation: none`, with evalgate's endpoints on `ports`
    /// relayed into a sandbox without the network. The relay comes back with the spec: it
    /// must live as long as the agent. `program_files`: files below the suite the agent's
    /// command names (its own script), readable inside the sandbox. `session`: an agent whose
    /// session evalgate ends (ACP) gets no report shell after it; [`Self::end_session`] reads
    /// what it would have reported before the kill.
    pub fn confine(
        &self,
        spec: ProcessSpec,
        program_files: Vec<PathBuf>,
        ports: &[u16],
        session: bool,
    ) -> Result<(ProcessSpec, Option<super::relay::HostRelay>), String> {
        let relay = self.relay(ports)?;
        let routes = relay.as_ref().map_or(&[][..], |r| &r.routes[..]);
        let spec = self.confined(spec, program_files, routes, !session)?;
        Ok((spec, relay))
    }

    /// Before evalgate kills the sandbox of a session (`pid`: its bubblewrap): the network
    /// attempts it made, read from the host. Every process in it dies with it (its own PID
    /// namespace), so nothing can outlive it.
    pub fn end_session(&self, pid: Option<u32>) {
        if !self.offline() {
            return;
        }
        let found = match pid.and_then(sandbox::no_route_of) {
            None => "the sandbox's network counts could not be read".to_owned(),
            Some(0) => return,
            Some(n) => {
                format!("the agent tried to reach the network under `network: none` ({n} packets found no route)")
            }
        };
        self.violations.lock().expect("not poisoned").push(found);
    }

    fn confined(
        &self,
        spec: ProcessSpec,
        program_files: Vec<PathBuf>,
        relay: &[(u16, PathBuf)],
        report: bool,
    ) -> Result<ProcessSpec, String> {
        if self.spec.isolation == Isolation::None {
            return Ok(spec);
        }
        let evalgate = match relay.is_empty() || !self.offline() {
            true => None,
            false => Some(
                std::env::current_exe()
                    .map_err(|e| format!("cannot find evalgate's own binary for the sandbox's relay: {e}"))?,
            ),
        };
        let hidden = [self.spec.suite_dir.clone()];
        let confinement = Confinement {
            workspace: &self.dir,
            io: &self.io,
            hidden: &hidden,
            readable: program_files,
            network: self.spec.network,
            limits: self.spec.limits,
            nonce: &self.nonce,
            relay: evalgate.as_deref().map(|e| (e, relay)),
            report,
        };
        Ok(sandbox::confine(spec, &confinement))
    }

    /// The host's end of the relay of evalgate's endpoints on `ports` into this trial's
    /// sandbox, when its agent has no network (`None` otherwise: it reaches them itself).
    fn relay(&self, ports: &[u16]) -> Result<Option<super::relay::HostRelay>, String> {
        if !self.offline() || ports.is_empty() {
            return Ok(None);
        }
        super::relay::HostRelay::start(&self.io, ports)
            .map(Some)
            .map_err(|e| format!("cannot relay evalgate's endpoints into the sandbox: {e}"))
    }

    /// Whether the agent runs in the sandbox.
    pub fn isolated(&self) -> bool {
        self.spec.isolation != Isolation::None
    }

    /// Whether the agent runs without the network (the model endpoint and MCP proxies, on
    /// the host's loopback, are then reached only through the relay).
    pub fn offline(&self) -> bool {
        self.spec.isolation == Isolation::Bwrap && self.spec.network == super::Network::None
    }

    /// Takes the sandbox's report out of the agent's stderr and records what it found.
    pub fn take_report(&self, stderr: &mut String) {
        if self.spec.isolation == Isolation::None {
            return;
        }
        let report = Report::take(stderr, &self.nonce);
        let mut found = Vec::new();
        if report.missing {
            found.push(
                "the sandbox's report is missing: its shell was killed, or the agent's stderr passed the capture cap"
                    .to_owned(),
            );
        }
        if report.no_route > 0 {
            found.push(format!(
                "the agent tried to reach the network under `network: none` ({} packets found no route)",
                report.no_route
            ));
        }
        if !report.left.is_empty() {
            found.push(format!("processes outlived the agent: {}", report.left.join(", ")));
        }
        // Checked again after each turn of a conversation: a violation is recorded once.
        let mut violations = self.violations.lock().expect("not poisoned");
        for violation in found {
            if !violations.contains(&violation) {
                violations.push(violation);
            }
        }
    }

    /// The checks after the agent, before any grader: what it changed, that it left the
    /// protected files and the suite's directory alone and stayed within the disk limit.
    pub async fn after_agent(&self) {
        let (dir, suite_dir, root) = (self.dir.clone(), self.spec.suite_dir.clone(), self.root.clone());
        let base = self.base.clone();
        let (after, suite_after) =
            tokio::task::spawn_blocking(move || (tree::scan(&dir, Some(&base)), tree::stat_scan(&suite_dir, &root)))
                .await
                .expect("a scan does not panic");
        let mut found = Vec::new();
        match (&self.suite_before, &suite_after) {
            (Some(before), Some(after)) => {
                let changed: Vec<&String> = before
                    .keys()
                    .chain(after.keys())
                    .filter(|p| before.get(*p) != after.get(*p))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if let Some(first) = changed.first() {
                    let more =
                        if changed.len() > 1 { format!(" (and {} more)", changed.len() - 1) } else { String::new() };
                    found.push(format!(
                        "a write outside the workspace: `{first}` in the suite's directory changed{more}"
                    ));
                }
            }
            (Some(_), None) => found.push("the suite's directory could not be read after the agent".into()),
            // Too large to look at before the agent (documented): not checked.
            (None, _) => {}
        }
        match after {
            Err(e) => found.push(format!("cannot read the workspace after the agent: {e}")),
            Ok(after) => {
                let template = self.spec.template_tree.lock().expect("not poisoned");
                let earlier = |path: &str, node: &tree::Node| match self.earlier.get(path) {
                    Some(text) => Some(text.clone()),
                    None => earlier_in_template(&self.spec, &template, path, node),
                };
                let changes = FileChanges::between(&self.base, &after, &self.dir, &earlier);
                let protected: Vec<&str> =
                    changes.files.iter().map(|f| f.path.as_str()).filter(|p| self.spec.protect.is_match(p)).collect();
                if let Some(first) = protected.first() {
                    found.push(format!("the agent changed the protected file `{first}`"));
                }
                // A grader reading through it would read outside the workspace, on the host.
                let out_links = changes.files.iter().filter_map(|f| match after.get(&f.path) {
                    Some(tree::Node::Link(target)) if tree::leaves(&f.path, target) => Some((&f.path, target)),
                    _ => None,
                });
                if let Some((link, target)) = out_links.into_iter().next() {
                    found.push(format!("a symbolic link out of the workspace: `{link}` -> `{target}`"));
                }
                let size = tree::size(&after);
                if size > self.spec.limits.disk {
                    found
                        .push(format!("the workspace holds {size} bytes, over the limit of {}", self.spec.limits.disk));
                }
                *self.changes.lock().expect("not poisoned") = changes;
            }
        }
        // Checked again after each turn of a conversation: a violation is recorded once.
        let mut violations = self.violations.lock().expect("not poisoned");
        for violation in found {
            if !violations.contains(&violation) {
                violations.push(violation);
            }
        }
    }

    /// What the agent changed (after [`Self::after_agent`]).
    pub fn file_changes(&self) -> FileChanges {
        self.changes.lock().expect("not poisoned").clone()
    }

    /// The end of the trial: a violation turns its verdict into an error; the workspace is
    /// kept or removed as `keep` says; what happened is returned for `results.json`.
    pub async fn finish(self, failed: bool) -> (WorkspaceRecord, Option<String>) {
        let violations = self.violations.into_inner().expect("not poisoned");
        let keep = match self.spec.keep {
            Keep::Always => true,
            Keep::OnFailure => failed || !violations.is_empty(),
            Keep::Never => false,
        };
        let kept = if keep {
            // Out of the run's scratch directory, which goes with the run.
            let root = self.root.clone();
            let moved = tokio::task::spawn_blocking(move || -> std::io::Result<PathBuf> {
                let dest = tempfile::Builder::new().prefix("evalgate-workspace-").tempdir()?.keep();
                std::fs::rename(&root, dest.join("trial"))?;
                Ok(dest.join("trial"))
            })
            .await
            .expect("a rename does not panic");
            Some(moved.map_or_else(|e| format!("{} (not kept: {e})", self.root.display()), |p| p.display().to_string()))
        } else {
            let root = self.root.clone();
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(root)).await;
            None
        };
        let error = (!violations.is_empty()).then(|| format!("workspace check: {}", violations.join("; ")));
        let record = WorkspaceRecord {
            provenance: self.spec.provenance.clone(),
            file_changes: self.changes.into_inner().expect("not poisoned"),
            kept,
            violations,
        };
        (record, error)
    }
}

/// The most text of a workspace's files kept, per trial, for the earlier side of
/// `file_changes`' diff (past it, a change is listed without its old lines).
const SNAPSHOT_LIMIT: usize = 16 << 20;

/// The text of each small file of `base` (the workspace as the agent gets it) that the
/// template does not hold as it is, up to [`SNAPSHOT_LIMIT`]: what a checkout or setup made.
fn snapshot(spec: &WorkspaceSpec, base: &Tree, dir: &Path) -> std::collections::BTreeMap<String, String> {
    let template = spec.template_tree.lock().expect("not poisoned");
    let from_template = matches!(spec.origin, Origin::Template(_));
    let mut kept = std::collections::BTreeMap::new();
    let mut size = 0;
    for (path, node) in base.iter() {
        if size >= SNAPSHOT_LIMIT || (from_template && template.get(path) == Some(node)) {
            continue;
        }
        if let Some(text) = super::file_changes::text_of(&dir.join(path), node) {
            size += text.len();
            kept.insert(path.clone(), text);
        }
    }
    kept
}

/// The template's text of `path` when the template holds it as `node` says.
fn earlier_in_template(spec: &WorkspaceSpec, template: &Tree, path: &str, node: &tree::Node) -> Option<String> {
    let Origin::Template(dir) = &spec.origin else { return None };
    let tree::Node::File { .. } = node else { return None };
    (template.get(path) == Some(node)).then(|| super::file_changes::text_of(&dir.join(path), node))?
}

/// Makes `root` with the workspace `dir` (empty or a template's copy; a repository's clone is
/// made by `prepare`, through the process runner) and the trial's `io` directory; a
/// template's copy comes back with its tree.
fn make(spec: &WorkspaceSpec, root: &Path, dir: &Path, io: &Path, owner: Option<u32>) -> std::io::Result<Option<Tree>> {
    let mut copied = None;
    std::fs::create_dir(root)?;
    std::fs::create_dir(io)?;
    match &spec.origin {
        Origin::Empty => std::fs::create_dir(dir)?,
        Origin::Template(template) => {
            std::fs::create_dir(dir)?;
            let mut known = spec.template_tree.lock().expect("not poisoned");
            *known = tree::scan(template, Some(&known))?;
            copied = Some(tree::copy(template, &known, dir, owner)?);
        }
        // The clone makes `dir` (`TrialWorkspace::prepare`).
        Origin::Repo { .. } => {}
    }
    if let Some(uid) = owner {
        // A clone's `dir` does not exist yet: `prepare` gives it to the user once made.
        for d in [root, io, dir].into_iter().filter(|d| d.exists()) {
            std::os::unix::fs::lchown(d, Some(uid), Some(uid))?;
        }
    }
    Ok(copied)
}

/// A local repository cloned into `to` and checked out at `commit`. Through the one
/// process runner, as setup is: bounded by the timeout, its group killed, evalgate's
/// credentials removed. No hard links: the agent must not write through to the
/// repository's objects.
async fn checkout(from: &str, to: &str, commit: &str, root: &Path, timeout: Duration) -> Result<(), String> {
    let argv = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    let clone = argv(&["git", "clone", "--quiet", "--no-hardlinks", "--no-checkout", from, to]);
    run_step("checkout", ProcessSpec::argv(clone, root.to_owned(), timeout)).await?;
    let detach = argv(&["git", "-C", to, "checkout", "--quiet", "--detach", commit]);
    run_step("checkout", ProcessSpec::argv(detach, root.to_owned(), timeout)).await
}

/// Runs one command of the workspace's making (`what`: `checkout`, `setup`); an error
/// names it with the end of its stderr.
async fn run_step(what: &str, spec: ProcessSpec) -> Result<(), String> {
    let shown = std::iter::once(spec.program.as_str())
        .chain(spec.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let timeout = spec.timeout;
    let out = run_process(spec).await.map_err(|e| format!("workspace {what} `{shown}`: {e}"))?;
    if out.exit_code == Some(0) {
        return Ok(());
    }
    let last = out.stderr.text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_owned();
    Err(format!("workspace {what} `{shown}` {}: {last}", out.describe_end(timeout)))
}
