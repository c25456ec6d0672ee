"""One ref moved by compare-and-swap without libgit2, writing the same files libgit2's transaction writes.

Every ledger append ends in one such move (issue 15). libgit2's `repo.transaction()` spends ~40 system calls
and ~0.15-0.2 ms on it (it reads the config files three times, the ref three times, and HEAD's chain, to
decide on reflogs); git's own protocol needs six: create `<ref>.lock` exclusively, read the ref, check it,
write the new value to the lock, append the reflog line, rename the lock over the ref. Since git, libgit2
and this code all take the same `<ref>.lock`, they exclude each other on the ref as before.

`move` handles only the plain case: one existing ref, not symbolic, loose or packed (the loose file written
over a packed ref wins, as when git or libgit2 update one), not what HEAD points to (libgit2 would log HEAD
too). Anything else raises `Unusual` with nothing changed and the lock let go, and the caller runs libgit2.
A lock found taken is retried as git retries it (`Backoff`): git's housekeeping (`git pack-refs`, `git reflog
expire`, `git gc --auto`) holds our ref's lock for moments, and git's own writers wait that out.
The reflog line is byte for byte the one libgit2 writes (`serialize_reflog_entry` in refdb_fs.c), with the
identity libgit2's reflog uses (`git_reference__log_signature`), which the caller passes in."""

from __future__ import annotations

import os
import time

from git_lanes.errors import Conflict
from git_lanes.store.spare_refs import keep, recycles, reuse, spare_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# (name, email, seconds since the epoch, offset in minutes), as raw bytes where git keeps bytes
Identity = tuple[bytes, bytes, int, int]
_HEX = frozenset("0123456789abcdef")
_SPACE = b" \t\n\v\f\r"  # git__isspace, what libgit2's git_str_rtrim strips
_FILE_MODE = 0o666  # GIT_REFS_FILE_MODE and GIT_REFLOG_FILE_MODE, less the umask
_BACKOFF_MAX = 1000  # BACKOFF_MAX_MULTIPLIER: no single sleep longer than a second
# git's defaults for core.filesRefLockTimeout and core.packedRefsTimeout (git-config(1)), in milliseconds
REF_LOCK_TIMEOUT_MS = 100
PACKED_REFS_TIMEOUT_MS = 1000


class Unusual(Exception):
    """The ref is not in the plain state `move` handles; nothing was changed."""


class LockTaken(Exception):
    """`<ref>.lock` exists: another process is moving the ref (or one died doing so)."""

    def __init__(self, lock: str) -> None:
        # libgit2's own words for it, so callers report it as they reported libgit2's failure
        super().__init__(f"failed to lock file '{lock}' for writing: ")
        self.lock = lock


def move(common_dir: str, name: str, new: str, old: str, message: str, identity: Callable[[], Identity],
         log: bool, patience: Callable[[], int] | None = None, recycle: bool = False) -> None:
    """Move `name` from `old` to `new` under `<name>.lock`, appending a reflog line when `log`. Conflict
    (stale_ref, as the libgit2 path raises it) when the ref is not at `old`; LockTaken when the lock exists
    (for `patience()` milliseconds, asked only then: git's core.filesRefLockTimeout); Unusual when libgit2
    should do it. `recycle`: keep the ref's displaced file for the next move's lock (spare_refs.py)."""
    path = os.path.join(common_dir, name)
    lock = path + ".lock"
    spare = spare_path(common_dir, name) if recycle and recycles(common_dir) else ""
    fd, size = reuse(common_dir, spare, lock) if spare else (-1, 0)
    if fd < 0:
        fd = _take_patiently(lock, patience)
    try:
        current = _read(common_dir, name, path)
        if current != old:
            raise Conflict(f"{name} moved: expected {old[:8]}, found {current[:8] if current else 'nothing'}",
                           code="stale_ref", hint="another writer got there first; re-read and retry")
        if new == current:  # libgit2 then writes nothing, not even a reflog line
            return
        if log and _head_names(common_dir, name):
            raise Unusual("HEAD points to the ref: libgit2 logs HEAD's move too")
        if log:  # with the lock open, as libgit2 logs: stale.py never takes an open lock for abandoned
            _append_log(common_dir, name, reflog_line(current, new, identity(), message))
        if spare:
            keep(path, spare)
        # The value last: a move that fails before the rename (a reflog it cannot write) leaves a reused file
        # as it was, so a reader that found it by the ref's name before it was displaced and opens it late
        # reads a value the ref held. Closed before the rename: a lease held on the ref would make its readers
        # wait for this process (stopped there, for up to /proc/sys/fs/lease-break-time).
        value = f"{new}\n".encode()
        os.pwrite(fd, value, 0)
        if size > len(value):  # a reused file that held more (a hand-edited ref, say)
            os.ftruncate(fd, len(value))
        os.close(fd)
        fd = -1
        os.replace(lock, path)
        lock = ""  # it is the ref now
    finally:
        if fd >= 0:
            os.close(fd)
        if lock:
            try:
                os.unlink(lock)
            except FileNotFoundError:
                pass


