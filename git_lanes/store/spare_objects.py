"""Files for new loose objects, made ahead by a thread for a process that writes many (a held-open ledger
appender: an MCP server, an SDK session, the dashboard).

Creating a file is the one step of a loose object's write whose cost nobody bounds: ext4 without a journal
scans past every inode its group freed in the last minutes before it hands out one (`recently_deleted` in
fs/ext4/ialloc.c), so on this VM one create took from 25 to 500 us, most of a ledger append, and more the
more the rest of the machine had deleted. Here the files are made before they are needed, by a thread of
their own, as anonymous files (O_TMPFILE) in the objects folder: an object is written into one and linked
to its name through /proc/self/fd, as the kernel lets an anonymous file be named once. A write then waits
on no create and makes one system call fewer (no temporary name to remove), and since an anonymous file
nobody linked vanishes with its process, none is ever left behind, even by kill -9.

Only for a folder this process has already written `AHEAD_AFTER` objects to (a command that writes a few
never starts the thread), one folder at a time, at most `AHEAD` files held; not on a file system in memory,
where a create costs less than the thread's hand-over. Linux only: elsewhere `take` always answers -1 and
the writer creates its file as git does."""

from __future__ import annotations

import _thread
import os

# Files kept ready: an append takes one, a pack three (pack_write); the thread makes one in 0.03-0.5 ms
# while an append takes about 0.5 ms. Few, since a process that ends frees those it did not use, and on
# ext4 without a journal every freed inode slows the creates near it for minutes.
AHEAD = 8
REFILL_BELOW = 4  # the thread is woken when fewer are ready
AHEAD_AFTER = 16  # objects a process writes to one folder before files are made ahead for it
_OPEN = os.O_WRONLY | os.O_CLOEXEC | getattr(os, "O_TMPFILE", 0)
_COUNTED = 64  # folders counted at most (a long test session opens many)


