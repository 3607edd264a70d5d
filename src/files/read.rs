//! The one door every file evalgate reads goes through. It opens without blocking and
//! refuses anything but a regular file (a FIFO would hang the open, then the read, for
//! ever; `/dev/zero` never ends), and refuses a file larger than the limit of its kind from
//! the open file's size (`fstat`) before reading a byte, then reads at most that limit (a
//! file may grow). Clippy forbids every other way to open a file for reading
//! (`disallowed-methods` in clippy.toml): this module is the one place allowed to.

// The one module that opens files for reading itself.
#![allow(clippy::disallowed_methods)]

use std::fs::File;
use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// A kind of file and the most evalgate reads of one. The limits are listed in SECURITY.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Bytes.
    pub max: u64,
    /// The kind, as a refusal names it ("the most evalgate reads of {what}").
    pub what: &'static str,
}

/// A suite, a file it imports or names (a prompt, a `schema_file`, a script), and every
/// other text input evalgate parses: labels, a judge's calibration file, `--pricing`, a
/// tools lock, conformance checks, an A/A calibration, `.gitignore`. A suite is a few hundred
/// kilobytes, and the parser's time and memory grow with the file.
pub const TEXT: Limit = Limit { max: 8 << 20, what: "a suite or another text input" };
/// A results file: `report`, `compare`, `merge`, `comment`, `judge`, `cassettes prune`,
/// `--baseline` (10,000 tasks with their excerpts stay far below it).
pub const RESULTS: Limit = Limit { max: 256 << 20, what: "a results file" };
/// A cassette of recorded model traffic.
pub const CASSETTE: Limit = Limit { max: 256 << 20, what: "a cassette" };
/// A file an agent or a step controls: its trace, a file a `file` step or grader checks,
/// what it left in the out directory.
pub const AGENT: Limit = Limit { max: 16 << 20, what: "a file an agent controls" };
/// A file a task's fingerprint hashes (a fixture, a script, a file `inputs:` names).
pub const INPUT: Limit = Limit { max: 256 << 20, what: "a task's input file" };
/// A cached model answer (an answer is read up to 16 MiB off the wire).
pub const CACHE: Limit = Limit { max: 32 << 20, what: "a cached model answer" };
/// The event that started a workflow (`$GITHUB_EVENT_PATH`; GitHub's payloads stay under 25 MB).
pub const EVENT: Limit = Limit { max: 32 << 20, what: "a GitHub event file" };
/// A process's file in `/proc` (its command line, environment, status; the kernel reports
/// their size as 0, so only the read's bound applies).
pub const PROC: Limit = Limit { max: 8 << 20, what: "a file in /proc" };

/// The bytes of the regular file `path`, at most `limit.max` of them. Blocking (call it off
/// the runtime thread where a file may be large); never waits on a FIFO.
pub fn bytes(path: &Path, limit: Limit) -> std::io::Result<Vec<u8>> {
    let (file, size) = open_sized(path, limit)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit.max {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// The text of the regular file `path` (UTF-8), as [`bytes`] reads it.
pub fn text(path: &Path, limit: Limit) -> std::io::Result<String> {
    String::from_utf8(bytes(path, limit)?).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        Error::new(ErrorKind::InvalidData, format!("not UTF-8 text (byte {at} is not UTF-8)"))
    })
}

/// The regular file `path`, open, for a caller that reads it again and again in place (a
/// `/proc` list read from offset 0 at each look): checked as [`bytes`] checks it.
pub fn open(path: &Path, limit: Limit) -> std::io::Result<File> {
    open_sized(path, limit).map(|(file, _)| file)
}

/// `/dev/null`, open for reading: a child's empty stdin. The one device evalgate opens.
pub fn dev_null() -> std::io::Result<File> {
    File::open("/dev/null")
}

/// `path` opened without blocking and without becoming a controlling terminal, refused
/// unless it is a regular file within `limit`; with its size.
fn open_sized(path: &Path, limit: Limit) -> std::io::Result<(File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let flags = nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOCTTY;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits()).open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let not_regular = [
            (kind.is_dir(), "a directory"),
            (kind.is_fifo(), "a FIFO"),
            (kind.is_char_device(), "a character device"),
            (kind.is_block_device(), "a block device"),
            (kind.is_socket(), "a socket"),
        ];
        let what = not_regular.iter().find(|(is, _)| *is).map_or("not a file", |(_, what)| what);
        return Err(Error::new(ErrorKind::InvalidInput, format!("not a regular file ({what})")));
    }
    if meta.len() > limit.max {
        return Err(too_large(limit));
    }
    Ok((file, meta.len()))
}

fn too_large(limit: Limit) -> Error {
    Error::new(
        ErrorKind::FileTooLarge,
        format!("larger than {} MiB, the most evalgate reads of {}", limit.max >> 20, limit.what),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_device_and_a_large_file_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(bytes(&fifo, TEXT).unwrap_err().to_string(), "not a regular file (a FIFO)");
        assert_eq!(
            bytes(Path::new("/dev/zero"), PROC).unwrap_err().to_string(),
            "not a regular file (a character device)"
        );
        assert_eq!(bytes(dir.path(), TEXT).unwrap_err().to_string(), "not a regular file (a directory)");
        // Sparse: its size says it is too large, so not a byte of it is read.
        let big = dir.path().join("big");
        std::fs::File::create(&big).unwrap().set_len(TEXT.max + 1).unwrap();
        let e = bytes(&big, TEXT).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileTooLarge);
        assert_eq!(e.to_string(), "larger than 8 MiB, the most evalgate reads of a suite or another text input");
        std::fs::File::create(&big).unwrap().set_len(TEXT.max).unwrap();
        assert_eq!(bytes(&big, TEXT).unwrap().len() as u64, TEXT.max);
        assert_eq!(bytes(&dir.path().join("none"), TEXT).unwrap_err().kind(), ErrorKind::NotFound);
    }
}
