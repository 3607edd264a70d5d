//! An eval's MCP config file (`mcpServers`, JSON or YAML) as native `mcp_servers`.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use super::templates::scalar;
use crate::suite::formats::Problems;
use crate::suite::formats::native_text::literal;

/// The `mcpServers` of an MCP config file (JSON or YAML) as native `mcp_servers`.
/// `rel` is the file as the eval names it: problems in it are reported at its own lines.
pub(super) fn mcp_servers(path: &Path, rel: &str, problems: &mut Problems) -> Map<String, Value> {
    let at = "/config/mcpConfigFile".to_owned();
    let doc = match crate::yaml::read(path)
        .map_err(|e| e.to_string())
        .and_then(|t| crate::yaml::from_str::<Value>(&t).map_err(|e| e.to_string()))
    {
        Ok(d) => d,
        Err(e) => {
            problems.push((at, format!("cannot read {}: {e}", path.display())));
            return Map::new();
        }
    };
    let env_ref = |text: &str| -> Result<String, String> {
        static VAR: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}").expect("valid regex"));
        if VAR.captures_iter(text).any(|c| c.get(2).is_some()) {
            return Err(format!("`{text}`: defaults in `${{…}}` are not supported"));
        }
        Ok(VAR.replace_all(&literal(text), "{env.$1}").into_owned())
    };
    let mut out = Map::new();
    for (name, s) in doc.get("mcpServers").and_then(Value::as_object).into_iter().flatten() {
        if s.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let at = format!("{rel}#/mcpServers/{}", name.replace('~', "~0").replace('/', "~1"));
        let mut server = json!({});
        if let Some(url) = s.get("url").and_then(Value::as_str) {
            match env_ref(url) {
                Ok(u) => server["url"] = json!(u),
                Err(e) => problems.push((format!("{at}/url"), e)),
            }
            let mut headers = Map::new();
            for (k, v) in s.get("headers").and_then(Value::as_object).into_iter().flatten() {
                match env_ref(&scalar(v)) {
                    Ok(h) => {
                        headers.insert(k.clone(), json!(h));
                    }
                    Err(e) => problems.push((format!("{at}/headers/{k}"), e)),
                }
            }
            if !headers.is_empty() {
                server["headers"] = Value::Object(headers);
            }
        } else if let Some(command) = s.get("command").and_then(Value::as_str) {
            let mut argv = vec![json!(literal(command))];
            argv.extend(
                s.get("args").and_then(Value::as_array).into_iter().flatten().map(|a| json!(literal(&scalar(a)))),
            );
            server["command"] = Value::Array(argv);
            let env: Map<String, Value> = s
                .get("env")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), json!(literal(&scalar(v)))))
                .collect();
            if !env.is_empty() {
                server["env"] = Value::Object(env);
            }
        } else {
            problems.push((at, "a server needs `command` (stdio) or `url` (http)".into()));
            continue;
        }
        out.insert(name.clone(), server);
    }
    out
}
