#!/usr/bin/env bash
# The action's install steps. Inputs arrive as environment variables (never interpolated
# into the script): INPUT_BINARY_PATH, INPUT_VERSION, ACTION_REF, ACTION_REPOSITORY.
#
# `resolve` (step `install`) decides, says which path it took, and writes to $GITHUB_OUTPUT:
#   - binary-path given: `bin=` that file;
#   - a release: the action used at a release tag (`@v0.1.0`, or the major tag `@v0` whose
#     Cargo.toml says 0.x), or the `version` input: the archive for this runner, verified
#     against checksums/TAG.sha256 committed in the repository (scripts/install.sh), `bin=`;
#   - else the source: `build-key`, `build-root`, `build-source`, `build-tag`, `build-commit`
#     for the cache step and `build`. A branch or a commit SHA builds the action's own
#     checkout; a release without an archive for this runner builds that tag's source. The
#     `version` input never builds anything but the tag it names.
# `build` (step `build`, after actions/cache restored `build-root`) runs `cargo install`
# unless the cache already holds the binary, and writes `bin=`.
#
# For the tests: EVALGATE_CARGO (the cargo command), EVALGATE_PLATFORM, EVALGATE_RELEASES_URL
# and EVALGATE_RAW_URL (scripts/install.sh) stand in for the machine and the release host.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
action_path="${GITHUB_ACTION_PATH:-$(dirname "$here")}"
root="${RUNNER_TEMP:-/tmp}/evalgate"
server="${GITHUB_SERVER_URL:-https://github.com}"

out() { echo "$1=$2" >> "$GITHUB_OUTPUT"; }
notice() { echo "::notice title=evalgate::$1"; }
fail() {
  echo "::error title=evalgate::$1"
  exit 1
}

# The version of the action's own source (Cargo.toml's first `version = "…"`).
source_version() {
  sed -n 's/^version = "\(.*\)"$/\1/p' "$action_path/Cargo.toml" | head -n 1
}

# A key for the action's source: the commit when the ref is one (or the checkout has
# .git), else a hash of the files cargo builds from (a branch's tarball has no .git).
source_commit() {
  if [[ "${ACTION_REF:-}" =~ ^[0-9a-f]{40}$ ]]; then
    echo "$ACTION_REF"
  elif git -C "$action_path" rev-parse HEAD 2>/dev/null; then
    :
  else
    local hash
    hash=$(cd "$action_path" && { find Cargo.toml Cargo.lock build.rs src -type f 2>/dev/null || true; } | LC_ALL=C sort \
      | xargs cat | { sha256sum 2>/dev/null || shasum -a 256; } | cut -c1-40)
    echo "source-$hash"
  fi
}

# Build from source: SOURCE is `path` (the action's checkout) or `git` (TAG of the repository).
build_from() {
  local source=$1 tag=$2 commit=$3 target=$4
  out build-key "evalgate-$target-$commit"
  out build-root "$root/build-$commit"
  out build-source "$source"
  out build-tag "$tag"
  out build-commit "$commit"
  out build-repository "$repository"
}

