//! The confinement of an agent: bubblewrap's namespaces around its process, and the report
//! the sandbox's last words give of what the agent left (processes still running, attempts
//! to reach a network it does not have).

use std::path::{Path, PathBuf};

use super::recipe::{Limits, Network};
use crate::process::ProcessSpec;

/// The user a confined agent runs as when evalgate runs as root: a user of its own gives
/// `RLIMIT_NPROC` a count to bound (root is exempt from it) and it owns nothing outside.
pub const SANDBOX_UID: u32 = 65534;

/// The first word of the sandbox's report line on stderr.
const MARK: &str = "EVALGATE-SANDBOX";

/// Runs last inside the sandbox, after the agent: lists the processes still running (pid 1,
/// bubblewrap's init, its parent — the relay, when there is one — and itself aside) and the network namespace's count of packets that
/// found no route (`OutNoRoutes`, v4 and v6: a connect or a send to anything but its own
/// loopback), then exits with the agent's code. Builtins only: it must run when the agent
/// left the process limit exhausted. Given as `sh -c` text, never as a file the agent could
/// rewrite while it runs.
const REPORT: &str = r#""$@"; rc=$?
left=""
for p in /proc/[0-9]*; do n=${p#/proc/}; case "$n" in 1|$$|$PPID) continue;; esac; c=""; read -r c < "$p/comm" || continue; left="$left,$n:$c"; done
v4="?"; v6="?"
while read -r k a b c d e f g h i j l m rest; do case "$k$a" in Ip:[0-9]*) v4=$m;; esac; done < /proc/net/snmp
while read -r k v; do [ "$k" = Ip6OutNoRoutes ] && v6=$v; done < /proc/net/snmp6
printf '\n%s %s noroute=%s+%s left=%s\n' "$MARK" "$NONCE" "$v4" "$v6" "${left#,}" >&2
exit $rc"#;

/// How a confined agent is run.
#[derive(Debug)]
pub struct Confinement<'a> {
    /// Its workspace (read-write, its working directory unless `cwd` says otherwise).
    pub workspace: &'a Path,
    /// The trial's own files: prompt, trace, MCP config (read-write).
    pub io: &'a Path,
    /// Directories it must not see (the suite's): an empty directory in their place.
    pub hidden: &'a [PathBuf],
    /// Files inside those it needs (its own program), read-only.
    pub readable: Vec<PathBuf>,
    pub network: Network,
    pub limits: Limits,
    /// Marks the report of this trial's sandbox.
    pub nonce: &'a str,
    /// evalgate's own binary and the ports it relays into the sandbox (`relay.rs`), when
    /// the agent reaches evalgate's endpoints under `network: none`.
    pub relay: Option<(&'a Path, &'a [(u16, PathBuf)])>,
    /// Whether the agent ends by itself and the report shell runs after it (a command
    /// agent); an ACP agent's session is ended by evalgate, which reads the sandbox's
    /// network counts itself ([`no_route_of`]) before it kills the sandbox.
    pub report: bool,
}

/// Whether evalgate runs as root (and confined agents as [`SANDBOX_UID`]).
pub fn as_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `spec` run inside the sandbox: the same program, arguments, stdin and timeout; its
/// environment is exactly `spec.env` plus `PATH`, `HOME` (its private `/tmp`) and the
/// locale, nothing else of evalgate's.
pub fn confine(spec: ProcessSpec, c: &Confinement) -> ProcessSpec {
    let mut argv: Vec<String> = Vec::new();
    if as_root() {
        let id = SANDBOX_UID.to_string();
        argv.extend(["setpriv".into(), format!("--reuid={id}"), format!("--regid={id}"), "--clear-groups".into()]);
        argv.push("--".into());
    }
    argv.extend(["env".into(), "-i".into()]);
    let inherited = ["PATH", "LANG", "LC_ALL", "TERM"];
    for name in inherited {
        if let Some(value) = std::env::var_os(name).and_then(|v| v.into_string().ok()) {
            argv.push(format!("{name}={value}"));
        }
    }
    argv.push("HOME=/tmp".into());
    argv.extend(spec.env.iter().map(|(k, v)| format!("{k}={v}")));
    argv.extend(bwrap_args(c));
    argv.extend(["--chdir".into(), spec.cwd.display().to_string()]);
    argv.extend([
        "prlimit".into(),
        format!("--nproc={0}:{0}", c.limits.processes),
        format!("--fsize={0}:{0}", c.limits.file_size),
        "--".into(),
    ]);
    if let Some((evalgate, routes)) = c.relay {
        argv.extend(super::relay::inside_argv(evalgate, routes));
    }
    if c.report {
        let report = REPORT.replace("$MARK", MARK).replace("$NONCE", c.nonce);
        argv.extend(["sh".into(), "-c".into(), report, "sh".into()]);
    }
    argv.push(spec.program.clone());
    argv.extend(spec.args.iter().cloned());
    let mut confined = ProcessSpec::argv(argv, spec.cwd.clone(), spec.timeout);
    confined.stdin = spec.stdin;
    confined.then_take = spec.then_take;
    confined.reap_group = spec.reap_group;
    confined
}

