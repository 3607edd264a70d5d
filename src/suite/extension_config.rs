//! `extensions`: a packaged binary giving steps domain operations, over mcpchecker's
//! extension protocol (docs/steps.md, "Extensions"), as written and compiled.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::extension::Package;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{JsonTemplate, Scope, Template};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExtension {
    /// The binary: a path relative to the suite, or a release `https://github.com/ORG/REPO@VERSION`,
    /// found in the extension cache (`$EVALGATE_EXTENSIONS`, else `~/.cache/evalgate/extensions`)
    /// at `HOST/ORG/REPO/VERSION/REPO`; evalgate downloads nothing at run time.
    pub package: String,
    /// The SHA-256 of the binary (`sha256:HEX` or `HEX`), or one per platform
    /// (`{linux-x86_64: HEX, macos-aarch64: HEX}`): verified before anything runs, and only the
    /// verified bytes run. Required for a release.
    pub sha256: Option<RawPin>,
    /// `initialize`'s `config` (strings may use `{env.NAME}`).
    #[serde(default)]
    pub config: serde_json::Map<String, Value>,
    /// Environment variables of the extension's process; values may use `{env.NAME}`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawPin {
    One(String),
    PerPlatform(BTreeMap<String, String>),
}

#[derive(Debug)]
pub struct ExtensionSpec {
    pub name: String,
    pub package: Package,
    /// `package` as written, for messages.
    pub written: String,
    /// This machine's pinned checksum; `Err` names the platforms it pins when this one is not.
    pub sha256: Option<Result<String, String>>,
    pub config: JsonTemplate,
    pub env: Vec<(String, Template)>,
    /// The suite's directory: the extension's working directory.
    pub dir: PathBuf,
}

pub(in crate::suite) fn compile_extensions(
    cx: &mut ValidateCx,
    raw: &BTreeMap<String, RawExtension>,
) -> BTreeMap<String, ExtensionSpec> {
    cx.extensions = raw.keys().cloned().collect();
    raw.iter().filter_map(|(name, e)| Some((name.clone(), extension(cx, name, e)?))).collect()
}

fn extension(cx: &mut ValidateCx, name: &str, raw: &RawExtension) -> Option<ExtensionSpec> {
    let path = KeyPath::root("extensions").key(name);
    if name.is_empty() || name.contains('.') {
        cx.error(&path, format!("an extension's name is the prefix of `NAME.operation`: `{name}` may not hold a dot"));
    }
    let package = match Package::parse(&raw.package, &cx.dir) {
        Ok(package) => Some(package),
        Err(e) => {
            cx.error(&path.key("package"), e);
            None
        }
    };
    let platform = crate::extension::package::platform();
    let sha256 = raw.sha256.as_ref().map(|pin| match pin {
        RawPin::One(sum) => Ok(sum.clone()),
        RawPin::PerPlatform(sums) => sums.get(&platform).cloned().ok_or_else(|| {
            let pinned: Vec<&str> = sums.keys().map(String::as_str).collect();
            format!("`sha256` pins {} but not this machine ({platform})", pinned.join(", "))
        }),
    });
    for sum in sha256.iter().flatten() {
        let hex = sum.strip_prefix("sha256:").unwrap_or(sum);
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            cx.error(&path.key("sha256"), "a SHA-256 is 64 hexadecimal digits, `sha256:` before them or not");
        }
    }
    let config = JsonTemplate::compile(cx, &Value::Object(raw.config.clone()), Scope::Hook, &path.key("config"));
    let env: Vec<Option<(String, Template)>> =
        raw.env.iter().map(|(k, v)| Some((k.clone(), cx.template(v, Scope::Hook, &path.key("env").key(k))?))).collect();
    Some(ExtensionSpec {
        name: name.to_owned(),
        package: package?,
        written: raw.package.clone(),
        sha256,
        config: config?,
        env: env.into_iter().collect::<Option<_>>()?,
        dir: cx.dir.clone(),
    })
}
