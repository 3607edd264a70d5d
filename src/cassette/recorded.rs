//! A run's cassette: the entries read when it was opened, what the run asks of it (the
//! `n`-th ask of a request gets the `n`-th answer), what it recorded live, and the save.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use super::diff;
use super::door::{Miss, Traffic};
use super::entry::{Entry, Mode, canonical, key_of, model_of, today};
use super::file::{WRITTEN, identity, parse, read, refusal, write};
use super::usage::Usage;

/// What to do with one request (the door's walk, [`super::door::pass`], does it).
pub(super) enum Lookup {
    /// The recorded answer.
    Replay(Value),
    /// Ask live, then hand the answer to [`Cassette::record`] with this slot.
    Live(Slot),
    Miss(Miss),
}

/// Where a live answer goes: the request's key and which of its answers it is.
pub(super) struct Slot {
    key: String,
    index: usize,
}

/// A run's cassette: what was recorded, and what this run asked and recorded.
pub struct Cassette {
    pub path: PathBuf,
    /// The path as messages and reports show it.
    pub name: String,
    pub mode: Mode,
    /// The suite whose run this is (noted in the entries it asks).
    suite: String,
    /// The entries the file held when it was opened.
    recorded: BTreeMap<String, Entry>,
    /// The suite's own normalisations of agents' model requests (`cassettes.normalize`).
    pub normalize: Vec<(regex::Regex, String)>,
    run: Mutex<RunState>,
}

#[derive(Default)]
struct RunState {
    /// Per key, how many answers this run has been given or asked for.
    asked: HashMap<String, usize>,
    /// Per key, the request and the answers asked live in this run, by index.
    live: BTreeMap<String, (Entry, Vec<Option<Value>>)>,
    replayed: u64,
    /// Of `replayed`, those a command agent asked through its model endpoint.
    through_endpoint: u64,
    missed: u64,
    /// Answers not kept: they held a secret in a form no redaction of their text removes.
    refused: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("cassette {name}: {message}")]
pub struct ReadError {
    pub name: String,
    pub message: String,
}

impl Cassette {
    /// The cassette at `path`, for a run of `suite` (a missing file is an empty cassette: in
    /// replay every request then misses, each saying so).
    /// The cassette with the suite's own normalisations of agents' model requests.
    pub fn normalizing(self, normalize: Vec<(regex::Regex, String)>) -> Cassette {
        Cassette { normalize, ..self }
    }

    pub fn open(path: &Path, name: String, mode: Mode, suite: &str) -> Result<Cassette, ReadError> {
        let recorded = match read(path) {
            Ok(text) => parse(&text).map_err(|message| ReadError { name: name.clone(), message })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(ReadError { name, message: e.to_string() }),
        };
        let suite = suite.to_owned();
        Ok(Cassette {
            path: path.to_owned(),
            name,
            mode,
            suite,
            recorded,
            normalize: Vec::new(),
            run: Mutex::default(),
        })
    }

    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    /// The recorded entries, by key.
    pub fn entries(&self) -> &BTreeMap<String, Entry> {
        &self.recorded
    }

    /// What to do with `request` of `traffic`: it is redacted (on its decoded content) and made
    /// canonical first, so its key does not depend on a secret's value or on the order of
    /// its keys.
    pub(super) fn lookup(&self, traffic: &Traffic, request: &Value) -> Lookup {
        let kind = &traffic.label();
        let request = canonical(&crate::redact::decoded(request.clone()));
        let key = key_of(kind, &request);
        let mut run = self.run.lock().unwrap_or_else(|e| e.into_inner());
        let asked = run.asked.entry(key.clone()).or_default();
        let index = *asked;
        *asked += 1;
        let held = self.recorded.get(&key).and_then(|e| e.responses.get(index));
        match (self.mode, held) {
            (Mode::Replay | Mode::RecordMissing, Some(answer)) => {
                let mut answer = answer.clone();
                let unknown = crate::redact::restore(&mut answer);
                if !unknown.is_empty() {
                    run.missed += 1;
                    return Lookup::Miss(Miss {
                        message: format!(
                            "cassette {}: the recorded answer (key {key}) holds {}, redacted when it was recorded, \
                             and this run does not know its value: it cannot be replayed as the model gave it (set the variable)",
                            self.name,
                            unknown.join(", ")
                        ),
                    });
                }
                run.replayed += 1;
                if matches!(traffic, Traffic::Endpoint(_)) {
                    run.through_endpoint += 1;
                }
                Lookup::Replay(answer)
            }
            (Mode::Replay, None) => {
                run.missed += 1;
                Lookup::Miss(self.miss(kind, &key, &request, index))
            }
            (Mode::Record | Mode::RecordMissing, _) => {
                let model = model_of(&request);
                let entry = Entry {
                    key: key.clone(),
                    kind: kind.to_owned(),
                    model,
                    recorded: today(),
                    request,
                    responses: Vec::new(),
                    suites: BTreeSet::new(),
                };
                run.live.entry(key.clone()).or_insert_with(|| (entry, Vec::new()));
                Lookup::Live(Slot { key, index })
            }
        }
    }

