"""The merge rules of sync (DESIGN.md §2), as pure decisions: no refs are read or moved here.

Every rule is symmetric (the same two inputs give the same result on either machine), so two machines that
merge the same pair concurrently converge instead of trading merge commits forever."""

from __future__ import annotations


from git_lanes.errors import LanesError, UnsupportedFormat
from git_lanes.model import jsontext
from git_lanes.model import refs
from git_lanes.model.frozen import Frozen
from git_lanes.model.names import validate_lane_name

TYPE_CHECKING = False  # collections.abc for annotations only: collections costs a light sync ~1 ms
if TYPE_CHECKING:
    from collections.abc import Callable

SAME, PULL, PUSH, DIVERGED = "same", "pull", "push", "diverged"
DECIDED = ("accepted", "rejected")


class Move(Frozen):
    """One ref to move on one side: `old` -> `new` (None: absent). The ref's name is the same on both sides."""

    kind: str
    name: str
    ref: str
    old: str | None
    new: str | None
    how: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "ref": self.ref, "from": self.old, "to": self.new,
                "how": self.how}


def classify(local: str | None, remote: str | None, is_ancestor: Callable[[str, str], bool]) -> str:
    """How an only-fast-forward ref travels: nothing to do, pull, push, or diverged (nothing overwritten)."""
    if local == remote:
        return SAME
    if local is None:
        return PULL
    if remote is None:
        return PUSH
    if is_ancestor(local, remote):
        return PULL
    if is_ancestor(remote, local):
        return PUSH
    return DIVERGED


def folders_of(names: set[str]) -> set[str]:
    """Every folder some ref in `names` lies beneath: refs/lanes/heads/a/b gives refs/lanes/heads/a, …"""
    return {name[:i] for name in names for i, char in enumerate(name) if char == "/"}


def folder_clash(names: set[str], folders: set[str], ref: str) -> bool:
    """True when creating `ref` beside `names` (with their `folders`) is impossible in git: a ref cannot
    also be a folder of refs (lane `a` here, lane `a/b` there)."""
    return ref in folders or any(ref[:i] in names for i, char in enumerate(ref) if char == "/")


def how(old: str | None, new: str | None) -> str:
    if old is None:
        return "created"
    if new is None:
        return "deleted"
    return "fast-forward"


def canonical_ref(kind: str, name: str, trunk: str) -> str | None:
    """The one ref git-lanes writes for (kind, name), for the kinds named by a lane: `kind_of` turned round."""
    if kind == "lane":
        return refs.lane_ref(name, trunk)
    if kind == "deleted":
        return refs.deleted_ref(name)
    return None


def kind_of(ref: str, trunk: str) -> tuple[str, str]:
    """(kind, name) of a synced ref: lane, proposal, rejected, deleted, run, ledger or notes."""
    if ref == f"refs/heads/{trunk}":
        return "lane", trunk
    for prefix, kind in ((refs.LANE_HEADS, "lane"), (refs.PROPOSALS, "proposal"), (refs.REJECTED, "rejected"),
                         (refs.DELETED, "deleted"), (refs.RUNS, "run"), (refs.META, "meta")):
        if ref.startswith(prefix):
            name = ref[len(prefix):]
            return kind, refs.deleted_lane(name) if kind == "deleted" else name
    if ref == refs.LEDGER:
        return "ledger", "ledger"
    if ref == refs.NOTES:
        return "notes", "lanes"
    raise ValueError(f"{ref} is not a synced ref")


# -- screening: what a ref must be before sync moves it -----------------------------------------------------
# A file name holds at most 255 bytes, and git writes `<name>.lock` first.
MAX_NAME_BYTES = 250
_HEX = frozenset("0123456789abcdef")


def ref_problem(ref: str, trunk: str, object_kind: str | None) -> str | None:
    """Why sync must not move `ref` (pointing at an object of `object_kind`, None when missing), or None
    when it is a ref `git lanes` itself could have written: the trunk is only ever `refs/heads/<trunk>`, every
    name obeys the rules its command enforces locally, and every synced ref points at a commit."""
    try:
        kind, name = kind_of(ref, trunk)
    except ValueError:
        return "not a ref git-lanes syncs"
    problem = _name_problem(kind, name, ref[len("refs/"):], trunk)
    if problem is None and object_kind != "commit":
        problem = f"points at {('a ' + object_kind) if object_kind else 'an object that is missing'}, not a commit"
    return problem


def _name_problem(kind: str, name: str, raw: str, trunk: str) -> str | None:
    if kind == "lane" and raw == f"lanes/heads/{trunk}":
        return f"a lane named like the trunk {trunk!r}; the trunk is only ever refs/heads/{trunk}"
    if kind in ("proposal", "rejected"):
        if not 4 <= len(name) <= 64 or not set(name) <= _HEX:
            return "not a transition id"
        return None
    if kind == "deleted" and raw[len("lanes/deleted/"):] != refs.flat_name(name):
        # one spelling per lane ('/' as %2F, '%' as %25): two markers standing for one lane would be planned
        # in whatever order they were met
        return "a deletion marker's name is one flat component, '/' written %2F and '%' written %25"
    if kind in ("lane", "deleted", "run", "meta"):
        try:
            validate_lane_name(name)
        except LanesError as exc:
            return exc.message
        if len(raw.encode()) > MAX_NAME_BYTES + len("lanes/heads/"):
            return "too long for a file name"
    return None


# -- notes: one JSON transition record per state commit ---------------------------------------------------
class RecordMerge(Frozen):
    text: str
    conflict: str | None = None


def merge_note(ours: str, theirs: str) -> RecordMerge:
    """Merge two versions of one transition record: a decision beats `proposed`, evaluations are united.

    Two different decisions cannot both stand: `accepted` wins because the accept already moved a lane
    head, which sync never moves back; the clash is reported."""
    if ours == theirs:
        return RecordMerge(ours)
    try:
        a, b = _record(ours), _record(theirs)
    except (ValueError, LanesError):
        # Not a record this version understands: keep one deterministically (on every machine the same) and
        # say so. Never garbage over a record: a newer git-lanes's record first (that version merges it),
        # then one this version reads, and only between two of a kind the larger text.
        return RecordMerge(max((ours, theirs), key=lambda text: (_worth(text), text)), "unreadable note")
    primary, other = sorted((a, b), key=_precedence, reverse=True)
    merged = dict(primary)
    merged["evaluations"] = _united(primary.get("evaluations") or [], other.get("evaluations") or [])
    conflict = None
    if a.get("status") in DECIDED and b.get("status") in DECIDED and a["status"] != b["status"]:
        conflict = f"decided both accepted and rejected; kept {primary['status']}"
    return RecordMerge(jsontext.dumps(merged, indent=2, sort_keys=True) + "\n", conflict)


def note_status(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return _record(text).get("status")
    except (ValueError, LanesError):
        return None


def _record(text: str) -> dict:
    data = jsontext.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    from git_lanes.model.records import check_format  # loaded only when notes differ

    check_format(data, "transition note")
    return data


def _worth(text: str) -> int:
    """2 for a record of a newer major format, 1 for one this version reads, 0 for anything else."""
    try:
        _record(text)
    except UnsupportedFormat as exc:
        return 2 if "format" in exc.message and isinstance(_format_of(text), (int, float)) else 0
    except (ValueError, LanesError):
        return 0
    return 1


def _format_of(text: str) -> object:
    data = jsontext.loads(text)
    found = data.get("format")
    return None if isinstance(found, bool) else found


def _precedence(record: dict) -> tuple:
    status = record.get("status")
    rank = {"accepted": 2, "rejected": 1}.get(status, 0)
    return rank, record.get("decided_at") or 0, jsontext.dumps(record, sort_keys=True)


def _united(first: list, second: list) -> list:
    seen = {jsontext.dumps(e, sort_keys=True) for e in first}
    united = list(first)
    for evaluation in second:
        key = jsontext.dumps(evaluation, sort_keys=True)
        if key not in seen:
            seen.add(key)
            united.append(evaluation)
    return united
