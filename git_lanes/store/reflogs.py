"""Keeping reflogs out of the way of ref names, as git does and libgit2 does not, for both stores (the pygit2
one and the light one a sync with nothing to replay uses)."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    StrPath = str | os.PathLike[str]


def clear_orphans(common_dir: StrPath, name: str, read_ref: Callable[[str], str | None]) -> None:
    """Drop reflogs of refs that no longer exist where they would block creating `name`: libgit2 leaves a
    deleted ref's reflog behind, and reflogs beneath `logs/refs/lanes/heads/a/` stop lane `a` from ever being
    created ("there are reflogs beneath")."""
    logs = os.path.join(common_dir, "logs")
    beneath = os.path.join(logs, name)
    if os.path.isdir(beneath):
        found = [os.path.relpath(os.path.join(folder, file), logs)
                 for folder, _, files in os.walk(beneath) for file in files]
        for log in sorted(found, key=lambda log: log.split("/"), reverse=True):
            if os.path.isfile(os.path.join(logs, log)) and read_ref(log) is None:
                remove(common_dir, log)
    parts = name.split("/")
    for i in range(2, len(parts)):
        folder = "/".join(parts[:i])
        if os.path.isfile(os.path.join(logs, folder)) and read_ref(folder) is None:
            remove(common_dir, folder)


def remove(common_dir: StrPath, name: str) -> None:
    """Delete `name`'s reflog and the folders it leaves empty."""
    logs = os.path.join(common_dir, "logs")
    path = os.path.join(logs, name)
    try:
        os.unlink(path)
    except (FileNotFoundError, IsADirectoryError):
        return
    parent, stop = os.path.dirname(path), os.path.join(logs, "refs")
    while parent != stop and parent.startswith(stop + os.sep):
        try:
            os.rmdir(parent)
        except OSError:
            break
        parent = os.path.dirname(parent)


def values(common_dir: StrPath, name: str) -> list[str]:
    """The values `name` was set to, by its reflog, newest first (none without one): where to look for an
    earlier value still in the repository when the current one is lost."""
    try:
        with open(os.path.join(common_dir, "logs", name), "rb") as file:
            lines = file.read().splitlines()
    except OSError:
        return []
    found = []
    for line in reversed(lines):
        fields = line.split(b" ", 2)  # "<old> <new> <identity>\t<message>"
        if len(fields) == 3 and len(fields[1]) == 40 and fields[1].strip(b"0"):
            found.append(fields[1].decode("ascii", "replace"))
    return found
