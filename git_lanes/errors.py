"""The one error hierarchy. Every face maps these to its own protocol: an exit code in the CLI, an error
result in MCP, a deny in a hook, a status in HTTP."""

from __future__ import annotations

from _thread import _local  # threading.local itself, without loading threading on the agent-hook path

TYPE_CHECKING = False  # not `from typing import …`: the agent-hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

# The exit codes, decided by the error's type (its `exit_code`), never by a face.
EXIT_OK = 0
EXIT_USER = 1
EXIT_USAGE = 2
EXIT_CONFLICT = 3
EXIT_GATE = 4
EXIT_REMOTE = 5
EXIT_INTERNAL = 6

# What a face tells its user once, beside the result, about a problem the operation went on past (a lost
# operation log head it started afresh): the lower layers never print; each face takes them per call (the
# CLI writes each on stderr). Per thread: the long-lived faces run each call on a pooled worker thread, and
# one call's notices must neither wait for the next call nor reach another caller.
_LOCAL = _local()
# A caller of `Lanes` itself (a script, a test) may never take them: the newest are kept, not all.
NOTICES_KEPT = 100


def notice(message: str) -> None:
    pending = _pending()
    pending.append(message)
    del pending[:-NOTICES_KEPT]


def take_notices() -> list[str]:
    """The notices this thread was given since its last call, oldest first."""
    pending = _pending()
    taken = pending[:]
    del pending[:]
    return taken


def _pending() -> list[str]:
    pending: list[str] | None = getattr(_LOCAL, "notices", None)
    if pending is None:
        pending = _LOCAL.notices = []
    return pending


# A hint names what to do in every face's words, so a command it advises is named as a command path and
# its arguments (`command("task list", ready=True)`), never spelt for one face by hand. It is written into
# the hint as the CLI spells it, in backticks (`git lanes task list --ready`): the CLI shows hints as they
# are, and each other face translates every such reference into its own control (the MCP server into the
# tool it offers, REST into its route: git_lanes/model/advice.py), keeping the CLI's words, labelled as
# such, where it has none. A test holds every reference to a real command and its real options. An option of
# the command being answered (`pass --force`) is named the same way, with `option("force")`.
COMMAND_PREFIX = "git lanes"
# What a shell reads as one plain word (shlex.quote's set: shlex itself is not loaded on the hook path).
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def command(path: str, *arguments: object, **options: object) -> str:
    """The command `path` ("show", "task list") with its `arguments`, and its `options` by name (`onto=x`
    is `--onto x`, `w=x` is `-w x`, `force=True` is `--force`, `from_=x` is `--from x`; None and False leave
    one out), as a hint names it. An argument in capitals (`ID`, `LANE`) or `...` stands for what the reader
    fills in."""
    return f"`{command_line(path, *arguments, **options)}`"


def command_line(path: str, *arguments: object, **options: object) -> str:
    """`command` without its backticks, for a record that holds a command in a field of its own (a
    collision's ways on); a hint quoting it puts the backticks back, so that every face can translate it."""
    words = path.split() + [str(a) for a in arguments]
    for name, value in options.items():
        words += _option_words(name, value)
    return f"{COMMAND_PREFIX} {' '.join(map(_word, words))}"


def option(name: str, value: object = True) -> str:
    """An option of the command the hint answers (the one that was run), as `command` spells one (`force` is
    `--force`, `("branch", "NAME")` is `--branch NAME`), in backticks: each other face names its own
    parameter of that name instead (`force=true`). A long name only: that is what the faces translate."""
    return f"`{' '.join(map(_word, _option_words(name, value)))}`"


def _option_words(name: str, value: object) -> list[str]:
    if value is None or value is False:
        return []
    name = name.rstrip("_")  # `from_`: a Python keyword
    flag = ("-" if len(name) == 1 else "--") + name.replace("_", "-")
    return [flag] if value is True else [flag, str(value)]


