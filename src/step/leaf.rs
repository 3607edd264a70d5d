//! What a leaf step (run, http, mcp, file) produced: its verdict and the raw material
//! outputs are captured from.

use std::collections::BTreeMap;

use serde_json::Value;

use super::OutputSpec;
use crate::excerpt::{self, excerpt};

/// Characters of each stream kept in a step's result.
const STEP_OUTPUT_EXCERPT: usize = 2000;

#[derive(Debug, Default)]
pub struct Leaf {
    /// What the step did, for reports: the command, `GET URL`, `create PATH`.
    pub action: String,
    /// `None` when the step passed, else why not.
    pub failure: Option<String>,
    /// The step could not be carried out at all (spawn failure, connection refused), as
    /// opposed to running and not meeting its expectations.
    pub error: bool,
    /// What an expectation looks at was not there (a JSON check of a body that is not JSON,
    /// a tool that returned an error): a grader's `negate` cannot invert it.
    pub unobserved: bool,
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub response: Option<Response>,
}

#[derive(Debug, Default)]
pub struct Response {
    pub status: u16,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Leaf {
    /// The value of one declared output, or why it cannot be had.
    pub fn output(&self, spec: &OutputSpec) -> Result<String, String> {
        let from_json = |text: &str, path: &crate::json::JsonPath, what: &str| {
            let doc: Value = serde_json::from_str(text.trim())
                .map_err(|e| format!("{what} is not JSON ({e}): {:?}", excerpt(text, 80)))?;
            path.get(&doc).map(plain).ok_or_else(|| format!("`{path}` does not exist in {what}"))
        };
        let response = || self.response.as_ref().ok_or_else(|| "no HTTP response".to_owned());
        match spec {
            OutputSpec::Stdout(None) => Ok(self.stdout.trim().to_owned()),
            OutputSpec::Stderr(None) => Ok(self.stderr.trim().to_owned()),
            OutputSpec::Stdout(Some(path)) => from_json(&self.stdout, path, "stdout"),
            OutputSpec::Stderr(Some(path)) => from_json(&self.stderr, path, "stderr"),
            OutputSpec::ExitCode => self.exit_code.map(|c| c.to_string()).ok_or_else(|| "no exit code".to_owned()),
            OutputSpec::Status => Ok(response()?.status.to_string()),
            OutputSpec::Body => Ok(response()?.body.clone()),
            OutputSpec::Header(name) => {
                response()?.headers.get(name).cloned().ok_or_else(|| format!("no `{name}` header in the response"))
            }
            OutputSpec::Json(path) => from_json(&response()?.body, path, "the response body"),
        }
    }

    /// Results keep an excerpt of each stream, not all of it.
    pub fn excerpts(&self) -> (String, String) {
        (excerpt::cut(&self.stdout, STEP_OUTPUT_EXCERPT), excerpt::cut(&self.stderr, STEP_OUTPUT_EXCERPT))
    }
}

/// A JSON value as an output string: strings as they are, anything else as JSON text (so an
/// array can feed `foreach`).
pub fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
