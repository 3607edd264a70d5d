//! Reporters: pure functions from results to bytes, plus the one writer that puts bytes
//! into files, and the terminal.

pub mod events;
pub mod junit;
pub mod markdown;
pub mod terminal;
pub mod writer;
