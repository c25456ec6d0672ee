"""`git lanes demo`: a readable scenario played in a temporary repository by real `git lanes` processes.

Each capability adds a scene module; SCENES plays them in order against one repository."""

from __future__ import annotations

import importlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from git_lanes.demo.session import DemoSession

SCENES = [
    "git_lanes.demo.foundation",
    "git_lanes.demo.promotion",
    "git_lanes.demo.coordination",
    "git_lanes.demo.sync",
    "git_lanes.demo.control",
]


def play(directory: str | None = None, keep: bool = False, narrate: Callable[[str], None] | None = None) -> dict:
    root = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="git-lanes-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    session = DemoSession(root, narrate or (lambda _text: None))
    try:
        for name in SCENES:
            importlib.import_module(name).play(session)
    finally:
        if not keep and directory is None:
            shutil.rmtree(root, ignore_errors=True)
    return {"repository": str(root), "kept": keep or directory is not None, "scenes": session.results}
