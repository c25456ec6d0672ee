"""Seeing which refs moved without taking any lock: the loose ref files and packed-refs, read as git stores
them. Every long-lived face (the HTTP server's event stream, the MCP server's waits) watches refs through
this one reader instead of polling the repository's state in a loop of its own.

git and libgit2 move a loose ref by renaming a new file over it, which changes its directory's mtime, so a
directory whose mtime is unchanged since an earlier scan still holds what it held then. Coarse timestamps
could hide a second rename within one tick, so a directory touched shortly before the last scan is always
read again (git's "racy" rule for its index). An idle repository thus costs one stat per ref directory
per look; packed-refs is parsed again only when its own stat changes."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

# refs/lanes/ (heads, proposals, rejected, ledger, runs, …), the trunk and other branches, and the notes.
DEFAULT_PREFIXES = ("refs/heads/", "refs/lanes/", "refs/notes/lanes")
# A directory modified this close to a scan may change again within the same timestamp tick.
RACY_NS = 2_000_000_000
POLL_SECONDS = 0.005


@dataclass(frozen=True)
class RefMove:
    """`ref` went from `old` to `new`; None stands for "did not exist" on either side."""

    ref: str
    old: str | None
    new: str | None

    def to_dict(self) -> dict[str, str | None]:
        return {"ref": self.ref, "old": self.old, "new": self.new}


@dataclass
class _Folder:
    mark: tuple[int, int]
    refs: dict[str, str]
    folders: list[str]


class RefWatch:
    """The refs under `prefixes` as last seen; `moves()` reports what changed since."""

    def __init__(self, common_dir: Path, prefixes: tuple[str, ...] = DEFAULT_PREFIXES) -> None:
        self.common_dir = Path(common_dir)
        self.prefixes = prefixes
        self._folders: dict[str, _Folder] = {}
        self._packed_mark: tuple[int, int, int] | None = None
        self._packed: dict[str, str] = {}
        self._scanned_ns = 0
        self._seen = self.refs()

    def refs(self) -> dict[str, str]:
        """Every watched ref and its commit, read now (loose refs win over packed ones, as in git)."""
        started = time.time_ns()
        found = {name: oid for name, oid in self._read_packed().items() if name.startswith(self.prefixes)}
        for prefix in self.prefixes:
            if prefix.endswith("/"):
                self._scan(prefix.rstrip("/"), found)
            else:
                oid = _read_loose(self.common_dir / prefix)
                if oid:
                    found[prefix] = oid
        self._scanned_ns = started
        return found

    def moves(self) -> list[RefMove]:
        now = self.refs()
        seen, self._seen = self._seen, now
        return [RefMove(name, seen.get(name), now.get(name)) for name in sorted(seen.keys() | now.keys())
                if seen.get(name) != now.get(name)]

    def wait(self, deadline: float, poll: float = POLL_SECONDS) -> list[RefMove]:
        """The moves once some ref moved, or [] when `deadline` (time.monotonic) passes first."""
        while True:
            found = self.moves()
            if found:
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            time.sleep(min(poll, remaining))

    def _scan(self, folder: str, found: dict[str, str]) -> None:
        path = self.common_dir / folder
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            self._folders.pop(folder, None)
            return
        mark = (st.st_ino, st.st_mtime_ns)
        cached = self._folders.get(folder)
        if cached is None or cached.mark != mark or st.st_mtime_ns >= self._scanned_ns - RACY_NS:
            cached = self._read_folder(folder, path, mark)
        found.update(cached.refs)
        for sub in cached.folders:
            self._scan(sub, found)

    def _read_folder(self, folder: str, path: Path, mark: tuple[int, int]) -> _Folder:
        refs: dict[str, str] = {}
        folders: list[str] = []
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        for entry in entries:
            name = f"{folder}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                folders.append(name)
            elif not entry.name.endswith(".lock"):
                oid = _read_loose(Path(entry.path))
                if oid:
                    refs[name] = oid
        record = _Folder(mark, refs, folders)
        self._folders[folder] = record
        return record

    def _read_packed(self) -> dict[str, str]:
        path = self.common_dir / "packed-refs"
        try:
            st = os.stat(path)
            mark: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            mark = None
        if mark != self._packed_mark or (mark and mark[2] >= self._scanned_ns - RACY_NS):
            self._packed = _parse_packed(path) if mark else {}
            self._packed_mark = mark
        return self._packed


def _read_loose(path: Path) -> str | None:
    try:
        text = path.read_bytes().decode("ascii", "replace").strip()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None
    # A symbolic ref ("ref: …") names another ref, whose own move is what gets reported.
    return text if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text) else None


def _parse_packed(path: Path) -> dict[str, str]:
    found = {}
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return {}
    for line in lines:
        if line.startswith(("#", "^")) or " " not in line:
            continue
        oid, name = line.split(" ", 1)
        found[name.strip()] = oid
    return found
