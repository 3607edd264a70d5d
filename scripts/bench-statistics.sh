#!/usr/bin/env bash
# The statistical gate, measured (docs/statistics.md quotes its figures): a seeded simulation
# through the real code (src/simulation/regression_gate.rs) — trials drawn for tasks of known pass
# rates, stopped by the dispatcher's adaptive design, aggregated, read back as a baseline and
# gated — with EVALGATE_SIM_RUNS repetitions a cell (default 4000; `cargo test` runs 300).
# Prints, for 10 and 50 tasks, repeat 1 and 4, fixed and adaptive trials on either side:
# the A/A false-regression rate, the gate's failures, suspect flags and the printed minimum
# detectable drop; the power at a 10-point drop; small suites' A/A failures by repeat; and
# the printed MDE by repeat with how often that drop is caught. It prints, it does not fail.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export EVALGATE_SIM_RUNS="${EVALGATE_SIM_RUNS:-4000}"
cargo test --release --quiet --manifest-path "$root/Cargo.toml" --lib simulation::regression_gate::tests::print_the_table \
  -- --ignored --nocapture 2>&1 | grep -v '^test \|^running\|^$\|test result'
