"""Creating and configuring repositories."""

from __future__ import annotations

from pathlib import Path

import pygit2

from git_lanes.store.gitcli import run_git


def init_repository(path: Path, initial_branch: str) -> None:
    run_git(["init", "--quiet", f"--initial-branch={initial_branch}", str(path)], cwd=path)


def ensure_multivar(repo: pygit2.Repository, key: str, value: str) -> bool:
    """Add `value` to a multi-valued config key unless present; True when it was added."""
    try:
        present = list(repo.config.get_multivar(key))
    except (KeyError, pygit2.GitError):
        present = []
    if value in present:
        return False
    repo.config.set_multivar(key, "^$", value)
    return True


def ensure_excluded(common_dir: Path, pattern: str) -> bool:
    exclude = common_dir / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    existing = exclude.read_text() if exclude.exists() else ""
    if pattern in existing.splitlines():
        return False
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    exclude.write_text(existing + prefix + pattern + "\n")
    return True


def head_branch(repo: pygit2.Repository) -> str | None:
    """The branch HEAD names (even unborn), or None when HEAD is detached."""
    ref = repo.references.get("HEAD")
    if ref is None or ref.type != pygit2.enums.ReferenceType.SYMBOLIC:
        return None
    target = str(ref.target)
    return target[len("refs/heads/"):] if target.startswith("refs/heads/") else None


def point_head(repo: pygit2.Repository, branch: str) -> None:
    repo.set_head(f"refs/heads/{branch}")


def branch_from_remote(root: Path, repo: pygit2.Repository, remote: str, branch: str) -> bool:
    """Make local `branch` from `<remote>/<branch>` as `git checkout` does in a clone: checked out when HEAD
    is unborn (a clone of a remote whose HEAD named no branch has no files yet), else only created. False
    when there is no such remote-tracking branch."""
    if repo.references.get(f"refs/remotes/{remote}/{branch}") is None:
        return False
    if repo.head_is_unborn:
        run_git(["checkout", "--quiet", "-b", branch, "--track", f"{remote}/{branch}"], cwd=root)
    else:
        run_git(["branch", "--quiet", "--track", branch, f"{remote}/{branch}"], cwd=root)
    return True


def remotes_with_branch(repo: pygit2.Repository, branch: str) -> list[str]:
    """The configured remotes that have a remote-tracking `branch`, as `git switch BRANCH` looks for them."""
    return sorted(name for name in repo.remotes.names()
                  if name and repo.references.get(f"refs/remotes/{name}/{branch}") is not None)


def remote_branches(repo: pygit2.Repository, remote: str) -> list[str]:
    prefix = f"refs/remotes/{remote}/"
    return sorted(name[len(prefix):] for name in repo.references if name.startswith(prefix)
                  and name != prefix + "HEAD")
