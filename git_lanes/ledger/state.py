"""The materialized state after a ledger commit (a checkpoint's tree with the edits of the delta commits since
laid over it: model/ledger_delta.py), read record by record, and the edits an op makes to it.

Every record is a JSON object with a `format` version; reading one in a format this git-lanes does not know
is a clear error rather than a guess."""

from __future__ import annotations

import math

from git_lanes.errors import MalformedRecord, UnsupportedFormat, command
from git_lanes.model import jsontext
from git_lanes.model.format import FORMAT_VERSION as FORMAT
from git_lanes.model.format import check_format
from git_lanes.model.ledger_delta import EMPTY, Materialized, overlaid_names

TYPE_CHECKING = False  # the light sync path reads ledger state without loading pygit2, nor typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from git_lanes.store import Store

    Record = dict[str, Any]


MALFORMED_HINT = f"a peer's ledger holds it; {command('doctor')} lists every unreadable record"


class State:
    """Read-only view of one ledger state: tree `tree` (None: the empty ledger), or `at`: a checkpoint's tree
    with the overlay of the delta commits since. Blobs are read lazily, so a reader pays for the records it
    touches, never for the ledger's length."""

    def __init__(self, store: Store, tree: str | None = None, *, at: Materialized | None = None) -> None:
        at = at or (EMPTY if tree is None else Materialized(tree, {}, 0))
        self.store = store
        self.at = at
        self.tree = at.tree
        self._overlay = at.overlay
        self._records: dict[str, Record | None] = {}
        self._shared: set[str] = set()  # paths `peek` left holding the overlay's own record
        # What the fold learned from this state's records (which it checked, say), so an op that reads one
        # record three times checks it once. The state never changes, so nothing in it goes stale.
        self.memo: dict[str, Any] = {}

    def get(self, path: str) -> Record | None:
        """The record at `path`, this state's own: a record of the overlay is copied once per state, since it
        is the very one the process keeps for every later state and the next checkpoint writes out
        (model/ledger_delta.py), so a caller that changed it would change the ledger it sees. Callers of one
        state share the record: it is to be read; `copy_of` gives one to change."""
        if path in self._shared:
            record = self._records[path] = _copy(self._records[path])
            self._shared.discard(path)
            return record
        if path not in self._records:
            self._records[path] = self._load(path)
            if path in self._overlay and self._records[path] is not None:
                self._records[path] = _copy(self._records[path])
        return self._records[path]

    def peek(self, path: str) -> Record | None:
        """`get` for the fold, which only reads (an op changes `Tx.get`'s copy): the overlay's record as it
        is, not copied, on the ledger's append path."""
        if path not in self._records:
            record = self._records[path] = self._load(path)
            if path in self._overlay and record is not None:
                self._shared.add(path)
        return self._records[path]

    def memo_for(self, path: str) -> dict[str, Any]:
        """The memo that holds for the record at `path` as this state reads it."""
        return self.memo

    def copy_of(self, path: str) -> Record | None:
        """A record of its own for the caller to change (`get` shares one per state): parsed afresh, the
        cheapest deep copy of JSON. A record `get` has not read yet is parsed (and checked) only for the
        caller. A record of the overlay is shared with every state after it: the caller gets a copy."""
        if path not in self._records:
            record = self._load(path)
            if record is None:
                self._records[path] = None
            elif path in self._overlay:
                record = _copy(record)
            return record
        if self._records[path] is None:
            return None
        if path in self._overlay:
            return _copy(self._records[path])
        copy: Record = jsontext.loads(self._read(path) or b"{}")
        return copy

    def _read(self, path: str) -> bytes | None:
        if self.tree is None:
            return None
        try:
            return self.store.read_record(self.tree, path)
        except KeyError as exc:
            raise UnsupportedFormat(f"ledger record {path} cannot be read: object {exc.args[0]} is missing",
                                    hint="run `git fsck`; the repository may be damaged") from None

    def _load(self, path: str) -> Record | None:
        if path in self._overlay:
            record = self._overlay[path]
            if record is None:
                return None
        else:
            data = self._read(path)
            if data is None:
                return None
            # What no git-lanes writes is malformed (listings set it aside); a newer major format is not, and
            # fails clearly (DESIGN §1: upgrade to read it).
            try:
                record = jsontext.loads(data)
            except ValueError as exc:
                raise MalformedRecord(f"ledger record {path} is not JSON: {exc}", hint=MALFORMED_HINT) from None
            except RecursionError:  # a peer's tree: bad input, not an internal error
                raise MalformedRecord(f"ledger record {path} is not JSON we read: nested too deeply",
                                      hint=MALFORMED_HINT) from None
        if not isinstance(record, dict):
            raise MalformedRecord(f"ledger record {path} is not a JSON object", hint=MALFORMED_HINT)
        found = record.get("format")
        if type(found) is int and found == FORMAT:  # what every git-lanes of this format writes
            return record
        if isinstance(found, bool) or not isinstance(found, (int, float)) or not FORMAT <= found < float("inf"):
            raise MalformedRecord(f"ledger record {path} has format {found!r}", hint=MALFORMED_HINT)
        check_format(record, f"ledger record {path}")
        return record

    def names(self, directory: str) -> list[str]:
        """The sorted names directly under `directory` (files and subdirectories)."""
        if self.tree is None and not self._overlay:
            return []
        return sorted(self._entries(directory))

    def tree_names(self, directory: str) -> list[str]:
        """`names` in the checkpoint's tree alone, without the overlay (`at.overlay`) laid over it."""
        return sorted(self._tree_entries(directory))

    def files(self, directory: str) -> Iterator[str]:
        """Every record path under `directory`, recursively, in path order."""
        if self.tree is None and not self._overlay:
            return
        prefix = f"{directory}/" if directory else ""  # the root ("") is a folder like any other
        for name, is_folder in sorted(self._entries(directory).items()):
            path = prefix + name
            if is_folder:
                yield from self.files(path)
            else:
                yield path

    def _entries(self, directory: str) -> dict[str, bool]:
        entries = self._tree_entries(directory)
        if not self._overlay:
            return entries
        return overlaid_names(entries, self._overlay, directory, lambda folder: next(self.files(folder), None)
                              is not None)

    def _tree_entries(self, directory: str) -> dict[str, bool]:
        if self.tree is None:
            return {}
        try:
            return self.store.record_names(self.tree, directory)
        except KeyError as exc:
            raise UnsupportedFormat(f"ledger folder {directory} cannot be read: object {exc.args[0]} is "
                                    "missing", hint="run `git fsck`; the repository may be damaged") from None

    def changed_paths(self, other: State) -> list[str]:
        """The record paths whose content differs between this state and `other`, sorted."""
        tree_changes = [] if self.tree == other.tree else \
            [change.path for change in self.store.diff_trees(self.tree, other.tree)]
        candidates = {*self._overlay, *other._overlay, *tree_changes}  # what either overlay or tree touched
        return sorted(path for path in candidates if self.differs(other, path))

    def differs(self, other: State, path: str) -> bool:
        """Whether `path` holds other content in `other` than here."""
        return self.raw(path) != other.raw(path)

    def raw(self, path: str) -> object:
        """What `path` holds, compared as data: a record from the overlay, else the parsed blob (or its bytes
        when they are not JSON)."""
        if path in self._overlay:
            return self._overlay[path]
        data = self._read(path)
        if data is None:
            return None
        try:
            return jsontext.loads(data)
        except (ValueError, RecursionError):
            return data


