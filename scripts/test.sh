#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need, then runs them.
# Needs: a Rust toolchain (cargo), sh, python3 (the example's code grader and some tests).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in cargo python3; do
  command -v "$tool" >/dev/null || { echo "scripts/test.sh: $tool is required" >&2; exit 1; }
done

# Snapshots are compared, never rewritten, here.
export INSTA_UPDATE=no
if command -v cargo-nextest >/dev/null; then
  cargo nextest run --locked --all-targets --no-fail-fast
  cargo test --locked --doc
else
  cargo test --locked --all-targets --no-fail-fast
fi
