//! `evalgate init`: a starter suite (with its agent script) and a GitHub workflow, never
//! overwriting a file.

use std::path::Path;

use crate::cli::InitArgs;
use crate::error::Error;
use crate::exit;

/// The suite, after its schema modeline (editors complete and check keys from it).
const SUITE: &str = r#"# A starter evalgate suite: run it with `evalgate run`.
evalgate: 1
suite: my.evals.starter
version: 0.1.0

agents:
  bot:
    # Replace with your agent: any command that takes the prompt and prints its answer.
    command: [./evals/agent.sh, "{prompt}"]
    timeout: 30s

tasks:
  - id: greets
    prompt: "Say hello"
    grade:
      - {type: contains, value: hello, ignore_case: true}
  - id: answers-with-json
    prompt: "status as json"
    grade:
      - {type: json, path: status, equals: ok}
"#;

const AGENT: &str = r#"#!/bin/sh
# A stand-in agent: replace it with yours.
case "$1" in
  *json*) echo '{"status": "ok"}' ;;
  *) echo "Hello! You said: $1" ;;
esac
"#;

const WORKFLOW: &str = r#"# Runs the evals on every pull request (with one sticky comment) and on main.
name: evalgate
on:
  pull_request:
  push:
    branches: [main]
permissions:
  contents: read
  pull-requests: write # the sticky PR comment
concurrency:
  # One run per branch at a time, so two runs never race to create the comment.
  group: evalgate-${{ github.ref }}
  cancel-in-progress: true
jobs:
  evals:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: {USES}
        with:
          suite: evalgate.yaml
        # env:
        #   OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}
      - if: always()
        uses: actions/upload-artifact@v4
        with:
          name: evalgate
          path: evalgate-out/
"#;

/// With `--cassettes`: pull requests replay, with no key.
const REPLAY_STEP: &str = r#"          suite: evalgate.yaml
          # Answers come from cassettes/ (committed): no key, no network, $0; a request
          # the cassette does not hold fails its task (docs/cassettes.md).
          args: --replay"#;

/// With `--cassettes`: re-recorded every week, and a pull request opened with the diff.
const RECORD_WORKFLOW: &str = r#"# Re-records the suite's cassette every Monday and opens a pull request with the diff.
name: evalgate-record
on:
  schedule:
    - cron: "0 6 * * 1"
  workflow_dispatch:
permissions:
  contents: write
  pull-requests: write
jobs:
  record:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: {USES}
        with:
          suite: evalgate.yaml
          args: --record
          comment: false
        env:
          OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}
          ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}
      # Entries no request asks any more stay until `evalgate cassettes prune` removes them.
      - name: Open a pull request with the new recording
        env:
          GH_TOKEN: ${{ github.token }}
        run: |
          # Staged first: the first recording is a new file, which `git diff` alone ignores.
          git add --all -- cassettes/
          git diff --cached --quiet -- cassettes/ && exit 0
          branch="evalgate/record-$(date -u +%Y%m%d)"
          git config user.name "evalgate"
          git config user.email "evalgate@users.noreply.github.com"
          git switch -c "$branch"
          git commit -m "Re-record the evalgate cassettes"
          git push origin "$branch"
          gh pr create --fill --head "$branch"
"#;

/// What `.gitignore` gets: the reports and the response cache are per run, never committed.
const GITIGNORE: [&str; 2] = ["evalgate-out/", ".evalgate/cache/"];

/// The suite with its `yaml-language-server` modeline pointing at this version's schema.
fn suite() -> String {
    format!("# yaml-language-server: $schema={}\n{SUITE}", crate::schema_url())
}

/// A workflow, using the action at this version's release tag.
fn workflow(text: &str) -> String {
    text.replace("{USES}", &format!("{}@{}", crate::REPOSITORY, crate::release_tag()))
}

pub fn init(args: &InitArgs) -> Result<i32, Error> {
    let mut pr_workflow = workflow(WORKFLOW);
    if args.cassettes {
        pr_workflow = pr_workflow.replace("          suite: evalgate.yaml", REPLAY_STEP);
    }
    let (suite, record) = (suite(), workflow(RECORD_WORKFLOW));
    let mut files = vec![
        ("evalgate.yaml", suite.as_str()),
        ("evals/agent.sh", AGENT),
        (".github/workflows/evalgate.yml", pr_workflow.as_str()),
    ];
    if args.cassettes {
        files.push((".github/workflows/evalgate-record.yml", record.as_str()));
    }
    let existing: Vec<&str> = files.iter().map(|(p, _)| *p).filter(|p| Path::new(p).exists()).collect();
    if !existing.is_empty() {
        return Err(Error::Usage(format!("not overwriting {}: nothing was written", existing.join(", "))));
    }
    for (path, contents) in files {
        let path = Path::new(path);
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)?;
            }
            // `create_new`: a file that appeared since the check is still never overwritten.
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
            std::io::Write::write_all(&mut file, contents.as_bytes())?;
            if path.extension().is_some_and(|e| e == "sh") {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
            }
            Ok(())
        };
        write().map_err(|source| crate::report::writer::WriteError { path: path.to_owned(), source })?;
        crate::errln!("wrote {}", path.display());
    }
    ignore_outputs(Path::new(".gitignore"))
        .map_err(|source| crate::report::writer::WriteError { path: ".gitignore".into(), source })?;
    crate::errln!("next: `evalgate run`, then point agents.bot.command at your agent");
    Ok(exit::SUCCESS)
}

/// Adds the lines of [`GITIGNORE`] that `.gitignore` lacks (creating it), keeping the rest.
fn ignore_outputs(path: &Path) -> std::io::Result<()> {
    let existing = match crate::files::read::text(path, crate::files::read::TEXT) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let missing: Vec<&str> =
        GITIGNORE.iter().copied().filter(|line| !existing.lines().any(|l| l.trim() == *line)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# evalgate: reports and the response cache\n");
    for line in &missing {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(path, text)?;
    crate::errln!("added {} to .gitignore", missing.join(" and "));
    Ok(())
}
