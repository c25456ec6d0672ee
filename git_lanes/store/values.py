"""The storage layer's values, shared by the pygit2 store (`repo.py`) and the light one (`light.py`): a ref move
and a commit's parsed header. Kept apart so a path that never loads pygit2 can still build and read them."""

from __future__ import annotations

from git_lanes.model.frozen import Frozen

TYPE_CHECKING = False  # the light sync loads no pathlib: its worktree paths are strings
if TYPE_CHECKING:
    from pathlib import Path


class CorruptObject(ValueError):
    """An object whose file is in the repository but whose content cannot be read (damaged on disk): unlike a
    lost one, `git fsck` names it and a copy from another clone can mend it."""


class RefUpdate(Frozen):
    """Move `name` from `old` to `new`. `old=None` means the ref must not exist; `new=None` deletes it."""

    name: str
    new: str | None
    old: str | None
    message: str


class CommitInfo(Frozen):
    oid: str
    tree: str
    parents: tuple[str, ...]
    message: str
    author: str
    time: int


class Worktree(Frozen):
    path: Path
    head: str | None
    is_main: bool
    branch: str | None
    broken: str | None = None  # why it is not the worktree git recorded (see WorkspaceOps.workspace_problem)
