//! The judges of a run as `results.json` records them (`judges`: each one's identity, and
//! why one was advisory), and the calibration file `evalgate judge calibrate` writes
//! (`judge-calibration.json`) that a judge's `calibration` reads: docs/llm.md "Calibrating a
//! judge".

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::stats::{Agreement, round};

/// What a judge is, for its calibration to hold: a change of any of these makes it stale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeIdentity {
    pub provider: String,
    pub model: String,
    /// The sampling temperature it judges at (0 unless set).
    pub temperature: f64,
    /// SHA-256 of the system prompt and the suite's `system`.
    pub prompt_sha256: String,
}

impl JudgeIdentity {
    /// What differs from `other`, for "stale" messages: `model gpt-4o → gpt-4o-mini`.
    pub fn changes_from(&self, old: &JudgeIdentity) -> String {
        let mut changes = Vec::new();
        if self.provider != old.provider {
            changes.push(format!("provider {} → {}", old.provider, self.provider));
        }
        if self.model != old.model {
            changes.push(format!("model {} → {}", old.model, self.model));
        }
        if self.temperature != old.temperature {
            changes.push(format!("temperature {} → {}", old.temperature, self.temperature));
        }
        if self.prompt_sha256 != old.prompt_sha256 {
            changes.push("system prompt changed".to_owned());
        }
        changes.join(", ")
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A judge as a run records it (`results.json` `judges`): what it was, and why it did not
/// gate when it was advisory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JudgeRun {
    pub identity: JudgeIdentity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisory: Option<String>,
}

/// What an advisory judge means for the run, and how it comes to gate: every report says it
/// after why the judge is advisory (docs/llm.md "Adopting calibration").
pub const ADVISORY_HINT: &str = "its graders are reported, not gated on, and a task only they grade is an error; \
to let it gate, label the items of `evalgate judge sample` and run `evalgate judge calibrate` \
(docs/llm.md, \"Adopting calibration\")";

/// The summary's lines, one a judge that may not gate: "judge `judge` is advisory: κ 0.41 <
/// 0.7 on 52 labels; its graders are reported, …" (the terminal's and the HTML report's).
pub fn advisory_lines(judges: &BTreeMap<String, JudgeRun>) -> Vec<String> {
    let advisory = judges.iter().filter_map(|(name, j)| Some((name, j.advisory.as_ref()?)));
    advisory.map(|(name, why)| format!("judge `{name}` is advisory: {why}; {ADVISORY_HINT}")).collect()
}

pub const FORMAT: &str = "evalgate-judge-calibration/1";
/// The interval reported beside κ.
pub const INTERVAL: &str = "95% asymptotic (Fleiss, Cohen & Everitt 1969), clipped to [-1, 1]";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CalibrationFile {
    pub format: String,
    /// The suite file, as given.
    pub suite: String,
    /// The labels file, as given.
    pub labels: String,
    /// The results whose judge verdicts were compared, as given.
    pub results: String,
    pub interval: String,
    pub judges: Vec<JudgeCalibration>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct JudgeCalibration {
    /// `judge` (the suite's), or the key path of a grader's own judge.
    pub name: String,
    pub identity: JudgeIdentity,
    pub overall: Figures,
    /// Per grader and criterion (a grader's own verdict: no criterion).
    pub criteria: Vec<CriterionFigures>,
    /// Items labelled `unsure` (not counted in n).
    pub unsure: u64,
    /// Labels with no verdict of the judge in the results (not counted in n).
    pub unmatched: Vec<usize>,
    /// Labels of an item another line already labelled with the same verdict: one item is
    /// one label, counted once (their lines; another verdict is refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<usize>,
    pub self_consistency: SelfConsistency,
    /// The items where the judge and the human differ.
    pub wrong: Vec<WrongItem>,
    /// Flip rates under changes that should not change a verdict (no labels needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<BiasProbes>,
}

/// The judge asked again on judged outputs of the run, each changed in a way that must not
/// change its verdict: how often it did (per criterion of a rubric).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BiasProbes {
    /// Outputs probed.
    pub items: u64,
    /// A rubric's criteria in reverse order.
    pub position: Flips,
    /// The same answer padded with a restatement of itself and filler.
    pub verbosity: Flips,
    /// The reference answer (or an `llm` grader's expected text) echoed after the answer.
    pub reference_leak: Flips,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Flips {
    /// Verdicts compared.
    pub compared: u64,
    pub flips: u64,
    pub flip_rate: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Figures {
    /// Labelled items compared (unsure ones left out).
    pub n: u64,
    /// The share the human passed.
    pub base_rate: Option<f64>,
    /// The share both gave the same verdict (read it beside the base rate).
    pub agreement: Option<f64>,
    /// Cohen's κ; none when both gave one verdict to every item.
    pub kappa: Option<f64>,
    pub kappa_interval: Option<[f64; 2]>,
    pub confusion: Confusion,
}

impl Figures {
    /// The figures of a table: every one is computed from it, so the table a file records
    /// is all a reader needs to believe (`CalibrationFile::check`).
    pub fn of(table: &Agreement) -> Figures {
        let k = table.kappa(0.95);
        Figures {
            n: table.n(),
            base_rate: k.map(|k| round(k.base_rate)),
            agreement: k.map(|k| round(k.agreement)),
            kappa: k.and_then(|k| k.kappa).map(round),
            kappa_interval: k.and_then(|k| k.interval).map(|(l, h)| [round(l), round(h)]),
            confusion: Confusion {
                judge_pass_human_pass: table.both_pass,
                judge_pass_human_fail: table.judge_only,
                judge_fail_human_pass: table.human_only,
                judge_fail_human_fail: table.both_fail,
            },
        }
    }

    /// The table the figures say they were computed from.
    pub fn table(&self) -> Agreement {
        let c = &self.confusion;
        Agreement {
            both_pass: c.judge_pass_human_pass,
            judge_only: c.judge_pass_human_fail,
            human_only: c.judge_fail_human_pass,
            both_fail: c.judge_fail_human_fail,
        }
    }

    /// Whether every figure is the one its table gives (to the rounding written).
    fn agrees_with_table(&self) -> bool {
        let computed = Figures::of(&self.table());
        let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => (a - b).abs() < 1e-8,
            _ => false,
        };
        let interval = |i: Option<[f64; 2]>, at: usize| i.map(|i| i[at]);
        self.n == computed.n
            && close(self.base_rate, computed.base_rate)
            && close(self.agreement, computed.agreement)
            && close(self.kappa, computed.kappa)
            && close(interval(self.kappa_interval, 0), interval(computed.kappa_interval, 0))
            && close(interval(self.kappa_interval, 1), interval(computed.kappa_interval, 1))
    }

    /// "κ 0.66 on 60 labels", for messages.
    fn headline(&self) -> String {
        let kappa = self.kappa.map_or("undefined".to_owned(), |k| format!("{k:.2}"));
        format!("κ {kappa} on {} labels", self.n)
    }
}

/// Rows: the judge; columns: the human.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Confusion {
    pub judge_pass_human_pass: u64,
    pub judge_pass_human_fail: u64,
    pub judge_fail_human_pass: u64,
    pub judge_fail_human_fail: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CriterionFigures {
    pub grader: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    #[serde(flatten)]
    pub figures: Figures,
}

/// The same output judged again (repeated trials of one output, in the results): how often
/// the judge changed its mind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SelfConsistency {
    /// Items (task, grader, criterion, output) judged at least twice.
    pub items: u64,
    /// Of those, the ones given both verdicts.
    pub flips: u64,
    pub flip_rate: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WrongItem {
    /// The label's line in the labels file.
    pub line: usize,
    pub task: String,
    pub grader: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    pub judge: String,
    pub human: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// The calibration file at `file`; `Ok(None)` when there is none.
pub fn read_file(file: &Path) -> Result<Option<CalibrationFile>, String> {
    // Bounded, and text, as every file a suite names.
    let text = match crate::yaml::read(file) {
        Ok(text) => text,
        Err(crate::yaml::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let parsed: CalibrationFile =
        serde_json::from_str(&text).map_err(|e| format!("{} is not a judge calibration file: {e}", file.display()))?;
    if parsed.format != FORMAT {
        return Err(format!("{}: format `{}`, expected `{FORMAT}`", file.display(), parsed.format));
    }
    parsed.check().map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(Some(parsed))
}

impl CalibrationFile {
    /// No figure of the file is taken on its word: each must be what its confusion table
    /// gives, and a judge's table the sum of its criteria's (each label counts in one). A
    /// file edited to claim κ 0.99 on 500 labels over a table of 4 is refused.
    fn check(&self) -> Result<(), String> {
        let redo = "figures are computed, never edited: run `evalgate judge calibrate` again";
        for j in &self.judges {
            let parts = j.criteria.iter().map(|c| (format!(" ({})", c.grader), &c.figures));
            for (what, f) in std::iter::once((String::new(), &j.overall)).chain(parts) {
                if !f.agrees_with_table() {
                    let table = Figures::of(&f.table()).headline();
                    return Err(format!(
                        "judge `{}`{what}: the file says {}, its confusion table gives {table}; {redo}",
                        j.name,
                        f.headline()
                    ));
                }
            }
            let sum = j.criteria.iter().map(|c| c.figures.table()).fold(Agreement::default(), |a, t| Agreement {
                both_pass: a.both_pass.saturating_add(t.both_pass),
                judge_only: a.judge_only.saturating_add(t.judge_only),
                human_only: a.human_only.saturating_add(t.human_only),
                both_fail: a.both_fail.saturating_add(t.both_fail),
            });
            if sum != j.overall.table() {
                return Err(format!(
                    "judge `{}`: its overall table ({} labels) is not the sum of its criteria's ({} labels); {redo}",
                    j.name,
                    j.overall.n,
                    sum.n()
                ));
            }
        }
        Ok(())
    }
}

/// The hash that pins a label to the output judged: SHA-256 of the output as results.json
/// records it.
pub fn output_sha256(output: &str) -> String {
    hex(&Sha256::digest(output.as_bytes()))
}
