"""Copying files a new workspace needs but git does not carry (`.env`, local config: ignored files) from the
main worktree. Nothing already in the workspace is overwritten: a tracked file is there from its checkout."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAGIC = set("*?[")
PRIVATE = (".git", ".lanes")
# In the workspace's private git dir (so it goes with the workspace): each file `[setup] copy` put there, with
# its size, modification time and content digest as copied: git's stat cache in small, the stat read first.
COPIES = "lanes-setup-copies.json"


@dataclass(frozen=True)
class Copied:
    copied: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # named, but not in the main worktree
    present: list[str] = field(default_factory=list)  # already in the workspace: left as it is


def copy_files(source: Path, target: Path, patterns: tuple[str, ...]) -> Copied:
    """Copy each path (or glob, `**` included) of `patterns` from `source` into `target`; directories whole,
    symbolic links as links."""
    report = Copied()
    for pattern in patterns:
        matches = _matches(source, pattern)
        if not matches:
            report.absent.append(pattern)
        for relative in matches:
            destination = target / relative
            if os.path.lexists(destination):
                report.present.append(relative)
                continue
            _copy(source / relative, destination)
            report.copied.append(relative)
    return report


def _matches(source: Path, pattern: str) -> list[str]:
    if not MAGIC & set(pattern):
        return [pattern] if os.path.lexists(source / pattern) else []
    found = []
    for path in sorted(source.glob(pattern)):
        relative = path.relative_to(source).as_posix()
        if relative.split("/")[0] not in PRIVATE:
            found.append(relative)
    return found


def _copy(source: Path, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        os.symlink(os.readlink(source), destination)
    elif source.is_dir():
        shutil.copytree(source, destination, symlinks=True)
    else:
        shutil.copy2(source, destination)


def remember_copies(target: Path, copied: list[str]) -> None:
    """Record in the workspace at `target` the stat of every file `copied` put there (directories file by
    file), adding to what an earlier setup recorded, so that `changed_copies` can tell them from edits."""
    record = _recorded(target)
    for relative in copied:
        for name in _files_under(target, relative):
            try:
                stat = os.lstat(target / name)
                record[name] = [stat.st_size, stat.st_mtime_ns, _digest(target / name)]
            except FileNotFoundError:  # the setup's command removed it
                continue
    admin = _admin(target)
    if admin is None:
        return
    draft = admin / f"{COPIES}.tmp"
    draft.write_text(json.dumps(record, sort_keys=True))
    os.replace(draft, admin / COPIES)


def changed_copies(target: Path) -> list[str]:
    """The files `[setup] copy` put in the workspace at `target` that were changed there since: their stat
    differs from the one recorded, and then their content too (a file only touched is not one). Ignored
    files, which no state holds: removing the workspace would lose them. A copy deleted since loses nothing
    (the main worktree has the original); a workspace set up before copies were recorded has none."""
    changed = []
    for name, (size, mtime_ns, digest) in sorted(_recorded(target).items()):
        try:
            stat = os.lstat(target / name)
            if [stat.st_size, stat.st_mtime_ns] == [size, mtime_ns] or _digest(target / name) == digest:
                continue
        except OSError:
            continue
        changed.append(name)
    return changed


def _digest(path: Path) -> str:
    """The SHA-1 of a file's content, or of a symbolic link's target."""
    if path.is_symlink():
        return hashlib.sha1(os.readlink(path).encode("utf-8", "surrogateescape")).hexdigest()
    digest = hashlib.sha1()
    with open(path, "rb") as content:
        for block in iter(lambda: content.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _files_under(root: Path, relative: str) -> list[str]:
    path = root / relative
    if path.is_symlink() or not path.is_dir():
        return [relative]
    found = []
    for folder, folders, files in os.walk(path):
        links = [f for f in folders if os.path.islink(os.path.join(folder, f))]  # walked as files, not into
        for name in files + links:
            found.append(Path(folder, name).relative_to(root).as_posix())
    return found


def _recorded(target: Path) -> dict[str, list[Any]]:
    admin = _admin(target)
    try:
        found = json.loads((admin / COPIES).read_text()) if admin is not None else {}
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {name: stat for name, stat in found.items()
            if isinstance(stat, list) and len(stat) == 3 and type(stat[0]) is int and type(stat[1]) is int
            and isinstance(stat[2], str)}


def _admin(target: Path) -> Path | None:
    """The worktree's private git dir, as its .git file names it."""
    try:
        text = (target / ".git").read_text(errors="replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return Path(target, text[len("gitdir:"):].strip())
