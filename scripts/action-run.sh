#!/usr/bin/env bash
# The action's run step: `evalgate run` with --github, so the binary appends the step
# summary, writes the step outputs, annotates failing tasks and masks secrets. The exit
# code is evalgate's own (0 passed, 1 gate failed, 2 invalid, 3 preflight, 4 aborted).
set -euo pipefail

args=(run)
read -r -a suites <<< "$INPUT_SUITE"
args+=("${suites[@]}" --github --out "${INPUT_OUT:-evalgate-out}")
case "${INPUT_COMMENT:-auto}" in
  true) args+=(--comment) ;;
  auto) case "${GITHUB_EVENT_NAME:-}" in pull_request | pull_request_target) args+=(--comment) ;; esac ;;
esac
if [ -n "${INPUT_BASELINE:-}" ]; then
  args+=(--baseline "$INPUT_BASELINE")
fi
if [ -n "${INPUT_ARGS:-}" ]; then
  # Word-split on purpose: `args` is a list of flags. No glob expansion.
  set -f
  read -r -a extra <<< "$INPUT_ARGS"
  set +f
  args+=("${extra[@]}")
fi
exec "$EVALGATE_BIN" "${args[@]}"
