//! Build facts for `evalgate --version` and the canonical repository:
//! - `EVALGATE_COMMIT`: `$EVALGATE_BUILD_COMMIT` when set (the action sets it when it builds
//!   a commit it checked out without `.git`), else the git commit of the source, else
//!   `unknown` (a crates.io download has no `.git`).
//! - `EVALGATE_REPOSITORY`: `owner/name` from Cargo.toml's `repository`, the one line a fork
//!   changes.

// Cargo reads its directives from stdout: printing is the interface here.
#![allow(clippy::disallowed_macros)]

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=EVALGATE_BUILD_COMMIT");
    let commit = std::env::var("EVALGATE_BUILD_COMMIT").ok().filter(|c| !c.is_empty()).or_else(git_commit);
    println!("cargo:rustc-env=EVALGATE_COMMIT={}", commit.as_deref().unwrap_or("unknown"));

    let url = std::env::var("CARGO_PKG_REPOSITORY").unwrap_or_default();
    let slug = url.trim_end_matches('/').trim_end_matches(".git").rsplitn(3, '/').take(2).collect::<Vec<_>>();
    let slug = match slug.as_slice() {
        [name, owner] => format!("{owner}/{name}"),
        _ => panic!("Cargo.toml `repository` must be https://github.com/OWNER/NAME, got `{url}`"),
    };
    println!("cargo:rustc-env=EVALGATE_REPOSITORY={slug}");
}

/// The commit of the source tree; a rebuild follows a new commit or checkout.
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
        Some(String::from_utf8(out.stdout).ok()?.trim().to_owned())
    };
    let git_dir = git(&["rev-parse", "--absolute-git-dir"])?;
    for file in ["HEAD", "logs/HEAD"] {
        let path = std::path::Path::new(&git_dir).join(file);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"])
}