class _Spares:
    def __init__(self) -> None:
        self.lock = _thread.allocate_lock()
        self.folder: str | None = None  # the objects folder files are made ahead for
        self.ready: list[int] = []  # descriptors of anonymous files in `folder`
        self.counts: dict[str, int] = {}  # objects written per folder before any is made ahead
        self.refused: set[str] = set()  # folders where anonymous files cannot be made or linked
        self.wanted = _thread.allocate_lock()  # released to wake the thread
        self.wanted.acquire()
        self.running = False
        self.folders: list[str] | None = []  # fan-out folders to make (None: not listed yet)
        self.used = 0  # objects written into a file made ahead (for tests)

    def take(self, objects_dir: str, shared: int) -> int:
        """A descriptor of an anonymous file in `objects_dir` to write an object into, for the caller to
        close; -1 when none is ready (the caller creates one). `shared`: core.sharedRepository, as
        loose_write reads it."""
        if objects_dir != self.folder:
            self._count(objects_dir, shared)
            return -1
        with self.lock:
            if objects_dir != self.folder or not self.ready:
                handle, left = -1, 0
            else:
                handle = self.ready.pop()
                left = len(self.ready)
        if left < REFILL_BELOW:
            self._wake()
        if handle < 0 and objects_dir == self.folder:
            # None ready (a holder serving a round writes faster than the thread makes them): one made now,
            # as the thread would have: a named temporary costs the same create, plus its name made and removed
            handle = self._made_now(objects_dir)
        if handle >= 0:
            self.used += 1
        return handle

    def _made_now(self, objects_dir: str) -> int:
        try:
            return os.open(objects_dir, _OPEN, 0o444)
        except OSError:  # the thread finds the same and stops making files here
            return -1

    def give_back(self, objects_dir: str, handle: int) -> None:
        """Return an unused `handle` taken for `objects_dir`: it stays ready, or is closed if the process
        moved on to another folder meanwhile."""
        with self.lock:
            if objects_dir == self.folder and len(self.ready) < AHEAD:
                self.ready.append(handle)
                handle = -1
        if handle >= 0:
            os.close(handle)

    def _count(self, objects_dir: str, shared: int) -> None:
        count = self.counts.get(objects_dir, 0) + 1
        if count < AHEAD_AFTER:
            if len(self.counts) >= _COUNTED:
                self.counts.clear()
            self.counts[objects_dir] = count
            return
        self.counts.pop(objects_dir, None)
        if objects_dir in self.refused or not _worth_it(objects_dir):
            self.refused.add(objects_dir)
            return
        with self.lock:  # from now on files are made for this folder, and those of the last one go
            stale, self.ready, self.folder = self.ready, [], objects_dir
            self.folders = [] if shared else None  # fan-out folders still to make: listed by the thread
            start, self.running = not self.running, True
        _close(stale)
        if start:
            _thread.start_new_thread(self._fill, ())
        self._wake()

    def _wake(self) -> None:
        try:
            self.wanted.release()
        except RuntimeError:
            pass  # already woken

    def _fill(self) -> None:
        try:
            while True:
                self.wanted.acquire()
                while True:
                    folder = self.folder
                    if folder is None:
                        break
                    if len(self.ready) >= AHEAD:
                        if self._make_folder(folder):
                            continue
                        break
                    try:
                        handle = os.open(folder, _OPEN, 0o444)
                    except OSError:  # no O_TMPFILE there, the folder is gone, no descriptors left
                        with self.lock:
                            if self.folder == folder:
                                self.refused.add(folder)
                                self.folder = None
                                stale, self.ready = self.ready, []
                            else:
                                stale = []
                        _close(stale)
                        break
                    with self.lock:
                        if self.folder == folder:
                            self.ready.append(handle)
                            handle = -1
                    if handle >= 0:  # the process moved on to another folder meanwhile
                        os.close(handle)
        except BaseException:  # never a traceback from a helper thread: writers just create files again
            with self.lock:
                stale, self.ready, self.folder, self.running = self.ready, [], None, False
            _close(stale)

    def _make_folder(self, folder: str) -> bool:
        """Make one of the 256 fan-out folders `folder` lacks, while no file is wanted: an object that
        finds its folder missing would make it on the write path, which costs what a file's create costs
        (most of a fresh repository's first few thousand objects). Whether one was made. Not in a shared
        repository, whose folders get the modes the writer gives them."""
        if self.folders is None:
            try:
                present = set(os.listdir(folder))
            except OSError:
                present = {f"{number:02x}" for number in range(256)}
            self.folders = [name for name in (f"{number:02x}" for number in range(256)) if name not in present]
        while self.folders and folder == self.folder:
            try:
                os.mkdir(f"{folder}/{self.folders.pop()}")
                return True
            except FileExistsError:
                continue
            except OSError:
                self.folders = []
        return False

    def refuse(self, objects_dir: str) -> None:
        """A file made ahead in `objects_dir` could not be linked there (its objects are on another file
        system, say): make no more for it."""
        with self.lock:
            self.refused.add(objects_dir)
            stale = []
            if self.folder == objects_dir:
                stale, self.ready, self.folder = self.ready, [], None
        _close(stale)


def _close(handles: list[int]) -> None:
    for handle in handles:
        try:
            os.close(handle)
        except OSError:
            pass


def _worth_it(objects_dir: str) -> bool:
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return False
    from git_lanes.store.spare_refs import IN_MEMORY, file_system

    return file_system(objects_dir) not in IN_MEMORY


_spares = _Spares()
# /, opened once: only a call given a folder's descriptor reaches linkat, which can follow the /proc link
_root = -1


def take(objects_dir: str, shared: int = 0) -> int:
    """An anonymous file made ahead in `objects_dir` (see the module's text), or -1. `shared`:
    core.sharedRepository as loose_write reads it."""
    return _spares.take(objects_dir, shared)


def give_back(objects_dir: str, handle: int) -> None:
    """Return a file `take` gave and nothing was written into (see `_Spares.give_back`)."""
    _spares.give_back(objects_dir, handle)


def link(handle: int, path: str, objects_dir: str) -> None:
    """Give the anonymous file `handle` the name `path`, as `os.link` would a named one (FileExistsError
    where an object is there already, FileNotFoundError where its folder is missing). Any other failure
    stops files being made ahead for `objects_dir` and is raised for the caller to write the object anew."""
    global _root
    if _root < 0:
        _root = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.link(f"/proc/self/fd/{handle}", path, src_dir_fd=_root)
    except (FileExistsError, FileNotFoundError):
        raise
    except OSError:
        _spares.refuse(objects_dir)
        raise


def used() -> int:
    """How many objects this process wrote into files made ahead."""
    return _spares.used


def _forked() -> None:
    """A child shares its parent's descriptors: it must never write into the parent's files (both would
    write one file), and has no thread. Its copies are closed; it starts counting afresh."""
    global _spares
    old = _spares
    _spares = _Spares()
    _close(old.ready)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
