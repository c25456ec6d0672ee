"""The light store's long histories (issue 15): a range of commits, each with its parents, read from one
`git log` (a sync's ancestry check, over the thousand ops a peer may bring).

`walk` reads `git log head` as git prints it (newest first, as it walks) down to the ancestor, where git is
stopped: unlike `git log head ^ancestor`, which prints nothing until it has walked the whole range, each
commit is read while git walks to the next. `exact` is that second query, for what a walk cannot answer.
Only ids are printed: a sync reads no message of the ops it brings (the operation log records the ledger's
move, model/oplog.py), and printing them cost git as much again as its walk."""

from __future__ import annotations

from git_lanes.store.gitcli import StartedGit, unredirected_env

# A commit as `git log` prints it here: its id, then its parents' ids.
_LOG_FORMAT = "%H%x01%P%x00"

Line = list[tuple[str, tuple[str, ...]]]  # (commit, parents), newest first


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


def walk(started: StartedGit, ancestor: str | None) -> Line | None:
    """The commits of `started` (a `start`ed log) down to `ancestor`, newest first. None when the line meets
    a merge, or ends without meeting `ancestor` (a root, a shallow boundary): `exact` answers those."""
    reading = _LogWalk(ancestor)
    code = started.pour(reading.take)
    if reading.merge or (code is not None and (code != 0 or reading.rest.strip())):
        return None
    if not reading.met and ancestor is not None:
        return None
    return reading.read


def exact(root: str, ancestor: str | None, head: str) -> Line:
    """head's commits that `ancestor` lacks, newest first, by one `git log head ^ancestor`."""
    import subprocess

    proc = subprocess.run(["git", *_log_args(head, *([ancestor] if ancestor else []))], cwd=root,
                          capture_output=True, env=_log_env())
    if proc.returncode != 0:
        raise UnexpectedLog(f"git log failed: {proc.stderr.strip()[:200]!r}")
    return [_logged(record) for record in proc.stdout.decode("ascii", "replace").split("\0")[:-1]]


class _LogWalk:
    """What `walk` has read of `git log head`, fed as git prints it."""

    def __init__(self, ancestor: str | None) -> None:
        self.ancestor = ancestor
        self.read: Line = []
        self.rest = b""  # the start of a record whose end has not come yet
        self.met = False  # the walk reached `ancestor`
        self.merge = False  # the walk met a merge first

    def take(self, chunk: bytes) -> bool:
        """Read the records `chunk` completes; False once nothing more is needed."""
        complete, _, self.rest = (self.rest + chunk).rpartition(b"\0")
        if not complete:
            return True
        for record in complete.decode("ascii", "replace").split("\0"):
            commit, parents = _logged(record)
            if commit == self.ancestor:
                self.met = True
                return False
            if len(parents) > 1:
                self.merge = True
                return False
            self.read.append((commit, parents))
        return True


def _log_args(head: str, *excluded: str) -> list[str]:
    return ["--no-replace-objects", "log", "--no-show-signature", f"--format={_LOG_FORMAT}", head,
            *(f"^{commit}" for commit in excluded), "--"]


def _logged(record: str) -> tuple[str, tuple[str, ...]]:
    """One commit as `_LOG_FORMAT` prints it: (id, parents)."""
    commit, separator, parents = record.lstrip("\n").partition("\x01")
    if not separator or len(commit) != 40:
        raise UnexpectedLog("git log's output is not what was asked for")
    return commit, tuple(parents.split())
