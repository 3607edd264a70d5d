#!/usr/bin/env python3
"""The recipes of docs/architecture.md, followed: every ```rust block is applied to a copy of
the tree as its first line says, then the copy's unit tests build and run (`cargo test --lib`).
A recipe that misses a `use`, a registry line or a test it breaks fails here.

A block's first line says where it goes (docs/architecture.md, "How a recipe is checked"):
  // src/PATH                                         a new file: the whole block
  // src/PATH: after the line holding `TEXT`           the rest, inserted after that line
  // src/PATH: before the line holding `TEXT`          the rest, inserted before that line
  // src/PATH: in place of the line holding `TEXT`     the rest, replacing that line
  // src/PATH: at the end                              the rest, appended
`python3 scripts/check-recipes.py --list` only reads the blocks and checks their places
(the architecture test does that on every `cargo test`); without it the copy is built and
tested, reusing $CARGO_TARGET_DIR (else the tree's target/) for the dependencies."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACE = re.compile(r"^// (src/[\w/.-]+\.rs)(?:: (after|before|in place of) the line holding `(.+)`|: (at the end))?$")


def blocks(doc):
    """(line number, first line, rest) of every ```rust block."""
    out, lines, i = [], doc.split("\n"), 0
    while i < len(lines):
        if lines[i].strip() == "```rust":
            start, body = i + 1, []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((start + 1, body[0] if body else "", body))
        i += 1
    return out


def apply(tree, line, first, body):
    """Applies one block to `tree`; returns an error or None."""
    m = PLACE.match(first.strip())
    if not m:
        return f"docs/architecture.md:{line}: a ```rust block starts with where it goes, not {first!r}"
    path, how, anchor, end = m.groups()
    target = os.path.join(tree, path)
    rest = "\n".join(body[1:]) + "\n"
    if how is None and end is None:
        if os.path.exists(target):
            return f"docs/architecture.md:{line}: {path} exists already: a new file's block names a new path"
        with open(target, "w") as f:
            f.write("\n".join(body) + "\n")
        return None
    if not os.path.exists(target):
        return f"docs/architecture.md:{line}: {path} does not exist"
    with open(target) as f:
        text = f.read()
    if end:
        text += rest
    else:
        kept = text.split("\n")
        hits = [n for n, l in enumerate(kept) if anchor in l]
        if len(hits) != 1:
            return f"docs/architecture.md:{line}: `{anchor}` is on {len(hits)} lines of {path}, not one"
        n = hits[0]
        new = rest.rstrip("\n").split("\n")
        kept[n:n + 1] = {"after": kept[n:n + 1] + new, "before": new + kept[n:n + 1]}.get(how, new)
        text = "\n".join(kept)
    with open(target, "w") as f:
        f.write(text)
    return None


def main():
    list_only = "--list" in sys.argv[1:]
    with open(os.path.join(ROOT, "docs/architecture.md")) as f:
        found = blocks(f.read())
    if not found:
        print("docs/architecture.md: no ```rust block found", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="evalgate-recipes-") as tmp:
        tree = os.path.join(tmp, "evalgate")
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                               check=True, capture_output=True).stdout.decode().split("\0")
        for name in filter(None, files):
            src = os.path.join(ROOT, name)
            if os.path.isfile(src) and not os.path.islink(src):
                os.makedirs(os.path.dirname(os.path.join(tree, name)), exist_ok=True)
                shutil.copy2(src, os.path.join(tree, name))
        errors = [e for e in (apply(tree, *b) for b in found) if e]
        for e in errors:
            print(e, file=sys.stderr)
        if errors:
            return 1
        print(f"{len(found)} recipe blocks applied")
        if list_only:
            return 0
        env = dict(os.environ, CARGO_TARGET_DIR=os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")))
        return subprocess.run(["cargo", "test", "--locked", "--lib", "--quiet"], cwd=tree, env=env).returncode


sys.exit(main())
