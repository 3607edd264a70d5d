//! promptfoo's embedding assertions, as 0.123.1 scores them (`src/assertions/similar.ts`,
//! `src/matchers/similarity.ts`, `src/matchers/rag.ts`): `similar` (`similar:cosine`,
//! `similar:dot`, `similar:euclidean`; a list of values passing on any) and
//! `answer-relevance` (the judge writes three questions the output answers, with promptfoo's
//! own prompt; their embeddings against the query's). Every embedding comes from the judge's
//! `embedding` model through `LlmRuntime::embed` and is read by `Vector::read`: an answer that
//! is no vector, or two of different lengths, is an error, never a score.

use serde_json::{Map, Value, json};

use super::model_graded::{ask, default_prompt, prompt_of, render, template_value};
use super::promptfoo_check::Verdict;
use crate::grade::{GradeInput, JudgeCall};
use crate::llm::embeddings::{EmbeddingRequest, Vector};

/// JavaScript's `Number.EPSILON`, by which promptfoo widens every threshold.
const EPSILON: f64 = f64::EPSILON;

/// How `similar` compares two embeddings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Metric {
    Cosine,
    Dot,
    /// A distance: the output passes at or below the threshold.
    Euclidean,
}

/// A `similar` assertion: its metric and the values the output is compared with (a list
/// passes on any).
#[derive(Debug)]
pub(super) struct Similar {
    metric: Metric,
    values: Vec<String>,
    list: bool,
}

impl Similar {
    /// `similar[:METRIC]` with its `value` (a string, or a non-empty list of strings).
    pub(super) fn read(kind: &str, value: &Value) -> Result<Similar, String> {
        let metric = match kind.split_once(':').map(|(_, m)| m) {
            None | Some("cosine") => Metric::Cosine,
            Some("dot") => Metric::Dot,
            Some("euclidean") => Metric::Euclidean,
            Some(other) => return Err(format!("unknown similarity metric `{other}` (cosine, dot, euclidean)")),
        };
        let (values, list) = match value {
            Value::String(s) => (vec![s.clone()], false),
            Value::Array(l) if !l.is_empty() && l.iter().all(Value::is_string) => {
                (l.iter().filter_map(Value::as_str).map(str::to_owned).collect(), true)
            }
            _ => return Err(format!("a `{kind}` assertion needs a string or a non-empty list of strings `value`")),
        };
        Ok(Similar { metric, values, list })
    }

    /// promptfoo's `handleSimilar`: one value's verdict; a list passes on the first value
    /// that passes (else fails with the best score), and `not-` a list fails on the first
    /// that fails (else passes with the lowest score). Threshold 0.75 by default.
    pub(super) async fn verdict(
        &self,
        input: &GradeInput<'_>,
        threshold: Option<f64>,
        inverse: bool,
        judge_calls: &mut Vec<JudgeCall>,
    ) -> Verdict {
        let threshold = threshold.unwrap_or(0.75);
        let mut embed = Embedder { input, judge_calls };
        if !self.list {
            return self.one(&self.values[0], threshold, inverse, &mut embed).await;
        }
        let mut kept: Option<(bool, f64, String)> = None;
        let mut best = f64::NEG_INFINITY;
        for value in &self.values {
            let found = self.one(value, threshold, inverse, &mut embed).await?;
            match inverse {
                true if !found.0 => return Ok(found),
                true => kept = Some(kept.filter(|k| k.1 <= found.1).unwrap_or(found)),
                false if found.0 => return Ok(found),
                false => best = best.max(found.1),
            }
        }
        Ok(kept.unwrap_or((false, best, "None of the provided values met the similarity threshold".into())))
    }

    /// promptfoo's `matchesSimilarity` on one expected value.
    async fn one(&self, expected: &str, threshold: f64, inverse: bool, embed: &mut Embedder<'_, '_>) -> Verdict {
        let (a, b) = (embed.text(expected).await?, embed.text(embed.input.output).await?);
        let (Some(a), Some(b)) = (a, b) else { return Ok((false, 0.0, "Embedding not found".into())) };
        let similarity = match self.metric {
            Metric::Cosine => a.cosine(&b),
            Metric::Dot => a.dot(&b),
            Metric::Euclidean => a.euclidean(&b),
        }?;
        if self.metric == Metric::Euclidean {
            let pass = if inverse { similarity >= threshold - EPSILON } else { similarity <= threshold + EPSILON };
            let score = 1.0 / (1.0 + similarity);
            let reason = format!("Distance {similarity:.2} against threshold {threshold}");
            return Ok((pass, if inverse { 1.0 - score } else { score }, reason));
        }
        let pass = if inverse { similarity <= threshold + EPSILON } else { similarity >= threshold - EPSILON };
        let reason = format!("Similarity {similarity:.2} against threshold {threshold}");
        Ok((pass, if inverse { 1.0 - similarity } else { similarity }, reason))
    }
}

