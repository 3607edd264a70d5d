//! Files written whole or not at all: a temp file beside the target, synced, then renamed,
//! so a crash never leaves half a report, baseline or cache entry. They are created as
//! `File::create` would (`0666` less the umask, so `0644` as a rule), not with a temp file's
//! private `0600`: a later step running as another user reads the reports. Every file evalgate
//! reads, it reads through [`read`].

mod display;
pub mod read;

pub use display::display_path;

use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

pub fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError { path: path.to_owned(), source }
}

/// The directory `path` is in (`.` for a bare file name).
pub fn parent(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Replaces `path` with `bytes`, synced to disk first: it survives a power cut.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    replace(path, bytes, true)
}

/// Replaces `path` with `bytes` without waiting for the disk: a kill of evalgate never
/// leaves half a file, a power cut may. For reports rewritten while a run goes.
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], sync: bool) -> Result<(), WriteError> {
    let dir = parent(path);
    let mut tmp = temp_file_in(dir).map_err(write_error(path))?;
    tmp.write_all(bytes).map_err(write_error(path))?;
    if sync {
        tmp.as_file().sync_all().map_err(write_error(path))?;
    }
    tmp.persist(path).map_err(|e| write_error(path)(e.error))?;
    Ok(())
}

/// `file` (relative to the working directory, or absolute) relative to the repository
/// root: `$GITHUB_WORKSPACE`, else the git top level of the working directory. GitHub
/// places an annotation only with such a path, and JUnit consumers resolve `file` from
/// there; the working directory need not be the root. Unchanged when there is no root or
/// the file is outside it.
pub fn repo_relative(file: &str) -> String {
    let Some(root) = repo_root() else { return file.to_owned() };
    let abs = std::path::absolute(file).unwrap_or_else(|_| PathBuf::from(file));
    // Canonical on both sides: a symlinked temp dir (macOS /tmp) must still match.
    let abs = abs.parent().and_then(|d| Some(std::fs::canonicalize(d).ok()?.join(abs.file_name()?))).unwrap_or(abs);
    abs.strip_prefix(root).map_or_else(|_| file.to_owned(), |p| p.display().to_string())
}

/// The repository root (canonical), looked up once a process.
fn repo_root() -> Option<&'static Path> {
    static ROOT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let root = match std::env::var_os("GITHUB_WORKSPACE").filter(|w| !w.is_empty()) {
            Some(workspace) => PathBuf::from(workspace),
            None => {
                let out = std::process::Command::new("git")
                    .args(["rev-parse", "--show-toplevel"])
                    .stderr(std::process::Stdio::null())
                    .output()
                    .ok()
                    .filter(|o| o.status.success())?;
                PathBuf::from(String::from_utf8(out.stdout).ok()?.trim_end_matches(['\n', '\r']))
            }
        };
        Some(std::fs::canonicalize(&root).unwrap_or(root))
    })
    .as_deref()
}

/// The first component of `path` below `root` (`root/a/b`: `a`, then `b`) that is a symbolic
/// link, if any. evalgate's own files below its out directory are never reached through one:
/// a directory a pull request wrote may hold links to anywhere (`out/suite -> ~`), and
/// writing, truncating or deleting through them would reach files elsewhere. `root` itself
/// is the user's choice and is followed. `None` when `path` is not below `root`.
pub fn link_below(root: &Path, path: &Path) -> Option<PathBuf> {
    let mut at = root.to_path_buf();
    for part in path.strip_prefix(root).ok()?.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Some(at);
        }
    }
    None
}

/// The error for a write refused at `link`, a symbolic link [`link_below`] found.
pub fn through_link(link: &Path) -> std::io::Error {
    std::io::Error::other(format!(
        "{} is a symbolic link, which evalgate does not follow in its out directory: remove it",
        link.display()
    ))
}

/// Creates (or truncates) `path` for writing, refused when `path` is a symbolic link, or a
/// FIFO (opened without blocking: a FIFO nothing reads would hang the open for ever).
pub fn create_no_follow(path: &Path, truncate: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(truncate)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) => through_link(path),
            Some(nix::libc::ENXIO) => std::io::Error::other("not a regular file (a FIFO)"),
            _ => e,
        })?;
    if file.metadata()?.file_type().is_fifo() {
        return Err(std::io::Error::other("not a regular file (a FIFO)"));
    }
    Ok(file)
}

/// A temp file in `dir` that becomes a file like any other once renamed: `0666` less the
/// umask (tempfile's default is `0600`).
pub fn temp_file_in(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

/// Fails when `path` cannot become a file: it is a directory (`--junit out/`, or a directory
/// left where a report goes). Its directory's writability is proven by a temp file.
pub fn check_writable(path: &Path) -> Result<(), WriteError> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(write_error(path)(std::io::Error::from_raw_os_error(nix::libc::EISDIR)));
    }
    temp_file_in(parent(path)).map_err(write_error(path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_where_a_file_goes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = check_writable(dir.path()).unwrap_err();
        assert!(err.to_string().contains("Is a directory"), "{err}");
        check_writable(&dir.path().join("fine.xml")).unwrap();
    }
}
