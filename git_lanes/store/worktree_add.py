"""Creating a detached worktree so that a kill at any instant leaves a repository `git fsck` accepts.

`git worktree add` writes the new worktree's HEAD as the null id before it points it at the commit, so a
SIGKILL in between leaves `worktrees/<name>/HEAD: detached HEAD points at nothing` for fsck. Here the private
git dir is written complete (HEAD already at the commit) beside the repository's worktrees and renamed into
place in one step; git's own `locked: initializing` marker stays until the files are checked out, so a
half-made worktree is recognised and replaced rather than used."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from git_lanes.model.ids import random_hex
from git_lanes.store.gitcli import run_git
from git_lanes.store.stale import alive


def add_detached_worktree(common_dir: Path, path: Path, commit: str, env: dict[str, str]) -> Path:
    """The new worktree's private git dir. Safe without the writers' lock too (gates make scratch checkouts outside it): each call drafts in a
    directory of its own, and renaming a draft onto an admin dir another caller just took fails, never
    replaces it, since neither is empty."""
    from git_lanes.store.gitfiles import INITIALIZING, POINTER_DRAFT  # with the first worktree made, not at start-up

    worktrees = common_dir / "worktrees"
    staging = common_dir / "lanes-staging"
    staging.mkdir(parents=True, exist_ok=True)
    _sweep_drafts(staging)
    worktrees.mkdir(exist_ok=True)
    admin = _free_name(worktrees, path.name)
    draft = staging / f"{os.getpid()}-{random_hex(4)}"
    draft.mkdir()
    (draft / "locked").write_text(INITIALIZING)
    (draft / "gitdir").write_text(f"{path / '.git'}\n")
    (draft / "commondir").write_text("../..\n")
    (draft / "HEAD").write_text(f"{commit}\n")
    path.mkdir(parents=True, exist_ok=True)
    pointer = path / POINTER_DRAFT
    pointer.write_text(f"gitdir: {admin}\n")
    os.replace(pointer, path / ".git")  # never a half-written .git file
    os.rename(draft, admin)
    run_git(["reset", "--hard", "--quiet", "--no-recurse-submodules"], cwd=path, env=env)
    (admin / "locked").unlink()
    return admin


def worktree_admin_dir(path: Path) -> Path | None:
    """The private git dir a worktree's .git file points to (None when there is no such pointer)."""
    from git_lanes.store import gitfiles

    admin = gitfiles.worktree_admin(str(path))
    return None if admin is None else Path(admin)


def submodule_histories(admin: Path | None) -> list[Path]:
    """The submodules' repositories git keeps in a worktree's private dir (`modules/<name>`, where
    `git submodule add` and `update --init` put them in a linked worktree). A submodule's work tree only
    points there, so they stay when it is moved or deleted, and go with the private dir."""
    if admin is None or not (admin / "modules").is_dir():
        return []
    found = []
    for current, dirs, names in os.walk(admin / "modules"):
        if "HEAD" in names and "objects" in dirs:
            found.append(Path(current))
            dirs[:] = []  # a submodule's own submodules live inside its repository
        else:
            dirs.sort()
    return found


def prune_worktrees(root: Path, common_dir: Path, *, check: bool = False) -> None:
    """`git worktree prune` (forget the worktrees whose folder is gone), except those whose private dir holds
    submodule repositories (a workspace deleted by hand keeps its submodules' history there): each is locked
    first, saying why, so that neither this prune nor git's own gc deletes them."""
    admins = common_dir / "worktrees"
    for admin in sorted(admins.iterdir()) if admins.is_dir() else []:
        recorded = recorded_worktree(admin)
        if (recorded is not None and recorded.exists()) or (admin / "locked").exists():
            continue
        histories = submodule_histories(admin)
        if histories:
            (admin / "locked").write_text(
                "git-lanes kept it: it holds the repositories of its submodules "
                f"({', '.join(str(found) for found in histories[:5])}), their only copy perhaps; once they may "
                "go, `git worktree unlock` it\n")
    run_git(["worktree", "prune"], cwd=root, check=check)


def recorded_worktree(admin: Path) -> Path | None:
    """Where a worktree's private dir says its worktree's .git is (its `gitdir` file), or None."""
    try:
        return Path((admin / "gitdir").read_text().strip())
    except (OSError, UnicodeDecodeError):
        return None


def unfinished(path: Path) -> bool:
    """A worktree at `path` that a killed creation left: its private git dir is missing or still marked."""
    from git_lanes.store import gitfiles

    return gitfiles.worktree_unfinished(str(path))


def _sweep_drafts(staging: Path) -> None:
    """Remove drafts whose creating process is gone (killed before its rename). A draft is named after its
    creator's pid, so a live creation's draft is never touched."""
    for draft in staging.iterdir():
        pid = draft.name.partition("-")[0]
        if not pid.isdigit() or not alive(int(pid)):
            shutil.rmtree(draft, ignore_errors=True)


def _free_name(worktrees: Path, base: str) -> Path:
    candidate = worktrees / base
    number = 0
    while candidate.exists():
        number += 1
        candidate = worktrees / f"{base}{number}"
    return candidate
