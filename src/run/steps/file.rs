//! `file` steps and graders: create, remove or check a file.

use std::path::{Path, PathBuf};

use super::outcome::{Leaf, content_failures};
use crate::suite::model::{FileAction, FileExpect, FileOp};
use crate::template::Bindings;

pub fn file(action: &FileAction, dir: &Path, bindings: &Bindings) -> Leaf {
    let path = resolve(dir, &bindings.render(&action.path));
    let shown = path.display().to_string();
    let mut leaf = Leaf::default();
    if let Some(missing) = bindings.take_missing() {
        leaf.action = format!("file {shown}");
        leaf.failure = Some(missing);
        leaf.error = true;
        return leaf;
    }
    match &action.op {
        FileOp::Create { content, mode } => {
            leaf.action = format!("create {shown}");
            let result = (|| {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, bindings.render(content))?;
                if let Some(mode) = mode {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))?;
                }
                Ok::<(), std::io::Error>(())
            })();
            if let Err(e) = result {
                leaf.failure = Some(format!("cannot write {shown}: {e}"));
                leaf.error = true;
            }
        }
        FileOp::Remove => {
            leaf.action = format!("remove {shown}");
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    leaf.failure = Some(format!("cannot remove {shown}: {e}"));
                    leaf.error = true;
                }
            }
        }
        FileOp::Check(expect) => {
            leaf.action = format!("check {shown}");
            leaf.failure = check_file(&path, expect, bindings).err();
        }
    }
    leaf
}

/// `Err` with every unmet expectation.
pub fn check_file(path: &Path, expect: &FileExpect, bindings: &Bindings) -> Result<(), String> {
    let shown = path.display();
    match (path.exists(), expect.exists) {
        (false, true) => return Err(format!("{shown} does not exist")),
        (true, false) => return Err(format!("{shown} exists")),
        (false, false) => return Ok(()),
        (true, true) => {}
    }
    if expect.content.is_empty() {
        return Ok(());
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let failures = content_failures(&expect.content, &text, &shown.to_string(), bindings);
    if failures.is_empty() { Ok(()) } else { Err(failures.join("; ")) }
}

pub fn resolve(dir: &Path, path: &str) -> PathBuf {
    dir.join(path)
}
