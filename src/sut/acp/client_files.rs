//! `fs/read_text_file` and `fs/write_text_file`, served to an ACP agent only inside the
//! trial's working directory: a path is resolved (links followed, for a write the parent's)
//! and refused unless it stays below the directory; reads are bounded as every file an
//! agent controls; a write replaces the file whole (a link in its place is replaced, never
//! followed).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The JSON-RPC error code of a refused request (invalid params).
const REFUSED: i64 = -32602;

/// Serves `method` with `params` in `cwd`: the result, or the error to answer and record.
pub fn serve(method: &str, params: &Value, cwd: &Path) -> Result<Value, (i64, String)> {
    let path = params.get("path").and_then(Value::as_str).ok_or((REFUSED, "`path` is missing".to_owned()))?;
    let refused = |why: String| (REFUSED, why);
    match method {
        "fs/read_text_file" => {
            let file = inside(Path::new(path), cwd, false).map_err(refused)?;
            let text = crate::files::read::text(&file, crate::files::read::AGENT)
                .map_err(|e| refused(format!("cannot read {path}: {e}")))?;
            let line = params.get("line").and_then(Value::as_u64).unwrap_or(1).max(1);
            let limit = params.get("limit").and_then(Value::as_u64);
            let lines = text.split_inclusive('\n').skip(usize::try_from(line - 1).unwrap_or(usize::MAX));
            let content: String = match limit {
                Some(limit) => lines.take(usize::try_from(limit).unwrap_or(usize::MAX)).collect(),
                None => lines.collect(),
            };
            Ok(json!({"content": content}))
        }
        "fs/write_text_file" => {
            let file = inside(Path::new(path), cwd, true).map_err(refused)?;
            let content =
                params.get("content").and_then(Value::as_str).ok_or((REFUSED, "`content` is missing".to_owned()))?;
            crate::files::write_atomic_unsynced(&file, content.as_bytes())
                .map_err(|e| refused(format!("cannot write {path}: {e}")))?;
            Ok(Value::Null)
        }
        other => Err((-32601, format!("method `{other}` is not offered"))),
    }
}

/// `path` (absolute, as the protocol sends it) when it resolves inside `cwd`; for a file
/// to write, its parent must, and the file need not exist.
fn inside(path: &Path, cwd: &Path, write: bool) -> Result<PathBuf, String> {
    let outside = || format!("{} is outside the working directory: refused", path.display());
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path: refused", path.display()));
    }
    let root = cwd.canonicalize().map_err(|e| format!("the working directory: {e}"))?;
    let resolved = match (write, path.file_name()) {
        (true, Some(name)) => {
            let parent = path.parent().unwrap_or(path).canonicalize().map_err(|_| outside())?;
            parent.join(name)
        }
        (true, None) => return Err(outside()),
        (false, _) => path.canonicalize().map_err(|e| match crate::suite::model::below(path, cwd) {
            Some(_) => format!("cannot read {}: {e}", path.display()),
            None => outside(),
        })?,
    };
    if resolved.starts_with(&root) && resolved != root { Ok(resolved) } else { Err(outside()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_served_inside_the_working_directory_only() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("w");
        std::fs::create_dir(&cwd).unwrap();
        std::fs::write(cwd.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), cwd.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), cwd.join("up")).unwrap();
        let at = |p: &str| cwd.join(p).display().to_string();
        let read = serve("fs/read_text_file", &json!({"path": at("a.txt"), "line": 2, "limit": 1}), &cwd);
        assert_eq!(read.unwrap(), json!({"content": "two\n"}));
        assert_eq!(serve("fs/write_text_file", &json!({"path": at("b.txt"), "content": "hi"}), &cwd), Ok(Value::Null));
        assert_eq!(std::fs::read_to_string(cwd.join("b.txt")).unwrap(), "hi");
        for (method, path) in [
            ("fs/read_text_file", at("link")),
            ("fs/read_text_file", at("../secret")),
            ("fs/read_text_file", at("up/secret")),
            ("fs/write_text_file", at("up/secret")),
            ("fs/write_text_file", at("../secret")),
            ("fs/write_text_file", "/etc/evalgate-test".to_owned()),
            ("fs/read_text_file", "a.txt".to_owned()),
        ] {
            let answer = serve(method, &json!({"path": path, "content": "x"}), &cwd);
            assert!(
                answer.as_ref().is_err_and(|(code, why)| *code == REFUSED && why.contains("refused")),
                "{method} {path}: {answer:?}"
            );
        }
        assert_eq!(std::fs::read_to_string(dir.path().join("secret")).unwrap(), "s");
        // A link in the file's place is replaced, not written through.
        assert_eq!(serve("fs/write_text_file", &json!({"path": at("link"), "content": "x"}), &cwd), Ok(Value::Null));
        assert_eq!(std::fs::read_to_string(dir.path().join("secret")).unwrap(), "s");
    }
}
