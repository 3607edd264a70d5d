#![no_main]
//! `convert_agentv`: see `src/fuzz_targets.rs` in evalgate (`TARGETS`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| evalgate::fuzz_targets::run("convert_agentv", data));
