"""Content through git's configured filter drivers (git-lfs, git-crypt, any `filter.<name>.smudge/clean`).

libgit2 applies only its built-in filters (end of line, ident): a file it writes from an LFS pointer blob is
the pointer, and a file it hashes is hashed as the large content, never as the pointer git would store. So
when a driver is configured, worktree files are written and hashed by git itself: `git cat-file --filters`
(smudge) and `git hash-object` (clean), one process for many paths."""

from __future__ import annotations

from pathlib import Path

import pygit2

from git_lanes.store.gitcli import GitCommandFailed, run_git, unredirected_env


def drivers_configured(config: pygit2.Config) -> bool:
    """Whether any filter driver is configured (repository, user or system config)."""
    return any(entry.name.startswith("filter.") and entry.name.endswith((".clean", ".smudge", ".process"))
               for entry in config)


def smudged(root: Path, blobs: dict[str, str]) -> dict[str, bytes]:
    """path -> the content `git checkout` would write for blob oid `blobs[path]` at that path."""
    if not blobs:
        return {}
    import subprocess  # only where a filter driver is configured (see gitcli.run_git)

    ordered = sorted(blobs.items())
    # One request a line: "<oid> <path>"; a path holding a line break cannot be asked for in batch mode.
    batch = [(path, oid) for path, oid in ordered if "\n" not in path]
    found: dict[str, bytes] = {}
    if batch:
        request = "".join(f"{oid} {path}\n" for path, oid in batch).encode()
        proc = subprocess.run(["git", "cat-file", "--batch", "--filters"], cwd=root, input=request,
                              capture_output=True, env=unredirected_env())
        if proc.returncode != 0:
            raise GitCommandFailed(f"git cat-file --filters failed: {proc.stderr.decode(errors='replace').strip()}")
        out = proc.stdout
        at = 0
        for path, oid in batch:
            header_end = out.index(b"\n", at)
            header = out[at:header_end].split()
            if len(header) != 3:
                raise GitCommandFailed(f"git cat-file --filters gave no content for {path} ({oid[:8]})")
            size = int(header[2])
            found[path] = out[header_end + 1:header_end + 1 + size]
            at = header_end + 1 + size + 1
    for path, oid in ordered:
        if path not in found:
            proc = subprocess.run(["git", "cat-file", "--filters", f"--path={path}", oid], cwd=root,
                                  capture_output=True, env=unredirected_env())
            if proc.returncode != 0:
                raise GitCommandFailed(f"git cat-file --filters failed for {path!r}")
            found[path] = proc.stdout
    return found


def cleaned_oid(root: Path, path: str) -> str | None:
    """The blob id `git add` would record for the file at `path` (through its clean filter), without
    writing it; None when git cannot read it."""
    proc = run_git(["hash-object", "--", path], cwd=root, check=False, env=unredirected_env())
    return proc.stdout.strip() if proc.returncode == 0 else None


def refresh_index(root: Path) -> None:
    """Let git record the stat data of files just written through filters, so `git status` (and libgit2,
    which trusts that data) sees them as clean without running the clean filter again."""
    run_git(["update-index", "-q", "--refresh"], cwd=root, check=False, env=unredirected_env())
