"""Removing a workspace's worktree without losing anything (DESIGN.md §5): refused while it holds a repository
of its own (a nested clone, its submodules' histories in its private git dir) or while its `.git` names another
worktree, and done by one rename out of the way first, so a kill mid-removal never leaves a half-deleted folder
that looks like, or blocks, a workspace. Loaded with the first removal or check (`lane delete`, upkeep), not at
start-up: `WorkspaceOps` in workspace.py calls it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from git_lanes.errors import Refused
from git_lanes.store.gitcli import run_git
from git_lanes.store.worktree_add import prune_worktrees, recorded_worktree, submodule_histories, worktree_admin_dir


def removable_admin(path: Path) -> Path | None:
    """The private git dir of the worktree at `path` (None without one), once nothing stands in the way of
    removing it: Refused when `path` is a symbolic link, holds repositories of its own, or its `.git` names
    another worktree's private dir."""
    if path.is_symlink():  # following it would remove another worktree, or files outside the repository
        raise Refused(f"{path} is a symbolic link, not a worktree: nothing was removed", code="workspace_broken",
                      hint=f"remove the link itself with `rm {path}` if it is yours")
    nested = nested_repositories(path) if path.is_dir() else []
    if nested:
        raise Refused(f"{path} holds git repositories of its own ({', '.join(nested[:5])}): nothing was removed",
                      code="nested_repository", details={"nested": nested},
                      hint="move them out first; git-lanes never deletes a folder holding a .git")
    admin = worktree_admin_dir(path)
    require_no_histories(path, admin)
    recorded = recorded_worktree(admin) if admin is not None else None
    if recorded is not None and recorded.resolve() != (path / ".git").resolve():
        # Its .git names another worktree's private dir: removing that would unregister the other one.
        raise Refused(f"{path}/.git belongs to the worktree at {recorded.parent}: nothing was removed",
                      code="workspace_broken", hint=f"move {path} away by hand if nothing in it is needed")
    return admin


def remove(root: Path, common_dir: Path, path: Path) -> None:
    """Remove the worktree at `path` (checked by `removable_admin`) and its private git dir: its files move
    out of the way in one rename, then git forgets it, then the files go."""
    admin = worktree_admin_dir(path)
    trash = common_dir / "lanes-trash"
    shutil.rmtree(trash, ignore_errors=True)  # what a killed removal left; we hold the writers' lock
    if path.exists():
        trash.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(path, trash / "worktree")
        except OSError:  # another file system: let git do it in place
            run_git(["worktree", "remove", "--force", "--force", str(path)], cwd=root, check=False)
    if admin is not None and (common_dir / "worktrees") in admin.parents:
        discard_admin(common_dir, admin)
    prune_worktrees(root, common_dir)
    shutil.rmtree(trash, ignore_errors=True)
    if path.exists():
        shutil.rmtree(path)
    _remove_empty_parents(path.parent, root / ".lanes")


def discard_admin(common_dir: Path, admin: Path) -> None:
    """Delete a worktree's private git dir (`worktrees/<name>`) whole or not at all, as git sees it: it leaves
    `worktrees/` in one rename before anything in it is deleted. Deleted in place, a kill between its HEAD
    and its `gitdir` left a worktree git still lists with no HEAD, which `git fsck` reports as an error
    ("detached HEAD points at nothing") until something prunes it. Safe without the writers' lock (gates
    remove their scratch checkouts outside it): each private dir has a name of its own in the trash, and a
    removal that empties the trash meanwhile only makes this one try again."""
    trash = common_dir / "lanes-trash"
    moved = trash / f"admin-{admin.name}"
    for _ in range(3):
        trash.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(moved, ignore_errors=True)  # what a killed removal of a worktree of that name left
        try:
            os.rename(admin, moved)
            break
        except FileNotFoundError:
            if not admin.exists():
                return
    else:
        moved = admin  # the trash kept vanishing under it: deleted in place, as before
    shutil.rmtree(moved, ignore_errors=True)


def missing_worktree_admins(common_dir: Path, path: Path) -> list[Path]:
    """The private git dirs git keeps for a worktree at `path` whose folder is gone (unless locked)."""
    admins = common_dir / "worktrees"
    if path.exists() or not admins.is_dir():
        return []
    target, found = path.resolve() / ".git", []
    for admin in admins.iterdir():
        try:
            recorded = Path((admin / "gitdir").read_text().strip())
        except OSError:
            continue
        if recorded == target and not (admin / "locked").exists():
            found.append(admin)
    return found


def require_no_histories(path: Path, admin: Path | None) -> None:
    histories = [str(found) for found in submodule_histories(admin)]
    if histories:  # `git worktree remove` refuses too ("working trees containing submodules cannot be ...")
        raise Refused(f"the private git dir of the worktree at {path} holds the repositories of its submodules "
                      f"({', '.join(histories[:5])}): nothing was removed", code="nested_repository",
                      details={"histories": histories},
                      hint="keep what you need of them, then remove them yourself; git-lanes never deletes "
                           "a repository's history")


def nested_repositories(path: Path) -> list[str]:
    """Every folder inside the worktree at `path` that holds a `.git` of its own (a cloned dependency, a
    submodule's work tree): the only copy of its history may be there, so it is never deleted."""
    root = Path(path)
    found = []
    for current, dirs, names in os.walk(root):
        here = Path(current)
        if here != root and (".git" in dirs or ".git" in names):
            found.append(here.relative_to(root).as_posix())
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d != ".git" and not (here / d).is_symlink())
    return found


def _remove_empty_parents(directory: Path, stop: Path) -> None:
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent
