//! `imports` of a native suite: the tasks, environment and hooks each entry brings (files
//! of a foreign format, or a live `evals/list` of an MCP server), each task recording the
//! file and line it came from.

use std::path::Path;

use serde::Deserialize;

use super::formats;
use super::raw::RawSuite;
use crate::source::{KeyPath, Locate, ValidateCx, unknown};
use crate::yaml::{Document, ReadError};

/// The line of each converted task in its source file. A file already parsed is handed
/// over; a file only a converter read (an mcpchecker task, whose converter keeps no
/// positions) is parsed here, once.
#[derive(Default)]
pub(super) struct Origins {
    pub(super) documents: std::collections::HashMap<std::path::PathBuf, Option<Document>>,
}

impl Origins {
    /// Records where the tasks of `converted` came from, as tasks `first..` of the suite.
    pub(super) fn record(&mut self, converted: &formats::Converted, cx: &mut ValidateCx, first: usize) {
        for (i, origin) in converted.origins.iter().enumerate() {
            let doc = self
                .documents
                .entry(origin.file.clone())
                .or_insert_with(|| crate::yaml::read(&origin.file).ok().and_then(|text| Document::parse(&text).ok()));
            let line =
                origin.line.or_else(|| doc.as_ref().and_then(|d| d.value(&origin.at)).map(|p| p.line)).unwrap_or(1);
            let shown = origin.file.strip_prefix(&cx.dir).unwrap_or(&origin.file).display().to_string();
            cx.task_origins.insert(first + i, (shown, line));
        }
    }
}

/// Which `imports` entries a pass expands: the files, read with the suite, or the evals a
/// live MCP server lists (`evals/list`), which starts the server and so runs as a stage of
/// its own after the suite and its files are read (and not at all for a command that needs
/// only the suite's servers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ImportStage {
    Files,
    LiveListings,
}

/// Appends what every `imports` entry of `stage` brings: tasks (each recording where it
/// came from), environment requirements and hooks.
pub(super) fn expand_imports(raw: &mut RawSuite, cx: &mut ValidateCx, stage: ImportStage) {
    let imports = match stage {
        ImportStage::Files => raw.imports.clone(),
        ImportStage::LiveListings => std::mem::take(&mut raw.imports),
    };
    let mut origins = Origins::default();
    for (i, import) in imports.iter().enumerate() {
        let path = KeyPath::root("imports").index(i);
        let format = formats::by_import_name(&import.format);
        let listing = format.and_then(|f| f.server_listing());
        let live = listing.is_some() && import.path.is_none();
        if live != (stage == ImportStage::LiveListings) {
            continue;
        }
        let Some(format) = format else {
            let d = cx.error(&path.key("format"), format!("unknown import format `{}`", import.format));
            d.help = Some(format!("supported: {}", formats::import_names()));
            continue;
        };
        let agent = import.agent.clone().or_else(|| raw.defaults.agent.clone());
        if listing.is_some() && import.server.is_none() {
            let message = format!("an {} import needs `server`: the MCP server the evals are about", import.format);
            cx.error(&path, message);
            continue;
        }
        if listing.is_none() && agent.is_none() {
            cx.error(&path, "an import needs `agent` (or `defaults.agent`) to run its tasks");
            continue;
        }
        let model_agent = agent.as_ref().and_then(|a| raw.agents.get(a)).is_some_and(|a| a.model.provider.is_some());
        let documents = match (&import.path, listing) {
            (Some(pattern), _) => import_files(cx, &path, pattern),
            (None, Some(list)) => live_evals(raw, cx, &path, import.server.as_deref().unwrap_or_default(), list),
            (None, None) => {
                cx.error(&path, format!("an {} import needs `path`", import.format));
                continue;
            }
        };
        for (file, parsed, doc) in documents {
            let shown = file.strip_prefix(&cx.dir).unwrap_or(&file).display().to_string();
            let rel_dir =
                file.parent().and_then(|d| d.strip_prefix(&cx.dir).ok()).map(Path::to_owned).unwrap_or_default();
            let fcx = formats::ConvertCx {
                file: &file,
                rel_dir,
                agent: agent.as_deref(),
                model_agent,
                server: import.server.as_deref(),
            };
            let mut converted = match format.convert(&doc, &fcx) {
                Ok(c) => c,
                Err(problems) => {
                    // Evals a server listed have no file to point into: the import names the server.
                    let (key, shown) = match (&parsed, &import.server) {
                        (None, Some(server)) => ("server", format!("evals/list of `{server}`")),
                        _ => ("path", shown),
                    };
                    for problem in formats::describe(&problems, parsed.as_ref(), &shown) {
                        cx.error(&path.key(key), problem);
                    }
                    continue;
                }
            };
            let imported = match serde_json::from_value::<RawSuite>(converted.suite.clone()) {
                Ok(s) => s.with_sources(std::mem::take(&mut converted.suite)),
                Err(e) => {
                    cx.error(&path.key("path"), format!("{shown}: {e}"));
                    continue;
                }
            };
            let existing: std::collections::HashSet<String> = raw.tasks.iter().map(|t| t.id.clone()).collect();
            // The file's name without its extensions: `refund` for `refund.eval.yaml`.
            let name = file.file_name().map_or_else(String::new, |s| s.to_string_lossy().to_lowercase());
            let prefix = name.split('.').next().unwrap_or_default().to_owned();
            if import.path.is_some() {
                origins.documents.insert(file.clone(), parsed);
                origins.record(&converted, cx, raw.tasks.len());
            } else {
                // Listed by a live server: the import in this suite is the source.
                let line = cx.value_position(&path).map_or(1, |p| p.line);
                let suite_file = cx.file.display().to_string();
                for n in raw.tasks.len()..raw.tasks.len() + imported.tasks.len() {
                    cx.task_origins.insert(n, (suite_file.clone(), line));
                }
            }
            for mut task in imported.tasks {
                if existing.contains(&task.id) {
                    task.id = format!("{prefix}.{}", task.id);
                }
                raw.tasks.push(task);
            }
            raw.env.merge(imported.env);
            for mode in imported.modes {
                if !raw.modes.contains(&mode) {
                    raw.modes.push(mode);
                }
            }
            raw.hooks.before_all.extend(imported.hooks.before_all);
            raw.hooks.after_all.extend(imported.hooks.after_all);
        }
    }
}

