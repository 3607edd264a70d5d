//! Reading a native suite file: YAML into `Raw*` structs (every structural error collected,
//! each with its key path, line and column), then validation into the model.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::assemble::{LoadOptions, validate};
use super::definition::TaskSource;
use super::formats;
use super::imports::{ImportStage, Origins, expand_imports};
use super::load_error::LoadError;
use super::model::Suite;
use super::raw::{GRADER_COMMON_KEYS, RawAgent, RawGrader, RawGraderCommon, RawGraderKind, RawStep, RawSuite, RawTask};
use crate::source::{Diagnostic, KeyPath, Locate, Nowhere, ValidateCx, unknown};
use crate::yaml::{Document, Node, NodeDeserializer, ReadError, Value};

/// Tasks one suite may hold, imports included: each becomes work, reports and rows, so a
/// suite far past any real one is refused before any of that is done.
pub const MAX_TASKS: usize = 10_000;

/// Loads and validates the native suite at `path`.
pub fn load_suite(path: &Path, options: &LoadOptions) -> Result<Suite, LoadError> {
    let source = match crate::yaml::read(path) {
        Ok(source) => source,
        Err(ReadError::Io(source)) => return Err(LoadError::Read { path: path.to_owned(), source }),
        Err(ReadError::Text(e)) => {
            let diagnostic = Diagnostic {
                file: path.to_owned(),
                key_path: String::new(),
                position: e.position,
                message: e.message,
                help: None,
                source_line: None,
                caret: 0,
            };
            return Err(LoadError::Invalid { diagnostics: vec![diagnostic] });
        }
    };
    let dir = std::path::absolute(path)
        .map_err(|source| LoadError::Read { path: path.to_owned(), source })?
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default();
    // Parsed once: the raw types deserialize from the tree, and errors found later (in
    // validation, say) look their positions up in it.
    let doc = Document::parse(&source).map(Arc::new);
    let positions: Box<dyn Locate + '_> = match &doc {
        Ok(doc) => Box::new(&**doc),
        Err(_) => Box::new(Nowhere),
    };
    let mut cx = ValidateCx::new(path, dir, &source, positions);
    let raw = match &doc {
        Ok(doc) => parse(doc, &mut cx),
        Err(e) => {
            let d = cx.diagnostic_at(&KeyPath::default(), e.position, format!("invalid YAML: {}", e.message));
            cx.push(d);
            None
        }
    };
    // Values that were wrong are already reported; the rest is validated with them, so
    // every problem is listed at once. Imports that failed leave tasks out: not validated.
    let before = cx.diagnostics.len();
    let raw = raw.and_then(|mut raw| {
        expand_imports(&mut raw, &mut cx, ImportStage::Files);
        (cx.diagnostics.len() == before).then_some(raw)
    });
    // The suite and its files are read; only now is a server started to list its evals.
    let raw = raw.and_then(|mut raw| {
        if !options.servers_only {
            expand_imports(&mut raw, &mut cx, ImportStage::LiveListings);
        }
        (cx.diagnostics.len() == before && within_task_limit(&mut cx, raw.tasks.len())).then_some(raw)
    });
    let read_errors = cx.diagnostics.len();
    let suite = raw.and_then(|raw| validate(raw, options, &mut cx));
    match suite {
        Some(suite) if cx.diagnostics.is_empty() => Ok(suite),
        _ => Err(LoadError::Invalid { diagnostics: without_consequences(cx.diagnostics, read_errors) }),
    }
}

/// `diagnostics` without the validation errors (those from `first` on) that follow from a
/// value already reported as unreadable: about that key or inside it, or about the mapping
/// that held it (a grader without its misspelt `value` lacks one), which is the same
/// mistake said twice.
fn without_consequences(mut diagnostics: Vec<Diagnostic>, first: usize) -> Vec<Diagnostic> {
    let unreadable: Vec<String> = diagnostics[..first].iter().map(|d| d.key_path.clone()).collect();
    let follows = |path: &str| {
        unreadable.iter().any(|bad| {
            let holder = &bad[..bad.rfind(['.', '[']).unwrap_or(0)];
            path == holder || within(path, bad)
        })
    };
    let mut index = 0;
    diagnostics.retain(|d| {
        index += 1;
        index <= first || !follows(&d.key_path)
    });
    diagnostics
}

