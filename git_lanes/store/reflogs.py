"""Keeping reflogs out of the way of ref names, as git does and libgit2 does not, for both stores (the pygit2
one and the light one a sync with nothing to replay uses)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def clear_orphans(common_dir: Path, name: str, read_ref: Callable[[str], str | None]) -> None:
    """Drop reflogs of refs that no longer exist where they would block creating `name`: libgit2 leaves a
    deleted ref's reflog behind, and reflogs beneath `logs/refs/lanes/heads/a/` stop lane `a` from ever being
    created ("there are reflogs beneath")."""
    logs = common_dir / "logs"
    beneath = logs / name
    if beneath.is_dir():
        for log in sorted(beneath.rglob("*"), reverse=True):
            if log.is_file() and read_ref(log.relative_to(logs).as_posix()) is None:
                remove(common_dir, log.relative_to(logs).as_posix())
    parts = name.split("/")
    for i in range(2, len(parts)):
        folder = "/".join(parts[:i])
        if (logs / folder).is_file() and read_ref(folder) is None:
            remove(common_dir, folder)


def remove(common_dir: Path, name: str) -> None:
    """Delete `name`'s reflog and the folders it leaves empty."""
    logs = common_dir / "logs"
    path = logs / name
    try:
        path.unlink()
    except (FileNotFoundError, IsADirectoryError):
        return
    parent, stop = path.parent, logs / "refs"
    while parent != stop and stop in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent
