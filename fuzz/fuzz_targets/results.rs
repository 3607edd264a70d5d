#![no_main]
//! `results`: see `src/fuzz_targets.rs` in evalgate (`TARGETS`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| evalgate::fuzz_targets::run("results", data));