    /// The live answer for `slot`, redacted on its decoded content before it is kept; not
    /// kept (and said so) when it or its request still holds a secret in a form no
    /// redaction of the text removes ([`refusal`]).
    pub(super) fn record(&self, slot: Slot, answer: &Value) {
        let answer = crate::redact::decoded(answer.clone());
        let mut run = self.run.lock().unwrap_or_else(|e| e.into_inner());
        let refused = run
            .live
            .get(&slot.key)
            .and_then(|(entry, _)| refusal(&Entry { responses: vec![answer.clone()], ..entry.clone() }));
        if let Some(why) = refused {
            run.refused += 1;
            crate::errln!("warning: cassette {}: {why}", self.name);
            return;
        }
        if let Some((_, answers)) = run.live.get_mut(&slot.key) {
            if answers.len() <= slot.index {
                answers.resize(slot.index + 1, None);
            }
            answers[slot.index] = Some(answer);
        }
    }

    /// The error for a request the cassette does not hold: the key, and either how many
    /// answers the request has (a run asking more often than was recorded) or the nearest
    /// recorded request of the same kind and what differs.
    fn miss(&self, kind: &str, key: &str, request: &Value, index: usize) -> Miss {
        let model = model_of(request).map(|m| format!(" (model {m})")).unwrap_or_default();
        let head = format!("not in cassette {}: {kind} request{model}, key {key}", self.name);
        if let Some(entry) = self.recorded.get(key) {
            return Miss {
                message: format!(
                    "{head}: the cassette holds {} answer(s) of this request and this run asks for answer {}; \
                     replayed trials are the recorded ones, never copies: record more with --record-missing",
                    entry.responses.len(),
                    index + 1
                ),
            };
        }
        let nearest = self
            .recorded
            .values()
            .filter(|e| e.kind == kind)
            .map(|e| (diff::differences(&e.request, request), e))
            .min_by_key(|(d, e)| (d.len(), e.key.clone()));
        let message = match nearest {
            Some((differences, entry)) => format!(
                "{head}; the nearest recorded request (key {}, recorded {}) differs at {}",
                entry.key,
                entry.recorded,
                diff::describe(&differences)
            ),
            None => format!("{head}; the cassette holds no {kind} request: record it with --record"),
        };
        Miss { message }
    }

    /// What this run did with the cassette.
    pub fn usage(&self) -> Usage {
        let run = self.run.lock().unwrap_or_else(|e| e.into_inner());
        let recorded_now: u64 = run.live.values().map(|(_, a)| a.iter().flatten().count() as u64).sum();
        let used: Vec<&Entry> = self
            .recorded
            .values()
            .filter(|e| run.asked.get(&e.key).is_some_and(|&n| n > 0 && !e.responses.is_empty()))
            .collect();
        let replayed_from: Vec<&Entry> = if run.replayed > 0 { used.clone() } else { Vec::new() };
        let models: std::collections::BTreeSet<String> = replayed_from.iter().filter_map(|e| e.model.clone()).collect();
        Usage {
            path: self.name.clone(),
            mode: Some(self.mode),
            replayed: run.replayed,
            through_endpoint: run.through_endpoint,
            recorded: recorded_now,
            missed: run.missed,
            refused: run.refused,
            recorded_from: replayed_from.iter().map(|e| e.recorded.clone()).min(),
            recorded_to: replayed_from.iter().map(|e| e.recorded.clone()).max(),
            models: models.into_iter().collect(),
            unused: self.recorded.keys().filter(|k| !run.asked.contains_key(*k)).cloned().collect(),
        }
    }

