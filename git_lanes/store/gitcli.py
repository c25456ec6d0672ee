"""Running the git CLI, for what libgit2 cannot do as git does (worktrees, network)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from git_lanes.errors import LanesError


class GitCommandFailed(LanesError):
    code = "git_failed"


def run_git(args: list[str], cwd: Path | str, *, check: bool = True, env: dict | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
        detail = lines[-1] if lines else f"exit {proc.returncode}"
        raise GitCommandFailed(f"git {args[0]} failed: {detail}")
    return proc
