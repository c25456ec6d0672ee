"""Bringing a workspace's files along when its lane fast-forwarded, the way `git merge --ff-only` does: paths
the workspace has not touched are updated, edits elsewhere are kept, and an edit in the way refuses the whole
update before any file is written (libgit2 checks every conflict first)."""

from __future__ import annotations

from pathlib import Path

import pygit2

from git_lanes.store.repo import Store


def fast_forward_files(store: Store, path: Path, tree: str) -> str | None:
    """Update the workspace at `path` (its HEAD still on the old state) to `tree`; None when done, else why
    not."""
    repo = store.workspace_repo(path)
    try:
        repo.checkout_tree(repo[tree], strategy=pygit2.GIT_CHECKOUT_SAFE)
    except pygit2.GitError as exc:
        return f"unsaved edits in the way: {exc}"
    except KeyError:
        return f"state {tree[:8]} is not in this repository"
    return None
