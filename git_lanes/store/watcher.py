"""Hearing of a workspace's changes from the kernel (inotify), so a process that stays open can snapshot what
changed instead of statting every file, as git's fsmonitor does with watchman.

The watcher only ever narrows the work. Whenever it cannot vouch for having heard of every change (the
kernel's queue overflowed, reading failed, a folder could not be watched, the workspace itself moved, no
inotify on this system, a file system whose changes may bypass this kernel) it says so, and the caller scans
every file. A name it reports may not have changed at all: the caller looks at each one."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# File systems every change of which passes through this kernel, so inotify hears of it (not NFS, SMB,
# FUSE or 9p, whose files can change on another machine or in another process's user-space server).
_LOCAL_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "f2fs", "zfs",
                                 "jfs", "reiserfs", "bcachefs", "ramfs"})


class Unwatchable(Exception):
    """The workspace cannot be watched (or no longer is): scan every file."""


@dataclass
class Changes:
    """What happened since the last drain, as workspace-relative paths."""

    paths: set[str] = field(default_factory=set)  # an entry here may have changed, or be gone
    folders: set[str] = field(default_factory=set)  # appeared (made or moved in): all beneath them is new
    rescan: str | None = None  # why names alone cannot be trusted this time


class Watcher:
    """inotify watches on every folder of one workspace that git could record something from.

    `skip(folder)` says whether a folder needs no watch (ignored, nothing tracked beneath). Folders appear
    between snapshots; the caller walks each new one and calls `watch` on it before listing it, so a file
    made in it is either seen by that walk or reported by the new watch."""

    def __init__(self, root: Path, skip: Callable[[str], bool]) -> None:
        if not sys.platform.startswith("linux"):
            raise Unwatchable("inotify is Linux's")
        file_system = _file_system(root)
        if file_system not in _LOCAL_FILE_SYSTEMS:
            raise Unwatchable(f"changes on a {file_system or 'unknown'} file system may not be heard of")
        try:
            from inotify_simple import INotify, flags  # loaded only by a process that snapshots twice
        except ImportError:  # an installation made before it became a dependency
            raise Unwatchable("inotify_simple is not installed") from None

        self.root = root
        self._skip = skip
        self._flags = flags
        self._mask = (flags.CREATE | flags.DELETE | flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE |
                      flags.MOVED_FROM | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF |
                      flags.DONT_FOLLOW | flags.ONLYDIR)
        self._folders: dict[int, str] = {}
        try:
            self._inotify: Any = INotify()
        except OSError as error:  # no inotify in this kernel, or too many instances open
            raise Unwatchable(f"inotify is unavailable: {error}") from None
        try:
            self._watch_all()
        except BaseException:
            self.close()
            raise

    def _watch_all(self) -> None:
        pending = [""]
        while pending:
            folder = pending.pop()
            self.watch(folder)
            with os.scandir(self.root / folder) as entries:
                for entry in entries:
                    if entry.name == ".git":
                        if folder:
                            raise Unwatchable(f"{folder} is a repository of its own")
                        continue
                    child = f"{folder}/{entry.name}" if folder else entry.name
                    if entry.is_dir(follow_symlinks=False) and not self._skip(child):
                        pending.append(child)

    def watch(self, folder: str) -> None:
        """Watch `folder` (workspace-relative, "" for the root). Raises Unwatchable when the kernel refuses
        (the per-user limit of watches reached, no permission): what changes there would go unheard."""
        try:
            descriptor = self._inotify.add_watch(self.root / folder, self._mask)
        except OSError as error:
            raise Unwatchable(f"cannot watch {folder or 'the workspace'}: {error.strerror}") from None
        self._folders[descriptor] = folder  # a folder moved within the workspace keeps its descriptor

    def drain(self) -> Changes:
        """Everything the kernel queued since the last drain (never waits)."""
        changes = Changes()
        try:
            events = self._inotify.read(timeout=0)
        except (OSError, ValueError) as error:  # ValueError: the descriptor was closed under us
            changes.rescan = f"the watcher failed: {error}"
            return changes
        flags = self._flags
        for event in events:
            if event.mask & flags.Q_OVERFLOW:
                changes.rescan = "the watcher's queue overflowed"
                continue
            if event.mask & flags.IGNORED:  # the folder is gone; the kernel dropped its watch
                self._folders.pop(event.wd, None)
                continue
            folder = self._folders.get(event.wd)
            if folder is None:
                changes.rescan = "an event from a folder the watcher does not know"
                continue
            if not event.name:
                if event.mask & (flags.DELETE_SELF | flags.MOVE_SELF | flags.UNMOUNT):
                    if not folder:
                        changes.rescan = "the workspace folder itself was moved or removed"
                    else:  # its parent reports it too; this covers a parent that was not watched
                        changes.paths.add(folder)
                continue  # a folder's own attributes: git records none
            path = f"{folder}/{event.name}" if folder else event.name
            if path == ".git":  # the workspace's own link to the repository, or the main repository
                continue
            if event.mask & flags.ISDIR:
                if event.mask & (flags.CREATE | flags.MOVED_TO):
                    changes.folders.add(path)
                elif not event.mask & flags.ATTRIB:
                    changes.paths.add(path)
            else:
                changes.paths.add(path)
        return changes

    def close(self) -> None:
        self._inotify.close()


def _file_system(path: Path) -> str | None:
    """The type of the file system `path` lives on, from the longest mount point above it."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    resolved = str(path.resolve())
    best, kind = "", None
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        if (resolved == point or resolved.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind
