"""Helpers shared by the promotion and gate tests: make a lane's workspace hold some edits and land them."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import git, workspace

AUTH = "".join(f"def check_{i}(user):\n    return user.level > {i}\n\n" for i in range(20))


def edit(root: Path, changes: dict[str, str | None]) -> None:
    """Write (or with None, delete) files under `root`."""
    for path, text in changes.items():
        full = root / path
        if text is None:
            if full.is_dir():
                import shutil

                shutil.rmtree(full)
            else:
                full.unlink()
        else:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(text)


def land(api, repo: Path, lane: str, changes: dict[str, str | None], prompt: str = "work") -> dict:
    """Edit the lane's workspace (creating the lane first if needed) and accept the result."""
    if not workspace(repo, lane).exists():
        api.lane_create(lane)
    edit(workspace(repo, lane), changes)
    return api.commit(prompt, f"agent-{lane}", lane=lane, auto_accept=True)


def head(repo: Path, ref: str) -> str:
    return git("rev-parse", ref, cwd=repo).strip()


def trunk_file(repo: Path, path: str) -> str:
    return git("show", f"main:{path}", cwd=repo)


def chmod_x(path: Path) -> None:
    os.chmod(path, 0o755)
