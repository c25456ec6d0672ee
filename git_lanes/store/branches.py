"""Ordinary branches on a remote, for publishing: what a branch points at there, a copy of it here, a
fast-forward-only push, and the patch ids that recognise a squash merge. The network is the git CLI's, as
for sync; copies live under `refs/lanes-published/<remote>/`, a namespace nothing ever pushes or syncs."""

from __future__ import annotations

import subprocess

from git_lanes.errors import RemoteFailed
from git_lanes.store import remote as transport
from git_lanes.store.gitcli import run_git
from git_lanes.store.repo import Store

PUBLISHED_PREFIX = "refs/lanes-published/"
# A squash merge is looked for among this many commits of the base after the published work forked.
PATCH_SCAN = 1000


def copy_ref(remote: str, branch: str) -> str:
    return f"{PUBLISHED_PREFIX}{remote}/{branch}"


def remote_head(store: Store, remote: str, branch: str) -> str | None:
    """What `refs/heads/<branch>` points at on `remote` now (None: no such branch)."""
    proc = transport.network(store, ["ls-remote", "--refs", remote, f"refs/heads/{branch}"])
    if proc.returncode != 0:
        raise RemoteFailed(f"git ls-remote {remote} failed: {transport.reason(proc.stderr)}",
                           hint="check the remote's URL and your access to it")
    for line in proc.stdout.splitlines():
        oid, _, name = line.partition("\t")
        if name == f"refs/heads/{branch}":
            return oid
    return None


def fetch_branch(store: Store, remote: str, branch: str) -> str | None:
    """Copy the remote's `branch` here (objects and `copy_ref`); None when the remote has no such branch."""
    if remote_head(store, remote, branch) is None:
        return None
    ref = copy_ref(remote, branch)
    proc = transport.network(store, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                                     "--no-recurse-submodules", remote, f"+refs/heads/{branch}:{ref}"])
    if proc.returncode != 0:
        if "couldn't find remote ref" in proc.stderr:
            return None  # deleted since ls-remote looked
        raise RemoteFailed(f"git fetch {branch} from {remote!r} failed: {transport.reason(proc.stderr)}",
                           hint="check the remote's URL and your access to it")
    return store.read_ref(ref)


def push_branch(store: Store, remote: str, branch: str, new: str, expected: str | None) -> transport.PushResult:
    """Push `new` to the remote's `branch`, provided the branch is still `expected` there (None: absent). No
    `+`: git refuses anything but a fast-forward, and the lease refuses a branch that moved meanwhile."""
    return transport.push(store, remote, [transport.PushUpdate(f"refs/heads/{branch}", new, expected)],
                          atomic=False)


def patch_id(store: Store, old: str, new: str) -> str | None:
    """git's stable patch id of the whole change from commit `old` to commit `new` (None: no change)."""
    diff = run_git(["diff", "--no-color", "--no-ext-diff", "--full-index", "--binary", old, new], cwd=store.root)
    return _patch_ids(store, diff.stdout).get("0" * 40) if diff.stdout else None


def patch_ids_since(store: Store, base: str, head: str, limit: int = PATCH_SCAN) -> dict[str, str]:
    """patch id -> commit, for each of the first-parent commits after `base` up to `head` (at most `limit`),
    each compared with its first parent, merges included (as a squash or merge commit lands)."""
    log = run_git(["log", "--first-parent", "--no-color", "--no-ext-diff", "--full-index", "--binary", "-p",
                   "--diff-merges=first-parent", f"--max-count={limit}", "--format=commit %H",
                   f"{base}..{head}"], cwd=store.root)
    return {pid: commit for commit, pid in _patch_ids(store, log.stdout).items()}


def _patch_ids(store: Store, patches: str) -> dict[str, str]:
    """commit -> patch id, from `git patch-id --stable` over `patches` (a bare diff counts as commit 0…0)."""
    proc = subprocess.run(["git", "patch-id", "--stable"], cwd=store.root, input=patches, capture_output=True,
                          text=True, check=False)
    found = {}
    for line in proc.stdout.splitlines():
        pid, _, commit = line.partition(" ")
        found[commit.strip()] = pid
    return found
