"""What the integration and publishing tests share: tasks claimed in lanes of their own, and work committed
in those lanes."""

from __future__ import annotations

from pathlib import Path

from conftest import git, workspace

from git_lanes.api import Lanes


def claimed_task(api: Lanes, agent: str, lane: str, title: str, ticket: str | None = None,
                 files: tuple[str, ...] = ()) -> tuple[str, Path]:
    """A task claimed by `agent`, working in a new lane of its own; returns (task id, workspace)."""
    task = api.task_create(title, ticket=ticket, files=files)["task"]
    api.lane_create(lane)
    api.task_claim(task, agent, lane=lane)
    return task, workspace(api.root, lane)


def work(api: Lanes, agent: str, ws: Path, files: dict[str, str]) -> None:
    """Write `files` in the workspace and commit them, accepted."""
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    api.commit(f"edit {', '.join(files)}", agent, cwd=ws, auto_accept=True)


def with_forge(tmp_path: Path, repo: Path) -> Path:
    """A bare repository as `origin`, holding main."""
    forge = tmp_path / "forge.git"
    git("init", "-q", "--bare", str(forge), cwd=tmp_path)
    git("remote", "add", "origin", str(forge), cwd=repo)
    git("push", "-q", "origin", "main", cwd=repo)
    return forge
