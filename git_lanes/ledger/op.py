"""Ledger operations: what one commit of `refs/lanes/ledger` records.

A ledger commit's message is a one-line summary naming the actor and the op (so `git log --oneline` reads as
the operation log), a blank line, then the op as one line of JSON:
`{"format": 1, "id", "type", "actor", "time", "args", "result"}`; a delta commit adds a line after it,
`{"edits": ...}`, the records the op wrote (model/ledger_delta.py)."""

from __future__ import annotations

import math

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.format import FORMAT_VERSION as FORMAT
from git_lanes.model.format import check_format
from git_lanes.model.frozen import Frozen, field
from git_lanes.model import jsontext
from git_lanes.model.ids import Actor, LedgerId, random_hex
from git_lanes.model.ledger_delta import EDITS
from git_lanes.model.text import is_text

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from typing import Any


class Op(Frozen):
    """One operation. `id`, `type`, `actor`, `time` and `args` are fixed when it is made and survive a
    replay on another head (sync); `result` is what the fold decided the last time it was applied."""

    id: str
    type: str
    actor: Actor
    time: float
    args: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not LedgerId.valid(self.id):
            raise UnsupportedFormat(f"ledger op id {self.id!r} is not 16 lowercase hex digits")
        if not self.type or not isinstance(self.type, str) or not is_text(self.type):
            raise UnsupportedFormat("ledger op without a type")
        object.__setattr__(self, "actor", Actor(self.actor))
        # a bool is an int to Python, not a time (`"time": true` in a peer's commit)
        if isinstance(self.time, bool) or not isinstance(self.time, (int, float)) or not math.isfinite(self.time):
            raise UnsupportedFormat(f"ledger op {self.id} has no valid time")

    def with_result(self, result: dict[str, Any]) -> Op:
        """This op with `result`: its other fields were checked when it was built, and are not again."""
        recorded: Op = object.__new__(type(self))
        recorded.__dict__.update(self.__dict__, result=result)
        return recorded

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "id": self.id, "type": self.type, "actor": self.actor, "time": self.time,
                "args": self.args, "result": self.result}

    @classmethod
    def from_dict(cls, data: Any) -> Op:
        if not isinstance(data, dict):
            raise UnsupportedFormat("ledger op is not a JSON object")
        check_format(data, "ledger op")
        args = data.get("args") or {}
        if not isinstance(args, dict):  # a peer's commit: refused in words, not by dict()'s TypeError
            raise UnsupportedFormat(f"ledger op args are not a JSON object: {type(args).__name__}")
        try:
            return cls(id=data["id"], type=data["type"], actor=data["actor"], time=data["time"],
                       args=dict(args), result=data.get("result"))
        except KeyError as exc:
            raise UnsupportedFormat(f"ledger op lacks {exc.args[0]!r}") from None


def make_op(op_type: str, actor: str, args: dict[str, Any], time: float) -> Op:
    """A new op with a fresh random id (64 bits, hex)."""
    return Op(id=random_hex(8), type=op_type, actor=Actor(actor), time=round(time, 3), args=args)


def encode_message(op: Op, summary: str, edits: dict[str, Any] | None = None) -> str:
    """The commit message of `op`; `edits` (path -> record, None: deleted) for a delta commit
    (model/ledger_delta.py)."""
    line = " ".join(summary.split()) or f"{op.actor}: {op.type}"
    if not line.isprintable():
        # The summary repeats the op's text. Whatever slipped past the model's text rule, a NUL must not cut
        # the message before the op's JSON (libgit2 ends a message there), nor a lone surrogate fail its write.
        line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        line = "".join(char if char.isprintable() else "\ufffd" for char in line)
    text = f"{line}\n\n{jsontext.dumps(op.to_dict(), sort_keys=True, ensure_ascii=False)}\n"
    if edits is None:
        return text
    return text + jsontext.dumps({EDITS: edits}, sort_keys=True, ensure_ascii=False) + "\n"


def decode_message(message: str, commit: str) -> Op:
    _, sep, body = message.partition("\n\n")
    body = body.partition("\n")[0]  # the op is one line; a delta's edits follow it
    if not sep or not body.strip():
        raise UnsupportedFormat(f"commit {commit[:8]} is not a ledger op (no JSON after the summary)")
    try:
        data = jsontext.loads(body)
    except ValueError as exc:
        raise UnsupportedFormat(f"commit {commit[:8]} is not a ledger op (its JSON is invalid: {exc})") from None
    except RecursionError:
        raise UnsupportedFormat(f"commit {commit[:8]} is not a ledger op (its JSON is nested too deeply)") from None
    return Op.from_dict(data)


_HEX = "0123456789abcdef"


def op_identity(message: str, commit: str) -> tuple[str, str]:
    """`(op.id, op.type)` of `decode_message(message, commit)`, refusing what it refuses, with the same error.

    The operation log shows only these two of every op a sync brought in (thousands at a time), so an op in
    the shape `encode_message` writes is checked in place, field by field, as `Op` would check it, without
    building one (half the cost). Anything else, valid or not, goes through `decode_message` itself."""
    # The op is read where it stands in the message: a delta's edits after it (as long again, or longer, in
    # a busy ledger) are neither copied nor scanned.
    start = message.find("\n\n") + 2
    data = None
    if start > 1 and message.startswith("{", start):
        try:  # what json.loads(the first line) does for a line with no whitespace around its JSON
            data, end = jsontext.scan(message, start)
        except (StopIteration, ValueError, RecursionError):
            data = None
        else:
            if not (end == len(message) or message[end] == "\n") or message.find("\n", start, end) >= 0:
                data = None
    if type(data) is dict:
        op_id, op_type, when, args, actor = data.get("id"), data.get("type"), data.get("time"), \
            data.get("args"), data.get("actor")
        if type(data.get("format")) is int and data["format"] == FORMAT \
                and type(op_id) is str and len(op_id) == LedgerId.LENGTH and not op_id.strip(_HEX) \
                and type(op_type) is str and op_type.isprintable() and op_type \
                and type(actor) is str and (actor in _ACTORS or _valid_actor(actor)) \
                and type(when) is not bool and isinstance(when, (int, float)) and math.isfinite(when) \
                and (args is None or type(args) is dict):
            return op_id, op_type
    op = decode_message(message, commit)
    return op.id, op.type


# Actors `op_identity` found valid. A sync reads thousands of ops by a handful of actors, and whether a text
# names a valid actor depends on the text alone; bounded, as a peer's ops may name any number of them.
_ACTORS: set[str] = set()
_ACTORS_KEPT = 1024


def _valid_actor(actor: str) -> bool:
    if not Actor.valid(actor):
        return False
    if len(_ACTORS) < _ACTORS_KEPT:
        _ACTORS.add(actor)
    return True


def newer_format(message: str) -> int | None:
    """The major format of the op ledger commit message `message` holds where it is newer than this git-lanes
    reads (a peer's newer git-lanes wrote it), else None (this format, or no op at all)."""
    try:
        data = jsontext.loads(message.partition("\n\n")[2].partition("\n")[0])
    except (ValueError, RecursionError):
        return None
    found = data.get("format") if isinstance(data, dict) else None
    if isinstance(found, (int, float)) and not isinstance(found, bool) and math.isfinite(found) \
            and int(found) > FORMAT:
        return int(found)
    return None