/// Whether key path `path` is `outer` or inside it.
fn within(path: &str, outer: &str) -> bool {
    path.strip_prefix(outer).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// The id a native suite file declares (`suite:`), read even when the file does not load,
/// so a run it stopped still reports under that id (and updates that suite's PR comment).
pub fn declared_id(path: &Path) -> Option<String> {
    #[derive(Deserialize)]
    struct Declared {
        suite: String,
    }
    // A regular file only, opened without blocking: the id names the reports of a run that
    // stopped, and a FIFO given as the suite must not hang that stop.
    let text = String::from_utf8(crate::files::read::bytes(path, crate::files::read::TEXT).ok()?).ok()?;
    let id = crate::yaml::from_str::<Declared>(&text).ok()?.suite;
    super::ids::is_id(&id, false).then_some(id)
}

/// Whether `n` tasks are within [`MAX_TASKS`]; checked on the parsed file before its tasks
/// are read, and again with the imported ones.
fn within_task_limit(cx: &mut ValidateCx, n: usize) -> bool {
    if n > MAX_TASKS {
        let message = format!("{n} tasks: more than {MAX_TASKS}, the limit for a suite");
        cx.error(&KeyPath::root("tasks"), message).help = Some("split the suite into several files".into());
    }
    n <= MAX_TASKS
}

fn parse(doc: &Arc<Document>, cx: &mut ValidateCx) -> Option<RawSuite> {
    if let Value::Mapping(entries) = &doc.root().value
        && let Some((_, Node { value: Value::Sequence(tasks), .. })) = entries.iter().find(|(k, _)| k.text() == "tasks")
        && !within_task_limit(cx, tasks.len())
    {
        return None;
    }
    // A well-formed suite deserializes in one pass; only a broken one takes the slower
    // path below, which collects every problem with its key path.
    if let Ok(suite) = RawSuite::deserialize(doc.de(doc.root())) {
        return Some(written_sources(suite, doc));
    }
    match foreign(doc, cx) {
        Some(Ok(raw)) => return Some(raw),
        Some(Err(d)) => {
            cx.push(d);
            return None;
        }
        None => {}
    }
    let mut root = doc.root().clone();
    let Value::Mapping(entries) = &mut root.value else {
        cx.error(&KeyPath::default(), "a suite must be a YAML mapping with `evalgate: 1`, `suite` and `tasks`");
        return None;
    };
    let agents = take(entries, "agents", Node::is_mapping);
    let tasks = take(entries, "tasks", Node::is_sequence);
    let mut suite: Option<RawSuite> = de(cx, &root, &KeyPath::default(), &[]);

    // Validated only when every agent, task, step and grader was read (some of their values
    // perhaps dropped): one left out would shift the indices of the rest, or leave a name
    // undefined, and validation would report errors that are not there.
    let mut whole = true;
    for (name, value) in entries_of(agents) {
        let name = name.text().to_owned();
        let agent: Option<RawAgent> = de(cx, &value, &KeyPath::root("agents").key(&name), &[]);
        match (suite.as_mut(), agent) {
            (Some(suite), Some(agent)) => _ = suite.agents.insert(name, agent),
            _ => whole = false,
        }
    }
    for (i, value) in items(tasks).into_iter().enumerate() {
        let task = parse_task(cx, value, &KeyPath::root("tasks").index(i));
        match (suite.as_mut(), task) {
            (Some(suite), Some(task)) => suite.tasks.push(task),
            _ => whole = false,
        }
    }
    suite.filter(|_| whole)
}

/// A task with every step and grader it lists; `None` when one of them could not be read.
fn parse_task(cx: &mut ValidateCx, mut node: Node, path: &KeyPath) -> Option<RawTask> {
    let Value::Mapping(entries) = &mut node.value else {
        return de(cx, &node, path, &[]);
    };
    let setup = take(entries, "setup", Node::is_sequence);
    let grade = take(entries, "grade", Node::is_sequence);
    let cleanup = take(entries, "cleanup", Node::is_sequence);
    let mut task: Option<RawTask> = de(cx, &node, path, &[]);
    let mut whole = true;
    for (key, list) in [("setup", setup), ("cleanup", cleanup)] {
        for (j, step) in items(list).into_iter().enumerate() {
            let step: Option<RawStep> = de(cx, &step, &path.key(key).index(j), &[]);
            match (task.as_mut(), step) {
                (Some(task), Some(step)) if key == "setup" => task.setup.push(step),
                (Some(task), Some(step)) => task.cleanup.push(step),
                _ => whole = false,
            }
        }
    }
    for (j, grader) in items(grade).into_iter().enumerate() {
        match (task.as_mut(), parse_grader(cx, grader, &path.key("grade").index(j))) {
            (Some(task), Some(grader)) => task.grade.push(grader),
            _ => whole = false,
        }
    }
    task.filter(|_| whole)
}

/// A grader is its common keys plus a `type`-tagged rest; each part is checked separately so
/// an unknown key is reported against everything a grader of that type accepts.
fn parse_grader(cx: &mut ValidateCx, node: Node, path: &KeyPath) -> Option<RawGrader> {
    let Value::Mapping(entries) = &node.value else {
        let kind: Option<RawGraderKind> = de(cx, &node, path, &[]);
        return kind.map(|kind| RawGrader { common: RawGraderCommon::default(), kind });
    };
    let (common, rest): (Vec<_>, Vec<_>) =
        entries.iter().cloned().partition(|(k, _)| GRADER_COMMON_KEYS.contains(&k.text()));
    let common: Option<RawGraderCommon> = de(cx, &node.with(Value::Mapping(common)), path, &[]);
    let kind: Option<RawGraderKind> = de(cx, &node.with(Value::Mapping(rest)), path, &GRADER_COMMON_KEYS);
    Some(RawGrader { common: common?, kind: kind? })
}

/// [`RawSuite::with_sources`] for a native suite: each task is read from the parsed file when its
/// definition is asked for (item `index` of its `tasks`), and the suite's JSON is everything
/// but `tasks`.
fn written_sources(mut raw: RawSuite, doc: &Arc<Document>) -> RawSuite {
    for (index, task) in raw.tasks.iter_mut().enumerate() {
        task.source = TaskSource::Written { doc: Arc::clone(doc), index };
    }
    let root = doc.root();
    if let Value::Mapping(entries) = &root.value {
        let rest = entries.iter().filter(|(k, _)| k.text() != "tasks").cloned().collect();
        raw.source = serde_json::Value::deserialize(doc.de(&root.with(Value::Mapping(rest)))).unwrap_or_default();
    }
    raw
}

/// A file in another format, run directly: its native suite, or an error that says what it
/// is and how to run it.
fn foreign(doc: &Document, cx: &mut ValidateCx) -> Option<Result<RawSuite, super::Diagnostic>> {
    let json = serde_json::Value::deserialize(doc.de(doc.root())).ok()?;
    let formats::Detected::Foreign(format) = formats::detect(&json) else { return None };
    let file = cx.file.display().to_string();
    if let Some(unrunnable) = format.unrunnable(&json) {
        let d = cx.diagnostic_at(&KeyPath::default(), None, unrunnable.why);
        return Some(Err(d.with_help(format!(
            "import it from a native suite that supplies it:\n    imports: [{{format: {}, path: {file}, {}}}]\n  or run `evalgate convert {file}` and edit the placeholders in the suite it prints",
            format.import_name(),
            unrunnable.import_keys,
        ))));
    }
    let absolute = cx.dir.join(cx.file.file_name().unwrap_or_default());
    let fcx = formats::ConvertCx {
        file: &absolute,
        rel_dir: Default::default(),
        agent: None,
        model_agent: false,
        server: None,
    };
    let converted = match format.convert(&json, &fcx) {
        Ok(c) => c,
        Err(problems) => {
            let list = formats::describe(&problems, Some(doc), &file);
            let message = format!("invalid {}:\n  {}", format.name(), list.join("\n  "));
            return Some(Err(cx.diagnostic_at(&KeyPath::default(), None, message)));
        }
    };
    let mut origins = Origins::default();
    origins.documents.insert(absolute.clone(), Some(doc.clone()));
    origins.record(&converted, cx, 0);
    // Key paths in later errors are the converted suite's (as `evalgate convert` prints it).
    cx.forget_positions();
    match serde_json::from_value::<RawSuite>(converted.suite.clone()) {
        Ok(raw) => Some(Ok(raw.with_sources(converted.suite))),
        Err(e) => Some(Err(cx.diagnostic_at(
            &KeyPath::default(),
            None,
            format!("cannot run this {} file: {e}", format.name()),
        ))),
    }
}

/// Deserializes `node` found at `base`, recording every error with its full key path: serde
/// stops at the first, so the innermost entry it names is dropped and the rest read again,
/// until it reads. What reads without some entries is returned (their errors recorded), so
/// that validation still checks the rest: a wrong value and a duplicate task id are
/// reported together. `None` when nothing can be read (a required key missing, or dropped,
/// at the top of `node`).
fn de<T: DeserializeOwned>(cx: &mut ValidateCx, node: &Node, base: &KeyPath, extra_keys: &[&str]) -> Option<T> {
    let mut node = std::borrow::Cow::Borrowed(node);
    let mut dropped: Vec<String> = Vec::new();
    loop {
        let e = match serde_path_to_error::deserialize(NodeDeserializer::new(&node)) {
            Ok(v) => return Some(v),
            Err(e) => e,
        };
        let rel = e.path().to_string();
        let rel = if rel == "." { String::new() } else { rel };
        let message = e.into_inner().to_string();
        // A key dropped for its value and required: its holder goes too, without a second error.
        let lost_required = dropped
            .iter()
            .any(|key| entry_of(&rel, key).is_some_and(|name| message == format!("missing field `{name}`")));
        if !lost_required {
            record_serde_error(cx, &join(base.as_str(), &rel), &message, extra_keys);
        }
        let target = match unknown_key(&message) {
            Some(name) if !rel.ends_with(name) => join(&rel, name),
            _ => rel,
        };
        if target.is_empty() {
            return None;
        }
        dropped.push(drop_entry(node.to_mut(), &target)?);
    }
}

/// The name of `key` when it is an entry of the mapping at `holder`.
fn entry_of<'k>(holder: &str, key: &'k str) -> Option<&'k str> {
    let name = if holder.is_empty() { Some(key) } else { key.strip_prefix(holder).and_then(|k| k.strip_prefix('.')) };
    name.filter(|n| !n.contains(['.', '[']))
}

