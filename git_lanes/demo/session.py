from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


class DemoSession:
    """Runs `git lanes` as separate processes, the way agents would, and narrates what they see."""

    def __init__(self, root: Path, narrate: Callable[[str], None]) -> None:
        self.root = root
        self.say = narrate
        self.results: dict[str, Any] = {}
        self.env = {**os.environ, "GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@example.com",
                    "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@example.com"}

    def heading(self, text: str) -> None:
        self.say(f"\n== {text}")

    def command(self, *args: str, cwd: Path | None = None) -> list[str]:
        return [sys.executable, "-m", "git_lanes", *args]

    def start(self, *args: str, cwd: Path | None = None, agent: str | None = None) -> subprocess.Popen:
        env = {**self.env, **({"GIT_LANES_AGENT": agent} if agent else {})}
        return subprocess.Popen(self.command(*args, "--json"), cwd=cwd or self.root, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, proc: subprocess.Popen, allowed: tuple[int, ...] = (0,)) -> Any:
        out, err = proc.communicate()
        if proc.returncode not in allowed:
            raise RuntimeError(f"demo step failed (exit {proc.returncode}): {err.strip()}")
        return json.loads(out) if out.strip() else None

    def lanes(self, *args: str, cwd: Path | None = None, agent: str | None = None,
              allowed: tuple[int, ...] = (0,)) -> Any:
        """Run one `git lanes … --json` and return its record."""
        return self.finish(self.start(*args, cwd=cwd, agent=agent), allowed)

    def show(self, *args: str, cwd: Path | None = None) -> None:
        """Run `git lanes …` for its human output and narrate it, as a person at a terminal would see it."""
        self.say(f"$ git lanes {' '.join(args)}")
        proc = subprocess.run(self.command(*args), cwd=cwd or self.root, env=self.env, capture_output=True,
                              text=True)
        for line in (proc.stdout + proc.stderr).rstrip().splitlines():
            self.say(f"  {line}")

    def git(self, *args: str, cwd: Path | None = None) -> str:
        return subprocess.run(["git", *args], cwd=cwd or self.root, env=self.env, capture_output=True,
                              text=True, check=True).stdout

    def write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