    /// Writes the cassette after a recording run, when that changes the file: the entries it
    /// held when the run opened it (or what this process wrote to it since: another suite of
    /// the run shares it), the entries this run asked live with the answers it got
    /// (`record`: in place of the recorded ones; `record_missing`: after them), and its suite
    /// noted in every entry it asked. Nothing else on the disk by then is kept: an agent of
    /// the run can write to the file. Written whole or not at all.
    pub fn save(&self) -> Result<bool, crate::files::WriteError> {
        if !self.mode.live() {
            return Ok(false);
        }
        let run = self.run.lock().unwrap_or_else(|e| e.into_inner());
        let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
        let mut entries = written.get(&identity(&self.path)).cloned().unwrap_or_else(|| self.recorded.clone());
        for (key, (entry, answers)) in &run.live {
            let answers: Vec<Value> = answers.iter().flatten().cloned().collect();
            if answers.is_empty() {
                continue; // every live call failed: what was recorded stays
            }
            let old = entries.get(key);
            let kept = match (self.mode, old) {
                (Mode::RecordMissing, Some(old)) => old.responses.clone(),
                _ => Vec::new(),
            };
            let responses: Vec<Value> = kept.into_iter().chain(answers).collect();
            // The same answers again keep their line, date and all: a re-record's diff is
            // only what changed.
            if old.is_some_and(|old| old.responses == responses) {
                continue;
            }
            let suites = old.map(|old| old.suites.clone()).unwrap_or_default();
            entries.insert(key.clone(), Entry { responses, suites, ..entry.clone() });
        }
        for (key, _) in run.asked.iter().filter(|(_, n)| **n > 0) {
            if let Some(entry) = entries.get_mut(key).filter(|_| !self.suite.is_empty()) {
                entry.suites.insert(self.suite.clone());
            }
        }
        let on_disk = read(&self.path).ok().and_then(|text| parse(&text).ok());
        if on_disk.as_ref() == Some(&entries) || (on_disk.is_none() && entries.is_empty() && !self.path.exists()) {
            return Ok(false);
        }
        let refused = write(&self.path, &self.name, &entries)?;
        entries.retain(|key, _| !refused.contains(key));
        // Named once its directory exists, as every later save names it.
        written.insert(identity(&self.path), entries);
        Ok(true)
    }

    /// Removes the entries of `keys` from the file; the keys it does not hold.
    pub fn prune(&self, keys: &[String]) -> Result<Vec<String>, crate::files::WriteError> {
        let mut entries = self.recorded.clone();
        let absent: Vec<String> = keys.iter().filter(|k| entries.remove(*k).is_none()).cloned().collect();
        write(&self.path, &self.name, &entries)?;
        Ok(absent)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::file::line_key;
    use super::*;

    const OPENAI: Traffic = Traffic::Model("openai");

    fn cassette(mode: Mode, dir: &Path) -> Cassette {
        Cassette::open(&dir.join("c.jsonl"), "c.jsonl".into(), mode, "s").unwrap()
    }

    fn live(c: &Cassette, request: &Value, answer: &str) {
        match c.lookup(&OPENAI, request) {
            Lookup::Live(slot) => c.record(slot, &json!(answer)),
            _ => panic!("expected a live call"),
        }
    }

    #[test]
    fn answers_replay_in_the_order_recorded_and_never_twice() {
        let dir = tempfile::tempdir().unwrap();
        let request = json!({"model": "m", "messages": ["hi"]});
        let c = cassette(Mode::Record, dir.path());
        live(&c, &request, "one");
        live(&c, &request, "two");
        assert!(c.save().unwrap());
        let c = cassette(Mode::Replay, dir.path());
        // Keys in another order are the same request.
        let reordered = json!({"messages": ["hi"], "model": "m"});
        for expected in ["one", "two"] {
            match c.lookup(&OPENAI, &reordered) {
                Lookup::Replay(v) => assert_eq!(v, json!(expected)),
                _ => panic!("expected a replay"),
            }
        }
        let Lookup::Miss(miss) = c.lookup(&OPENAI, &request) else { panic!("a third ask must miss") };
        assert!(miss.message.contains("holds 2 answer(s) of this request and this run asks for answer 3"), "{miss}");
        assert_eq!(c.usage().replayed, 2);
        assert_eq!(c.usage().missed, 1);
    }

    #[test]
    fn a_changed_request_misses_naming_the_nearest_and_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let c = cassette(Mode::Record, dir.path());
        live(&c, &json!({"model": "m", "messages": [{"text": "Say hi"}]}), "hi");
        live(&c, &json!({"model": "m", "messages": [{"text": "Count"}], "tools": [1]}), "1");
        c.save().unwrap();
        let c = cassette(Mode::Replay, dir.path());
        let Lookup::Miss(miss) = c.lookup(&OPENAI, &json!({"model": "m", "messages": [{"text": "Say hello"}]})) else {
            panic!("expected a miss")
        };
        assert!(miss.message.contains("openai request (model m)"), "{miss}");
        assert!(miss.message.contains(r#"messages[0].text: recorded "Say hi", now "Say hello""#), "{miss}");
        let Lookup::Miss(other) = c.lookup(&Traffic::Model("anthropic"), &json!({"model": "m"})) else {
            panic!("expected a miss")
        };
        assert!(other.message.contains("holds no anthropic request"), "{other}");
    }

    #[test]
    fn record_missing_replays_what_is_held_and_appends_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let request = json!({"model": "m"});
        let c = cassette(Mode::Record, dir.path());
        live(&c, &request, "first");
        c.save().unwrap();
        let c = cassette(Mode::RecordMissing, dir.path());
        assert!(matches!(c.lookup(&OPENAI, &request), Lookup::Replay(v) if v == json!("first")));
        live(&c, &request, "second");
        c.save().unwrap();
        let c = cassette(Mode::Replay, dir.path());
        let answers = c.entries().values().next().unwrap().responses.clone();
        assert_eq!(answers, vec![json!("first"), json!("second")]);
    }

    #[test]
    fn a_rerecord_keeps_unasked_entries_and_writes_sorted_stable_lines() {
        let dir = tempfile::tempdir().unwrap();
        let c = cassette(Mode::Record, dir.path());
        for n in 0..5 {
            live(&c, &json!({"n": n}), "x");
        }
        c.save().unwrap();
        let before = std::fs::read_to_string(dir.path().join("c.jsonl")).unwrap();
        // The same answers again: nothing to write.
        let c = cassette(Mode::Record, dir.path());
        live(&c, &json!({"n": 3}), "x");
        assert!(!c.save().unwrap());
        let c = cassette(Mode::Record, dir.path());
        live(&c, &json!({"n": 3}), "changed");
        c.save().unwrap();
        let after = std::fs::read_to_string(dir.path().join("c.jsonl")).unwrap();
        let changed: Vec<_> = before.lines().zip(after.lines()).filter(|(a, b)| a != b).collect();
        assert_eq!(before.lines().count(), after.lines().count());
        assert_eq!(changed.len(), 1, "only the re-recorded line changes");
        let keys: Vec<String> = after.lines().map(line_key).collect();
        assert!(keys.is_sorted());
    }

    #[test]
    fn a_leak_recorded_redacted_replays_as_a_leak_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let secret = crate::redact::Secret::env("KEY", "sk-live-0123456789".into());
        crate::redact::install(vec![secret.clone()]);
        let c = cassette(Mode::Record, dir.path());
        live(&c, &json!({"p": "key?"}), "it is sk-live-0123456789");
        c.save().unwrap();
        let text = std::fs::read_to_string(dir.path().join("c.jsonl")).unwrap();
        assert!(!text.contains("sk-live") && text.contains("it is [secret:KEY]"), "{text}");
        // The run knows the key: the answer is the model's, leak and all.
        let c = cassette(Mode::Replay, dir.path());
        assert!(
            matches!(c.lookup(&OPENAI, &json!({"p": "key?"})), Lookup::Replay(v) if v == json!("it is sk-live-0123456789"))
        );
        // It does not: replaying the placeholder would hide the leak from the graders.
        crate::redact::install(Vec::new());
        let c = cassette(Mode::Replay, dir.path());
        let Lookup::Miss(miss) = c.lookup(&OPENAI, &json!({"p": "key?"})) else { panic!("expected a refusal") };
        assert!(miss.message.contains("holds [secret:KEY], redacted when it was recorded"), "{miss}");
    }

