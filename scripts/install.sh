#!/bin/sh
# Installs a prebuilt evalgate release: downloads the archive for this machine from the
# release, verifies it against the checksum file committed in the repository
# (checksums/TAG.sha256 on main, which the release workflow commits after publishing;
# never only a file from the release host), and unpacks `evalgate`.
#
#   curl -fsSL https://raw.githubusercontent.com/evalgate/evalgate/v0.1.0/scripts/install.sh | sh -s -- v0.1.0
#
# Arguments: TAG [DIR] (default DIR: $EVALGATE_INSTALL_DIR, else ~/.local/bin).
# Environment: EVALGATE_REPOSITORY (owner/name), EVALGATE_RELEASES_URL (default
# https://github.com/OWNER/NAME/releases/download), EVALGATE_RAW_URL (default
# https://raw.githubusercontent.com), EVALGATE_CHECKSUMS (a local checksum file instead of
# the one fetched from the repository: the action's own checkout), EVALGATE_PLATFORM (`uname -s`-`uname -m`).
# Exit: 0 installed; 1 refused (checksum, platform); 3 no archive for this machine (the
# action then builds from source).
set -eu

tag="${1:?usage: install.sh TAG [DIR]}"
# The tag goes into URLs and a checksum file's path: `vMAJOR.MINOR.PATCH[-pre]` and nothing
# else (no `/`, no `..`, no newline), so it cannot name another repository's file.
# (The `case` keeps out a newline, which `grep` would read as a second line.)
case "$tag" in
  *[!0-9A-Za-z.-]*) tag_ok=no ;;
  *) printf '%s\n' "$tag" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z]+(\.[0-9A-Za-z]+)*)?$' && tag_ok=yes || tag_ok=no ;;
esac
if [ "$tag_ok" = no ]; then
  echo "evalgate install: '$tag' is not a release tag (vMAJOR.MINOR.PATCH[-pre], such as v0.1.0)" >&2
  exit 1
fi
dir="${2:-${EVALGATE_INSTALL_DIR:-$HOME/.local/bin}}"
repository="${EVALGATE_REPOSITORY:-evalgate/evalgate}"
releases="${EVALGATE_RELEASES_URL:-https://github.com/$repository/releases/download}"
raw="${EVALGATE_RAW_URL:-https://raw.githubusercontent.com}"

say() { echo "evalgate install: $*" >&2; }

platform="${EVALGATE_PLATFORM:-$(uname -s)-$(uname -m)}"
case "$platform" in
  Linux-x86_64 | Linux-amd64) target=x86_64-unknown-linux-musl ;;
  Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
  Darwin-arm64 | Darwin-aarch64) target=aarch64-apple-darwin ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  MINGW* | MSYS* | CYGWIN* | Windows*)
    # Process groups and signals are how evalgate stops agents; it is Unix-only for now.
    say "evalgate runs on Linux and macOS, not on Windows ($platform)"
    exit 1
    ;;
  *)
    say "no prebuilt evalgate for $platform; install from source: cargo install --locked --git https://github.com/evalgate/evalgate --tag $tag"
    exit 3
    ;;
esac
archive="evalgate-$target.tar.gz"

sha256() { if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${EVALGATE_CHECKSUMS:-}" ]; then
  cp "$EVALGATE_CHECKSUMS" "$tmp/sums"
elif ! curl -fsSL --retry 3 -o "$tmp/sums" "$raw/$repository/main/checksums/$tag.sha256"; then
  say "no checksum file checksums/$tag.sha256 on $repository's main: is $tag a release tag?"
  exit 1
fi
expected=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/sums")
if [ -z "$expected" ]; then
  say "release $tag has no $archive (see checksums/$tag.sha256)"
  exit 3
fi
if ! curl -fsSL --retry 3 -o "$tmp/$archive" "$releases/$tag/$archive"; then
  say "cannot download $releases/$tag/$archive"
  exit 3
fi
actual=$(sha256 "$tmp/$archive")
if [ "$actual" != "$expected" ]; then
  say "checksum mismatch for $archive: $actual, expected $expected (checksums/$tag.sha256); nothing installed"
  exit 1
fi
tar -xzf "$tmp/$archive" -C "$tmp"
mkdir -p "$dir"
mv "$tmp/evalgate" "$dir/evalgate"
chmod +x "$dir/evalgate"
say "installed $dir/evalgate ($tag, $target, sha256 $actual)"
