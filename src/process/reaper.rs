//! Escaped descendants. On Linux evalgate is a child subreaper: a process that leaves its
//! process group and is orphaned (`setsid` and a double fork, as a daemon does) is
//! re-parented to evalgate instead of to init, so evalgate can still find and kill it.
//!
//! Whose it is: every process evalgate starts carries `EVALGATE_OWNER` in its environment
//! (`TRIAL.PROCESS`), which its descendants inherit. When an agent or grader ends, the
//! escaped processes that name it are killed; when a trial ends (after its cleanup), those
//! that name the trial and the process groups its setup steps left; when the run ends,
//! every escaped process left, whatever it names (one that cleared its environment too).
//! Each kill is noted on the trial ("left a background process: killed").
//!
//! On macOS there is no subreaper: a daemon that leaves its process group is re-parented
//! to launchd, and evalgate cannot see it.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, RwLock};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::files::read;

/// The variable naming the trial and process a descendant belongs to.
pub const OWNER_VAR: &str = "EVALGATE_OWNER";

/// The pids evalgate started itself (the code that spawned each reaps it).
static SPAWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
/// Held (shared) from a spawn until its pid is in `SPAWNED` and its group in `GROUPS`, and
/// (exclusive) by `kill_everything`, which takes every process whoever it names: it never
/// takes a process just started for an escaped one, nor misses one started but not yet
/// tracked. The other sweeps need no such lock: they take only
/// processes that name their trial or process, which a process starting elsewhere does not
/// (before its exec it shows evalgate's own environment, and owner tokens carry
/// evalgate's pid, so even an outer evalgate's token cannot match).
static SPAWNING: RwLock<()> = RwLock::new(());
/// Process groups evalgate started (each process it spawns leads one; setup steps may leave
/// services running, MCP servers run for the whole run), with the owner of the process that
/// started each, so a signal, the end of their trial or the end of the command can still
/// kill them.
static GROUPS: Mutex<BTreeMap<i32, String>> = Mutex::new(BTreeMap::new());

static NEXT: AtomicU64 = AtomicU64::new(1);

tokio::task_local! {
    /// The trial the current task runs (`in_trial`).
    static TRIAL: Trial;
}

struct Trial {
    id: u64,
    notes: Mutex<Vec<String>>,
}

/// Makes evalgate the reaper of its orphaned descendants; `false` where the system has no
/// such thing (then escaped daemons outlive the run).
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Runs `body` as one trial: the processes it starts are the trial's. At its end, kills
/// what they left behind; returns `body`'s value and the trial's notes (what was killed,
/// output lost to a leak or the cap).
pub async fn in_trial<T>(body: impl Future<Output = T>) -> (T, Vec<String>) {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let trial = Trial { id, notes: Mutex::new(Vec::new()) };
    TRIAL
        .scope(trial, async {
            let value = body.await;
            let prefix = format!("{}:{id}.", *PID);
            let mut killed = kill_groups(|owner| owner.starts_with(&prefix));
            killed.extend(sweep(None, |owner| owner.is_some_and(|o| o.starts_with(&prefix))));
            for what in killed {
                note(format!("left a background process: killed ({what})"));
            }
            let notes = TRIAL.with(|t| std::mem::take(&mut *lock(&t.notes)));
            (value, notes)
        })
        .await
}

/// Records `text` on the current trial (nothing outside one).
pub fn note(text: String) {
    let _ = TRIAL.try_with(|t| lock(&t.notes).push(text));
}

/// evalgate's pid, read once.
static PID: LazyLock<u32> = LazyLock::new(std::process::id);