/// An imported file: its path, its parsed text (none for evals a server listed) and its
/// document as JSON.
type Imported = (std::path::PathBuf, Option<Document>, serde_json::Value);

/// The documents of the files `pattern` matches, relative to the suite.
fn import_files(cx: &mut ValidateCx, path: &KeyPath, pattern: &str) -> Vec<Imported> {
    let files = match formats::glob_files(&cx.dir, pattern) {
        Ok(files) if !files.is_empty() => files,
        Ok(_) => {
            cx.error(&path.key("path"), format!("no file matches `{pattern}`"));
            return Vec::new();
        }
        Err(e) => {
            cx.error(&path.key("path"), e);
            return Vec::new();
        }
    };
    let mut documents = Vec::new();
    for file in files {
        let shown = file.strip_prefix(&cx.dir).unwrap_or(&file).display().to_string();
        let located = |e: crate::yaml::SyntaxError| {
            let at = e.position.map_or_else(String::new, |p| format!(":{}:{}", p.line, p.column));
            format!("{shown}{at} is not JSON or YAML: {}", e.message)
        };
        let parsed = crate::yaml::read(&file)
            .map_err(|e| match e {
                ReadError::Io(e) => format!("cannot read {shown}: {e}"),
                ReadError::Text(e) => located(e),
            })
            .and_then(|text| {
                let parsed = Document::parse(&text).map_err(located)?;
                let json =
                    serde_json::Value::deserialize(parsed.de(parsed.root())).map_err(|e| format!("{shown}: {e}"))?;
                Ok((parsed, json))
            });
        match parsed {
            Ok((parsed, json)) => documents.push((file, Some(parsed), json)),
            Err(e) => {
                cx.error(&path.key("path"), e);
            }
        }
    }
    documents
}

/// The evals `server` lists with `evals/list`; its tasks point at the import in the suite.
fn live_evals(
    raw: &RawSuite,
    cx: &mut ValidateCx,
    path: &KeyPath,
    server: &str,
    list: formats::ServerListing,
) -> Vec<Imported> {
    let Some(spec) = raw.mcp_servers.get(server) else {
        let d = cx.error(&path.key("server"), format!("no MCP server `{server}` in `mcp_servers`"));
        d.help = unknown(server, raw.mcp_servers.keys().map(String::as_str)).suggestion();
        return Vec::new();
    };
    let Some(spec) = super::mcp_server::mcp_server(cx, server, spec) else { return Vec::new() };
    match list(&spec.endpoint()) {
        Ok(doc) => vec![(cx.dir.join(cx.file.file_name().unwrap_or_default()), None, doc)],
        Err(e) => {
            let d = cx.error(&path.key("server"), format!("cannot read the evals of MCP server `{server}`: {e}"));
            d.help = Some(
                "a server that does not implement `evals/list` (the MCP evals proposal) cannot list them; save them as JSON and set `path`".into(),
            );
            Vec::new()
        }
    }
}
