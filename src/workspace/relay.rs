//! The relay that lets a confined agent under `network: none` reach evalgate's own
//! endpoints (the cassette's model endpoint, the MCP proxies) and nothing else.
//!
//! The sandbox keeps its network namespace of its own (only its loopback). For each
//! endpoint port, evalgate listens on a Unix socket in the trial's own directory, which is
//! bound into the sandbox ([`HostRelay`]: each connection forwarded to `127.0.0.1:PORT` on
//! the host, that port only); inside, evalgate itself ([`inside`], run as the sandbox's
//! first process) listens on the sandbox's `127.0.0.1:PORT` and forwards each connection to
//! that socket. The agent's URLs (`http://127.0.0.1:PORT/…`) are unchanged; any other port,
//! the host's included, stays out of reach.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The first argument that makes evalgate the relay inside a sandbox.
pub const INSIDE_ARG: &str = "__sandbox-relay";

/// The host's end of the relay of one trial: a Unix socket per relayed port, each connection
/// forwarded to that port on the host's loopback. Dropped, it stops and removes its sockets.
pub struct HostRelay {
    /// `(port, socket)` for each relayed port.
    pub routes: Vec<(u16, PathBuf)>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl HostRelay {
    /// Listens for the sandbox of a trial whose own directory is `io` (bound into it).
    pub fn start(io: &Path, ports: &[u16]) -> std::io::Result<HostRelay> {
        let mut relay = HostRelay { routes: Vec::new(), tasks: Vec::new() };
        for &port in ports {
            let socket = io.join(format!("relay-{port}.sock"));
            let listener = tokio::net::UnixListener::bind(&socket)?;
            // The sandbox's user (`nobody` under root) connects to it; only the trial's own
            // directory, private to the run, holds it.
            std::fs::set_permissions(&socket, std::os::unix::fs::PermissionsExt::from_mode(0o666))?;
            relay.tasks.push(tokio::spawn(async move {
                while let Ok((mut inside, _)) = listener.accept().await {
                    tokio::spawn(async move {
                        if let Ok(mut host) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                            let _ = tokio::io::copy_bidirectional(&mut inside, &mut host).await;
                        }
                    });
                }
            }));
            relay.routes.push((port, socket));
        }
        Ok(relay)
    }
}

impl Drop for HostRelay {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        for (_, socket) in &self.routes {
            let _ = std::fs::remove_file(socket);
        }
    }
}

/// The words that run `program` under the relay inside the sandbox: evalgate itself, then
/// `PORT=SOCKET` for each route, then `--` and the program's own words.
pub fn inside_argv(evalgate: &Path, routes: &[(u16, PathBuf)]) -> Vec<String> {
    let mut argv = vec![evalgate.display().to_string(), INSIDE_ARG.to_owned()];
    argv.extend(routes.iter().map(|(port, socket)| format!("{port}={}", socket.display())));
    argv.push("--".into());
    argv
}

/// evalgate as the relay inside a sandbox (`args`: what follows [`INSIDE_ARG`]): listens on
/// `127.0.0.1:PORT` for each route, forwarding each connection to its socket, runs the
/// program after `--` and exits with its code once it ends. Bound before the program
/// starts, so its first request finds the relay listening.
pub fn inside(args: &[std::ffi::OsString]) -> i32 {
    let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let Some(split) = args.iter().position(|a| a == "--") else {
        crate::errln!("evalgate {INSIDE_ARG}: expected PORT=SOCKET … -- PROGRAM");
        return 2;
    };
    let (routes, program) = (&args[..split], &args[split + 1..]);
    for route in routes {
        let Some((port, socket)) = route.split_once('=') else { return 2 };
        let listener = match std::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>().unwrap_or(0))) {
            Ok(l) => l,
            Err(e) => {
                crate::errln!("evalgate {INSIDE_ARG}: cannot listen on 127.0.0.1:{port}: {e}");
                return 2;
            }
        };
        let socket = PathBuf::from(socket);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let socket = socket.clone();
                std::thread::spawn(move || forward(conn, &socket));
            }
        });
    }
    let Some((name, rest)) = program.split_first() else { return 2 };
    match std::process::Command::new(name).args(rest).status() {
        Ok(status) => {
            status.code().unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0))
        }
        Err(e) => {
            crate::errln!("evalgate {INSIDE_ARG}: cannot run `{name}`: {e}");
            127
        }
    }
}

/// One connection copied both ways to the socket until either side closes.
fn forward(conn: std::net::TcpStream, socket: &Path) {
    let Ok(host) = std::os::unix::net::UnixStream::connect(socket) else { return };
    let (Ok(mut conn_r), Ok(mut host_w)) = (conn.try_clone(), host.try_clone()) else { return };
    let up = std::thread::spawn(move || {
        let _ = copy(&mut conn_r, &mut host_w);
        let _ = host_w.shutdown(std::net::Shutdown::Write);
    });
    let (mut host_r, mut conn_w) = (host, conn);
    let _ = copy(&mut host_r, &mut conn_w);
    let _ = conn_w.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
}

fn copy(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<()> {
    std::io::copy(from, to).map(drop)
}