    #[test]
    fn two_recordings_of_one_file_in_one_run_keep_each_others_entries() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (cassette(Mode::Record, dir.path()), cassette(Mode::Record, dir.path()));
        live(&a, &json!({"suite": "a"}), "x");
        live(&b, &json!({"suite": "b"}), "y");
        a.save().unwrap();
        b.save().unwrap();
        assert_eq!(cassette(Mode::Replay, dir.path()).entries().len(), 2);
    }

    #[test]
    fn a_fifo_or_a_date_that_is_not_one_is_refused_never_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("c.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = Cassette::open(&fifo, "c.jsonl".into(), Mode::Replay, "s").err().unwrap().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        std::fs::remove_file(&fifo).unwrap();
        let c = cassette(Mode::Record, dir.path());
        live(&c, &json!({"p": 1}), "x");
        c.save().unwrap();
        let text = std::fs::read_to_string(&fifo).unwrap();
        let forged = text.replace(&today(), "[click](http://x)");
        std::fs::write(&fifo, forged).unwrap();
        let e = Cassette::open(&fifo, "c.jsonl".into(), Mode::Replay, "s").err().unwrap().to_string();
        assert!(e.contains("line 1: `recorded` is not a date"), "{e}");
    }

    #[test]
    fn a_hand_edited_request_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let c = cassette(Mode::Record, dir.path());
        live(&c, &json!({"prompt": "a"}), "x");
        c.save().unwrap();
        let path = dir.path().join("c.jsonl");
        let edited = std::fs::read_to_string(&path).unwrap().replace(r#""prompt":"a""#, r#""prompt":"b""#);
        std::fs::write(&path, format!("\n{edited}")).unwrap();
        let e = Cassette::open(&path, "c.jsonl".into(), Mode::Replay, "s").err().unwrap().to_string();
        assert!(e.contains("line 2: key") && e.contains("is not the key of its request"), "{e}");
    }
}