def _word(text: str) -> str:
    if text and all(c in _PLAIN for c in text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


class LanesError(Exception):
    """A failure a user can act on. `code` is stable across releases; `hint` says what to do next."""

    exit_code = EXIT_USER
    code = "error"
    # Whether the text (`str(exc)`) carries the hint on a line of its own after the message, as the CLI prints
    # them: set by a face that hands the error itself on to its user's code (the SDK), where printing it shows
    # the text alone. `message` and `hint` stay apart either way.
    hint_in_text = False

    def __init__(self, message: str, *, hint: str | None = None, code: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code:
            self.code = code
        self.details = details or {}

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}\nhint: {self.hint}" if self.hint_in_text and self.hint else text

    def to_dict(self) -> dict[str, Any]:
        record = {"error": self.code, "message": self.message}
        if self.hint:
            record["hint"] = self.hint
        if self.details:
            record.update(self.details)
        return record


class UserError(LanesError):
    """Input that cannot be acted on as given (an invalid name, a missing argument): fix it and retry."""

    code = "invalid"


class NotFound(LanesError):
    """No lane, task, ticket, agent or transition by that name or id prefix."""

    code = "not_found"


class Ambiguous(UserError):
    """An id prefix that matches more than one thing: give more characters."""

    code = "ambiguous"


class NotARepository(UserError):
    """Not inside a git repository, or one not set up for lanes (`git lanes init`)."""

    code = "not_a_repository"


class RepositoryGone(NotARepository):
    """The repository a long-lived holder (MCP server, dashboard, SDK session) opened was removed or moved
    since: nothing more can be done with it there."""

    code = "repository_gone"


class Refused(UserError):
    """The request is well-formed but would lose work or break a rule."""

    code = "refused"


class Conflict(LanesError):
    """Something moved underneath us (a compare-and-swap failed) or both sides changed the same path."""

    exit_code = EXIT_CONFLICT
    code = "conflict"


class StaleState(Conflict):
    """The thing is already in, or already past, the state the request needs: a decided proposal, a done
    task, a resolved post, a closed ticket, a deleted lane, an ended run, an undone operation. Whoever asked
    read it before it moved (or asks twice): a stale read, so exit 3 like every lost race, never 1 (bad
    input). A request that is idempotent by design (ending an ended run, an owner renewing its claim) is
    answered, not refused."""


class GateFailed(LanesError):
    """A required evaluation gate failed: the state was rejected (and kept as signal) with the gates' verdicts."""

    exit_code = EXIT_GATE
    code = "gate_failed"


class UnsupportedFormat(LanesError):
    """A record written by a newer git-lanes: upgrade to read it."""

    code = "unsupported_format"


class MalformedRecord(UnsupportedFormat):
    """A stored record of a known format whose content is not what that format says (a peer's bad note or
    ledger record): readers set it aside and show the rest; `git lanes doctor` lists every one."""

    code = "malformed_record"


class RemoteFailed(LanesError):
    """The git transport failed (unreachable, refused by a hook, bad credentials): nothing was changed there."""

    exit_code = EXIT_REMOTE
    code = "remote_failed"


class InternalError(LanesError):
    """A bug or an environment failure nobody anticipated: still one line, and a code of its own."""

    exit_code = EXIT_INTERNAL
    code = "internal"


class WriteFailed(LanesError):
    """The file system refused a write: no space left (or no quota), no permission, or mounted read-only.
    What was being written is not there at all (objects and refs are written whole or not), so the same
    command succeeds once the cause is fixed. `details` carries the `path` and the `cause`: `no_space`,
    `no_permission` or `read_only`."""

    code = "repository_unwritable"


_PERMISSION_HINT = ("give your user write permission there (as git needs for its own writes), or run as the "
                    "repository's owner")
# errno name -> (the cause, what to do), for the refusals a user fixes outside git-lanes; git reports the same
# ones as "insufficient permission for adding an object to repository database" or "unable to write".
_WRITE_CAUSES = {
    "ENOSPC": ("no_space", "free space on its file system, then run the command again"),
    "EDQUOT": ("no_space", "free space within your disk quota (or have it raised), then run the command again"),
    "EROFS": ("read_only", "its file system is mounted read-only: remount it writable, or work in a writable clone"),
    "EACCES": ("no_permission", _PERMISSION_HINT),
    "EPERM": ("no_permission", _PERMISSION_HINT),
}


def write_failed(exc: BaseException, what: str | None = None, where: object = None) -> WriteFailed | None:
    """`exc` as a WriteFailed when it is the file system refusing a write (see `_WRITE_CAUSES`), else None.
    `what` (e.g. "add an object to the repository database") and `where` (a path) say what failed; without
    them, the path the error names. libgit2's errors carry no errno, only the reason's text at their end (an
    OSError, or a pygit2.GitError: "failed to write out file: No space left on device")."""
    import errno
    import os

    if isinstance(exc, OSError):
        cause = errno.errorcode.get(exc.errno) if exc.errno is not None else write_cause(str(exc))
        filename = exc.filename
    elif type(exc).__name__ == "GitError":  # by name: errors.py loads no pygit2 (the agent-hook path)
        cause, filename = write_cause(str(exc)), None
        if what is None and cause in _WRITE_CAUSES:
            return write_refused(str(exc), cause)  # libgit2's own words say what failed
    else:
        return None
    if cause not in _WRITE_CAUSES:
        return None
    place = os.fspath(where) if isinstance(where, (str, os.PathLike)) else filename
    if what is None and place is None and cause in ("EACCES", "EPERM"):
        return None  # no path and no write named: a signal sent, say, not a file refused
    reason = os.strerror(getattr(errno, cause))
    if what is not None:
        message = f"cannot {what}{f' {place}' if place else ''}: {reason}"
    elif place:
        message = f"cannot write {place}: {reason}"
    else:
        message = f"a write failed: {reason}"
    return write_refused(message, cause, str(place) if place else None)


def write_cause(text: str) -> str | None:
    """The errno name in `_WRITE_CAUSES` whose reason ends `text` (git and libgit2 say why a write failed
    so: "unable to write loose object file: No space left on device"), or that git's "insufficient
    permission for adding an object to repository database" means; None for anything else."""
    import errno
    import os

    if text.startswith("insufficient permission"):
        return "EACCES"
    text = text.rstrip(". ")
    return next((name for name in _WRITE_CAUSES if hasattr(errno, name)
                 and text.endswith(os.strerror(getattr(errno, name)))), None)


def write_refused(message: str, cause: str, path: str | None = None) -> WriteFailed:
    """The WriteFailed for `cause` (an errno name in `_WRITE_CAUSES`), with what to do about it."""
    kind, hint = _WRITE_CAUSES[cause]
    return WriteFailed(message, hint=hint, details={"cause": kind} | ({"path": path} if path else {}))


def problem(exc: LanesError) -> dict[str, Any]:
    """What a result carries when its work is done but part of it needs a person (a diverged lane, a
    collision found by a dry run): the error's record with its exit code, so every face answers as it would
    for the error itself."""
    return exc.to_dict() | {"exit_code": exc.exit_code}
