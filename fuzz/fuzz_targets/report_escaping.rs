#![no_main]
//! `report_escaping`: see `src/fuzz_targets.rs` in evalgate (`TARGETS`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| evalgate::fuzz_targets::run("report_escaping", data));
