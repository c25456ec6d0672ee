"""The operation log's records (`refs/lanes/oplog`, local to this repository, like jj's op log): one commit
per lanes operation that moved refs, its message a one-line description, a blank line, then the entry as
one line of JSON:

    {"format": 1, "id", "time", "actor", "description",
     "moves": [{"ref", "old", "new", "introduced", "files"}],      # every lanes ref the operation moved
     "notes": [{"object", "old", "new"}],                          # transition notes it changed (blob ids)
     "ledger": [{"id", "type", "commit"}],                         # ledger ops it appended
     "workspaces": [{"lane", "before", "after"}],                  # workspace files it changed without a ref
     "undoes": null | id, "backup": null | ref,
     "ledger_spans": [{"old", "new"}]}                             # only when any: ledger moves a sync made

`ledger_spans`: a sync records the ledger's move (`old` to `new`) rather than each op it brought in, which it
would have to read one by one while it runs (a thousand ops from a peer: two thirds of a sync's own work); the
ops are `new`'s commits that `old` lacks, read when an undo or `op log` needs them. A git-lanes that predates
the field reads such an entry as moving no ledger op.

`introduced`: the move's new state was on no other lane when it was made (undoing it could strand work built
on it since). `files`: the operation also moved the files of the lane's workspace (a promotion landing in a
checked-out lane, a reset, a sync), so an undo moves them back; otherwise only the ref and HEAD move. On a
lane's deletion, `files` says its workspace went with it, so undoing the deletion makes one again."""

from __future__ import annotations


from git_lanes.errors import UnsupportedFormat
from git_lanes.model import jsontext
from git_lanes.model.frozen import Frozen, field

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1


def _check_format(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise UnsupportedFormat(f"{what} is not a JSON object")
    version = data.get("format")
    if isinstance(version, bool) or not isinstance(version, (int, float)) or int(version) != FORMAT:
        raise UnsupportedFormat(f"{what} has format {version!r}; this git-lanes reads format {FORMAT}",
                                hint="upgrade git-lanes")
    return data


class RefMove(Frozen):
    ref: str
    old: str | None
    new: str | None
    introduced: bool = False
    files: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "old": self.old, "new": self.new, "introduced": self.introduced,
                "files": self.files}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RefMove:
        return cls(data["ref"], data.get("old"), data.get("new"), bool(data.get("introduced")),
                   bool(data.get("files")))


class NoteChange(Frozen):
    """The note of `object` went from blob `old` to blob `new` (None: no note)."""

    object: str
    old: str | None
    new: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"object": self.object, "old": self.old, "new": self.new}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NoteChange:
        return cls(data["object"], data.get("old"), data.get("new"))


class LedgerStep(Frozen):
    """A ledger op the operation appended, and the ledger commit that holds it."""

    id: str
    type: str
    commit: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "commit": self.commit}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerStep:
        return cls(data["id"], data["type"], data["commit"])


class WorkspaceChange(Frozen):
    """Files of `lane`'s workspace went from tree `before` to tree `after` with no ref moving (a restore)."""

    lane: str
    before: str
    after: str

    def to_dict(self) -> dict[str, Any]:
        return {"lane": self.lane, "before": self.before, "after": self.after}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkspaceChange:
        return cls(data["lane"], data["before"], data["after"])


class LedgerSpan(Frozen):
    """The ledger moved from `old` (None: it did not exist) to `new` in one go: the ops are `new`'s commits
    that `old` lacks."""

    old: str | None
    new: str

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerSpan:
        old, new = data.get("old"), data["new"]
        if not isinstance(new, str) or not (old is None or isinstance(old, str)):
            raise TypeError("a ledger span names commits")
        return cls(old, new)


class OpEntry(Frozen):
    id: str
    time: float
    actor: str
    description: str
    moves: tuple[RefMove, ...] = ()
    notes: tuple[NoteChange, ...] = ()
    ledger: tuple[LedgerStep, ...] = ()
    workspaces: tuple[WorkspaceChange, ...] = ()
    undoes: str | None = None
    backup: str | None = None
    commit: str | None = field(default=None, compare=False)  # where it is stored, once read back
    ledger_spans: tuple[LedgerSpan, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.moves or self.notes or self.ledger or self.workspaces or self.ledger_spans)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "id": self.id, "time": self.time, "actor": self.actor,
                "description": self.description, "moves": [m.to_dict() for m in self.moves],
                "notes": [n.to_dict() for n in self.notes], "ledger": [s.to_dict() for s in self.ledger],
                "workspaces": [w.to_dict() for w in self.workspaces], "undoes": self.undoes,
                "backup": self.backup} | \
            ({"ledger_spans": [span.to_dict() for span in self.ledger_spans]} if self.ledger_spans else {})

    @classmethod
    def from_dict(cls, data: Any, commit: str | None = None) -> OpEntry:
        data = _check_format(data, "operation log entry")
        try:
            return cls(data["id"], float(data["time"]), data["actor"], data["description"],
                       tuple(RefMove.from_dict(m) for m in data.get("moves") or ()),
                       tuple(NoteChange.from_dict(n) for n in data.get("notes") or ()),
                       tuple(LedgerStep.from_dict(s) for s in data.get("ledger") or ()),
                       tuple(WorkspaceChange.from_dict(w) for w in data.get("workspaces") or ()),
                       data.get("undoes"), data.get("backup"), commit,
                       tuple(LedgerSpan.from_dict(span) for span in data.get("ledger_spans") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise UnsupportedFormat(f"operation log entry is malformed: {type(exc).__name__} {exc}") from None

    def message(self) -> str:
        return f"{self.description}\n\n{jsontext.dumps(self.to_dict(), sort_keys=True, separators=(',', ':'))}\n"

    @classmethod
    def from_message(cls, message: str, commit: str) -> OpEntry:
        _, _, body = message.partition("\n\n")
        try:
            data = jsontext.loads(body)
        except ValueError:
            raise UnsupportedFormat(f"operation log commit {commit[:8]} holds no entry") from None
        return cls.from_dict(data, commit)
