"""Running the git CLI, for what libgit2 cannot do as git does (worktrees, network)."""

from __future__ import annotations

import os

# The signal numbers from the interpreter's own module: `signal` wraps them in enums when it loads (~0.6 ms
# of a light sync, which needs three numbers). Built into every CPython; typeshed describes only `signal`.
import _signal  # type: ignore[import-not-found]

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
        refused = _write_refused(args[0], reasons)
        if refused is not None:
            raise refused
        detail = (reasons or lines or [f"exit {proc.returncode}"])[-1]
        raise GitCommandFailed(f"git {args[0]} failed: {detail}")
    return proc


def _write_refused(command: str, reasons: list[str]) -> LanesError | None:
    """git's own report of the file system refusing a write (a full disk, no permission, read-only) as the
    error errors.write_failed makes of ours: from its first line that says so, which comes before the
    summary git ends with ("error: insufficient permission for adding an object to repository database
    .git/objects", then "fatal: adding files failed")."""
    from git_lanes.errors import write_cause, write_refused

    for line in reasons:
        text = line.partition(":")[2].strip()
        cause = write_cause(text)
        if cause is not None:
            return write_refused(f"git {command} failed: {text}", cause)
    return None

class Answer:
    """What a git command answered: `subprocess.CompletedProcess`'s fields, for what StartedGit runs."""

    __slots__ = ("args", "returncode", "stdout", "stderr")

    def __init__(self, args: list[str], returncode: int, stdout: str, stderr: str) -> None:
        self.args, self.returncode, self.stdout, self.stderr = args, returncode, stdout, stderr


if TYPE_CHECKING:
    Answered = Answer | subprocess.CompletedProcess[str]  # what run_git or a StartedGit answered


class StartedGit:
    """A git command started now and answered later, as `run_git(args, cwd, check=False, timeout=...)` would
    answer it: the caller does other work while git runs (the light sync loads the domain during its fetch).
    `then` (set by the caller) runs once `result` has a successful answer: the next step starts at once.

    `output=True` instead: git's stdout is read as it comes (`pour`), as bytes, and its stderr is discarded
    (a command whose failure the caller only needs to notice; a pipe nobody reads could fill and stall git).

    Started by `os.posix_spawnp`, not `subprocess` (whose import, with threading, selectors, signal and locale,
    is ~3 ms of the light sync's start-up before its fetch could start): git gets what `subprocess.Popen`
    gives it (its stdout and stderr on pipes, stdin inherited, SIGPIPE and SIGXFSZ back at their defaults, the
    directory by `git -C`), and is killed and reaped on a timeout or an interruption as `subprocess.run`
    kills and reaps it."""

    def __init__(self, args: list[str], cwd: Path | str, *, output: bool = False,
                 env: dict[str, str] | None = None) -> None:
        import time

        self.args = args
        self.started = time.monotonic()
        self.then: Callable[[], None] | None = None
        self._proc = _Spawned(["git", "-C", os.fspath(cwd), *args], env, keep_stderr=not output)

    def result(self, timeout: float | None = None) -> Answer:
        """Wait for git, as `subprocess.run` waits: past `timeout` seconds from the start, or on any
        interruption, git is killed and reaped before the error is raised (`subprocess.TimeoutExpired` for
        the timeout). Its output is decoded as `subprocess` decodes text (the locale's encoding, which Python
        also names the file system's; universal newlines)."""
        import time

        proc = self._proc
        deadline = None if timeout is None else self.started + timeout
        try:
            stdout, stderr = proc.read_all(deadline)
            code = proc.wait()
        except BaseException:  # the timeout, an interruption: git is killed and reaped first
            proc.kill()
            proc.wait()
            raise
        finally:
            proc.close()
        if proc.timed_out:
            import subprocess

            raise subprocess.TimeoutExpired(["git", *self.args], max(0.0, time.monotonic() - self.started))
        if code == 0 and self.then is not None:
            self.then()
        return Answer(["git", *self.args], code, _text(stdout), _text(stderr))

    def pour(self, take: Callable[[bytes], bool]) -> int | None:
        """Hand git's output (`output=True`) to `take` as git writes it, until git ends (its exit code), or
        until `take` returns False: git is stopped then (None). Either way, and on any interruption, git is
        reaped before this returns."""
        proc = self._proc
        try:
            while chunk := os.read(proc.stdout, 1 << 16):
                if not take(chunk):
                    proc.kill()
                    proc.wait()
                    return None
            return proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            proc.close()

    def stop(self) -> None:
        """Kill git if it still runs, and reap it."""
        self._proc.kill()
        self._proc.wait()
        self._proc.close()


class _Spawned:
    """One git process, with the part of `subprocess.Popen`'s interface StartedGit and its callers use
    (`pid`, `returncode`, `poll`, `wait`, `kill`)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None, *, keep_stderr: bool) -> None:
        self.returncode: int | None = None
        self.timed_out = False
        self.stdout = self.stderr = -1  # our ends of git's stdout and stderr (-1: none)
        theirs: list[int] = []  # git's ends, closed here once git has them
        try:
            self.stdout, out = os.pipe()
            theirs.append(out)
            actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [(os.POSIX_SPAWN_DUP2, out, 1)]
            if keep_stderr:
                self.stderr, err = os.pipe()
                theirs.append(err)
                actions.append((os.POSIX_SPAWN_DUP2, err, 2))
            else:
                actions.append((os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0))
            self.pid = os.posix_spawnp("git", argv, os.environ if env is None else env, file_actions=actions,
                                       setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
        except BaseException:
            self.close()
            raise
        finally:
            for fd in theirs:
                os.close(fd)

    def read_all(self, deadline: float | None) -> tuple[bytes, bytes]:
        """Everything git writes to its stdout and stderr, until it closes both or `deadline` (monotonic)
        passes (`timed_out` is set then)."""
        import select
        import time

        chunks: dict[int, list[bytes]] = {self.stdout: [], self.stderr: []}
        poller = select.poll()
        open_ = {fd for fd in chunks if fd >= 0}
        for fd in open_:
            poller.register(fd, select.POLLIN)
        while open_:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.timed_out = True
                self.kill()
                break
            for fd, _ in poller.poll(None if left is None else max(1, int(left * 1000))):
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    open_.discard(fd)
        return b"".join(chunks[self.stdout]), b"".join(chunks.get(self.stderr, []))

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:  # not reaped, so the pid is still git's own
            os.kill(self.pid, _signal.SIGKILL)

    def close(self) -> None:
        for name in ("stdout", "stderr"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)


def _text(data: bytes) -> str:
    import sys

    return data.decode(sys.getfilesystemencoding(), "replace").replace("\r\n", "\n").replace("\r", "\n")