/// The key an "unknown field" error names.
fn unknown_key(message: &str) -> Option<&str> {
    let name = message.split_once("unknown field `")?.1;
    Some(&name[..name.find('`')?])
}

/// Removes from the mapping `node` the innermost mapping entry on the key path `rel` (an
/// item of a list is never removed: the items after it would change their index), and
/// returns the removed entry's key path.
fn drop_entry(node: &mut Node, rel: &str) -> Option<String> {
    let Value::Mapping(entries) = &mut node.value else { return None };
    let at = entries.iter().position(|(k, _)| {
        rel.strip_prefix(k.text()).is_some_and(|after| after.is_empty() || after.starts_with(['.', '[']))
    })?;
    let key = entries[at].0.text().to_owned();
    if let Some(inner) = drop_within(&mut entries[at].1, &rel[key.len()..]) {
        return Some(format!("{key}{inner}"));
    }
    entries.remove(at);
    Some(key)
}

/// [`drop_entry`] inside a value, `after` being the rest of the path (`.key…` or `[i]…`).
fn drop_within(node: &mut Node, after: &str) -> Option<String> {
    if let Some(rest) = after.strip_prefix('.') {
        return drop_entry(node, rest).map(|inner| format!(".{inner}"));
    }
    let (index, rest) = after.strip_prefix('[')?.split_once(']')?;
    let Value::Sequence(items) = &mut node.value else { return None };
    let item = items.get_mut(index.parse::<usize>().ok()?)?;
    drop_within(item, rest).map(|inner| format!("[{index}]{inner}"))
}

fn record_serde_error(cx: &mut ValidateCx, path: &str, message: &str, extra_keys: &[&str]) {
    for (what, is_field) in [("unknown field `", true), ("unknown variant `", false)] {
        let Some(start) = message.find(what) else { continue };
        let name = &message[start + what.len()..];
        let name = &name[..name.find('`').unwrap_or(name.len())];
        let expected = message.split_once("expected").map(|(_, e)| e).unwrap_or("");
        let mut candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        candidates.extend(extra_keys);
        // The error's path may or may not already end at the offending key.
        let key_path = if path.ends_with(name) { path.to_owned() } else { join(path, name) };
        let d = if is_field {
            cx.key_error(&KeyPath::parsed(&key_path), format!("unknown key `{name}`"))
        } else if let Some(map) = path.strip_suffix(".?") {
            // A map keyed by an enum (`per_category`): the key is the mistake.
            let what = map.rsplit('.').next().and_then(|key| key.strip_prefix("per_")).unwrap_or("key");
            cx.key_error(&KeyPath::parsed(&join(map, name)), format!("unknown {what} `{name}`"))
        } else {
            cx.error(&KeyPath::parsed(path), format!("unknown {} `{name}`", value_noun(path)))
        };
        d.help = Some(unknown(name, candidates.iter().copied()).help("expected one of", "none is allowed here"));
        return;
    }
    cx.error(&KeyPath::parsed(path), message);
}

