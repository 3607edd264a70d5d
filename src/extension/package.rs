//! Where an extension's binary comes from: a local path, or a release reference
//! (`https://github.com/ORG/REPO@VERSION`) found in a cache, never downloaded at run time.
//! A pinned checksum is verified before anything runs, on the very bytes that then run: a
//! verified binary is copied to a private file, so the file cannot change between the check
//! and the start.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// A binary is read whole to be verified; none is larger than this.
pub const BINARY: crate::files::read::Limit = crate::files::read::Limit { max: 512 << 20, what: "an extension binary" };

/// The variable naming the cache of release binaries.
pub const CACHE_VAR: &str = "EVALGATE_EXTENSIONS";

#[derive(Debug, Clone, PartialEq)]
pub enum Package {
    /// A binary on disk (relative to the suite's directory).
    Path(PathBuf),
    /// A release: `github.com/ORG/REPO` at `VERSION`.
    Release { host: String, org: String, repo: String, version: String },
}

impl Package {
    /// Reads a `package:` value. A reference with a scheme or a host must be a release
    /// `HOST/ORG/REPO@VERSION`; anything else is a path.
    pub fn parse(text: &str, base: &Path) -> Result<Package, String> {
        let bare = text.strip_prefix("https://").unwrap_or(text);
        let looks_remote =
            text.starts_with("https://") || text.starts_with("http://") || bare.starts_with("github.com/");
        if !looks_remote {
            return Ok(Package::Path(base.join(text)));
        }
        if text.starts_with("http://") {
            return Err(format!("`{text}`: a release is fetched over https only"));
        }
        let release = bare.split_once('@').and_then(|(path, version)| {
            let mut parts = path.splitn(3, '/');
            let (host, org, repo) = (parts.next()?, parts.next()?, parts.next()?);
            let clean = |s: &str| !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\\');
            (clean(host) && clean(org) && clean(repo) && clean(version)).then(|| Package::Release {
                host: host.to_owned(),
                org: org.to_owned(),
                repo: repo.to_owned(),
                version: version.to_owned(),
            })
        });
        release.ok_or_else(|| format!("`{text}` is not a release reference: write HOST/ORG/REPO@VERSION"))
    }

    /// The binary's path: the file itself, or its place in the cache.
    pub fn location(&self, cache: &Path) -> PathBuf {
        match self {
            Package::Path(path) => path.clone(),
            Package::Release { host, org, repo, version } => {
                cache.join(host).join(org).join(repo).join(version).join(repo)
            }
        }
    }
}

/// The cache of release binaries: `$EVALGATE_EXTENSIONS`, else `$XDG_CACHE_HOME/evalgate/
/// extensions`, else `~/.cache/evalgate/extensions`.
pub fn cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var(CACHE_VAR)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("evalgate/extensions")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/evalgate/extensions")))
        .unwrap_or_else(|| PathBuf::from(".evalgate/extensions"))
}

/// This machine, as a checksum map's key names it (`linux-x86_64`, `macos-aarch64`).
pub fn platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// The binary to start: the package's file when nothing is pinned, else a private copy of
/// its bytes once their SHA-256 is `sha256`. `private` is a directory only this run writes.
pub fn resolve(package: &Package, sha256: Option<&str>, cache: &Path, private: &Path) -> Result<PathBuf, String> {
    let path = package.location(cache);
    if let Package::Release { .. } = package
        && sha256.is_none()
    {
        return Err("a release reference needs `sha256`, the checksum of its binary, pinned in the suite".into());
    }
    if !path.is_file() {
        return Err(match package {
            Package::Path(_) => format!("`{}` does not exist or is not a file", path.display()),
            Package::Release { .. } => format!(
                "it is not in the extension cache: put the release's {} binary at `{}` (or set {CACHE_VAR}); evalgate downloads nothing at run time",
                platform(),
                path.display()
            ),
        });
    }
    let Some(expected) = sha256 else { return Ok(path) };
    let bytes = crate::files::read::bytes(&path, BINARY).map_err(|e| format!("`{}`: {e}", path.display()))?;
    let actual = hex(&Sha256::digest(&bytes));
    let expected = expected.strip_prefix("sha256:").unwrap_or(expected).to_ascii_lowercase();
    if actual != expected {
        return Err(format!("`{}` has SHA-256 {actual}, not the pinned {expected}: refused", path.display()));
    }
    let name = path.file_name().map_or_else(|| "extension".into(), |n| n.to_string_lossy().into_owned());
    let copy = private.join(format!("{}-{name}", &actual[..12]));
    write_executable(&copy, &bytes)
        .map_err(|e| format!("cannot copy the verified binary to `{}`: {e}", copy.display()))?;
    Ok(copy)
}

fn write_executable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o700).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_a_release_or_a_path() {
        let base = Path::new("/suite");
        let release = |host: &str, org: &str, repo: &str, version: &str| Package::Release {
            host: host.into(),
            org: org.into(),
            repo: repo.into(),
            version: version.into(),
        };
        let k8s = release("github.com", "mcpchecker", "kubernetes-extension", "v0.0.2");
        assert_eq!(Package::parse("https://github.com/mcpchecker/kubernetes-extension@v0.0.2", base).unwrap(), k8s);
        assert_eq!(Package::parse("github.com/mcpchecker/kubernetes-extension@v0.0.2", base).unwrap(), k8s);
        assert_eq!(Package::parse("./bin/ext", base).unwrap(), Package::Path("/suite/./bin/ext".into()));
        for bad in
            ["https://github.com/a/b", "https://github.com/../b@v1", "http://github.com/a/b@v1", "github.com/a@v1"]
        {
            assert!(Package::parse(bad, base).is_err(), "{bad}");
        }
        let cache = Path::new("/cache");
        assert_eq!(
            k8s.location(cache),
            Path::new("/cache/github.com/mcpchecker/kubernetes-extension/v0.0.2/kubernetes-extension")
        );
    }

    #[test]
    fn a_pinned_binary_runs_only_as_verified_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, private) = (dir.path().join("ext"), dir.path().join("private"));
        std::fs::create_dir(&private).unwrap();
        std::fs::write(&bin, b"#!/bin/sh\necho hi\n").unwrap();
        let sum = hex(&Sha256::digest(b"#!/bin/sh\necho hi\n"));
        let package = Package::Path(bin.clone());
        assert_eq!(resolve(&package, None, dir.path(), &private).unwrap(), bin, "unpinned: the file itself");
        let copy = resolve(&package, Some(&format!("sha256:{sum}")), dir.path(), &private).unwrap();
        assert_ne!(copy, bin);
        assert_eq!(crate::files::read::bytes(&copy, BINARY).unwrap(), b"#!/bin/sh\necho hi\n");
        std::fs::write(&bin, b"#!/bin/sh\nrm -rf ~\n").unwrap();
        let refused = resolve(&package, Some(&sum), dir.path(), &private).unwrap_err();
        assert!(refused.contains(&format!("not the pinned {sum}: refused")), "{refused}");
        let release = Package::parse("github.com/o/r@v1", dir.path()).unwrap();
        assert!(resolve(&release, None, dir.path(), &private).unwrap_err().contains("needs `sha256`"));
        let missing = resolve(&release, Some(&sum), dir.path(), &private).unwrap_err();
        assert!(missing.contains("not in the extension cache") && missing.contains("github.com/o/r/v1/r"), "{missing}");
    }
}