def reflog_line(old: str, new: str, who: Identity, message: str) -> bytes:
    """The line libgit2 appends to a reflog, quirks and all: newlines become spaces except in the line's last
    two bytes, then trailing white space goes (with the tab, for an empty message)."""
    name, email, when, offset = who
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset), 60)
    line = b"%s %s %s <%s> %d %s%02d%02d" % (old.encode(), new.encode(), name, email, when, sign.encode(),
                                             hours, minutes)
    line += b"\t" + message.encode()
    if b"\n" in line[:-2]:
        line = line[:-2].replace(b"\n", b" ") + line[-2:]
    return line.rstrip(_SPACE) + b"\n"


class Backoff:
    """git's wait for a taken lock (`lock_file_timeout` in lockfile.c): sleeps of about 1, 4, 9, 16… ms (each
    ±25 %, at most 1 s) until `timeout_ms` has been slept; 0 means no wait, a negative value waits for ever."""

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self._left = float(timeout_ms)
        self._multiplier, self._n = 1, 1

    def again(self) -> bool:
        """Sleep before the next try; False (without sleeping) once the time is up."""
        if self.timeout_ms >= 0 and self._left <= 0:
            return False
        wait_ms = self._multiplier * (750 + int.from_bytes(os.urandom(2), "little") % 500) / 1000
        time.sleep(wait_ms / 1000)
        self._left -= wait_ms
        self._multiplier += 2 * self._n + 1  # (n + 1)² from n², as git steps it
        if self._multiplier > _BACKOFF_MAX:
            self._multiplier = _BACKOFF_MAX
        else:
            self._n += 1
        return True


def _take_patiently(lock: str, patience: Callable[[], int] | None) -> int:
    try:
        return _take(lock)
    except LockTaken:
        if patience is None:
            raise
        backoff = Backoff(patience())
    while backoff.again():
        try:
            return _take(lock)
        except LockTaken:
            pass
    raise LockTaken(lock)


def _take(lock: str) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        return os.open(lock, flags, _FILE_MODE)
    except FileExistsError:
        raise LockTaken(lock) from None
    except FileNotFoundError:  # a packed ref whose folder `git pack-refs` removed
        pass
    except OSError as exc:
        raise Unusual(str(exc)) from None
    try:
        os.makedirs(os.path.dirname(lock), exist_ok=True)
        return os.open(lock, flags, _FILE_MODE)
    except FileExistsError:
        raise LockTaken(lock) from None
    except OSError as exc:
        raise Unusual(str(exc)) from None


def _read(common_dir: str, name: str, path: str) -> str | None:
    """The object id the ref holds: its loose file, else its line in packed-refs, else None."""
    try:
        text = _slurp(path)
    except FileNotFoundError:
        return _packed(common_dir, name)
    except OSError as exc:
        raise Unusual(str(exc)) from None
    oid = text.rstrip(b"\n").decode("ascii", "replace")
    if len(oid) != 40 or not _HEX.issuperset(oid):
        raise Unusual(f"{name} holds {text[:60]!r}, not an object id")  # a symbolic ref, or a damaged one
    return oid


