//! A task's fingerprint: every input that can change its verdict, hashed one by one, from
//! what the task reaches (`suite::uses::task_reach`, the fold preflight and the redactor
//! use), never from a second walk of the suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::cassette::Cassette;
use crate::results::carry::{TaskFingerprint, hex};
use crate::suite::model::{Agent, Suite, Task};
use crate::suite::uses::{TaskReach, task_reach};

/// The fingerprint of each task of `suite` at `indices` (into `suite.tasks`), in that order.
/// `cassette`: the suite's, when its answers are replayed (a live recording reads none).
pub fn fingerprints(suite: &Suite, indices: &[usize], cassette: Option<&Cassette>) -> Vec<TaskFingerprint> {
    let mut inputs = Inputs { suite, files: BTreeMap::new(), globbed: BTreeMap::new() };
    indices.iter().map(|&i| inputs.task(&suite.tasks[i], cassette)).collect()
}

/// The inputs' hashes, with each file read once however many tasks name it.
struct Inputs<'s> {
    suite: &'s Suite,
    /// A file's content hash by its path relative to the suite (`None`: not a file).
    files: BTreeMap<PathBuf, Option<String>>,
    /// An `inputs:` glob's matches, relative to the suite.
    globbed: BTreeMap<String, Vec<PathBuf>>,
}

fn sha(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes())[..8])
}

impl Inputs<'_> {
    /// Every input of `task`, by name. The workspace's provenance (a per-trial workspace,
    /// issue 47) joins them as one more line here: `inputs.insert("workspace".into(), …)`.
    fn task(&mut self, task: &Task, cassette: Option<&Cassette>) -> TaskFingerprint {
        let suite = self.suite;
        let parts = &suite.definition_context.parts;
        let TaskReach { uses, servers, suite_judge } = task_reach(suite, task);
        let mut inputs = BTreeMap::new();
        inputs.insert("evalgate".to_owned(), crate::VERSION.to_owned());
        let written = task.source.measured_json();
        inputs.insert("task".to_owned(), sha(&written));
        let agent = parts.agents.get(task.agent.name()).cloned().unwrap_or_else(|| format!("{:?}", task.agent));
        inputs.insert("agent".to_owned(), sha(&agent));
        let mut read_by_name = vec![written, agent];
        for name in &servers {
            let server = parts.mcp_servers.get(*name).cloned().unwrap_or_default();
            inputs.insert(format!("server:{name}"), sha(&server));
            read_by_name.push(server);
        }
        if task.arm.is_some() {
            inputs.insert("variants".to_owned(), sha(&parts.variants));
            read_by_name.push(parts.variants.clone());
        }
        if suite_judge {
            inputs.insert("judge".to_owned(), sha(&parts.judge));
            read_by_name.push(parts.judge.clone());
        }
        // The variables its text names (their values are bound when the suite compiles).
        let vars: Vec<String> = parts
            .vars
            .iter()
            .filter(|(name, _)| read_by_name.iter().any(|t| t.contains(&format!("vars.{name}"))))
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        if !vars.is_empty() {
            inputs.insert("vars".to_owned(), sha(&vars.join("\n")));
        }
        let trials = format!("{:?} {} {:?} {:?}", task.timeout, task.repeat, task.min_pass, task.adaptive);
        inputs.insert("trials".to_owned(), sha(&trials));
        let mut env: Vec<&str> = uses.env_vars().chain(uses.secret_env.iter().copied()).collect();
        env.sort_unstable();
        env.dedup();
        inputs.insert("env".to_owned(), env.join(","));
        // Files: those named by a key (a schema file, a calibration file), those a program
        // it starts is or names on its command line, and its `inputs:` globs' matches.
        let mut dirs: Vec<&Path> = vec![&suite.dir];
        dirs.extend(uses.programs.iter().filter_map(|p| p.workdir));
        let mut files: Vec<PathBuf> = uses.files.iter().map(|f| f.to_path_buf()).collect();
        for template in &uses.templates {
            for word in template.source().split(|c: char| c.is_whitespace() || "\"'`=,;|&<>(){}".contains(c)) {
                if looks_like_path(word) {
                    files.extend(dirs.iter().map(|d| d.join(word)).filter(|p| p.is_file()));
                }
            }
        }
        for glob in &task.inputs {
            files.extend(self.glob(glob));
        }
        if !task.inputs.is_empty() {
            inputs.insert("inputs".to_owned(), sha(&task.inputs.join("\n")));
        }
        for file in files {
            let (name, hash) = self.file(&file);
            inputs.insert(format!("file:{name}"), hash);
        }
        if let Some(cassette) = cassette {
            inputs.insert("cassette".to_owned(), cassette_entries(cassette, task, &uses, &servers, suite));
        }
        let incomplete = incomplete(task, &uses);
        TaskFingerprint::new(inputs, incomplete)
    }

    /// The file's name relative to the suite (else as given) and its content's hash
    /// (`absent` when it is not a readable regular file).
    fn file(&mut self, path: &Path) -> (String, String) {
        let relative = path.strip_prefix(&self.suite.dir).unwrap_or(path).to_path_buf();
        let hash = self.files.entry(relative.clone()).or_insert_with(|| {
            crate::files::read::bytes(path, crate::files::read::INPUT).ok().map(|b| hex(&Sha256::digest(&b)[..8]))
        });
        (relative.display().to_string(), hash.clone().unwrap_or_else(|| "absent".to_owned()))
    }

    /// An `inputs:` glob's regular files, relative to the suite's directory.
    fn glob(&mut self, pattern: &str) -> Vec<PathBuf> {
        let dir = &self.suite.dir;
        self.globbed
            .entry(pattern.to_owned())
            .or_insert_with(|| {
                let full = dir.join(pattern).display().to_string();
                let mut matched: Vec<PathBuf> =
                    glob::glob(&full).into_iter().flatten().flatten().filter(|p| p.is_file()).collect();
                matched.sort();
                matched
            })
            .clone()
    }
}

/// A word of a command line that may name a file below the suite: relative, with a `/` or
/// an extension, not an option.
fn looks_like_path(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with(['-', '/', '$'])
        && !word.contains("..")
        && (word.contains('/') || word.contains('.'))
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "._/+-@%".contains(c))
}

/// The hash of the cassette entries the task may be answered from: those of its agent's
/// model (a command or ACP agent: every model endpoint entry, as the cassette does not say which
/// agent asked), of the judges it asks and of the servers it reaches that go through the
/// cassette.
fn cassette_entries(
    cassette: &Cassette,
    task: &Task,
    uses: &crate::uses::Uses<'_>,
    servers: &std::collections::BTreeSet<&str>,
    suite: &Suite,
) -> String {
    let mut models: Vec<(&str, &str)> = uses.own_judges().map(|j| (j.provider.label(), j.model.as_str())).collect();
    if let Agent::Llm(agent) = &*task.agent {
        models.push((agent.spec.provider.label(), &agent.spec.model));
    }
    if let Some(judge) = &suite.judge {
        models.push((judge.provider.label(), &judge.model));
    }
    let endpoint = matches!(&*task.agent, Agent::Command(_) | Agent::Acp(_));
    let server_kinds: Vec<String> = servers
        .iter()
        .filter(|s| suite.mcp_servers.get(**s).is_some_and(|s| s.cassette))
        .map(|s| format!("mcp:{s}"))
        .collect();
    let mut hash = Sha256::new();
    for (key, entry) in cassette.entries() {
        let model = entry.model.as_deref().unwrap_or_default();
        let asked = models.iter().any(|(kind, m)| entry.kind == *kind && model == *m)
            || (endpoint && entry.kind.starts_with("http:"))
            || server_kinds.contains(&entry.kind);
        if asked {
            hash.update(key.as_bytes());
            hash.update(serde_json::to_string(&entry.responses).unwrap_or_default().as_bytes());
        }
    }
    hex(&hash.finalize()[..8])
}

/// What evalgate cannot see of the task: a program it starts (its agent command, a command
/// grader, a `run` step, a stdio MCP server) may read files no key names, unless the task
/// declares them in `inputs:`.
fn incomplete(task: &Task, uses: &crate::uses::Uses<'_>) -> Vec<String> {
    if !task.inputs.is_empty() {
        return Vec::new();
    }
    let mut what: Vec<String> = uses.programs.iter().map(|p| p.what.to_owned()).collect();
    what.sort();
    what.dedup();
    what.into_iter().map(|w| format!("{w}: what it reads is not declared (`inputs:`)")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{LoadOptions, load_suite};

    fn prints(dir: &Path, yaml: &str) -> Vec<TaskFingerprint> {
        let path = dir.join("evalgate.yaml");
        std::fs::write(&path, yaml).unwrap();
        let suite = load_suite(&path, &LoadOptions::default()).unwrap();
        fingerprints(&suite, &(0..suite.tasks.len()).collect::<Vec<_>>(), None)
    }

    const SUITE: &str = "evalgate: 1\nsuite: s\nagents:\n  bot: {command: [./agent.sh, '{prompt}']}\nmcp_servers:\n  fs: {command: [node, fs.js]}\n  other: {command: [node, other.js]}\ntasks:\n  - {id: a, agent: bot, prompt: x, grade: [{type: command, run: 'python3 grade.py'}]}\n  - {id: b, agent: bot, prompt: y, grade: [{type: mcp, server: fs, tool: t, expect: {}}]}\n  - {id: c, agent: bot, prompt: z, inputs: ['data/*.txt'], grade: [{type: contains, value: z}]}\n";

    #[test]
    fn a_file_a_task_reaches_changes_that_task_only() {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in [("agent.sh", "a"), ("grade.py", "g"), ("fs.js", "f"), ("other.js", "o")] {
            std::fs::write(dir.path().join(file), text).unwrap();
        }
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/one.txt"), "1").unwrap();
        let before = prints(dir.path(), SUITE);
        assert!(before[0].inputs.contains_key("file:grade.py"), "{:?}", before[0].inputs);
        let changed = |file: &str, text: &str| {
            let was = std::fs::read_to_string(dir.path().join(file)).unwrap();
            std::fs::write(dir.path().join(file), text).unwrap();
            let after = prints(dir.path(), SUITE);
            let ids: Vec<usize> = (0..3).filter(|&i| after[i] != before[i]).collect();
            std::fs::write(dir.path().join(file), was).unwrap();
            ids
        };
        assert_eq!(changed("grade.py", "g2"), [0]);
        assert_eq!(changed("fs.js", "f2"), [1]);
        assert_eq!(changed("other.js", "o2"), Vec::<usize>::new());
        assert_eq!(changed("data/one.txt", "2"), [2]);
        assert_eq!(changed("agent.sh", "a2"), [0, 1, 2]);
        assert!(before[0].incomplete.iter().any(|w| w.starts_with("agent command")));
        assert!(before[2].incomplete.is_empty());
    }

    /// An arm's variables and agents are written under `variants`, which no task's text
    /// names: a change there changes the fingerprint of every arm's task.
    #[test]
    fn a_change_to_an_arm_changes_the_arms_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = |who: &str| {
            format!(
                "evalgate: 1\nsuite: s\nvars: {{who: a}}\nagents:\n  bot: {{command: [echo, '{{vars.who}}']}}\nvariants:\n  control: base\n  arms:\n    base: {{}}\n    other: {{vars: {{who: {who}}}}}\ntasks:\n  - {{id: t, agent: bot, prompt: x, grade: [{{type: contains, value: x}}]}}\n"
            )
        };
        let before = prints(dir.path(), &yaml("b"));
        let after = prints(dir.path(), &yaml("c"));
        assert_eq!(before.len(), 2);
        assert!(before.iter().zip(&after).all(|(b, a)| b != a && a.inputs.contains_key("variants")));
    }
}
