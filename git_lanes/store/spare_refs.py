"""A ref's displaced files, kept to become its next lock (the ledger's ref: loose_ref.move).

git's protocol frees the ref's old file on every move and creates a new lock file. On a file system that
must scan recently freed inodes to create a file (ext4 without a journal skips each inode freed in the last
minutes, `recently_deleted` in fs/ext4/ialloc.c), that scan grew with every append and took most of the
ledger's time on such a disk. Reused, a move creates and frees nothing. The reuse, and why it is safe, is
`reuse`'s to tell."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from _signal import SIGURG  # type: ignore[import-not-found]  # not `signal`: it imports enum

SPARES = "lanes-spares"  # in the common dir, outside refs/: git never looks there
IN_MEMORY = frozenset({"tmpfs", "ramfs"})
_RECYCLES: dict[str, bool] = {}  # common dir -> whether moves there reuse files (recycles)
_NO_LEASES = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP})
_LEASES = hasattr(fcntl, "F_SETLEASE") and hasattr(fcntl, "F_SETSIG")


def spare_path(common_dir: str, name: str) -> str:
    """Where the file `name` last displaced waits to become its next lock."""
    return os.path.join(common_dir, SPARES, name.replace("/", "%"))


def obstacle(common_dir: str, name: str) -> str | None:
    """What stops `name`'s moves from reusing files here for good, as `doctor` names it (a move just takes its
    lock the ordinary way, slower on a disk): something not a folder where the spares go, a folder where the
    spare goes. None when nothing does. Not a symlink or an unsafe spare: the next move lets that go."""
    folder = os.path.join(common_dir, SPARES)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        return f"{SPARES} in the git directory is not a folder"
    if os.path.isdir(folder) and not os.access(folder, os.W_OK | os.X_OK):
        return f"{SPARES} in the git directory cannot be written"
    slot = spare_path(common_dir, name)
    if os.path.isdir(slot) and not os.path.islink(slot):
        return f"{SPARES}/{os.path.basename(slot)} is a folder"
    return None


def recycles(common_dir: str) -> bool:
    """Whether reusing a ref's files pays where `common_dir` is: on a disk, creating and freeing a file
    costs more than the links and the lease (moves ran 1.7× as fast on ext4 with a journal, 5× without one);
    in memory (tmpfs) a third less fast. Looked up once per folder."""
    known = _RECYCLES.get(common_dir)
    if known is None:  # leases are Linux's (fcntl has no F_SETLEASE elsewhere): nothing is reused without them
        known = _RECYCLES[common_dir] = _LEASES and file_system(common_dir) not in IN_MEMORY
    return known


def file_system(path: str) -> str:
    """The type of the file system `path` is on (`ext4`, `tmpfs`…), as /proc/self/mountinfo names the
    mount of its device; "" where that cannot be told."""
    try:
        device = os.stat(path).st_dev
        with open("/proc/self/mountinfo", "rb") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ""
    key = b"%d:%d" % (os.major(device), os.minor(device))
    for line in lines:
        fields = line.split(b" ")
        if len(fields) > 2 and fields[2] == key and b"-" in fields[3:]:
            at = fields.index(b"-", 3)
            return fields[at + 1].decode("utf-8", "replace") if at + 1 < len(fields) else ""
    return ""


def reuse(common_dir: str, spare: str, lock: str) -> tuple[int, int]:
    """`lock` taken by giving it the file of an earlier value of the ref, kept at `spare`: its descriptor and
    size. -1 where that is not certainly safe, with the spare let go: the caller takes the lock the ordinary
    way.

    Safe because git's readers rely on a ref's file never changing once in place: this one is rewritten only
    once it is no ref (displaced by an earlier move's rename, reached only by `spare` and now the lock, names
    no reader opens), and only if no open file anywhere refers to it. The kernel grants a write lease only
    then (fcntl(2)), so a reader that opened the ref before it was displaced and has not yet closed it is
    seen; the lease is held while the new value is written, so an open racing with the check waits for it.
    A lease broken meanwhile is signalled with SIGURG, ignored by default, instead of SIGIO, which would end
    the process. Where leases are refused (another user's file, NFS), nothing is reused."""
    try:
        os.link(spare, lock)  # exclusive as O_EXCL is: it fails if the lock exists
    except OSError:  # no spare (the first move, a crash, another writer took it), or the lock is taken
        return -1, 0
    fd = -1
    try:
        # never through a symlink put at the spare's place: it would name any file, the ref itself even
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        os.unlink(spare)
        found = os.fstat(fd)
        # one name left (the lock): never a file the ref or a hard-linked copy of .git still names
        if found.st_nlink == 1 and stat.S_ISREG(found.st_mode) and _unopened(fd, common_dir):
            return fd, found.st_size
    except OSError:
        pass
    except BaseException:  # interrupted (Ctrl-C in a session that lives on): no lock left held open
        _let_go(fd, spare, lock)
        raise
    _let_go(fd, spare, lock)
    return -1, 0


def _let_go(fd: int, spare: str, lock: str) -> None:
    """Close `fd` and remove the spare (while we hold the lock no one else keeps one there) and our lock."""
    if fd >= 0:
        os.close(fd)
    for leftover in (spare, lock):
        try:
            os.unlink(leftover)
        except OSError:
            pass


def _unopened(fd: int, common_dir: str) -> bool:
    """Whether `fd` is the only open file on its inode: a write lease is granted only then. The lease stays
    until `fd` is closed (after the new value is written), so no one can open the file in between. Where
    the file system has no leases (NFS, FUSE), its folder stops reusing files: every try would fail."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except OSError as exc:  # EAGAIN: open elsewhere; EACCES: another user's file
        if exc.errno in _NO_LEASES:
            _RECYCLES[common_dir] = False
        return False
    return True


def keep(path: str, spare: str) -> None:
    """Keep the ref's file, about to be displaced, at `spare`. A spare already there stays (a writer that
    found it unsafe removes it); the displaced file is then freed as git frees it."""
    try:
        os.link(path, spare)
    except FileNotFoundError:
        if os.path.lexists(path):  # the spares' folder is missing
            try:
                os.makedirs(os.path.dirname(spare), exist_ok=True)
                os.link(path, spare)
            except OSError:
                pass
    except OSError:  # a spare there already, a packed ref (no file), hard links refused
        pass