def _copy(record: Record | None) -> Record:
    """What `json.loads(json.dumps(record))` gives (the deep copy an op may change), built directly when the
    record holds nothing but JSON's own types, in a third of the time: an op copies two or three records of
    the overlay. Anything else (a tuple, a key that is not a string, NaN) takes the round trip."""
    try:
        copy: Record = _plain(record)
    except (_NotPlain, RecursionError):
        copy = jsontext.loads(jsontext.dumps(record))
    return copy


class _NotPlain(Exception):
    pass


_SCALARS = (str, int, bool, type(None))


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        copy = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            copy[key] = _plain(item)
        return copy
    if kind is list:
        return [_plain(item) for item in value]
    if kind in _SCALARS or (kind is float and math.isfinite(value)):
        return value
    raise _NotPlain


class Tx:
    """A state being changed by one op: reads see the op's own writes; `edits` is what the op changed."""

    def __init__(self, base: State) -> None:
        self.base = base
        self.edits: dict[str, Record | None] = {}

    def get(self, path: str) -> Record | None:
        if path in self.edits:
            record = self.edits[path]
            # a copy all the way down: the edit becomes the overlay the process keeps for the next states
            return None if record is None else _copy(record)
        return self.base.copy_of(path)

    def peek(self, path: str) -> Record | None:
        """The record at `path` to read, not to change: no copy of its own (`get` makes one)."""
        if path in self.edits:
            return self.edits[path]
        return self.base.peek(path)

    def memo_for(self, path: str) -> dict[str, Any] | None:
        """The base state's memo while this op has not written `path` (its record is the base's); None after."""
        return None if path in self.edits else self.base.memo

    def put(self, path: str, record: Record) -> None:
        self.edits[path] = {**record, "format": FORMAT}

    def delete(self, path: str) -> None:
        self.edits[path] = None

    def names(self, directory: str) -> list[str]:
        found = set(self.base.names(directory))
        prefix = f"{directory}/" if directory else ""
        for path, record in self.edits.items():
            if not path.startswith(prefix):
                continue
            child, nested, _ = path[len(prefix):].partition("/")
            if record is not None:
                found.add(child)  # a file, or a directory an edit beneath it creates
            elif not nested:
                found.discard(child)
        return sorted(found)

