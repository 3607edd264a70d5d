#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need, then runs them.
# Needs: a Rust toolchain (cargo), sh, python3 and node/npm. Installs (pinned):
#   - the real MCP servers under tests/fixtures/mcp (npm ci, from package-lock.json),
#   - a Python venv .venv-test with the MCP Python SDK for the fixture server, and the
#     JUnit consumers junitparser and junit2html,
#   - the official MCP conformance suite under tests/fixtures/conformance (npm ci),
#   - the JUnit consumers under tests/fixtures/junit (npm ci: xunit-viewer, xml2js),
#   - Claude Code's ACP adapter under tests/fixtures/acp (npm ci: @zed-industries/claude-agent-acp),
#     run offline against a model stand-in,
#   - xmllint (Debian libxml2-utils) when it is missing, for the Surefire schema check,
#   - bubblewrap (apt, when bwrap is missing) for the workspace tests' sandbox,
#   - Debian's chromium (apt, when /usr/bin/chromium is missing) and playwright-core under
#     tests/browser (npm ci; it drives that chromium, it never downloads a browser) for the
#     HTML report's browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in cargo python3 npm; do
  command -v "$tool" >/dev/null || { echo "scripts/test.sh: $tool is required" >&2; exit 1; }
done

(cd tests/fixtures/mcp && npm ci --no-audit --no-fund --loglevel=error)
(cd tests/fixtures/conformance && npm ci --no-audit --no-fund --loglevel=error)
(cd tests/fixtures/junit && npm ci --no-audit --no-fund --loglevel=error)
(cd tests/fixtures/acp && npm ci --no-audit --no-fund --loglevel=error)
(cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)

# Debian packages, installed only when missing (apt-get update only when the install fails).
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "$@" >/dev/null \
    || { $sudo apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "$@" >/dev/null; }
}
command -v xmllint >/dev/null || apt_install libxml2-utils
# The workspace tests confine agents for real: bubblewrap, and prlimit/setpriv (util-linux).
command -v bwrap >/dev/null || apt_install bubblewrap
command -v prlimit >/dev/null && command -v setpriv >/dev/null || apt_install util-linux
# Ubuntu 24.04 keeps unprivileged user namespaces from every program AppArmor has no profile
# for, bubblewrap included (docs/workspaces.md, "Runners").
if [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null || echo 0)" = 1 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0
fi
if [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM:-}" ]; then
  apt_install chromium
fi
if [ ! -x .venv-test/bin/python ]; then
  python3 -m venv .venv-test
fi
.venv-test/bin/pip install --quiet --disable-pip-version-check 'mcp==2.3.0' 'junitparser==5.0.3' 'junit2html==31.1.4'

# Snapshots are compared, never rewritten, here.
export INSTA_UPDATE=no
if command -v cargo-nextest >/dev/null; then
  cargo nextest run --locked --all-targets --no-fail-fast
  cargo test --locked --doc
  # docs/architecture.md's recipes, followed on a copy of the tree: it builds and its unit
  # tests pass (scripts/check-recipes.py).
  python3 scripts/check-recipes.py
else
  cargo test --locked --all-targets --no-fail-fast
  python3 scripts/check-recipes.py
fi
