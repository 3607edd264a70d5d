#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for MINUTES each and prints, per target, the
# executions, the corpus size and the crashes, timeouts and out-of-memory kills found.
#   scripts/fuzz.sh MINUTES [TARGET...]
# Needs cargo-fuzz (installed, pinned, when missing). cargo fuzz asks for nightly flags; the
# stable toolchain takes them with RUSTC_BOOTSTRAP=1, set here (CI has only stable).
# The seed corpus fuzz/corpus/TARGET is read, never written: what a run finds goes to
# fuzz/work/TARGET, crashes to fuzz/artifacts/TARGET (add a crash to the seed corpus once
# fixed: `cargo test` replays it).
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${1:?usage: scripts/fuzz.sh MINUTES [TARGET...]}
shift
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --version 0.13.2

export RUSTC_BOOTSTRAP=1

cd fuzz
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(cargo fuzz list); fi
cargo fuzz build -O

results=()
failed=0
for t in "${targets[@]}"; do
  mkdir -p "work/$t" "artifacts/$t" logs
  before=$(find "artifacts/$t" -type f | wc -l)
  echo "fuzzing $t for $minutes minute(s)…" >&2
  # -timeout: one input over 10 s is a hang; -rss_limit_mb: over 2 GiB is an OOM.
  cargo fuzz run -O "$t" "work/$t" "corpus/$t" -- \
    -max_total_time=$((minutes * 60)) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -close_fd_mask=3 >"logs/$t.log" 2>&1 || failed=1
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' || echo '?')
  corpus=$(find "work/$t" "corpus/$t" -type f | wc -l)
  crashes=$(find "artifacts/$t" -name 'crash-*' | wc -l)
  timeouts=$(find "artifacts/$t" -name 'timeout-*' | wc -l)
  ooms=$(find "artifacts/$t" -name 'oom-*' | wc -l)
  new=$(( $(find "artifacts/$t" -type f | wc -l) - before ))
  results+=("$(printf '%-20s %12s %8s %8s %9s %6s %4s' "$t" "$execs" "$corpus" "$crashes" "$timeouts" "$ooms" "$new")")
done

printf '%-20s %12s %8s %8s %9s %6s %4s\n' target executions corpus crashes timeouts ooms new
printf '%s\n' "${results[@]}"
exit "$failed"
