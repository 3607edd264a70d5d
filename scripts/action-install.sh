#!/usr/bin/env bash
# The action's install step: the evalgate binary from `binary-path`, else the release
# archive for this runner (checksum verified), else `cargo install` of the action's source.
# Writes `bin=PATH` to $GITHUB_OUTPUT. Inputs arrive as environment variables (never
# interpolated into the script): INPUT_BINARY_PATH, INPUT_VERSION, ACTION_REF,
# ACTION_REPOSITORY.
set -euo pipefail

emit() {
  echo "bin=$1" >> "$GITHUB_OUTPUT"
  echo "evalgate: using $1"
}

if [ -n "${INPUT_BINARY_PATH:-}" ]; then
  if [ ! -f "$INPUT_BINARY_PATH" ] || [ ! -x "$INPUT_BINARY_PATH" ]; then
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
  MINGW* | MSYS* | CYGWIN*)
    # Process groups and signals are how evalgate stops agents; it is Unix-only for now.
    echo "::error title=evalgate::evalgate runs on Linux and macOS runners, not on Windows"
    exit 1
    ;;
  *) target="" ;;
esac
# A release tag: the input, else the ref the workflow used the action at (`@v1.2.0`).
version="${INPUT_VERSION:-${ACTION_REF:-}}"
repository="${ACTION_REPOSITORY:-}"
dir="${RUNNER_TEMP:-/tmp}/evalgate-bin"
mkdir -p "$dir"

if [ -n "$target" ] && [ -n "$version" ] && [ -n "$repository" ]; then
  url="${GITHUB_SERVER_URL:-https://github.com}/$repository/releases/download/$version/evalgate-$target.tar.gz"
  if curl -fsSL --retry 3 -o "$dir/evalgate.tar.gz" "$url" && curl -fsSL --retry 3 -o "$dir/evalgate.tar.gz.sha256" "$url.sha256"; then
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
  # A branch or a commit (`@main`, `@<sha>`) has no release: build what was checked out.
  echo "::notice title=evalgate::no release archive evalgate-$target.tar.gz for $version; building from source"
fi

cargo install --locked --quiet --path "$GITHUB_ACTION_PATH" --root "$dir"
emit "$dir/bin/evalgate"
