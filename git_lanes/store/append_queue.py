"""The ledger's append queue (ledger/combine.py): transient files in `<common git dir>/lanes-queue/`, like
`lanes.lock` and the op-log journals, never state.

- `<name>.op`: a waiting writer's op and what its commit needs, written whole by rename; `name` sorts by
  arrival.
- `<name>.taken`: the same entry once a holder took it to apply (by rename, so a writer withdrawing its entry
  and a holder taking it cannot both succeed). Any found when a turn begins is a dead holder's, to serve
  again.
- `<name>.done`: its outcome, written whole by rename once the ledger holds the op (or the fold refused it).
- `batch`: the holder's intent for a round, written before it moves the ledger (the old and new head, and
  every outcome), so a holder that dies between moving the ledger and leaving the outcomes leaves the next
  one what it needs to settle them.
- `<pid>-<thread>.spare`, `batch.spare`: files kept for the next write instead of freed (below).

Files are reused rather than made and freed: an entry's file becomes its `.taken`, then (rewritten by the
holder once the ledger took the op) its `.done`, then its waiter's spare, then that waiter's next `.op`; the
journal's file waits as `batch.spare` for the next round. On ext4 without a journal every file created scans
the inodes freed nearby in the last minutes (`recently_deleted`): a queue that made two files and freed two
per op spent a quarter of eight writers' machine time there. A file is rewritten only once renamed to a name
no one else writes (a `.tmp`), only if it is a plain file with no other name, and only under the rules that
already made its name private: an entry's `.taken` is the holder's, under the lock, once its op is on the
ledger (the journal holds its outcome should the holder die mid-write), and a spare is its thread's. A spare
is trusted for half the stale age (a `.tmp` older than that may be dropped as a dead writer's); one whose
process is gone is dropped by the next holder.

Wake-ups travel as datagrams over Unix sockets in the abstract namespace, named for the repository: one per
waiting entry (bound before the entry is put, gone with its process) and one the holder binds while it
serves, which each new entry announces itself to. A holder wakes the first waiter of a round it served and
each waiter the next, so the holder is not preempted once per waiter; once it lets the lock go it wakes the
oldest entry still queued, whose writer takes the lock.

Everything here is read and written under the writers' lock, except a waiter's `put`, `outcome`,
`withdraw` and wake-ups: files are whole or absent, and an outcome is read only by its own waiter."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import threading
import time

from git_lanes.store.stale import signalled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FOLDER = "lanes-queue"
JOURNAL = "batch"
JOURNAL_SPARE = "batch.spare"
# An outcome nobody came for (its waiter was interrupted after its op was read) is removed by a holder once it
# is this old and its waiter no longer listens; a waiter that runs reads its outcome as soon as it is woken.
STALE_SECONDS = 600.0
_PREFIXES: dict[str, bytes] = {}


class Listener:
    """Where one process hears its wake-ups."""

    def __init__(self, address: bytes) -> None:
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._socket.bind(address)
        except OSError:
            self._socket.close()
            raise

    def drain(self) -> None:
        """Forget the wake-ups already heard."""
        self._socket.setblocking(False)
        try:
            while True:
                self._socket.recv(16)
        except BlockingIOError:
            pass

    def wait(self, seconds: float) -> None:
        """Until a wake-up comes, or `seconds` pass."""
        self._socket.settimeout(seconds)
        try:
            self._socket.recv(16)
        except TimeoutError:
            pass

    def close(self) -> None:
        self._socket.close()


class AppendQueue:
    def __init__(self, common_dir: str | os.PathLike[str]) -> None:
        self.folder = os.path.join(os.fspath(common_dir), FOLDER)
        self._base = self.folder + os.sep  # names here are the queue's own, never a path: joined by hand
        prefix = _PREFIXES.get(self.folder)
        if prefix is None:
            digest = hashlib.sha1(os.fsencode(os.path.realpath(self.folder))).hexdigest()[:24]
            prefix = _PREFIXES[self.folder] = b"\0git-lanes-queue/" + digest.encode()
        self._prefix = prefix
        self._served: list[str] = []  # outcomes left outside a round (`finish`): woken by `wake`
        # Thread id: when it left its spare (`outcome`), monotonic. A thread that ends leaves its row; ids are
        # reused by the threads that follow, so there are never more rows than threads ever ran at once.
        self._parked: dict[int, float] = {}

    # -- files -------------------------------------------------------------------------------------------
    def _path(self, name: str, suffix: str = "") -> str:
        return self._base + name + suffix

    # Plain descriptors rather than open(): a file object with its buffer and text layer cost more than
    # the write itself, and each queued op writes two files and reads three.
    def _write(self, path: str, data: dict[str, Any], reuse: str | None = None) -> None:
        """Put `data` at `path` whole, in the file at `reuse` if it can be taken (see the module's notes)."""
        temporary = f"{path}.{os.getpid()}.tmp"  # per process: no two threads write one entry's file
        content = json.dumps(data, separators=(",", ":")).encode()
        fd = _reused(reuse, temporary, len(content)) if reuse is not None else None
        if fd is None:
            try:
                fd = os.open(temporary, _WRITING, 0o644)
            except FileNotFoundError:
                os.makedirs(self.folder, exist_ok=True)
                fd = os.open(temporary, _WRITING, 0o644)
        try:
            try:
                view = memoryview(content)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(temporary, path)
        except BaseException:  # a full disk, a directory where the file goes: leave no half-written file
            _remove(temporary)
            raise

    def _read(self, path: str) -> Any:
        # Gone, or not ours (what we write is renamed in whole): a directory, a file we may not read, junk;
        # a FIFO named like an entry reads as empty rather than blocking, and a symbolic link (never ours)
        # is not followed, to /dev/zero say, which would be read without end.
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
            return json.loads(b"".join(chunks))
        except (OSError, ValueError, RecursionError):
            return None
        finally:
            os.close(fd)

    def _spare(self) -> str:
        return self._path(f"{os.getpid()}-{threading.get_ident()}.spare")

    # -- wake-ups ----------------------------------------------------------------------------------------
    def _send(self, address: bytes) -> bool:
        """Whether anyone listens at `address` (it has been sent a wake-up)."""
        try:
            _sender().sendto(b"1", address)
        except BlockingIOError:  # its buffer is full: it has wake-ups to read already
            return True
        except OSError:  # nobody listens: its process is gone, or no holder serves
            return False
        return True

    def _wake(self, name: str) -> bool:
        return self._send(self._prefix + b"/" + name.encode())

    def listen(self, name: str) -> Listener:
        """Where the waiter of entry `name` is woken: its outcome is there, or the lock is free."""
        return Listener(self._prefix + b"/" + name.encode())

    def hear_arrivals(self) -> Listener | None:
        """Where a holder serving the queue hears of entries put (None: another process listens there)."""
        try:
            return Listener(self._prefix + b"/holder")
        except OSError:
            return None

    def announce(self) -> None:
        self._send(self._prefix + b"/holder")

    # -- the waiter's side -------------------------------------------------------------------------------
    @staticmethod
    def new_name(op_id: str) -> str:
        """A name for an entry of op `op_id`, which sorts by arrival."""
        return f"{time.time_ns():020d}-{op_id}"

    def put(self, name: str, entry: dict[str, Any]) -> None:
        """Queue `entry` (an op and what its commit needs) as `name`."""
        parked = self._parked.pop(threading.get_ident(), None)
        fresh = parked is not None and time.monotonic() - parked < STALE_SECONDS / 2
        self._write(self._path(name, ".op"), {**entry, "pid": os.getpid()}, self._spare() if fresh else None)

    def outcome(self, name: str) -> dict[str, Any] | None:
        """The outcome a holder left for entry `name` (read once), or None while there is none."""
        path = self._path(name, ".done")
        found = self._read(path)
        if found is None:
            return None
        try:
            os.rename(path, self._spare())  # for this thread's next entry
            self._parked[threading.get_ident()] = time.monotonic()
        except OSError:
            _remove(path)
        if not isinstance(found, dict):
            return None
        then = found.pop("then", None)
        if isinstance(then, str):
            self._wake(then)  # the next waiter of its round, woken here rather than by the busy holder
        return found

    def withdraw(self, name: str) -> bool:
        """Take entry `name` back; False when a holder took it first (its outcome is coming: read it)."""
        try:
            os.unlink(self._path(name, ".op"))
        except FileNotFoundError:
            return False
        except OSError:
            pass
        return True

    # -- the holder's side -------------------------------------------------------------------------------
    def listing(self) -> list[str]:
        """The folder's file names, in order (entries by arrival)."""
        try:
            return sorted(os.listdir(self.folder))
        except (FileNotFoundError, NotADirectoryError):  # the latter: not ours in its place (doctor names it)
            return []

    def waiting(self, limit: int, listed: list[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Up to `limit` entries, oldest first, of writers that are alive (among `listed`, a `listing` taken
        just before, if given). The entry of a process that is gone is removed: it died before its op was
        applied, as if it had died waiting for the lock."""
        files = self.listing() if listed is None else listed
        found: list[tuple[str, dict[str, Any]]] = []
        now = time.time()
        for file in files:
            if file.endswith((".done", ".tmp")):  # an outcome nobody came for, a write its process died in
                self._drop_stale(file, now)
            elif file.endswith(".spare") and not spare_owner_alive(file):
                _remove(self._path(file))
            elif file.endswith((".op", ".taken")) and len(found) < limit:
                entry = self.live_entry(file)
                if entry is not None:
                    found.append((file.rsplit(".", 1)[0], entry))
                else:
                    _remove(self._path(file))
        return found

    def live_entry(self, file: str) -> dict[str, Any] | None:
        """The entry in `file` (an `.op` or `.taken` file name), if it is one and its writer is alive."""
        entry = self._read(self._path(file))
        return entry if isinstance(entry, dict) and _alive(entry.get("pid")) else None

    def take(self, name: str) -> bool:
        """Claim entry `name` to apply it: False when its writer took it back first."""
        try:
            os.rename(self._path(name, ".op"), self._path(name, ".taken"))
        except FileNotFoundError:
            return os.path.exists(self._path(name, ".taken"))  # taken by a holder that died: serve it again
        except OSError:
            return False
        return True

    def stale(self, file: str, now: float) -> bool:
        """Whether `file` (an outcome, a `.tmp`) is a leftover: older than the stale age and, for an outcome,
        its waiter not listening. A waiter stopped (Ctrl-Z) or a machine asleep for longer, or a clock stepped
        forward, leaves a live waiter's outcome that old: dropped, the waiter would apply its op again itself."""
        try:
            if now - os.stat(self._path(file)).st_mtime <= STALE_SECONDS:
                return False
        except OSError:  # gone
            return False
        return not (file.endswith(".done") and self._wake(file[:-5]))

    def _drop_stale(self, file: str, now: float) -> None:
        if self.stale(file, now):
            _remove(self._path(file))  # or not ours to remove (see `_remove`)

    def finish(self, name: str, outcome: dict[str, Any]) -> None:
        """Leave entry `name` (taken) its outcome and take it off the queue; its waiter is woken by `wake`."""
        self._write(self._path(name, ".done"), outcome, self._path(name, ".taken"))
        self.drop(name)
        self._served.append(name)

    def finish_all(self, outcomes: dict[str, dict[str, Any]]) -> None:
        """`finish` every entry of a round, waking its first waiter now: each waiter wakes the next."""
        names = list(outcomes)
        for index, name in enumerate(names):
            then = {"then": names[index + 1]} if index + 1 < len(names) else {}
            # A round's entries were all taken, none is left as .op; the ledger holds their ops, and the
            # journal their outcomes, so the entry's file may become its outcome.
            taken = self._path(name, ".taken")
            self._write(self._path(name, ".done"), {**outcomes[name], **then}, taken)
            _remove(taken)  # not reused (gone, say, when settling a dead holder's round)
        if names:
            self._wake(names[0])

    def drop(self, name: str) -> None:
        _remove(self._path(name, ".op"))
        _remove(self._path(name, ".taken"))

    def take_back(self, name: str) -> None:
        """With the lock held, take back this thread's entry `name` to apply it itself, its file kept as the
        thread's spare."""
        try:
            os.rename(self._path(name, ".op"), self._spare())
            self._parked[threading.get_ident()] = time.monotonic()
        except OSError:
            pass
        self.drop(name)

    def wake(self) -> None:
        """Once the lock is let go: wake the waiters `finish` left an outcome, and the oldest entry still
        queued, whose writer takes the lock."""
        served, self._served = self._served, []
        for name in served:
            self._wake(name)
        files = [n for n in self.listing() if n.endswith(".op")]
        for file in files:
            if self._wake(file[:-3]):
                return

    def begin(self, intent: dict[str, Any]) -> None:
        """Journal the round the holder is about to move the ledger to."""
        self._write(self._path(JOURNAL), intent, self._path(JOURNAL_SPARE))

    def pending_intent(self) -> dict[str, Any] | None:
        """A round a holder journaled and did not see through (it died), or None."""
        found = self._read(self._path(JOURNAL))
        return found if isinstance(found, dict) else None

    def end(self) -> None:
        try:
            os.rename(self._path(JOURNAL), self._path(JOURNAL_SPARE))  # for the next round's journal
        except OSError:
            _remove(self._path(JOURNAL))


_WRITING = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
_REWRITING = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK


def _reused(spare: str, temporary: str, size: int) -> int | None:
    """A descriptor to write `size` bytes to, of the file at `spare` renamed to `temporary`; None when there
    is none, or what is there is not a file only the queue names (it is then left as it was)."""
    try:
        fd = os.open(spare, _REWRITING)
    except OSError:  # gone; a symbolic link, a directory, a FIFO with no reader: not ours to rewrite
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:  # a FIFO with a reader, a linked copy
            raise OSError("not a file of the queue's own")
        os.rename(spare, temporary)
        os.ftruncate(fd, size)
    except OSError:
        os.close(fd)
        return None
    return fd


def _remove(path: str) -> None:
    # Something here we cannot remove (a directory named like an entry, a read-only folder) is left alone and
    # skipped, never an error: appends must not fail for a stray file in a transient folder.
    try:
        os.unlink(path)
    except OSError:
        pass


def spare_owner_alive(file: str) -> bool:
    """Whether the process that left spare `file` (`<pid>-<thread>.spare`) lives: the next holder drops it if
    not. `batch.spare` is the holders' own."""
    if file == JOURNAL_SPARE:
        return True
    pid = file.split("-", 1)[0]
    return pid.isdigit() and _alive(int(pid))
_SENDER: list[socket.socket] = []


def _sender() -> socket.socket:
    """The process's socket for sending wake-ups, made once (three go out per queued op). It is never bound:
    a datagram needs no address of its own to be sent, so threads and forked children share it safely."""
    if not _SENDER:
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sender.setblocking(False)
        _SENDER.append(sender)
        if _SENDER[0] is not sender:  # another thread made one first: it is the one everybody uses
            _SENDER.remove(sender)
            sender.close()
    return _SENDER[0]


def _alive(pid: object) -> bool:
    """Whether `pid`, as an entry names it (any JSON), is a process that runs."""
    return isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and signalled(pid)
