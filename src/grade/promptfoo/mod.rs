//! The `promptfoo` grader: one promptfoo assertion (or `assert-set`), scored as promptfoo
//! 0.123.1 scores it. The promptfoo converter writes one a top-level assertion; the test's
//! verdict is then the task's (`threshold`, weights), which reads the scores as promptfoo does.
//!
//! `promptfoo_check.rs` runs an assertion (`promptfoo_check/assertion_read.rs` reads it as
//! written); `overlap.rs` holds the text-overlap metrics (Levenshtein, ROUGE-N, BLEU),
//! `json_in_text.rs` promptfoo's JSON extraction and
//! `script_assertion.rs` the `javascript` and `python` assertions (node and python3),
//! `llm_rubric.rs` `llm-rubric`, `tools_call.rs` `is-valid-openai-tools-call`, `model_graded.rs`
//! `model-graded-closedqa`, `factuality` and `g-eval` (promptfoo's prompts),
//! `similarity.rs` `similar` and `answer-relevance` (embeddings).

mod json_in_text;
mod llm_rubric;
mod model_graded;
mod overlap;
mod promptfoo_check;
mod script_assertion;
mod similarity;
mod tools_call;
pub use promptfoo_check::*;
pub use script_assertion::{JS_HARNESS, PY_HARNESS, transform_file, transform_response};
