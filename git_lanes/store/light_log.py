"""The light store's long histories (issue 15): a range of commits, with each one's header and message, read
from one `git log` (the operation log reads every commit a sync brought in).

`walk` reads `git log head` as git prints it (newest first, as it walks) down to the ancestor, where git is
stopped: unlike `git log head ^ancestor`, which prints nothing until it has walked the whole range, each
commit is read while git walks to the next. `exact` is that second query, for what a walk cannot answer."""

from __future__ import annotations

from git_lanes.store.gitcli import StartedGit, unredirected_env
from git_lanes.store.values import CommitInfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# A commit as `git log` prints it here: id, tree, parents, author, committer time, raw message (%B is the
# message's bytes as stored, re-encoded only when the commit names another encoding, as pygit2 decodes it).
_LOG_FORMAT = "%H%x01%T%x01%P%x01%an%x01%ae%x01%ct%x01%B%x00"


def _log_env() -> dict[str, str]:
    """git's environment for the log. GIT_FLUSH=0: into a pipe, git flushes its output after every commit
    (one write, and a wake-up of this reader, per commit: a thousand for a thousand ops); fully buffered, it
    writes a block at a time, and the walk still reads each commit while git walks on."""
    return unredirected_env({"GIT_FLUSH": "0"})


class UnexpectedLog(Exception):
    """git log failed, or printed what was not asked for: the light store hands the sync over."""


def start(root: str, head: str) -> StartedGit:
    """`git log head`, started now: `walk` reads it."""
    return StartedGit(_log_args(head), root, output=True, env=_log_env())


def walk(started: StartedGit, ancestor: str | None,
         each: Callable[[str, str], object] | None = None) -> list[CommitInfo] | None:
    """The commits of `started` (a `start`ed log) down to `ancestor`, newest first; `each(commit, message)`
    sees every one as it is read. None when the line meets a merge, or ends without meeting `ancestor` (a
    root, a shallow boundary): `exact` answers those."""
    reading = _LogWalk(ancestor, each)
    code = started.pour(reading.take)
    if reading.merge or (code is not None and (code != 0 or reading.rest.strip())):
        return None
    if not reading.met and ancestor is not None:
        return None
    return reading.read


def exact(root: str, ancestor: str | None, head: str) -> list[CommitInfo]:
    """head's commits that `ancestor` lacks, newest first, by one `git log head ^ancestor`."""
    import subprocess

    proc = subprocess.run(["git", *_log_args(head, *([ancestor] if ancestor else []))], cwd=root,
                          capture_output=True, env=_log_env())
    if proc.returncode != 0:
        raise UnexpectedLog(f"git log failed: {proc.stderr.strip()[:200]!r}")
    return [_logged(record) for record in proc.stdout.decode("utf-8", "replace").split("\0")[:-1]]


class _LogWalk:
    """What `walk` has read of `git log head`, fed as git prints it."""

    def __init__(self, ancestor: str | None, each: Callable[[str, str], object] | None) -> None:
        self.ancestor, self.each = ancestor, each
        self.read: list[CommitInfo] = []
        self.rest = b""  # the start of a record whose end has not come yet
        self.met = False  # the walk reached `ancestor`
        self.merge = False  # the walk met a merge first

    def take(self, chunk: bytes) -> bool:
        """Read the records `chunk` completes; False once nothing more is needed."""
        complete, _, self.rest = (self.rest + chunk).rpartition(b"\0")
        if not complete:
            return True
        # Decoded at once, not record by record: a NUL only ever ends a record (git prints none inside one, and
        # never one inside a character), so each record decodes as it would alone.
        for record in complete.decode("utf-8", "replace").split("\0"):
            info = _logged(record)
            if info.oid == self.ancestor:
                self.met = True
                return False
            if len(info.parents) > 1:
                self.merge = True
                return False
            self.read.append(info)
            if self.each is not None:
                self.each(info.oid, info.message)
        return True


def _log_args(head: str, *excluded: str) -> list[str]:
    return ["--no-replace-objects", "log", "--no-show-signature", f"--format={_LOG_FORMAT}", head,
            *(f"^{commit}" for commit in excluded), "--"]


def _logged(record: str) -> CommitInfo:
    """One commit as `_LOG_FORMAT` prints it (decoded)."""
    fields = record.lstrip("\n").split("\x01", 6)
    if len(fields) != 7 or len(fields[0]) != 40:
        raise UnexpectedLog("git log's output is not what was asked for")
    commit, tree, parents, name, email, when, message = fields
    return CommitInfo(commit, tree, tuple(parents.split()), message, f"{name} <{email}>", int(when))
