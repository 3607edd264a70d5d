//! Judge calibration (docs/llm.md "Calibrating a judge"): a judge earns the right to gate by
//! agreeing with human labels. Its identity (provider, model, temperature, prompt hash) is
//! bound to a calibration file that `evalgate judge calibrate` writes; a judge with
//! `calibration:` whose file is missing, stale, under `min_kappa` or on fewer than
//! `min_labels` labels is **advisory**: its graders run and are reported, but no task's
//! verdict depends on them (`run::task::score_task`).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::llm::spec::LlmSpec;
use crate::results::judges::{CalibrationFile, JudgeIdentity, hex, read_file};
use crate::source::{KeyPath, ValidateCx};

/// The default `min_kappa`: "substantial" agreement (Landis & Koch), the floor most teams use.
pub const DEFAULT_MIN_KAPPA: f64 = 0.7;
/// The default `min_labels`: fewer make κ's interval wider than the gap it must clear.
pub const DEFAULT_MIN_LABELS: u64 = 50;
/// The default calibration file, beside the suite.
pub const DEFAULT_FILE: &str = "judge-calibration.json";

/// `judge.calibration`: `required`, or `{file, min_kappa, min_labels, required}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawCalibration {
    /// `required`: the judge must be calibrated in `judge-calibration.json` (defaults) or
    /// the run stops at preflight.
    Keyword(RequiredKeyword),
    Policy(RawCalibrationPolicy),
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequiredKeyword {
    Required,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCalibrationPolicy {
    /// The calibration file `evalgate judge calibrate` wrote, relative to the suite
    /// (default judge-calibration.json).
    pub file: Option<String>,
    /// The least Cohen's κ against the labels for the judge to gate (default 0.7).
    pub min_kappa: Option<f64>,
    /// The fewest labels (unsure ones not counted) for the judge to gate (default 50).
    pub min_labels: Option<u64>,
    /// A judge that may not gate stops the run at preflight instead of being advisory.
    #[serde(default)]
    pub required: bool,
}

/// The system prompt of every judge (part of its identity).
pub const JUDGE_SYSTEM: &str = "You are an impartial evaluator of an AI system's answer. Judge only what is asked, \
strictly, from the answer's content. Record your verdict with the record_verdict tool.";

/// The identity of the judge `spec`.
pub fn identity(spec: &LlmSpec) -> JudgeIdentity {
    let mut prompt = Sha256::new();
    prompt.update(JUDGE_SYSTEM.as_bytes());
    prompt.update([0]);
    prompt.update(spec.system.as_deref().unwrap_or_default().as_bytes());
    JudgeIdentity {
        provider: spec.provider.label().to_owned(),
        model: spec.model.clone(),
        temperature: spec.temperature.unwrap_or(0.0),
        prompt_sha256: hex(&prompt.finalize()),
    }
}

/// A judge's calibration policy, and whether its calibration file lets it gate.
#[derive(Debug, Clone)]
pub struct Calibrated {
    /// The judge's name in the calibration file: `judge` for the suite's, else the key path
    /// of the grader's own (`tasks[2].grade[0].judge`).
    pub name: String,
    pub file: PathBuf,
    pub min_kappa: f64,
    pub min_labels: u64,
    pub required: bool,
    /// Why the judge may not gate (`None`: it gates).
    pub advisory: Option<String>,
}

/// The calibration policy of the judge at `path` (`judge`, or a grader's `judge`), with the
/// verdict of its calibration file on `spec` read now. A file that is there but not a
/// calibration file is invalid input, located at `calibration.file`.
pub fn calibrated(cx: &mut ValidateCx, spec: &LlmSpec, raw: &RawCalibration, path: &KeyPath) -> Option<Calibrated> {
    let policy = match raw {
        RawCalibration::Keyword(RequiredKeyword::Required) => {
            RawCalibrationPolicy { file: None, min_kappa: None, min_labels: None, required: true }
        }
        RawCalibration::Policy(p) => p.clone(),
    };
    let path = path.key("calibration");
    let min_kappa = policy.min_kappa.unwrap_or(DEFAULT_MIN_KAPPA);
    if !(-1.0..=1.0).contains(&min_kappa) {
        cx.error(&path.key("min_kappa"), format!("min_kappa is a κ, from -1 to 1; got {min_kappa}"));
        return None;
    }
    let written = policy.file.as_deref().unwrap_or(DEFAULT_FILE);
    let file = cx.resolve_path(written);
    let name = path_name(&path);
    let mut calibrated = Calibrated {
        name,
        file,
        min_kappa,
        min_labels: policy.min_labels.unwrap_or(DEFAULT_MIN_LABELS),
        required: policy.required,
        advisory: None,
    };
    let verdict = match read_file(&calibrated.file) {
        Ok(Some(file)) => calibrated.verdict(&file, &identity(spec)),
        Ok(None) => Some(format!("no calibration: {written} does not exist (run `evalgate judge calibrate`)")),
        Err(e) => {
            // At `file` when written, else at `calibration`, which names the default.
            cx.error(&if policy.file.is_some() { path.key("file") } else { path.clone() }, e);
            return None;
        }
    };
    calibrated.advisory = verdict;
    Some(calibrated)
}

/// A judge's model and, with `calibration`, its policy and its calibration file's verdict.
pub fn judge_spec(cx: &mut ValidateCx, raw: &crate::llm::spec::RawJudge, path: &KeyPath) -> Option<LlmSpec> {
    let mut spec = crate::llm::spec::llm_spec(cx, &raw.model, raw.timeout, path)?;
    if let Some(c) = &raw.calibration {
        spec.calibration = Some(Box::new(calibrated(cx, &spec, c, path)?));
    }
    if let Some(e) = &raw.embedding {
        spec.embedding = Some(Box::new(embedding_spec(cx, e, raw.timeout, &path.key("embedding"))?));
    }
    Some(spec)
}

/// A judge's `embedding` model: a provider with an embeddings API (OpenAI's, which every
/// compatible server speaks), and none of the keys only a completion reads.
fn embedding_spec(
    cx: &mut ValidateCx,
    raw: &crate::llm::spec::RawModel,
    timeout: Option<crate::values::RawDuration>,
    path: &KeyPath,
) -> Option<LlmSpec> {
    let spec = crate::llm::spec::llm_spec(cx, raw, timeout, path)?;
    if spec.provider != crate::llm::provider::Provider::OpenAi {
        cx.error(&path.key("provider"), format!("{} has no embeddings API: an embedding model is `provider: openai` (or a server speaking its API, at `base_url`)", spec.provider.label()));
        return None;
    }
    for key in
        raw.given().into_iter().filter(|k| matches!(*k, "temperature" | "max_tokens" | "seed" | "system" | "cache"))
    {
        cx.error(&path.key(key), format!("an embedding model takes no `{key}`"));
    }
    Some(spec)
}

/// The judge's name from the key path of its `calibration`: the path of the judge.
fn path_name(calibration: &KeyPath) -> String {
    calibration.as_str().strip_suffix(".calibration").unwrap_or(calibration.as_str()).to_owned()
}

impl Calibrated {
    /// Why a judge of `identity` may not gate on `file`, if it may not.
    pub fn verdict(&self, file: &CalibrationFile, identity: &JudgeIdentity) -> Option<String> {
        let Some(entry) = file.judges.iter().find(|j| j.name == self.name) else {
            return Some(format!("no calibration of `{}` in {}", self.name, self.file.display()));
        };
        if &entry.identity != identity {
            return Some(format!("calibration is stale ({})", identity.changes_from(&entry.identity)));
        }
        let n = entry.overall.n;
        match entry.overall.kappa {
            None => Some(format!("κ is undefined on {n} labels (one verdict everywhere)")),
            Some(k) if k < self.min_kappa => Some(format!("κ {k:.2} < {} on {n} labels", self.min_kappa)),
            Some(_) if n < self.min_labels => Some(format!("{n} labels < {}", self.min_labels)),
            Some(_) => None,
        }
    }
}
