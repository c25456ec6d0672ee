"""Copying files a new workspace needs but git does not carry (`.env`, local config: ignored files) from the
main worktree. Nothing already in the workspace is overwritten: a tracked file is there from its checkout."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = set("*?[")
PRIVATE = (".git", ".lanes")


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
