//! The upstream corpus, offline: rewritten excerpts of real mcpchecker, gevals and AgentV
//! files, and copies of promptfoo's examples (tests/fixtures/corpus, listed in
//! FIXTURES.tsv), each convert to a suite that loads
//! or are refused with a located reason, never a third thing. The full-corpus figures, run
//! at test-writing time with scripts/formats-corpus.py, are in MANIFEST.tsv.

use std::path::PathBuf;
use std::process::Command;

use crate::common::copy_dir;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus")
}

fn evalgate(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(dir).args(args).output().unwrap()
}

#[test]
fn every_corpus_excerpt_converts_to_a_suite_that_loads_or_is_refused_where_it_says() {
    let list = std::fs::read_to_string(corpus().join("FIXTURES.tsv")).unwrap();
    let rows: Vec<Vec<&str>> =
        list.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).map(|l| l.split('\t').collect()).collect();
    assert!(rows.len() >= 10, "{rows:?}");
    for row in rows {
        let [path, class, expected] = row[..] else { panic!("a row is path, class, reason: {row:?}") };
        // Converted in a copy of the corpus, so the saved suite sits beside its original.
        let work = tempfile::tempdir().unwrap();
        copy_dir(&corpus(), work.path());
        let file = work.path().join(path);
        let dir = file.parent().unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        let converted = evalgate(dir, &["convert", name]);
        let stderr = String::from_utf8_lossy(&converted.stderr);
        match class {
            "converts" => {
                assert_eq!(converted.status.code(), Some(0), "{path}: {stderr}");
                std::fs::write(dir.join("converted.evalgate.yaml"), &converted.stdout).unwrap();
                let listed = evalgate(dir, &["list", "converted.evalgate.yaml"]);
                let out = String::from_utf8_lossy(&listed.stdout);
                assert_eq!(listed.status.code(), Some(0), "{path}: {}", String::from_utf8_lossy(&listed.stderr));
                assert_eq!(out.lines().count().to_string(), expected, "{path}: {out}");
            }
            "refused" => {
                assert_eq!(converted.status.code(), Some(2), "{path}: {stderr}");
                assert!(stderr.contains(expected), "{path}: expected {expected:?} in\n{stderr}");
            }
            other => panic!("unknown class {other}"),
        }
    }
}

#[test]
fn the_manifest_records_no_file_that_converts_and_then_fails_to_load() {
    let manifest = std::fs::read_to_string(corpus().join("MANIFEST.tsv")).unwrap();
    let rows: Vec<&str> = manifest.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    assert!(rows.len() > 200, "the manifest lists the whole corpus");
    let wrong: Vec<&&str> = rows.iter().filter(|r| r.split('\t').nth(3) == Some("WRONG")).collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}
