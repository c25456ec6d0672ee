"""Running the git CLI, for what libgit2 cannot do as git does (worktrees, network)."""

from __future__ import annotations

import os

from git_lanes.errors import LanesError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import subprocess


# What a git hook or an outer git command may have set, which would point git at another repository, index
# or object store than the worktree a command runs in.
_REDIRECTING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_NAMESPACE")


def unredirected_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without git's location variables, so git finds the repository from its cwd."""
    return {key: value for key, value in os.environ.items() if key not in _REDIRECTING} | (extra or {})


class GitCommandFailed(LanesError):
    code = "git_failed"


def run_git(args: list[str], cwd: Path | str, *, check: bool = True, env: dict[str, str] | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    import subprocess  # here, not at the top: most commands never run git, and subprocess costs ~3 ms to load

    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
        # git puts the reason on its fatal:/error: line and advice after it ("remove the file manually…")
        reasons = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
        detail = (reasons or lines or [f"exit {proc.returncode}"])[-1]
        raise GitCommandFailed(f"git {args[0]} failed: {detail}")
    return proc


class StartedGit:
    """A git command started now and answered later, as `run_git(args, cwd, check=False, timeout=...)` would
    answer it: the caller does other work while git runs (the light sync loads the domain during its fetch).
    `then` (set by the caller) runs once `result` has a successful answer: the next step starts at once.

    `output=True` instead: git's stdout is read as it comes (`pour`), as bytes, and its stderr is discarded
    (a command whose failure the caller only needs to notice; a pipe nobody reads could fill and stall git)."""

    def __init__(self, args: list[str], cwd: Path | str, *, output: bool = False,
                 env: dict[str, str] | None = None) -> None:
        import subprocess
        import time

        self.args = args
        self.started = time.monotonic()
        self.then: Callable[[], None] | None = None
        self._proc = subprocess.Popen(["git", *args], cwd=cwd, stdout=subprocess.PIPE, env=env,
                                      stderr=subprocess.DEVNULL if output else subprocess.PIPE, text=not output)

    def result(self, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        """Wait for git, as `subprocess.run` waits: past `timeout` seconds from the start, or on any
        interruption, git is killed and reaped before the error is raised."""
        import subprocess
        import time

        with self._proc as proc:
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - self.started))
            try:
                stdout, stderr = proc.communicate(timeout=left)
            except BaseException:  # the timeout, an interruption: git is killed, and reaped by the `with` block
                proc.kill()
                raise
        if proc.returncode == 0 and self.then is not None:
            self.then()
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)

    def pour(self, take: Callable[[bytes], bool]) -> int | None:
        """Hand git's output (`output=True`) to `take` as git writes it, until git ends (its exit code), or
        until `take` returns False: git is stopped then (None). Either way, and on any interruption, git is
        reaped before this returns."""
        with self._proc as proc:
            try:
                assert proc.stdout is not None
                handle = proc.stdout.fileno()
                while chunk := os.read(handle, 1 << 16):
                    if not take(chunk):
                        proc.kill()
                        return None
            except BaseException:
                proc.kill()
                raise
        return proc.returncode

    def stop(self) -> None:
        """Kill git if it still runs, and reap it."""
        with self._proc as proc:
            proc.kill()