resolve() {
  if [ -n "${INPUT_BINARY_PATH:-}" ]; then
    if [ ! -f "$INPUT_BINARY_PATH" ] || [ ! -x "$INPUT_BINARY_PATH" ]; then
      fail "binary-path $INPUT_BINARY_PATH is not an executable file"
    fi
    echo "evalgate: using binary-path $INPUT_BINARY_PATH"
    out bin "$INPUT_BINARY_PATH"
    return
  fi
  local platform="${EVALGATE_PLATFORM:-$(uname -s)-$(uname -m)}" target
  case "$platform" in
    Linux-x86_64 | Linux-amd64) target=x86_64-unknown-linux-musl ;;
    Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
    Darwin-arm64 | Darwin-aarch64) target=aarch64-apple-darwin ;;
    Darwin-x86_64) target=x86_64-apple-darwin ;;
    MINGW* | MSYS* | CYGWIN* | Windows*)
      # Process groups and signals are how evalgate stops agents; it is Unix-only for now.
      fail "evalgate runs on Linux and macOS runners, not on Windows ($platform)"
      ;;
    *) fail "evalgate has no build for $platform runners (Linux and macOS, x86_64 and arm64)" ;;
  esac
  repository="${ACTION_REPOSITORY:-}"
  local ref="${ACTION_REF:-}" tag="" source=""
  [ -n "$repository" ] || repository=$(sed -n 's|^repository = "https://github.com/\(.*\)"$|\1|p' "$action_path/Cargo.toml")
  local version
  version=$(source_version)
  if [ -n "${INPUT_VERSION:-}" ]; then
    # Strict: the tag goes into URLs, a checksum file's path and `cargo install --tag`, so
    # `/`, `..` or anything else past `vMAJOR.MINOR.PATCH[-pre]` could name another file.
    [[ "$INPUT_VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z]+(\.[0-9A-Za-z]+)*)?$ ]] \
      || fail "the version input must be a release tag vMAJOR.MINOR.PATCH[-pre] such as v$version, got '$INPUT_VERSION'"
    tag="$INPUT_VERSION"
    source=git
  elif [[ "$ref" =~ ^v[0-9]+(\.[0-9]+){0,2}$ ]] && [[ "v$version" == "$ref" || "v$version" == "$ref".* ]]; then
    # A release tag, or a major/minor tag (`v0`) on a release commit: this source is v$version.
    tag="v$version"
    source=path
  fi
  if [ -n "$tag" ]; then
    local sums="$action_path/checksums/$tag.sha256" code=0
    if [ -f "$sums" ]; then export EVALGATE_CHECKSUMS="$sums"; fi
    mkdir -p "$root"
    EVALGATE_REPOSITORY="$repository" bash "$here/install.sh" "$tag" "$root/release-$tag" || code=$?
    case "$code" in
      0)
        echo "evalgate: installed release $tag ($target) from $repository, checksum verified"
        out bin "$root/release-$tag/evalgate"
        return
        ;;
      3) ;;
      *) fail "cannot install release $tag (see above); nothing was built instead" ;;
    esac
    if [ "$source" = git ]; then
      notice "release $tag has no archive for $target: building $tag from source ($server/$repository)"
      build_from git "$tag" "$tag" "$target"
    else
      notice "release $tag has no archive for $target: building the action's source ($tag)"
      build_from path "" "$(source_commit)" "$target"
    fi
    return
  fi
  local commit
  commit=$(source_commit)
  notice "the action is used at '${ref:-a local path}', not a release tag: building its source ($commit)"
  build_from path "" "$commit" "$target"
}

build() {
  local bin="$BUILD_ROOT/bin/evalgate"
  if [ -x "$bin" ]; then
    echo "evalgate: using the build cached for $BUILD_COMMIT"
  else
    # shellcheck disable=SC2206 # a command and its arguments
    local cargo=(${EVALGATE_CARGO:-cargo})
    if [ "$BUILD_SOURCE" = git ]; then
      echo "evalgate: cargo install --locked --git $server/$BUILD_REPOSITORY --tag $BUILD_TAG"
      "${cargo[@]}" install --locked --git "$server/$BUILD_REPOSITORY" --tag "$BUILD_TAG" --root "$BUILD_ROOT"
    else
      echo "evalgate: cargo install --locked --path $action_path ($BUILD_COMMIT)"
      EVALGATE_BUILD_COMMIT="$BUILD_COMMIT" "${cargo[@]}" install --locked --path "$action_path" --root "$BUILD_ROOT"
    fi
  fi
  out bin "$bin"
}

case "${1:-resolve}" in
  resolve) resolve ;;
  build) build ;;
  *) fail "action-install.sh: unknown phase $1" ;;
esac