/// A new owner token for a process about to start: evalgate's pid, its trial's (`-`
/// outside one) and its own number (`PID:TRIAL.N`).
pub fn new_owner() -> String {
    let trial = TRIAL.try_with(|t| t.id.to_string()).unwrap_or_else(|_| "-".into());
    format!("{}:{trial}.{}", *PID, NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A new owner token for a process of the whole run (an MCP server, even one restarted
/// during a trial): what it leaves is killed when the run ends.
pub fn new_run_owner() -> String {
    format!("{}:-.{}", *PID, NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Spawns a process with `spawn` (the leader of a process group of its own) and records
/// its pid as evalgate's own and its group as `owner`'s, atomically with respect to
/// [`kill_everything`] (see `SPAWNING`): a process is either started after it, which a stop
/// refuses, or killed by it, never missed in between.
pub fn spawn<C>(
    spawn: impl FnOnce() -> std::io::Result<C>,
    pid: impl Fn(&C) -> Option<u32>,
    owner: &str,
) -> std::io::Result<C> {
    let _spawning = SPAWNING.read().unwrap_or_else(|e| e.into_inner());
    if super::stopping() {
        return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "evalgate is stopping (a signal)"));
    }
    let child = spawn()?;
    if let Some(id) = pid(&child).and_then(|id| i32::try_from(id).ok()) {
        lock(&SPAWNED).insert(id);
        track_group(id, owner);
    }
    Ok(child)
}

/// `pid` was reaped by the code that spawned it.
pub fn reaped(pid: i32) {
    lock(&SPAWNED).remove(&pid);
}

/// Records a process group evalgate started.
fn track_group(pgid: i32, owner: &str) {
    lock(&GROUPS).insert(pgid, owner.to_owned());
}

pub fn untrack_group(pgid: i32) {
    lock(&GROUPS).remove(&pgid);
}

/// SIGKILLs every tracked group whose owner `matches` and forgets them; describes each that
/// still had a process in it.
pub fn kill_groups(matches: impl Fn(&str) -> bool) -> Vec<String> {
    let groups: Vec<i32> = {
        let mut groups = lock(&GROUPS);
        let hit: Vec<i32> = groups.iter().filter(|(_, o)| matches(o)).map(|(g, _)| *g).collect();
        for g in &hit {
            groups.remove(g);
        }
        hit
    };
    groups
        .into_iter()
        .filter(|&g| killpg(Pid::from_raw(g), Signal::SIGKILL).is_ok())
        .map(|g| format!("process group {g}"))
        .collect()
}

/// Kills the escaped processes whose owner `matches` (with their process groups) and reaps
/// those that already exited; describes what it killed. An escaped process's own children
/// are re-parented to evalgate when it dies, so this looks again until none is left.
/// Processes still in `killed_group` are not escaped: a SIGKILL to it is on its way.
pub fn sweep(killed_group: Option<i32>, matches: impl Fn(Option<&str>) -> bool) -> Vec<String> {
    sweep_children(Threads::Main, killed_group, matches)
}

/// Whose children a sweep reads.
#[derive(Clone, Copy)]
enum Threads {
    /// The main thread's. The kernel gives an orphan to the subreaper's first live thread,
    /// the main thread (`find_new_reaper` in kernel/exit.c), whichever thread started its
    /// ancestor: every escaped process is its child, one file to read, not one per thread.
    Main,
    /// Every thread's, at the end of the run: nothing is assumed.
    All,
}

fn sweep_children(threads: Threads, killed_group: Option<i32>, matches: impl Fn(Option<&str>) -> bool) -> Vec<String> {
    let mut killed = Vec::new();
    // Each round goes one generation deeper; a fork bomb is stopped by the run's end.
    for _ in 0..16 {
        let victims: Vec<(i32, String)> = {
            let spawned = lock(&SPAWNED);
            children(threads)
                .into_iter()
                .filter(|pid| !spawned.contains(pid))
                .filter_map(|pid| match stat(pid) {
                    Some((state, pgid)) if state != 'Z' && state != 'X' => {
                        (Some(pgid) != killed_group && matches(owner_of(pid).as_deref())).then(|| (pid, describe(pid)))
                    }
                    _ => {
                        let _ = nix::sys::wait::waitpid(Pid::from_raw(pid), Some(nix::sys::wait::WaitPidFlag::WNOHANG));
                        None
                    }
                })
                .collect()
        };
        if victims.is_empty() {
            break;
        }
        for (pid, _) in &victims {
            let _ = killpg(Pid::from_raw(*pid), Signal::SIGKILL);
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        for (pid, what) in victims {
            // SIGKILLed: it ends at once; reaping it here keeps no zombie.
            let _ = nix::sys::wait::waitpid(Pid::from_raw(pid), None);
            killed.push(what);
        }
    }
    killed
}

/// The end of the run (or a second signal): every tracked group and every escaped process.
pub fn kill_everything() -> Vec<String> {
    // No process starts meanwhile, and one started before is tracked by now.
    let _no_spawn = SPAWNING.write().unwrap_or_else(|e| e.into_inner());
    let mut killed = kill_groups(|_| true);
    killed.extend(sweep_children(Threads::All, None, |_| true));
    killed
}

/// evalgate's children: those of its main thread, or of each of its threads.
fn children(threads: Threads) -> Vec<i32> {
    let lists: Vec<String> = match threads {
        Threads::Main => main_children().into_iter().collect(),
        Threads::All => match std::fs::read_dir("/proc/self/task") {
            Ok(tasks) => {
                tasks.flatten().filter_map(|t| read::text(&t.path().join("children"), read::PROC).ok()).collect()
            }
            Err(_) => Vec::new(),
        },
    };
    lists.iter().flat_map(|list| list.split_whitespace().filter_map(|p| p.parse().ok())).collect()
}

/// The main thread's children, read again (from offset 0) from one descriptor kept open:
/// a sweep at every process's end, one at every trial's, and opening the file (a path
/// walk through /proc, and a new buffer) cost more than reading it.
fn main_children() -> Option<String> {
    use std::os::unix::fs::FileExt;
    static FILE: LazyLock<Option<std::fs::File>> =
        LazyLock::new(|| read::open(Path::new(&format!("/proc/self/task/{}/children", *PID)), read::PROC).ok());
    let file = FILE.as_ref()?;
    let mut list = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = file.read_at(&mut buf, list.len() as u64).ok()?;
        list.extend_from_slice(&buf[..n]);
        if n == 0 {
            break;
        }
    }
    String::from_utf8(list).ok()
}

/// A process's state letter and process group, from `/proc/PID/stat`.
fn stat(pid: i32) -> Option<(char, i32)> {
    let stat = read::text(Path::new(&format!("/proc/{pid}/stat")), read::PROC).ok()?;
    let mut fields = stat.rsplit_once(") ")?.1.split(' ');
    let state = fields.next()?.chars().next()?;
    let pgid = fields.nth(1)?.parse().ok()?;
    Some((state, pgid))
}

fn owner_of(pid: i32) -> Option<String> {
    let environ = read::bytes(Path::new(&format!("/proc/{pid}/environ")), read::PROC).ok()?;
    let prefix = format!("{OWNER_VAR}=");
    environ
        .split(|b| *b == 0)
        .find_map(|var| var.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// "pid 123: sleep 100", the command line cut and escaped (it is the agent's to choose).
fn describe(pid: i32) -> String {
    let cmdline = read::bytes(Path::new(&format!("/proc/{pid}/cmdline")), read::PROC).unwrap_or_default();
    let text = crate::excerpt::first(String::from_utf8_lossy(&cmdline).replace('\0', " ").trim(), 80);
    format!("pid {pid}: {}", text.escape_debug())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
