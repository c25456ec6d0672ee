"""Lock files a killed process left behind.

git and libgit2 take a lock by creating `<file>.lock` and renaming it over `<file>`; a process killed in
between leaves the `.lock`, and every later writer of that file then fails until someone deletes it. git
never guesses and asks a human to delete it. For the files only git-lanes writes (its own refs, its notes
ref, its workspaces' index and HEAD) we can do better, because every git-lanes writer holds the writers'
flock: a `.lock` found while we hold it was left by a dead process, or by a plain git command (a `git
status` in a workspace refreshing the index, say) that holds it for moments. So a lock is removed only when
no process has it open and it has not changed over a short grace period; anything else is reported with
the path, as git would. (One git command holds a lock closed for long: `git commit`, while its hooks run.
A lane's workspace is committed with `git lanes commit`; the trunk's worktree, where people run `git
commit`, is never cleared.)

git also holds a *ref's* lock closed: `git pack-refs` while it prunes the loose copy it packed (it read the
ref, and deletes the file next), `git update-ref --stdin` from `prepare` to `commit`, any transaction of
many refs. Deleting such a lock lets our move land and git then delete or overwrite the ref we moved. So a
ref's lock is not cleared while a git process works in the repository (its working directory in one of the
repository's worktrees or in its git dir), other than the `git` that runs us (`git lanes …`) and other
`git lanes` commands' such `git`s. Writers first wait a taken ref lock out as git does (loose_ref.Backoff);
only a lock still there after that comes here."""

from __future__ import annotations

import os
import time

from git_lanes.errors import Conflict

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads neither typing nor pathlib
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path
    from typing import TypeVar

    T = TypeVar("T")
    StrPath = str | os.PathLike[str]

# Long enough for a live git to finish a ref or index update it has started; short enough to go unnoticed.
GRACE_SECONDS = 0.05
# Where /proc cannot tell us who holds a file open, only a lock this old is presumed abandoned.
ABANDONED_AFTER_SECONDS = 600.0
OWNED_NOTES = "refs/notes/lanes"


def alive(pid: int) -> bool:
    """Whether a process `pid` runs on this machine: a file a process named after itself (a worktree draft,
    a publish lock, an agent on a system without /proc) is left alone while it does. Another user's process
    counts as alive: we may not signal it, but it is there. A zombie (it exited, its parent has not reaped it
    yet: a held-open server's killed child, say) does not: it does nothing more, yet signals reach it."""
    if not signalled(pid):
        return False
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # no /proc here, or it just went
        return True
    try:
        state = os.read(fd, 512).rpartition(b")")[2][1:2]  # after the name, which may hold any bytes
    except OSError:
        return True
    finally:
        os.close(fd)
    return state not in (b"Z", b"X")


def signalled(pid: int) -> bool:
    """Whether a signal reaches process `pid` (a zombie's too): `alive` for a caller that asks for many
    processes on every turn (the append queue's holder, 0.4 us against `alive`'s 7-11 us), where a writer
    dead and not yet reaped is the rare case whose op is then applied as if it still waited."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owned_ref(name: str) -> bool:
    """Refs only git-lanes writes, so a leftover lock on them is ours to clear."""
    return name.startswith("refs/lanes/") or name == OWNED_NOTES


def clear_if_stale(lock: StrPath, worktree: Path | None = None) -> bool:
    """Delete `lock` if it was abandoned; True when it is gone now. Call with the writers' flock held.
    `worktree`: the lock is that worktree's index (or HEAD) lock, which a plain `git commit` running there
    holds *closed* while its hooks run: while any git process works in the worktree, it is live."""
    if worktree is not None:
        if git_running_in(worktree):
            return False
    elif os.path.isdir("/proc/self/fd"):  # elsewhere only an old lock is taken for abandoned (_held_open)
        places = _repository_places(lock)
        if places and git_running_in(*places):
            return False
    try:
        before = os.stat(lock)
    except FileNotFoundError:
        return True
    except OSError:  # a path the file system cannot even hold (too long): nothing there to clear
        return False
    if _held_open(lock, before.st_mtime):
        return False
    time.sleep(GRACE_SECONDS)
    try:
        after = os.stat(lock)
    except FileNotFoundError:
        return True
    if (after.st_ino, after.st_mtime_ns, after.st_size) != (before.st_ino, before.st_mtime_ns, before.st_size):
        return False
    if _held_open(lock, after.st_mtime):
        return False
    try:
        os.unlink(lock)
    except FileNotFoundError:
        pass
    return True


def retrying(action: Callable[[], T], locks: Iterable[Path], failure: type[Exception], what: str,
             worktree: Path | None = None) -> T:
    """Run `action`; if it fails with `failure` while one of `locks` exists, clear the abandoned ones and run
    it once more. A lock that is still live becomes a Conflict that names it. `worktree`: see clear_if_stale."""
    try:
        return action()
    except failure:
        present = [lock for lock in locks if lock.exists()]
        if not present:
            raise
        live = [lock for lock in present if not clear_if_stale(lock, worktree)]
        if live:
            raise Conflict(f"{what}: {live[0]} is locked by another process", code="locked",
                           hint=f"retry; if no git process is running, delete {live[0]}") from None
    return action()


def git_running_in(worktree: Path, *more: Path) -> bool:
    """Whether a live `git` process has its working directory in `worktree` or one of `more` (as every git
    command run there, and every hook it runs, has). The `git` that runs us or another git-lanes command
    (`git lanes …` waits for its `git-lanes` child) does not count. Where /proc cannot tell, assume one is."""
    from pathlib import Path

    proc = Path("/proc")
    if not (proc / "self" / "cwd").exists():
        return True
    roots = [place.resolve() for place in (worktree, *more)]
    ours = _ancestors(proc)
    for pid in os.listdir(proc):
        if not pid.isdigit() or pid in ours:
            continue
        try:
            if (proc / pid / "comm").read_text().strip() != "git":
                continue
            cwd = Path(os.readlink(proc / pid / "cwd"))
        except OSError:
            continue
        if any(cwd == root or root in cwd.parents for root in roots) and not _runs_lanes(proc, pid):
            return True
    return False


def _ancestors(proc: Path) -> set[str]:
    """This process and those it runs under."""
    found, pid = set(), str(os.getpid())
    while pid not in found and pid != "0":
        found.add(pid)
        try:
            stat = (proc / pid / "stat").read_text()
        except OSError:
            break
        pid = stat[stat.rindex(")") + 2:].split()[1]  # the parent's pid, after the command name and state
    return found


def _runs_lanes(proc: Path, pid: str) -> bool:
    """Whether git process `pid` is only running a git-lanes command (its child), which takes ref locks
    under the writers' flock as we do. False where the kernel does not list children."""
    try:
        children = (proc / pid / "task" / pid / "children").read_text().split()
        # the script itself, or its interpreter with the script first (`#!/usr/bin/env python3`)
        return any(os.path.basename(arg) == b"git-lanes"
                   for child in children for arg in (proc / child / "cmdline").read_bytes().split(b"\0")[:2])
    except OSError:
        return False


def _repository_places(lock: StrPath) -> list[Path]:
    """Where a git process working on the repository whose git dir holds `lock` has its working directory:
    the git dir, the main worktree and the linked ones. Empty where `lock` is in no git dir."""
    from pathlib import Path

    common = next((p for p in Path(os.path.abspath(lock)).parents
                   if (p / "objects").is_dir() and (p / "HEAD").is_file()), None)
    if common is None:
        return []
    places = [common, common.parent] if common.name == ".git" else [common]
    try:
        admins = os.listdir(common / "worktrees")
    except OSError:
        admins = []
    for admin in admins:
        try:
            places.append(Path((common / "worktrees" / admin / "gitdir").read_text().strip()).parent)
        except OSError:
            continue
    return places


def _held_open(path: StrPath, mtime: float) -> bool:
    from pathlib import Path

    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return time.time() - mtime < ABANDONED_AFTER_SECONDS
    target = str(Path(path).resolve())
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        fd_dir = proc / pid / "fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd_dir / fd) == target:
                    return True
            except OSError:
                continue
    return False
