#!/usr/bin/env bash
# The action's install step: the evalgate binary from `binary-path`, else the release
# archive for this runner (checksum verified), else `cargo install` of the action's source.
# Writes `bin=PATH` to $GITHUB_OUTPUT.
set -euo pipefail

emit() { echo "bin=$1" >> "$GITHUB_OUTPUT"; echo "evalgate: using $1"; }

if [ -n "${INPUT_BINARY_PATH:-}" ]; then
  if [ ! -x "$INPUT_BINARY_PATH" ]; then
    echo "::error title=evalgate::binary-path $INPUT_BINARY_PATH is not an executable file"
    exit 1
  fi
  emit "$INPUT_BINARY_PATH"
  exit 0
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=x86_64-unknown-linux-musl ;;
  Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
  Darwin-arm64) target=aarch64-apple-darwin ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  *) target="" ;;
esac
version="${INPUT_VERSION:-${ACTION_REF:-}}"
repository="${ACTION_REPOSITORY:-}"
dir="${RUNNER_TEMP:-/tmp}/evalgate-bin"
mkdir -p "$dir"

if [ -n "$target" ] && [ -n "$version" ] && [ -n "$repository" ]; then
  base="${GITHUB_SERVER_URL:-https://github.com}/$repository/releases/download/$version/evalgate-$target.tar.gz"
  if curl -fsSL --retry 3 -o "$dir/evalgate.tar.gz" "$base" && curl -fsSL --retry 3 -o "$dir/evalgate.tar.gz.sha256" "$base.sha256"; then
    expected=$(cut -d' ' -f1 < "$dir/evalgate.tar.gz.sha256")
    actual=$( (sha256sum "$dir/evalgate.tar.gz" 2>/dev/null || shasum -a 256 "$dir/evalgate.tar.gz") | cut -d' ' -f1)
    if [ "$expected" != "$actual" ]; then
      echo "::error title=evalgate::checksum mismatch for evalgate-$target.tar.gz ($actual, expected $expected)"
      exit 1
    fi
    tar -xzf "$dir/evalgate.tar.gz" -C "$dir"
    emit "$dir/evalgate"
    exit 0
  fi
  echo "::notice title=evalgate::no release archive for $target at $version; building from source"
fi

cargo install --locked --quiet --path "$GITHUB_ACTION_PATH" --root "$dir"
emit "$dir/bin/evalgate"