/// bubblewrap's arguments: every namespace of its own (a user namespace too, so the process
/// limit counts this sandbox alone), killed with its parent, a read-only view of the host,
/// fresh `/dev`, `/proc` (its own processes only), `/tmp` and `/run` (no host sockets), the
/// hidden directories emptied, then the workspace and the trial's files bound writable.
fn bwrap_args(c: &Confinement) -> Vec<String> {
    let mut args: Vec<String> =
        ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"].map(String::from).to_vec();
    if c.network == Network::Host {
        args.push("--share-net".into());
    }
    args.extend(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"].map(String::from));
    for dir in ["/tmp", "/run", "/dev/shm"] {
        args.extend(["--size".into(), c.limits.disk.to_string(), "--tmpfs".into(), dir.into()]);
    }
    for dir in c.hidden {
        args.extend(["--tmpfs".into(), dir.display().to_string()]);
    }
    let relay = c.relay.map(|(evalgate, _)| evalgate.to_owned());
    for file in c.readable.iter().chain(&relay) {
        let file = file.display().to_string();
        args.extend(["--ro-bind".into(), file.clone(), file]);
    }
    for dir in [c.workspace, c.io] {
        let dir = dir.display().to_string();
        args.extend(["--bind".into(), dir.clone(), dir]);
    }
    args
}

/// What the sandbox's report said, every report line of `nonce` taken out of `stderr`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// No report line: the report never ran (its shell was killed) or its line was lost.
    pub missing: bool,
    /// Packets that found no route: the agent tried to reach a network.
    pub no_route: u64,
    /// `pid:name` of each process still running after the agent.
    pub left: Vec<String>,
}

impl Report {
    /// Reads and removes the report lines. The agent can print a line of its own with the
    /// nonce (it can read the shell's arguments), but a line only adds what it says: the
    /// real one cannot be taken back.
    pub fn take(stderr: &mut String, nonce: &str) -> Report {
        let prefix = format!("{MARK} {nonce} ");
        let mut report = Report { missing: true, ..Report::default() };
        let mut kept = String::with_capacity(stderr.len());
        for line in stderr.split_inclusive('\n') {
            let Some(rest) = line.trim_end_matches('\n').strip_prefix(&prefix) else {
                kept.push_str(line);
                continue;
            };
            report.missing = false;
            for field in rest.split(' ') {
                if let Some(counts) = field.strip_prefix("noroute=") {
                    // An unreadable count is an attempt: the check fails closed.
                    report.no_route += counts.split('+').map(|n| n.parse::<u64>().unwrap_or(1)).sum::<u64>();
                } else if let Some(left) = field.strip_prefix("left=") {
                    report.left.extend(left.split(',').filter(|p| !p.is_empty()).map(str::to_owned));
                }
            }
        }
        // The report's own blank line before it.
        *stderr = kept.strip_suffix('\n').map(str::to_owned).unwrap_or(kept);
        report
    }
}

/// The packets that found no route (v4 and v6) in the network namespace of the sandbox
/// whose bubblewrap is `pid`, read from the host through its first child (the first
/// process inside the namespace): an attempt at the network by an agent whose session
/// evalgate ends itself. `None` when it cannot be read (the check then fails closed).
pub fn no_route_of(pid: u32) -> Option<u64> {
    // Down the first children until a process in another network namespace than bwrap's.
    let netns = |p: u32| std::fs::read_link(format!("/proc/{p}/ns/net")).ok();
    let outer = netns(pid)?;
    let mut current = pid;
    let inside = loop {
        let children = crate::files::read::text(
            Path::new(&format!("/proc/{current}/task/{current}/children")),
            crate::files::read::Limit { max: 1 << 16, what: "a process's children" },
        )
        .ok()?;
        current = children.split_whitespace().next()?.parse().ok()?;
        if netns(current)? != outer {
            break current;
        }
    };
    let read = |name: &str| {
        crate::files::read::text(
            Path::new(&format!("/proc/{inside}/net/{name}")),
            crate::files::read::Limit { max: 1 << 20, what: "a network namespace's counts" },
        )
        .ok()
    };
    let snmp = read("snmp")?;
    let mut ip = snmp.lines().filter(|l| l.starts_with("Ip:"));
    let (names, values) = (ip.next()?, ip.next()?);
    let v4 = names.split_whitespace().zip(values.split_whitespace()).find(|(n, _)| *n == "OutNoRoutes")?.1;
    let v6 = read("snmp6")?
        .lines()
        .find_map(|l| l.strip_prefix("Ip6OutNoRoutes").map(|v| v.trim().to_owned()))
        .unwrap_or_else(|| "0".into());
    Some(v4.parse::<u64>().ok()? + v6.parse::<u64>().ok()?)
}

