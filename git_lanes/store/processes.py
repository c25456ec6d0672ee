"""Agent processes: starting one in its own process group with its output in a log file, telling whether a
process (or any process of a group) still runs, and ending all of a run's processes (SIGTERM, then SIGKILL).

A run's processes are more than the agent's process group: a server an agent starts with `setsid` leaves
it, and a daemon (a double fork) leaves its parent too. So they are found three ways (`run_processes`): the
group, every descendant of the agent and of its supervisor (which makes itself a child subreaper, so orphaned
descendants are re-parented to it rather than to init), and every process whose environment carries the run's
mark (which `spawn` puts into the agent's environment, and every child inherits).

A process is named by its pid and its start time (`/proc/<pid>/stat`'s starttime, in clock ticks since
boot), so a pid the kernel reused for another program is never mistaken for the agent. A zombie (exited, not
yet reaped by its parent) counts as gone: it runs nothing and holds nothing."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from git_lanes.errors import LanesError
from git_lanes.store.stale import alive

PROC = Path("/proc")
POLL_SECONDS = 0.05
KILL_WAIT_SECONDS = 10.0
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


class LaunchFailed(LanesError):
    code = "launch_failed"


@dataclass(frozen=True)
class Started:
    pid: int
    ticks: int | None  # start time, to recognise the process later
    process: subprocess.Popen[bytes] | None = None


def hostname() -> str:
    return socket.gethostname()


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None when it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def start_ticks(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def running(pid: int | None, ticks: int | None = None) -> bool:
    """Whether process `pid` (started at `ticks`, when known) still runs."""
    if not pid:
        return False
    if not PROC.is_dir():
        return alive(pid)
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return ticks is None or len(fields) <= 19 or int(fields[19]) == ticks


def group_members(pgid: int) -> list[int]:
    """The live (non-zombie) processes of process group `pgid`."""
    if not PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields and len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return sorted(members)


def _table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, process group) of every live (non-zombie) process."""
    table = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields and len(fields) > 2 and fields[0] not in ("Z", "X"):
            table[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return table


def _environ(pid: int) -> bytes:
    """The environment process `pid` started with, each entry between NULs; nothing for another user's
    process, which cannot be read (and is no process of ours)."""
    try:
        return b"\0" + (PROC / str(pid) / "environ").read_bytes() + b"\0"
    except OSError:
        return b""


def _marked(pid: int, mark: bytes) -> bool:
    """Whether process `pid` started with `mark` (`NAME=value`) in its environment."""
    return b"\0" + mark + b"\0" in _environ(pid)


def _fenced(pid: int, fence: bytes) -> bool:
    """Whether process `pid` started with another value of `fence`'s name (`fence` is `NAME=value`)."""
    environ = _environ(pid)
    name = b"\0" + fence.partition(b"=")[0] + b"="
    return name in environ and b"\0" + fence + b"\0" not in environ


def run_processes(pgid: int, roots: tuple[int, ...] = (), mark: bytes | None = None,
                  fence: bytes | None = None) -> list[int]:
    """The live processes of a run: group `pgid`, every descendant of `roots` (not the roots themselves), and
    every process whose environment carries `mark`, this process excepted. Below a process whose environment
    names another value of `fence`'s name (another run's supervisor, which a spawn below these roots started)
    lies another run: the walk does not go there. Without /proc, the group alone."""
    if not PROC.is_dir():
        return group_members(pgid)
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found = {pid for pid, (_, group) in table.items() if group == pgid}
    below: set[int] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in below and not (fence is not None and _fenced(child, fence)):
                below.add(child)
                stack.append(child)
    found |= below
    if mark is not None:
        found |= {pid for pid in table if pid not in found and _marked(pid, mark)}
    found -= {os.getpid(), *(root for root in roots if table.get(root, (0, 0))[1] != pgid)}
    return sorted(found)


def adopt_orphans() -> bool:
    """Make this process a child subreaper (Linux): a descendant whose parent exits (a daemon's double fork)
    is re-parented to it, not to init, so `run_processes` still finds it below the supervisor. False where
    the system has no such thing; the environment mark still finds what did not clear its environment."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def missing_program(program: str, search_path: str | None) -> str | None:
    """Why `program`, the first word of a command `launch` is to start, cannot run (None when it may): a bare
    name on no directory of `search_path` (the PATH the process will get), or an absolute path that is not an
    executable file. A relative path with a slash names a file of the workspace, which may not exist yet."""
    if "/" not in program:
        return None if shutil.which(program, path=search_path) else f"{program} is not on PATH"
    if os.path.isabs(program) and not (os.path.isfile(program) and os.access(program, os.X_OK)):
        return f"{program} is not an executable file"
    return None


def launch(argv: list[str], cwd: Path, env: dict[str, str], log: Path, header: str = "") -> Started:
    """Start `argv` in `cwd` as the leader of a new session and process group, stdin closed, stdout and
    stderr appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        if header:
            out.write(header.encode())
            out.flush()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            out.write(f"git-lanes: could not start {argv[0]!r}: {exc}\n".encode())
            raise LaunchFailed(f"could not start {argv[0]!r}: {exc.strerror or exc}",
                               hint="check the command in [agent.<cli>] of .lanes.toml, and that it is on PATH"
                               ) from None
    return Started(proc.pid, start_ticks(proc.pid), proc)


def signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pgid: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for every process of group `pgid` to end."""
    deadline = time.monotonic() + timeout
    while group_members(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def end_group(pgid: int, grace: float) -> str:
    """End every process of group `pgid`: SIGTERM, then SIGKILL to what is left after `grace` seconds.
    Returns how it ended: "gone" (nothing ran), "SIGTERM" or "SIGKILL"."""
    if not group_members(pgid):
        return "gone"
    signal_group(pgid, signal.SIGTERM)
    if wait_gone(pgid, grace):
        return "SIGTERM"
    signal_group(pgid, signal.SIGKILL)
    if not wait_gone(pgid, KILL_WAIT_SECONDS):
        raise LanesError(f"processes {group_members(pgid)} of group {pgid} survived SIGKILL", code="unkillable",
                         hint="they may be stuck in the kernel (uninterruptible I/O); look with `ps -o pid,stat`")
    return "SIGKILL"


def end_run(pgid: int, grace: float, roots: tuple[int, ...] = (), mark: bytes | None = None,
            fence: bytes | None = None) -> str:
    """End every process of a run (`run_processes`): SIGTERM, then SIGKILL to what is left after `grace`
    seconds, found afresh each time (a process may start another as it goes). Returns how they ended:
    "gone" (nothing ran), "SIGTERM" or "SIGKILL"."""
    def find() -> list[int]:
        return run_processes(pgid, roots, mark, fence)

    if not find():
        return "gone"
    _signal_all(pgid, find(), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while find():
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
    else:
        return "SIGTERM"
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    while True:
        left = find()
        if not left:
            return "SIGKILL"
        if time.monotonic() >= deadline:
            raise LanesError(f"processes {left} of the run survived SIGKILL", code="unkillable",
                             hint="they may be stuck in the kernel (uninterruptible I/O); look with `ps -o pid,stat`")
        _signal_all(pgid, left, signal.SIGKILL)
        time.sleep(POLL_SECONDS)


def _signal_all(pgid: int, pids: list[int], sig: int) -> None:
    try:
        signal_group(pgid, sig)  # the whole group at once, a process forked a moment ago too
    except PermissionError:
        pass  # the group's id now names another user's group: its members are not ours
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def read_from(path: Path, offset: int) -> tuple[bytes, int]:
    """What `path` holds from byte `offset` on, and the offset after it; nothing for a missing file."""
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            data = log.read()
    except FileNotFoundError:
        return b"", offset
    return data, offset + len(data)