/// promptfoo's `answer-relevance`: the judge asked three times for the question the output
/// answers (promptfoo's `ANSWER_RELEVANCY_GENERATE`, or the test's `rubricPrompt`, with the
/// output as `answer`), each question's embedding compared (cosine) with the query's (the
/// test's `query` var when it is a string, else the prompt); the mean passes at `threshold`
/// (0.5). A missing question or embedding fails whatever the `not-`; `not-` otherwise
/// inverts the verdict and the score.
pub(super) async fn answer_relevance(
    rubric_prompt: Option<&Value>,
    context: &Map<String, Value>,
    threshold: Option<f64>,
    inverse: bool,
    input: &GradeInput<'_>,
    judge_calls: &mut Vec<JudgeCall>,
) -> Verdict {
    let threshold = threshold.unwrap_or(0.5);
    let prompt = context.get("prompt").and_then(Value::as_str).unwrap_or_default();
    if prompt.is_empty() {
        // promptfoo's `invariant(prompt, …)`: an error.
        return Err("an `answer-relevance` assertion needs the prompt, and it rendered empty".into());
    }
    let query = context.get("vars").and_then(|v| v.get("query")).and_then(Value::as_str).unwrap_or(prompt);
    let text = prompt_of(rubric_prompt, None, default_prompt("ANSWER_RELEVANCY_GENERATE"));
    let rendered = render(&text, &Map::from_iter([("answer".to_owned(), template_value(input.output))]))?;
    let mut questions = Vec::new();
    for _ in 0..3 {
        let question = ask(&rendered, input, judge_calls).await?;
        if question.is_empty() {
            return Ok((false, 0.0, "No output".into()));
        }
        questions.push(question);
    }
    let mut embed = Embedder { input, judge_calls };
    let Some(asked) = embed.text(query).await? else { return Ok((false, 0.0, "No embedding".into())) };
    let mut similarities = Vec::new();
    for question in &questions {
        let Some(q) = embed.text(question).await? else { return Ok((false, 0.0, "No embedding".into())) };
        similarities.push(asked.cosine(&q)?);
    }
    let similarity = similarities.iter().sum::<f64>() / similarities.len() as f64;
    let pass = similarity >= threshold - EPSILON;
    let reason = format!("Relevance {similarity:.2} against threshold {threshold}: {}", json!(questions));
    Ok((pass != inverse, if inverse { 1.0 - similarity } else { similarity }, reason))
}

/// Embeddings of texts by the judge's `embedding` model, each call counted.
struct Embedder<'i, 'a> {
    input: &'i GradeInput<'a>,
    judge_calls: &'i mut Vec<JudgeCall>,
}

impl Embedder<'_, '_> {
    /// The embedding of `text`; `None` where promptfoo finds none (a falsy `embedding`:
    /// missing, `null`, `0`, `""`, `false`), an error for any other answer that is no vector.
    async fn text(&mut self, text: &str) -> Result<Option<Vector>, String> {
        let judge = self.input.judge.ok_or("no judge is configured (promptfoo's grading provider: `defaultTest.options.provider`)")?;
        let spec = judge.embedding.as_deref().ok_or(
            "the grading provider names no embedding model (promptfoo's `options.provider.embedding`; the judge's `embedding`)",
        )?;
        let request = EmbeddingRequest { model: spec.model.clone(), input: text.to_owned() };
        let embedded = self.input.llm.embed(spec, &request, true).await.map_err(|e| format!("embedding model: {e}"))?;
        self.judge_calls.push(JudgeCall { cost_usd: embedded.cost_usd, cached: embedded.cached });
        let embedding = &embedded.response.embedding;
        let falsy = match embedding {
            Value::Null | Value::Bool(false) => true,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
            Value::Bool(true) | Value::Array(_) | Value::Object(_) => false,
        };
        if falsy {
            return Ok(None);
        }
        Vector::read(embedding).map(Some).map_err(|e| format!("embedding model: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_reads_its_metric_and_values() {
        let s = Similar::read("similar:dot", &json!(["a", "b"])).unwrap();
        assert_eq!((s.metric, s.values.len(), s.list), (Metric::Dot, 2, true));
        assert_eq!(Similar::read("similar", &json!("a")).unwrap().metric, Metric::Cosine);
        assert!(Similar::read("similar:manhattan", &json!("a")).is_err());
        for bad in [json!([]), json!(null), json!([1]), json!({"a": 1})] {
            assert!(Similar::read("similar", &bad).is_err(), "{bad}");
        }
    }
}