/// Checks that bubblewrap runs here as a confined agent would, and names the fix when not:
/// preflight's check, so a machine that cannot confine never runs an agent unconfined.
pub fn probe() -> Result<(), String> {
    let mut argv: Vec<&str> = Vec::new();
    let id = format!("--reuid={SANDBOX_UID}");
    let gid = format!("--regid={SANDBOX_UID}");
    if as_root() {
        argv.extend(["setpriv", &id, &gid, "--clear-groups", "--"]);
    }
    argv.extend(["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/"]);
    argv.extend(["--proc", "/proc", "--dev", "/dev", "prlimit", "--nproc=64:64", "--", "true"]);
    let out = std::process::Command::new(argv[0]).args(&argv[1..]).stdin(std::process::Stdio::null()).output();
    let fix = "install bubblewrap and util-linux (Debian/Ubuntu: `apt-get install bubblewrap`), or set `isolation: none` on the workspace to run agents unconfined";
    match out {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("`{}` is not installed: {fix}", argv[0])),
        Err(e) => Err(format!("cannot run `{}`: {e}: {fix}", argv[0])),
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            let fix = if said.contains("No such file") {
                fix.to_owned()
            } else {
                "unprivileged user namespaces are off: `sysctl -w kernel.unprivileged_userns_clone=1`, and on Ubuntu 24.04 `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`; or set `isolation: none` on the workspace".to_owned()
            };
            Err(format!("bubblewrap cannot make a sandbox here ({said}): {fix}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_taken_out_of_stderr_and_a_forged_line_only_adds() {
        let mut stderr = "warn\n\nEVALGATE-SANDBOX n1 noroute=0+0 left=\nEVALGATE-SANDBOX n1 noroute=0+0 left=\n\nEVALGATE-SANDBOX n1 noroute=2+1 left=7:sleep\n".to_owned();
        let report = Report::take(&mut stderr, "n1");
        assert_eq!(report, Report { missing: false, no_route: 3, left: vec!["7:sleep".into()] });
        assert_eq!(stderr, "warn\n\n");
        let mut other = "EVALGATE-SANDBOX n2 noroute=0+0 left=\n".to_owned();
        assert!(Report::take(&mut other, "n1").missing);
    }

    #[test]
    fn the_host_network_is_shared_only_when_asked() {
        let c = Confinement {
            workspace: Path::new("/w/ws"),
            io: Path::new("/w/io"),
            hidden: &[PathBuf::from("/suite")],
            readable: vec![PathBuf::from("/suite/agent.sh")],
            network: Network::None,
            limits: Limits::default(),
            nonce: "n",
            relay: None,
            report: true,
        };
        let args = bwrap_args(&c).join(" ");
        assert!(!args.contains("--share-net"));
        // The suite is emptied before the agent's program is bound back, then the workspace.
        let (hide, back, ws) = (
            args.find("--tmpfs /suite").unwrap(),
            args.find("--ro-bind /suite/agent.sh").unwrap(),
            args.find("--bind /w/ws").unwrap(),
        );
        assert!(hide < back && back < ws, "{args}");
        // A relay keeps the sandbox's own network and makes evalgate's binary readable.
        let routes = [(4000, PathBuf::from("/w/io/relay-4000.sock"))];
        let relayed = Confinement { relay: Some((Path::new("/opt/evalgate"), &routes)), ..c };
        let args = bwrap_args(&relayed).join(" ");
        assert!(!args.contains("--share-net") && args.contains("--ro-bind /opt/evalgate /opt/evalgate"), "{args}");
        assert!(
            bwrap_args(&Confinement { network: Network::Host, relay: None, ..relayed })
                .contains(&"--share-net".to_owned())
        );
    }
}
