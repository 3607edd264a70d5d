#!/usr/bin/env bash
# The action's run step: `evalgate run --github`, so the binary appends the step summary,
# writes the step outputs, annotates failing tasks and masks secrets. The exit code is
# evalgate's own (0 passed, 1 gate failed, 2 invalid, 3 preflight, 4 aborted). Inputs
# arrive as environment variables (never interpolated into the script): EVALGATE_BIN,
# INPUT_SUITE, INPUT_ARGS, INPUT_OUT, INPUT_BASELINE, INPUT_CHANGED_SINCE, INPUT_COMMENT.
set -euo pipefail

# Split on spaces, tabs and newlines (a YAML block input is several lines) without glob
# expansion: the words are flags and paths, never patterns for the shell.
set -f
# shellcheck disable=SC2206
suites=(${INPUT_SUITE:-})
# shellcheck disable=SC2206
extra=(${INPUT_ARGS:-})
set +f

if [ "${#suites[@]}" -eq 0 ]; then
  echo "::error title=evalgate::the suite input is empty"
  exit 2
fi
args=(run "${suites[@]}" --github --out "${INPUT_OUT:-evalgate-out}")
case "${INPUT_COMMENT:-auto}" in
  true) args+=(--comment) ;;
  false) ;;
  auto)
    case "${GITHUB_EVENT_NAME:-}" in
      pull_request | pull_request_target) args+=(--comment) ;;
    esac
    ;;
  *)
    echo "::error title=evalgate::the comment input must be true, false or auto"
    exit 2
    ;;
esac
case "${INPUT_BASELINE:-}" in
  "") ;;
  # The results of this workflow's run on the base branch (evalgate baseline fetch).
  github) args+=(--baseline github:base) ;;
  *) args+=(--baseline "$INPUT_BASELINE") ;;
esac
case "${INPUT_CHANGED_SINCE:-}" in
  "") ;;
  # Carry from this workflow's run on the base branch, fetched as the baseline is.
  github) args+=(--changed-since github:base) ;;
  *) args+=(--changed-since "$INPUT_CHANGED_SINCE") ;;
esac
# `${a[@]+…}`: an empty array is "unbound" under `set -u` in the bash 3 of macOS.
args+=(${extra[@]+"${extra[@]}"})
exec "$EVALGATE_BIN" "${args[@]}"
