//! The ways in, without the release host: the README's Install command and the action's
//! install steps, run for real against a local file server (python3 -m http.server) that
//! serves a release archive and the repository's raw files, with a stand-in `cargo` that
//! records how it was called.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use sha2::{Digest, Sha256};

const TARGET: &str = "x86_64-unknown-linux-musl";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `python3 -m http.server` over `dir` on a free port; stopped on drop.
struct FileServer {
    child: Child,
    url: String,
}

impl FileServer {
    fn start(dir: &Path) -> FileServer {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("python3")
            .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1", "--directory"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        crate::common::server::wait_listening(port, "the file server");
        FileServer { child, url: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A release archive holding `binary` as `evalgate`; returns its bytes.
fn archive(dir: &Path, binary: &Path) -> Vec<u8> {
    let staging = dir.join("staging");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::copy(binary, staging.join("evalgate")).unwrap();
    let path = dir.join("archive.tar.gz");
    // gzip -1: the debug binary is large, and the level is not what is tested.
    let status = Command::new("sh")
        .arg("-c")
        .arg("tar -cf - -C \"$1\" evalgate | gzip -1 > \"$2\"")
        .arg("sh")
        .arg(&staging)
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(path).unwrap()
}

/// The release host and the raw repository, as files: `gh/OWNER/NAME/releases/download/TAG/…`
/// and `raw/OWNER/NAME/TAG/…`.
struct Host {
    dir: tempfile::TempDir,
    server: FileServer,
}

impl Host {
    fn new() -> Host {
        let dir = tempfile::tempdir().unwrap();
        let server = FileServer::start(dir.path());
        Host { dir, server }
    }
    fn put(&self, path: &str, bytes: &[u8]) {
        let path = self.dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    fn release(&self, tag: &str, target: &str, bytes: &[u8]) {
        self.put(&format!("gh/{}/releases/download/{tag}/evalgate-{target}.tar.gz", evalgate::REPOSITORY), bytes);
    }
    fn raw(&self, tag: &str, path: &str, bytes: &[u8]) {
        self.put(&format!("raw/{}/{tag}/{path}", evalgate::REPOSITORY), bytes);
    }
    /// The URLs of the README rewritten to this host.
    fn rewrite(&self, text: &str) -> String {
        text.replace("https://raw.githubusercontent.com", &format!("{}/raw", self.server.url))
            .replace("https://github.com", &format!("{}/gh", self.server.url))
    }
}

/// The README's one-line install command (the shell block after "prebuilt").
fn readme_install_command() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("<!-- install:prebuilt -->").expect("the install marker in README.md");
    let block = &readme[start..];
    let code = block.split("```sh\n").nth(1).unwrap().split("\n```").next().unwrap();
    code.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_readme_install_command_installs_a_working_evalgate_and_refuses_a_tampered_archive() {
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let host = Host::new();
    let work = tempfile::tempdir().unwrap();
    let bytes = archive(work.path(), Path::new(env!("CARGO_BIN_EXE_evalgate")));
    host.release(&version, TARGET, &bytes);
    host.raw(&version, "scripts/install.sh", &std::fs::read(root().join("scripts/install.sh")).unwrap());
    let sums = format!("{}  evalgate-{TARGET}.tar.gz\n0000  evalgate-aarch64-apple-darwin.tar.gz\n", sha256(&bytes));
    host.raw("main", &format!("checksums/{version}.sha256"), sums.as_bytes());

    let command = readme_install_command();
    assert!(command.contains(&format!("/{}/{version}/scripts/install.sh", evalgate::REPOSITORY)), "{command}");
    let home = tempfile::tempdir().unwrap();
    let install = |command: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("HOME", home.path())
            .env("EVALGATE_PLATFORM", "Linux-x86_64")
            .env("EVALGATE_RELEASES_URL", format!("{}/gh/{}/releases/download", host.server.url, evalgate::REPOSITORY))
            .env("EVALGATE_RAW_URL", format!("{}/raw", host.server.url))
            .current_dir(work.path())
            .output()
            .unwrap()
    };
    let out = install(&host.rewrite(&command));
    assert!(out.status.success(), "{}", text(&out));
    let bin = home.path().join(".local/bin/evalgate");
    let version_line = Command::new(&bin).arg("--version").output().unwrap();
    let version_line = String::from_utf8(version_line.stdout).unwrap();
    assert!(version_line.starts_with(&format!("evalgate {} (commit ", env!("CARGO_PKG_VERSION"))), "{version_line}");
    std::fs::remove_file(&bin).unwrap();

    // An archive that does not match the committed checksum is refused; nothing installed.
    let other = work.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("evalgate"), "#!/bin/sh\necho not the release\n").unwrap();
    host.release(&version, TARGET, &archive(&other, &other.join("evalgate")));
    let out = install(&host.rewrite(&command));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("checksum mismatch for evalgate-x86_64-unknown-linux-musl.tar.gz"), "{}", text(&out));
    assert!(!bin.exists());
}

#[test]
fn the_install_script_defaults_to_the_canonical_repository() {
    let script = std::fs::read_to_string(root().join("scripts/install.sh")).unwrap();
    assert!(script.contains(&format!("repository=\"${{EVALGATE_REPOSITORY:-{}}}\"", evalgate::REPOSITORY)));
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// An action checkout at some ref: the scripts, a Cargo.toml of `version`, a source file,
/// and the committed checksums of the releases given.
fn action_checkout(dir: &Path, version: &str, checksums: &[(&str, &str)]) -> PathBuf {
    let action = dir.join("action");
    std::fs::create_dir_all(action.join("scripts")).unwrap();
    std::fs::create_dir_all(action.join("src")).unwrap();
    std::fs::create_dir_all(action.join("checksums")).unwrap();
    for script in ["action-install.sh", "install.sh"] {
        std::fs::copy(root().join("scripts").join(script), action.join("scripts").join(script)).unwrap();
    }
    std::fs::write(
        action.join("Cargo.toml"),
        format!(
            "[package]\nname = \"evalgate\"\nversion = \"{version}\"\nrepository = \"https://github.com/{}\"\n",
            evalgate::REPOSITORY
        ),
    )
    .unwrap();
    std::fs::write(action.join("src/main.rs"), "fn main() {}\n").unwrap();
    for (tag, sums) in checksums {
        std::fs::write(action.join("checksums").join(format!("{tag}.sha256")), sums).unwrap();
    }
    action
}

/// The action's install steps as action.yml runs them: `resolve`, then (when it asks for a
/// build) `build` with its outputs; returns the outputs, the log and the cargo calls.
struct Installed {
    code: Option<i32>,
    outputs: std::collections::BTreeMap<String, String>,
    log: String,
    cargo: String,
}

fn install_steps(action: &Path, host: &Host, platform: &str, env: &[(&str, &str)]) -> Installed {
    let dir = action.parent().unwrap();
    let output = dir.join("github-output");
    std::fs::write(&output, "").unwrap();
    let cargo_log = dir.join("cargo.log");
    let cargo = dir.join("fake-cargo.sh");
    // Records its arguments and the commit it was asked to stamp; installs a stand-in.
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\necho \"$* commit=$EVALGATE_BUILD_COMMIT\" >> {log}\nwhile [ \"$1\" != --root ]; do shift; done\nmkdir -p \"$2/bin\" && printf '#!/bin/sh\\necho built\\n' > \"$2/bin/evalgate\" && chmod +x \"$2/bin/evalgate\"\n",
            log = cargo_log.display()
        ),
    )
    .unwrap();
    let step = |phase: &str, extra: &[(String, String)]| {
        let mut cmd = Command::new("bash");
        cmd.arg(action.join("scripts/action-install.sh")).arg(phase);
        for (key, _) in std::env::vars() {
            if key.starts_with("GITHUB_") || key.starts_with("RUNNER_") || key.starts_with("INPUT_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("GITHUB_OUTPUT", &output)
            .env("GITHUB_ACTION_PATH", action)
            .env("RUNNER_TEMP", dir.join("runner-temp"))
            .env("GITHUB_SERVER_URL", "https://github.com")
            .env("ACTION_REPOSITORY", evalgate::REPOSITORY)
            .env("EVALGATE_PLATFORM", platform)
            .env("EVALGATE_CARGO", format!("sh {}", cargo.display()))
            .env("EVALGATE_RELEASES_URL", format!("{}/gh/{}/releases/download", host.server.url, evalgate::REPOSITORY))
            .env("EVALGATE_RAW_URL", format!("{}/raw", host.server.url));
        for (k, v) in env {
            cmd.env(k, v);
        }
        for (k, v) in extra {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let read_outputs = || -> std::collections::BTreeMap<String, String> {
        std::fs::read_to_string(&output)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect()
    };
    let resolve = step("resolve", &[]);
    let mut log = text(&resolve);
    let mut code = resolve.status.code();
    let mut outputs = read_outputs();
    if code == Some(0) && outputs.contains_key("build-key") {
        let env: Vec<(String, String)> = ["root", "source", "tag", "commit", "repository"]
            .iter()
            .map(|k| (format!("BUILD_{}", k.to_uppercase()), outputs[&format!("build-{k}")].clone()))
            .collect();
        let build = step("build", &env);
        log.push_str(&text(&build));
        code = build.status.code();
        outputs = read_outputs();
    }
    let cargo = std::fs::read_to_string(&cargo_log).unwrap_or_default();
    Installed { code, outputs, log, cargo }
}

#[test]
fn the_action_installs_its_release_at_a_tag_and_builds_its_source_at_a_branch_or_a_commit() {
    let host = Host::new();
    let work = tempfile::tempdir().unwrap();
    let fake = work.path().join("fake-evalgate");
    std::fs::write(&fake, "#!/bin/sh\necho 'evalgate 0.3.0 (released)'\n").unwrap();
    let bytes = archive(work.path(), &fake);
    host.release("v0.3.0", TARGET, &bytes);
    let sums = format!("{}  evalgate-{TARGET}.tar.gz\n", sha256(&bytes));

    // A release tag: the archive, verified against the checksums committed in the action.
    let dir = tempfile::tempdir().unwrap();
    let action = action_checkout(dir.path(), "0.3.0", &[("v0.3.0", &sums)]);
    let tag = install_steps(&action, &host, "Linux-x86_64", &[("ACTION_REF", "v0.3.0")]);
    assert_eq!(tag.code, Some(0), "{}", tag.log);
    assert!(tag.log.contains("installed release v0.3.0 (x86_64-unknown-linux-musl)"), "{}", tag.log);
    assert_eq!(tag.cargo, "", "nothing built");
    let out = Command::new(&tag.outputs["bin"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "evalgate 0.3.0 (released)\n");
    // The major tag on that release commit: the same release.
    let dir = tempfile::tempdir().unwrap();
    let action = action_checkout(dir.path(), "0.3.0", &[("v0.3.0", &sums)]);
    let major = install_steps(&action, &host, "Linux-x86_64", &[("ACTION_REF", "v0")]);
    assert!(major.log.contains("installed release v0.3.0"), "{}", major.log);

    // A branch: that checkout's source, cached under a key of its contents.
    let dir = tempfile::tempdir().unwrap();
    let action = action_checkout(dir.path(), "0.3.0", &[("v0.3.0", &sums)]);
    let branch = install_steps(&action, &host, "Linux-x86_64", &[("ACTION_REF", "main")]);
    assert_eq!(branch.code, Some(0), "{}", branch.log);
    assert!(
        branch.log.contains("the action is used at 'main', not a release tag: building its source"),
        "{}",
        branch.log
    );
    let key = &branch.outputs["build-key"];
    assert!(key.starts_with("evalgate-x86_64-unknown-linux-musl-source-"), "{key}");
    let root = &branch.outputs["build-root"];
    assert_eq!(
        branch.cargo,
        format!(
            "install --locked --path {} --root {root} commit={}\n",
            action.display(),
            branch.outputs["build-commit"]
        )
    );
    assert_eq!(branch.outputs["bin"], format!("{root}/bin/evalgate"));

    // A commit SHA: keyed and stamped by it; a second run finds the cached build.
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let dir = tempfile::tempdir().unwrap();
    let action = action_checkout(dir.path(), "0.3.0", &[]);
    let commit = install_steps(&action, &host, "Linux-x86_64", &[("ACTION_REF", sha)]);
    assert_eq!(commit.outputs["build-key"], format!("evalgate-x86_64-unknown-linux-musl-{sha}"));
    assert_eq!(commit.cargo.matches("install --locked --path").count(), 1);
    assert!(commit.cargo.ends_with(&format!("commit={sha}\n")), "{}", commit.cargo);
    let again = install_steps(&action, &host, "Linux-x86_64", &[("ACTION_REF", sha)]);
    assert!(again.log.contains(&format!("using the build cached for {sha}")), "{}", again.log);
    assert_eq!(again.cargo.matches("install").count(), 1, "not built twice");
}

#[test]
fn a_release_without_an_archive_for_the_runner_builds_that_release_and_nothing_else() {
    let host = Host::new();
    let work = tempfile::tempdir().unwrap();
    let fake = work.path().join("fake-evalgate");
    std::fs::write(&fake, "#!/bin/sh\necho released\n").unwrap();
    let bytes = archive(work.path(), &fake);
    host.release("v0.3.0", TARGET, &bytes);
    let sums = format!("{}  evalgate-{TARGET}.tar.gz\n", sha256(&bytes));

    // At the tag, on an arm64 runner the release has no archive for: the action's source.
    let dir = tempfile::tempdir().unwrap();
    let action = action_checkout(dir.path(), "0.3.0", &[("v0.3.0", &sums)]);
    let arm = install_steps(&action, &host, "Linux-aarch64", &[("ACTION_REF", "v0.3.0")]);
    assert_eq!(arm.code, Some(0), "{}", arm.log);
    assert!(
        arm.log.contains(
            "release v0.3.0 has no archive for aarch64-unknown-linux-musl: building the action's source (v0.3.0)"
        ),
        "{}",
        arm.log
    );
    assert!(arm.cargo.starts_with(&format!("install --locked --path {} ", action.display())), "{}", arm.cargo);

    // The version input names another release: its archive, or its own tag's source.
    host.raw("main", "checksums/v0.2.0.sha256", format!("{}  evalgate-{TARGET}.tar.gz\n", "ab".repeat(32)).as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let action = action_checkout(dir.path(), "0.3.0", &[]);
    let other = install_steps(&action, &host, "Linux-x86_64", &[("ACTION_REF", "main"), ("INPUT_VERSION", "v0.2.0")]);
    assert_eq!(other.code, Some(0), "{}", other.log);
    assert!(
        other.log.contains("release v0.2.0 has no archive for x86_64-unknown-linux-musl: building v0.2.0 from source"),
        "{}",
        other.log
    );
    assert_eq!(
        other.cargo,
        format!(
            "install --locked --git https://github.com/{} --tag v0.2.0 --root {} commit=\n",
            evalgate::REPOSITORY,
            other.outputs["build-root"]
        )
    );

    // A version that was never released: refused, nothing built.
    let dir = tempfile::tempdir().unwrap();
    let action = action_checkout(dir.path(), "0.3.0", &[]);
    let missing = install_steps(&action, &host, "Linux-x86_64", &[("INPUT_VERSION", "v9.9.9")]);
    assert_eq!(missing.code, Some(1), "{}", missing.log);
    assert!(missing.log.contains("no checksum file checksums/v9.9.9.sha256"), "{}", missing.log);
    assert!(missing.log.contains("::error title=evalgate::cannot install release v9.9.9"), "{}", missing.log);
    assert_eq!(missing.cargo, "");
    let bad = install_steps(&action, &host, "Linux-x86_64", &[("INPUT_VERSION", "main")]);
    assert_eq!(bad.code, Some(1));
    let refused = "the version input must be a release tag vMAJOR.MINOR.PATCH[-pre] such as v0.3.0, got";
    assert!(bad.log.contains(&format!("{refused} 'main'")), "{}", bad.log);

    // A tampered archive is refused, not replaced by a build.
    host.release("v0.3.0", TARGET, b"not the release");
    let dir = tempfile::tempdir().unwrap();
    let action = action_checkout(dir.path(), "0.3.0", &[("v0.3.0", &sums)]);
    let tampered = install_steps(&action, &host, "Linux-x86_64", &[("ACTION_REF", "v0.3.0")]);
    assert_eq!(tampered.code, Some(1), "{}", tampered.log);
    assert!(tampered.log.contains("checksum mismatch"), "{}", tampered.log);
    assert_eq!(tampered.cargo, "");

    // Windows: a clear refusal.
    let windows = install_steps(&action, &host, "MINGW64_NT-10.0-x86_64", &[("ACTION_REF", "v0.3.0")]);
    assert_eq!(windows.code, Some(1));
    assert!(windows.log.contains("::error title=evalgate::evalgate runs on Linux and macOS runners, not on Windows"));
}

#[test]
fn a_version_input_that_is_not_a_plain_release_tag_is_refused_before_anything_is_fetched() {
    // Another repository's release, verified against its own checksum file: what a version
    // with `/../` in it reached before (`checksums/v0.3.0-/../../other/….sha256`).
    let host = Host::new();
    let work = tempfile::tempdir().unwrap();
    let bytes = archive(work.path(), Path::new(env!("CARGO_BIN_EXE_evalgate")));
    let sums = format!("{}  evalgate-{TARGET}.tar.gz\n", sha256(&bytes));
    host.put(&format!("gh/{}/releases/download/v0.3.0-x/../../../../mallory/evil/releases/download/v6.6.6/evalgate-{TARGET}.tar.gz", evalgate::REPOSITORY), &bytes);
    host.put("raw/mallory/evil/main/checksums/v6.6.6.sha256", sums.as_bytes());
    let hostile = [
        "v0.3.0-x/../../../../mallory/evil/releases/download/v6.6.6",
        "v0.3.0/../v0.2.0",
        "v0.3.0\n",
        "v0.3.0-",
        "v0.3.0+x",
        "0.3.0",
    ];
    for version in hostile {
        let dir = tempfile::tempdir().unwrap();
        let action = action_checkout(dir.path(), "0.3.0", &[]);
        let installed = install_steps(&action, &host, "Linux-x86_64", &[("INPUT_VERSION", version)]);
        assert_eq!(installed.code, Some(1), "{version:?}: {}", installed.log);
        assert!(
            installed.log.contains("the version input must be a release tag vMAJOR.MINOR.PATCH[-pre]"),
            "{version:?}: {}",
            installed.log
        );
        assert!(
            !installed.outputs.contains_key("bin") && installed.cargo.is_empty(),
            "{version:?}: nothing installed or built"
        );
    }
    // The script the README pipes to `sh` refuses such a tag itself.
    for tag in ["v0.3.0-x/../../y", "v0.3.0\nv0.3.0", "main"] {
        // Against the local host, so that a script that let the tag through fetches nothing real.
        let out = Command::new("sh")
            .arg(root().join("scripts/install.sh"))
            .arg(tag)
            .arg(work.path().join("bin"))
            .env("EVALGATE_PLATFORM", "Linux-x86_64")
            .env("EVALGATE_RELEASES_URL", format!("{}/gh/{}/releases/download", host.server.url, evalgate::REPOSITORY))
            .env("EVALGATE_RAW_URL", format!("{}/raw", host.server.url))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{tag:?}: {}", text(&out));
        assert!(
            text(&out).contains("is not a release tag (vMAJOR.MINOR.PATCH[-pre], such as v0.1.0)"),
            "{tag:?}: {}",
            text(&out)
        );
    }
    for tag in ["v0.3.0", "v1.2.3-rc.1"] {
        let dir = tempfile::tempdir().unwrap();
        let action = action_checkout(dir.path(), "0.3.0", &[]);
        let installed = install_steps(&action, &host, "Linux-x86_64", &[("INPUT_VERSION", tag)]);
        assert!(!installed.log.contains("must be a release tag"), "{tag}: {}", installed.log);
    }
}
