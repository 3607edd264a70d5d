//! Where steps run.

use std::path::Path;

use crate::results::Phase;

/// Where steps run: relative paths resolve against `dir`; results are marked with `phase`.
#[derive(Debug, Clone, Copy)]
pub struct StepEnv<'a> {
    pub dir: &'a Path,
    pub phase: Phase,
}
