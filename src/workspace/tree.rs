//! A directory as a list of what it holds (`Tree`), and the copy of one: symbolic links are
//! copied as links and never followed, anything but files, links and directories is refused.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use sha2::{Digest, Sha256};

/// The most entries a tree may hold: past it, a scan is refused rather than slow.
pub const MOST_ENTRIES: usize = 200_000;

/// A file of a template or a workspace, read to be hashed (the size limit is the sandbox's
/// `file_size`, so any file it let the agent write is read).
const WORKSPACE_FILE: crate::files::read::Limit = crate::files::read::Limit { max: 1 << 40, what: "a workspace file" };

/// One entry of a directory, by its path relative to the root (`/`-separated).
#[derive(Debug, Clone)]
pub enum Node {
    Dir,
    /// `stamp`: what says the content has not changed since it was hashed (not part of
    /// equality).
    File {
        len: u64,
        mode: u32,
        hash: [u8; 32],
        stamp: Stamp,
    },
    Link(String),
}

/// A file's inode and change time. Nothing but the kernel sets the change time (a write,
/// a `chmod`, a `touch -d` all move it to now), so a file whose stamp and length are as they
/// were when it was hashed still holds what was hashed: a scan need not read it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    ino: u64,
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp { ino: meta.ino(), ctime: (meta.ctime(), meta.ctime_nsec()) }
    }
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::Dir, Node::Dir) => true,
            (Node::File { len, mode, hash, .. }, Node::File { len: l, mode: m, hash: h, .. }) => {
                (len, mode, hash) == (l, m, h)
            }
            (Node::Link(a), Node::Link(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Node {}

pub type Tree = BTreeMap<String, Node>;

/// What `root` holds, below it, skipping `.git` (what git does there is not a change). A
/// file `known` holds with the same stamp and length keeps its hash unread.
pub fn scan(root: &Path, known: Option<&Tree>) -> std::io::Result<Tree> {
    let mut tree = Tree::new();
    let mut pending = vec![String::new()];
    while let Some(rel) = pending.pop() {
        let dir = if rel.is_empty() { root.to_owned() } else { root.join(&rel) };
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Err(std::io::Error::other(format!("{}: a name that is not UTF-8", entry.path().display())));
            };
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            let meta = entry.path().symlink_metadata()?;
            let node = if meta.file_type().is_symlink() {
                Node::Link(std::fs::read_link(entry.path())?.display().to_string())
            } else if meta.is_dir() {
                pending.push(path.clone());
                Node::Dir
            } else if meta.is_file() {
                let stamp = Stamp::of(&meta);
                let hash = match known.and_then(|k| k.get(&path)) {
                    Some(Node::File { len, hash, stamp: s, .. }) if *s == stamp && *len == meta.len() => *hash,
                    _ => hash_file(&entry.path())?,
                };
                Node::File { len: meta.len(), mode: meta.mode() & 0o7777, hash, stamp }
            } else {
                return Err(std::io::Error::other(format!(
                    "{}: not a file, a link or a directory",
                    entry.path().display()
                )));
            };
            tree.insert(path, node);
            if tree.len() > MOST_ENTRIES {
                return Err(std::io::Error::other(format!(
                    "more than {MOST_ENTRIES} entries below {}",
                    root.display()
                )));
            }
        }
    }
    Ok(tree)
}

/// A file's SHA-256, read through a non-blocking open of a regular file (the agent may have
/// left a FIFO where a file was).
fn hash_file(path: &Path) -> std::io::Result<[u8; 32]> {
    let mut file = crate::files::read::open(path, WORKSPACE_FILE)?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(hash.finalize().into());
        }
        hash.update(&buf[..n]);
    }
}

/// The hash of a whole tree (paths, modes, link targets, contents), 16 hex digits.
pub fn tree_hash(tree: &Tree) -> String {
    let mut hash = Sha256::new();
    for (path, node) in tree {
        hash.update(path.as_bytes());
        match node {
            Node::Dir => hash.update(b"\0d\0"),
            Node::File { mode, hash: h, .. } => {
                hash.update(format!("\0f{mode:o}\0"));
                hash.update(h);
            }
            Node::Link(target) => {
                hash.update(b"\0l\0");
                hash.update(target.as_bytes());
            }
        }
    }
    super::recipe::hex16(&hash.finalize())
}

/// The hash of a template directory as a workspace copies it (its provenance).
pub fn template_hash(dir: &Path) -> std::io::Result<(String, Tree)> {
    scan(dir, None).map(|t| (tree_hash(&t), t))
}

