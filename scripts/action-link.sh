#!/usr/bin/env bash
# The action's step after the HTML report was uploaded: a link to it in the step summary,
# and the sticky PR comment posted again with the link (when the run step posted one).
# EVALGATE_REPORT_URL is the artifact's URL; `evalgate comment` reads it and adds the link.
# Inputs arrive as environment variables: EVALGATE_BIN, EVALGATE_REPORT_URL, RESULTS_PATHS
# (one per line), INPUT_COMMENT.
set -euo pipefail

case "$EVALGATE_REPORT_URL" in
  https://*) ;;
  *) echo "::warning title=evalgate::no HTML report link: the artifact URL is not https"; exit 0 ;;
esac
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  printf '📊 [Open the HTML report](%s): traces, diffs and charts of this run\n' "$EVALGATE_REPORT_URL" >> "$GITHUB_STEP_SUMMARY"
fi
comment=false
case "${INPUT_COMMENT:-auto}" in
  true) comment=true ;;
  auto) case "${GITHUB_EVENT_NAME:-}" in pull_request | pull_request_target) comment=true ;; esac ;;
esac
if [ "$comment" = true ]; then
  while IFS= read -r results; do
    [ -n "$results" ] && [ -f "$results" ] && "$EVALGATE_BIN" comment "$results"
  done <<< "$RESULTS_PATHS"
fi
exit 0
