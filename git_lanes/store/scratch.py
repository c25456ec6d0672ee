"""Scratch checkouts of a candidate state, and running a gate's command in one.

A scratch checkout is a detached `git worktree` in a fresh temporary directory, so the gate sees exactly
the candidate tree (never a lane's loose files) and git tools work inside it. It is removed afterwards; one
left by a killed process is swept by the next checkout once its owner is gone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from git_lanes.store.gitcli import run_git, unredirected_env
from git_lanes.store.stale import alive
from git_lanes.store.worktree_add import add_detached_worktree, prune_worktrees

PREFIX = "git-lanes-gate-"
TAIL_BYTES = 4000


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None
    duration: float
    output_tail: str
    timed_out: bool = False


@contextmanager
def checkout(root: Path, common_dir: Path, commit: str) -> Iterator[Path]:
    """A detached worktree of `commit` in a temporary directory, removed on exit."""
    _sweep(root, common_dir)
    holder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    # The worktree's admin entry is named after its directory: a unique name keeps concurrent gates apart.
    path = holder / holder.name
    admin: Path | None = None
    try:
        # Drafted and renamed into place, as lane workspaces are, so a gate killed mid-checkout never leaves
        # a worktree `git fsck` rejects; and it runs no post-checkout hook on the scratch copy.
        admin = add_detached_worktree(common_dir, path, commit, unredirected_env())
        yield path
    finally:
        _remove(root, common_dir, holder, path, admin)


def _remove(root: Path, common_dir: Path, holder: Path, path: Path, admin: Path | None) -> None:
    """Remove a scratch checkout: its files, then its private git dir in one rename (`discard_admin`). Not
    `git worktree remove`: a process killed while it ran left git deleting the private dir file by file,
    and a `git fsck` meanwhile saw a worktree without its HEAD. Killed between the two, the checkout is a
    worktree whose folder is gone, which git accepts and the next checkout's sweep prunes. The private dir
    is the one made for it, never what its `.git` file names: the gate may have rewritten that file."""
    from git_lanes.store.worktree_remove import discard_admin

    if admin is None:  # made part-way (no gate has run in it): git finds what there is of it
        run_git(["worktree", "remove", "--force", "--force", str(path)], cwd=root, check=False)
    shutil.rmtree(holder, ignore_errors=True)
    if admin is not None:
        discard_admin(common_dir, admin)


def inside(checkout: Path, relative: str) -> tuple[Path, str | None]:
    """The folder `relative` (already lexically inside) of a scratch checkout, and why a gate may not run
    there, if it may not: the candidate tree decides what every path in the checkout is, so a committed
    symlink on the way could point the gate anywhere on the machine. A symlink is followed only as far as
    the checkout: the folder it resolves to must lie inside it."""
    folder = checkout / relative if relative else checkout
    try:
        resolved, root = folder.resolve(), checkout.resolve()
    except (OSError, RuntimeError):  # a loop of symbolic links
        return folder, "is a loop of symbolic links in the candidate tree"
    if resolved != root and root not in resolved.parents:
        return folder, f"resolves, through a symbolic link in the candidate tree, to {resolved}, outside it"
    if not resolved.is_dir():
        return folder, "is not a directory in the candidate tree"
    return folder, None


def take_paths(path: Path, commit: str, paths: list[str]) -> None:
    """Make `paths` in the scratch checkout at `path` (index and files) what they are in `commit`: written
    from it, or removed where it lacks them. git writes them as a checkout does: a symlink on the way is
    replaced, never followed."""
    listing = path.parent / "from-trunk.paths"  # beside the checkout, in its private temporary holder
    listing.write_bytes(b"\0".join(os.fsencode(p) for p in paths))
    run_git(["--literal-pathspecs", "restore", f"--source={commit}", "--staged", "--worktree",
             f"--pathspec-from-file={listing}", "--pathspec-file-nul"], cwd=path)


def restore(path: Path) -> None:
    """Put a scratch checkout back to its commit, so each gate sees the candidate as committed."""
    run_git(["reset", "--hard", "--quiet"], cwd=path)
    run_git(["clean", "-fdxq"], cwd=path)


def _sweep(root: Path, common_dir: Path) -> None:
    """Remove scratch worktrees whose owning process is gone (it was killed mid-gate)."""
    proc = run_git(["worktree", "list", "--porcelain"], cwd=root, check=False)
    stale = False
    for line in proc.stdout.splitlines():
        if not line.startswith("worktree "):
            continue
        path = Path(line[len("worktree "):])
        holder = path.parent
        if not holder.name.startswith(PREFIX):
            continue
        pid = holder.name[len(PREFIX):].partition("-")[0]
        if pid.isdigit() and not alive(int(pid)):
            # Double force: a checkout killed mid-way is still marked `initializing`, which prune skips.
            run_git(["worktree", "remove", "--force", "--force", str(path)], cwd=root, check=False)
            shutil.rmtree(holder, ignore_errors=True)
            stale = True
    if stale:
        prune_worktrees(root, common_dir)


def run_command(command: str | list[str], cwd: Path, timeout: float, extra_env: dict[str, str],
                log: Path | None = None) -> CommandResult:
    """Run `command` (argv list, or a string for the shell) with output captured (all of it in `log` when
    given, else only the tail is kept); on timeout its whole process group is killed."""
    env = unredirected_env(extra_env)
    started = time.monotonic()
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
    with (open(log, "w+b") if log is not None else tempfile.TemporaryFile()) as output:
        try:
            proc = subprocess.Popen(command, cwd=cwd, env=env, shell=isinstance(command, str),
                                    stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as exc:
            return CommandResult(None, time.monotonic() - started, f"could not start the command: {exc}")
        timed_out = False
        try:
            with _termination_raises():
                code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            code = None
        except BaseException:
            _kill_group(proc)  # interrupted (Ctrl-C): its own session would outlive us, with no timeout left
            raise
        duration = time.monotonic() - started
        tail = _tail(output)
    if timed_out:
        tail += f"\n[git-lanes: timed out after {timeout:g}s; killed]"
    return CommandResult(code, round(duration, 3), tail, timed_out)


@contextmanager
def _termination_raises() -> Iterator[None]:
    """While we wait on a command in its own session, SIGTERM and SIGHUP unwind like Ctrl-C (exit 128 + the
    signal) so the command is killed with us; by default they would end us at once and leave it running."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may take signals; a server's worker thread keeps its server's handling
        return
    # Only where the signal would kill us outright: an ignored SIGHUP (nohup) or a server's own handler stays.
    previous = {number: signal.signal(number, _exit_for_signal) for number in (signal.SIGTERM, signal.SIGHUP)
                if signal.getsignal(number) is signal.SIG_DFL}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _exit_for_signal(number: int, _frame: object) -> None:
    raise SystemExit(128 + number)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _tail(output: IO[bytes]) -> str:
    size = output.seek(0, os.SEEK_END)
    output.seek(max(0, size - TAIL_BYTES))
    return output.read().decode("utf-8", "replace")
