//! Step outputs: the values a step captures for later steps, the prompt, graders and
//! cleanup (`{steps.ID.NAME}`), as written and compiled.

use schemars::JsonSchema;
use serde::Deserialize;

use super::RawStep;
use crate::json::JsonPath;
use crate::source::{KeyPath, ValidateCx};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawOutput {
    /// One of the `{…}` forms.
    Template(String),
    /// A field of JSON stdout.
    Field {
        /// The stream to read.
        from: OutputStream,
        /// The field, as `a.b[0]`; default the whole (trimmed) stream.
        json_path: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// What a step output captures.
#[derive(Debug, Clone)]
pub enum OutputSpec {
    Stdout(Option<JsonPath>),
    Stderr(Option<JsonPath>),
    ExitCode,
    Status,
    Body,
    Header(String),
    Json(JsonPath),
}

/// The outputs a kind of step can capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Captures {
    /// `{stdout}`, `{stderr}`, `{exit_code}`.
    Process,
    /// `{response.status}`, `{response.body}`, `{response.headers.NAME}`, `{response.json.PATH}`.
    Response,
}

impl OutputSpec {
    fn captured_from(&self) -> Captures {
        match self {
            OutputSpec::Stdout(_) | OutputSpec::Stderr(_) | OutputSpec::ExitCode => Captures::Process,
            _ => Captures::Response,
        }
    }
}

/// Compiles the `outputs` of the step at `path`, written with the action key `kind` whose
/// kind captures `captures`.
pub fn compile_outputs(
    cx: &mut ValidateCx,
    raw: &RawStep,
    path: &KeyPath,
    kind: &str,
    captures: Option<Captures>,
) -> Option<Vec<(String, OutputSpec)>> {
    let mut out = Vec::new();
    let mut ok = true;
    for (name, spec) in &raw.outputs {
        let key = path.key("outputs").key(name);
        let parsed = match spec {
            RawOutput::Field { from, json_path } => {
                let jp = match json_path.as_deref().map(JsonPath::parse).transpose() {
                    Ok(jp) => jp,
                    Err(e) => {
                        cx.error(&key.key("json_path"), e);
                        ok = false;
                        continue;
                    }
                };
                Some(match from {
                    OutputStream::Stdout => OutputSpec::Stdout(jp),
                    OutputStream::Stderr => OutputSpec::Stderr(jp),
                })
            }
            RawOutput::Template(t) => template_output(cx, t, &key),
        };
        let Some(parsed) = parsed else {
            ok = false;
            continue;
        };
        if captures != Some(parsed.captured_from()) {
            cx.error(&key, format!("a `{kind}` step cannot capture this output"));
            ok = false;
            continue;
        }
        out.push((name.clone(), parsed));
    }
    if !raw.outputs.is_empty() && raw.id.is_none() {
        cx.error(path, "a step with `outputs` needs an `id` to refer to them by");
        ok = false;
    }
    ok.then_some(out)
}

fn template_output(cx: &mut ValidateCx, t: &str, key: &KeyPath) -> Option<OutputSpec> {
    match t {
        "{stdout}" => Some(OutputSpec::Stdout(None)),
        "{stderr}" => Some(OutputSpec::Stderr(None)),
        "{exit_code}" => Some(OutputSpec::ExitCode),
        "{response.status}" => Some(OutputSpec::Status),
        "{response.body}" => Some(OutputSpec::Body),
        t => {
            let inner = t.strip_prefix('{').and_then(|t| t.strip_suffix('}'));
            match inner {
                Some(h) if h.starts_with("response.headers.") => {
                    Some(OutputSpec::Header(h["response.headers.".len()..].to_ascii_lowercase()))
                }
                Some(j) if j.starts_with("response.json.") => match JsonPath::parse(&j["response.json.".len()..]) {
                    Ok(p) => Some(OutputSpec::Json(p)),
                    Err(e) => {
                        cx.error(key, e);
                        None
                    }
                },
                _ => {
                    cx.error(key, format!("unknown output `{t}`")).help = Some(
                        "use {stdout}, {stderr}, {exit_code}, {response.status}, {response.body}, \
                         {response.headers.NAME} or {response.json.PATH}"
                            .into(),
                    );
                    None
                }
            }
        }
    }
}