/// Copies `from` into the existing directory `to`, entry by entry of `tree` (the scan of
/// `from`), owned by `owner` when given (a confined agent runs as another user); returns
/// the copy's tree (the template's hashes, the copies' stamps).
pub fn copy(from: &Path, tree: &Tree, to: &Path, owner: Option<u32>) -> std::io::Result<Tree> {
    let mut copied = Tree::new();
    for (rel, node) in tree {
        let dest = to.join(rel);
        match node {
            Node::Dir => std::fs::create_dir(&dest)?,
            Node::File { mode, .. } => {
                let mut source = crate::files::read::open(&from.join(rel), WORKSPACE_FILE)?;
                std::io::copy(&mut source, &mut std::fs::File::create_new(&dest)?)?;
                std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(*mode))?;
            }
            Node::Link(target) => std::os::unix::fs::symlink(target, &dest)?,
        }
        if let Some(uid) = owner {
            std::os::unix::fs::lchown(&dest, Some(uid), Some(uid))?;
        }
        let node = match node {
            Node::File { len, mode, hash, .. } => {
                Node::File { len: *len, mode: *mode, hash: *hash, stamp: Stamp::of(&dest.symlink_metadata()?) }
            }
            other => other.clone(),
        };
        copied.insert(rel.clone(), node);
    }
    Ok(copied)
}

/// Gives `root` and everything below it to `uid` (a git checkout, before a confined agent).
pub fn chown_all(root: &Path, uid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(root, Some(uid), Some(uid))?;
    for entry in std::fs::read_dir(root)? {
        let path = entry?.path();
        if path.symlink_metadata()?.is_dir() {
            chown_all(&path, uid)?;
        } else {
            std::os::unix::fs::lchown(&path, Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

/// Whether the link at `path` (relative to a root) to `target` points outside the root, read
/// without touching the disk: an absolute target, or one whose `..` climb above the root.
pub fn leaves(path: &str, target: &str) -> bool {
    if target.starts_with('/') {
        return true;
    }
    let mut depth: i64 = path.matches('/').count() as i64;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => depth -= 1,
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// Bytes the files of `tree` hold.
pub fn size(tree: &Tree) -> u64 {
    tree.values().map(|n| if let Node::File { len, .. } = n { *len } else { 0 }).sum()
}

/// A directory's entries by what their metadata says (size, modification time, inode):
/// cheap enough to take before and after every agent.
pub type StatTree = BTreeMap<String, (u64, i64, i64, u64)>;

/// The most entries [`stat_scan`] looks at: a larger suite directory is not checked.
const MOST_STAT_ENTRIES: usize = 20_000;

/// The metadata of everything below `root`, skipping `.git`, `skip` (the trial's own
/// directory) and evalgate's out directories (they hold its `.evalgate.lock`, and the
/// reports are rewritten while the run goes). `None` when unreadable or too large.
pub fn stat_scan(root: &Path, skip: &Path) -> Option<StatTree> {
    let mut tree = StatTree::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        if dir.join(".evalgate.lock").exists() {
            continue;
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return None,
        };
        for entry in entries {
            let path = entry.ok()?.path();
            if path == skip || path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            // An entry gone between the listing and its look is not a change of this scan's
            // to judge: the comparison sees it missing.
            let meta = match path.symlink_metadata() {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => return None,
            };
            if meta.is_dir() {
                pending.push(path.clone());
            }
            let rel = path.strip_prefix(root).ok()?.display().to_string();
            // A directory changes with its entries: the entries say which.
            let stat = if meta.is_dir() {
                (0, 0, 0, meta.ino())
            } else {
                (meta.len(), meta.mtime() * 1_000_000_000 + meta.mtime_nsec(), meta.ctime(), meta.ino())
            };
            tree.insert(rel, stat);
            if tree.len() > MOST_STAT_ENTRIES {
                return None;
            }
        }
    }
    Some(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_leaves_by_an_absolute_target_or_a_climb_above_the_root() {
        assert!(leaves("a", "/etc/passwd"));
        assert!(leaves("a", "../x"));
        assert!(leaves("d/a", "../../x"));
        assert!(leaves("d/a", "x/../../../y"));
        assert!(!leaves("d/a", "../x"));
        assert!(!leaves("a", "./b/c"));
    }

    #[test]
    fn a_copy_scans_as_its_template_and_links_are_not_followed() {
        let from = tempfile::tempdir().unwrap();
        std::fs::create_dir(from.path().join("src")).unwrap();
        std::fs::write(from.path().join("src/a.txt"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", from.path().join("out")).unwrap();
        let tree = scan(from.path(), None).unwrap();
        let to = tempfile::tempdir().unwrap();
        let copied = copy(from.path(), &tree, to.path(), None).unwrap();
        assert_eq!(scan(to.path(), None).unwrap(), tree);
        assert_eq!(tree["out"], Node::Link("/etc/passwd".into()));
        assert_eq!(tree_hash(&tree), tree_hash(&scan(to.path(), None).unwrap()));
        // A write with the same length is seen through the stamp, not missed.
        std::fs::write(to.path().join("src/a.txt"), "b").unwrap();
        assert_ne!(tree_hash(&tree), tree_hash(&scan(to.path(), Some(&copied)).unwrap()));
    }
}
