"""What the journey tests share: `git lanes` and plain git as an agent or a person types them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Result, git, run_cli

AGENT = {"GIT_LANES_AGENT": "coder-1"}


def lanes(*args: str, cwd: Path) -> Result:
    return run_cli(*args, cwd=cwd, env=AGENT)


def make_lane(repo: Path, name: str) -> Path:
    created = lanes("lane", "create", name, cwd=repo)
    assert created.code == 0, created.err
    return Path(created.out.strip())


def auto_commit(cwd: Path, message: str, *extra: str) -> Result:
    return lanes("commit", "-m", message, "--auto-accept", *extra, cwd=cwd)


def git_commit(ws: Path, name: str, text: str, message: str) -> str:
    """Write `name` and commit it with plain git, as an agent in its workspace might; returns the commit."""
    (ws / name).write_text(text)
    git("add", name, cwd=ws)
    git("commit", "-q", "-m", message, cwd=ws)
    return git("rev-parse", "HEAD", cwd=ws).strip()


def shell(line: str, cwd: Path, **replacements: str) -> subprocess.CompletedProcess:
    """Run a command line as printed (help example, hint) through bash, `git lanes` on PATH; then `pwd`."""
    for placeholder, real in replacements.items():
        line = line.replace(placeholder, real)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", f"set -e; {line}; pwd"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
