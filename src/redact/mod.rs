//! The one redactor between evalgate and every sink. It knows every secret value the run
//! uses (folded from `uses()`, plus evalgate's own tokens) and replaces each with a stable
//! placeholder: `[secret:OPENAI_API_KEY]`, `[secret:header Authorization]`, `[canary #1]`.
//!
//! Two layers, both through the one installed `Redactor`:
//! - data: a task's result and the run's results are redacted before any report renders
//!   them (`data`), so a reason cut to 300 characters or an escaped string never shows a
//!   piece of a secret;
//! - bytes: every file evalgate writes for people, each line on stdout and stderr (`outln!`
//!   and `errln!`; `println!` is refused by clippy), the step summary, the step outputs and
//!   the PR comment pass `text` on the way out.
//!
//! Values shorter than `MIN_SECRET_LEN` characters are not redacted: they would match too
//! much ordinary text. `evalgate check` warns about them.

mod decoded;
mod redactor;
pub use redactor::*;
