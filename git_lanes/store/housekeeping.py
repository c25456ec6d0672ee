"""What `git lanes gc` asks of git itself: how many bytes the object database holds, and `git gc` with a
prune date, so objects no ref, reflog or index reaches any more leave the disk."""

from __future__ import annotations

import os
from pathlib import Path

from git_lanes.model.frozen import Frozen
from git_lanes.store.gitcli import run_git
from git_lanes.store.repo import Store
from git_lanes.store import worktree_add
from git_lanes.store.worktree_add import recorded_worktree

GC_TIMEOUT = 3600.0


def object_bytes(store: Store) -> int:
    """Bytes of loose objects, packs and garbage (`git count-objects -v` reports KiB)."""
    proc = run_git(["count-objects", "-v"], cwd=store.root)
    sizes = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            sizes[key.strip()] = int(value)
    return 1024 * (sizes.get("size", 0) + sizes.get("size-pack", 0) + sizes.get("size-garbage", 0))


def collect(store: Store, prune: str) -> None:
    """`git gc --prune=<prune>`: pack what is reachable, drop unreachable objects older than `prune` (a git
    date: `now`, or `@<unix seconds>`). Worktrees' indexes and HEADs count as reachable, as in git. A `.keep`
    a killed ledger writer left (`pack_write.stale_keeps`) goes first: git never repacks a kept pack."""
    from git_lanes.store.pack_write import release, stale_keeps

    pack_dir = os.path.join(store.common_dir, "objects", "pack")
    try:
        release(stale_keeps(pack_dir, os.listdir(pack_dir)))
    except OSError:
        pass  # no pack folder, or one we may not change: git says what it makes of it
    run_git(["gc", "--quiet", f"--prune={prune}"], cwd=store.root, timeout=GC_TIMEOUT)


class GitWorktree(Frozen):
    """One worktree as git records it: where, its HEAD, and why it is locked or prunable (None when not)."""

    path: str
    head: str | None = None
    locked: str | None = None
    prunable: str | None = None
    detached: bool = False  # HEAD names a commit, as in a lane's workspace, not a branch


def worktree_records(store: Store) -> list[GitWorktree]:
    """git's record of every worktree (`git worktree list --porcelain`), the main worktree first."""
    proc = run_git(["worktree", "list", "--porcelain"], cwd=store.root)
    found: list[GitWorktree] = []
    for block in proc.stdout.strip().split("\n\n"):
        fields: dict[str, str] = {}
        detached = False
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            if key == "worktree":
                fields["path"] = value
            elif key == "HEAD":
                fields["head"] = value
            elif key in ("locked", "prunable"):
                fields[key] = value or key
            elif key == "detached":
                detached = True
        if fields.get("path"):
            found.append(GitWorktree(**fields, detached=detached))
    return found


def admin_name(path: Path) -> str | None:
    """The name of the folder under <common dir>/worktrees/ holding the git state of the worktree at `path`
    (git keeps it when the worktree moves); None when `path` holds no linked worktree."""
    try:
        text = (path / ".git").read_text(errors="replace")
    except OSError:
        return None
    return Path(text[len("gitdir:"):].strip()).name if text.startswith("gitdir:") else None


def move_worktree(store: Store, source: Path, target: Path) -> None:
    """`git worktree move SOURCE TARGET`: the worktree's files, unsaved edits included, and git's record of it
    go to TARGET (whose parent folders are made)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    run_git(["worktree", "move", str(source), str(target)], cwd=store.root)


def reconnectable(store: Store, path: Path) -> Path | None:
    """Where git's record of the worktree at `path` places it, when `git worktree repair PATH` would tie the
    two together again without taking anything from another worktree: the folder's .git was lost while git
    still records `path`, or it names a place that is gone (the repository was moved by hand) and the
    record of that name here names a place that is gone too. None otherwise."""
    admins = store.common_dir / "worktrees"
    pointer = path / ".git"
    if path.is_symlink() or not path.is_dir() or not admins.is_dir():
        return None
    if not os.path.lexists(pointer):
        for admin in admins.iterdir():
            if recorded_worktree(admin) == pointer:
                return path
        return None
    try:
        named = Path(pointer.read_text().strip().removeprefix("gitdir: "))
    except (OSError, UnicodeDecodeError):
        return None
    recorded = recorded_worktree(admins / named.name)
    if named.exists() or recorded is None or recorded == pointer or os.path.lexists(recorded):
        return None
    return recorded.parent


# How many entries of one folder `moved_to` looks at: a look around, never a search of the disk.
LOOKED_AT = 2000


def moved_to(store: Store, path: Path, near: list[Path]) -> Path | None:
    """Where the worktree git records at `path`, a folder that is gone, was moved by hand (`mv`, not `git
    worktree move`), when it stands in one of the folders `near`: a folder there whose .git names that
    worktree's record. Each folder is listed once, one level deep (at most LOOKED_AT entries), so a workspace
    moved anywhere else is not found: it is then as git sees it, missing. None when not found."""
    admins = store.common_dir / "worktrees"
    pointer = Path(path) / ".git"
    if os.path.lexists(path) or not admins.is_dir():
        return None
    admin = next((a for a in admins.iterdir() if recorded_worktree(a) == pointer), None)
    if admin is None:
        return None
    for folder in dict.fromkeys(near):
        try:
            with os.scandir(folder) as entries:
                children = [Path(e.path) for _, e in zip(range(LOOKED_AT), entries)
                            if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for child in children:
            named = _gitdir_of(child)
            if named is not None and os.path.realpath(os.path.join(child, named)) == os.path.realpath(admin):
                return child
    return None


def _gitdir_of(folder: Path) -> str | None:
    """The private git dir a linked worktree's .git file names, or None (no such file, or not one)."""
    try:
        with open(folder / ".git", encoding="utf-8", errors="replace") as pointer:
            text = pointer.read(4096)
    except OSError:  # none, or a folder: a repository of its own
        return None
    return text[len("gitdir:"):].strip() if text.startswith("gitdir:") else None


def repair_worktree(store: Store, path: str) -> None:
    """`git worktree repair PATH`: reconnect a worktree moved by hand with its record in the repository."""
    run_git(["worktree", "repair", path], cwd=store.root)


def prune_worktrees(store: Store) -> None:
    """`git worktree prune`: forget worktrees whose directory is gone (a locked one is kept, as git does, and
    one holding its submodules' repositories is locked and kept)."""
    worktree_add.prune_worktrees(store.root, store.common_dir, check=True)