def _slurp(path: str, size: int = 4096) -> bytes:
    """The first `size` bytes of a small file, by bare system calls (`open()` costs ~5 µs more a file)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def _packed(common_dir: str, name: str) -> str | None:
    try:
        with open(os.path.join(common_dir, "packed-refs"), "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unusual(str(exc)) from None
    tail = b" " + name.encode() + b"\n"
    at = data.find(tail)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        if at - start == 40:
            oid = data[start:at].decode("ascii", "replace")
            if not _HEX.issuperset(oid):
                raise Unusual(f"packed-refs holds {oid!r} for {name}")
            return oid
        at = data.find(tail, at + 1)
    if not data.endswith(b"\n") and data.endswith(tail[:-1]):
        raise Unusual("packed-refs does not end in a newline")
    return None


def _head_names(common_dir: str, name: str) -> bool:
    """Whether the repository's HEAD resolves, through symbolic refs, to `name` (libgit2 then logs HEAD's
    move too, `git_refdb_should_write_head_reflog`). Unusual when a branch on the way is itself symbolic.

    Every append asks; HEAD and the branch it names rarely change. So the answer is remembered with both
    files' stat and taken again, for two stats instead of six system calls, while both show that stat, as git
    trusts its index's stat data. Only files last changed `STAT_TRUSTED_AFTER` before they were read are
    remembered: any change since gives a file a later time, whatever else it leaves alike (its size, even a
    reused inode)."""
    head_path = os.path.join(common_dir, "HEAD")
    seen = _HEAD_SEEN.get(common_dir)
    if seen is not None:
        head_stamp, target, target_path, target_stamp = seen
        if _stamp(head_path) == head_stamp and (target is None or _stamp(target_path) == target_stamp):
            return target == name
    began = time.time_ns()
    head_stamp = _stamp(head_path)
    target = _head_target(head_path)
    if target == name:
        return True  # libgit2's to move (not remembered: whether this ref is symbolic was not read)
    target_path = os.path.join(common_dir, target) if target is not None else ""
    target_stamp = _stamp(target_path) if target is not None else None
    if target is not None:
        _check_not_symbolic(target, target_path)
    trusted = began - int(STAT_TRUSTED_AFTER * 1e9)
    if head_stamp is not None and head_stamp[3] < trusted and (target_stamp is None or target_stamp[3] < trusted):
        _HEAD_SEEN[common_dir] = (head_stamp, target, target_path, target_stamp)
    return False


# (inode, device, size, modification time, change time) of a file, in nanoseconds; None when it is missing
Stamp = tuple[int, int, int, int, int]
STAT_TRUSTED_AFTER = 1.0  # seconds
# common dir -> HEAD's stamp, the ref it names (None: an object id), that ref's path and stamp; that ref is
# no symbolic one
_HEAD_SEEN: dict[str, tuple[Stamp | None, str | None, str, Stamp | None]] = {}


def _stamp(path: str) -> Stamp | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_dev, found.st_size, found.st_mtime_ns, found.st_ctime_ns


def _head_target(head_path: str) -> str | None:
    """The ref HEAD names, None when it holds an object id."""
    try:
        head = _slurp(head_path)
    except OSError as exc:
        raise Unusual(str(exc)) from None
    if not head.startswith(b"ref:"):
        return None
    return head[4:].strip().decode("utf-8", "replace")


def _check_not_symbolic(target: str, target_path: str) -> None:
    """Unusual when ref `target` is a symbolic ref; a ref that holds an object id, or none (unborn, or packed:
    packed refs are never symbolic), passes."""
    try:
        symbolic = _slurp(target_path, 4) == b"ref:"
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return
    except OSError as exc:
        raise Unusual(str(exc)) from None
    if symbolic:
        raise Unusual(f"{target} is a symbolic ref")


def _append_log(common_dir: str, name: str, line: bytes) -> None:
    log = os.path.join(common_dir, "logs", name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
    try:
        fd = os.open(log, flags, _FILE_MODE)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(log), exist_ok=True)
        fd = os.open(log, flags, _FILE_MODE)
    except IsADirectoryError:  # reflogs of deleted refs beneath: libgit2 clears them or refuses
        raise Unusual(f"{log} is a folder") from None
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