/// What the value at `path` is, named after its key: `tasks[0].level` holds a level,
/// `modes[1]` a mode; a key of several words (`unknown_cost`) holds a value.
fn value_noun(path: &str) -> &str {
    let key = path.rsplit('.').next().unwrap_or_default();
    let noun = match key.split_once('[') {
        Some((list, _)) => list.strip_suffix('s').unwrap_or(list),
        None => key,
    };
    if noun.is_empty() || noun.contains('_') { "value" } else { noun }
}

/// Takes the value of `key` when it has the right shape, leaving an empty one in its place
/// (so the rest still deserializes); it is then checked item by item.
fn take(entries: &mut [(Node, Node)], key: &str, shape: fn(&Node) -> bool) -> Option<Node> {
    let (_, value) = entries.iter_mut().find(|(k, _)| k.text() == key)?;
    shape(value).then(|| {
        let hollow = value.hollow();
        std::mem::replace(value, hollow)
    })
}

fn items(list: Option<Node>) -> Vec<Node> {
    match list.map(|n| n.value) {
        Some(Value::Sequence(items)) => items,
        _ => Vec::new(),
    }
}

fn entries_of(map: Option<Node>) -> Vec<(Node, Node)> {
    match map.map(|n| n.value) {
        Some(Value::Mapping(entries)) => entries,
        _ => Vec::new(),
    }
}

fn join(base: &str, rel: &str) -> String {
    match (base.is_empty(), rel.is_empty()) {
        (true, _) => rel.to_owned(),
        (_, true) => base.to_owned(),
        _ if rel.starts_with('[') => format!("{base}{rel}"),
        _ => format!("{base}.{rel}"),
    }
}
