"""What `pull`, `push` and `sync` return, as a record: the merge report (DESIGN §2; git-bug's merge statuses
rather than an exception), one definition for the CLI's `--json`, the MCP tools, the SDK and the OpenAPI
document."""

from __future__ import annotations

from typing import Any, Literal

from git_lanes.model.record import Record, key, meta


class RefMove(Record):
    """One ref that moved (or, held back, would move) on one side: `from` -> `to` (null: absent), and how
    (a fast-forward, a replayed ledger, a decided proposal...). `side` only for what a push held back."""

    kind: str
    name: str
    ref: str
    old: str | None = key("from")
    new: str | None = key("to")
    how: str = ""
    side: Literal["local", "remote"] | None = meta(omit="none", default=None)


class Diverged(Record):
    """A ref both sides moved (nothing overwritten), or that cannot exist beside a ref of the other side
    (`clash`: lane `a` on one side, `a/b` on the other)."""

    kind: str
    name: str
    ref: str
    local: str | None
    remote: str | None
    base: str | None = meta(omit="none", default=None, doc="their merge base")
    remote_copy: str | None = meta(omit="none", default=None, doc="where the remote's version is kept here")
    clash: Literal["local", "remote"] | None = meta(omit="none", default=None)


class KeptLane(Record):
    """A lane the remote deleted that stays here, because its workspace holds it."""

    lane: str
    head: str | None
    reason: str
    hint: str


class InvalidRef(Record):
    """A ref under the lanes namespace that git-lanes did not write and cannot read: nothing moved for it."""

    ref: str
    side: Literal["local", "remote"]
    oid: str | None
    reason: str
    hint: str


class RefusedOp(Record):
    """A local ledger op that no longer held on the remote's log (a claim someone else won first): recorded as
    refused in its place (`refused_as`), and reported to its actor."""

    id: str
    type: str
    actor: str
    time: float
    args: dict[str, Any]
    refusal: dict[str, Any]
    refused_as: str


class WorkspaceSync(Record):
    """A workspace whose lane moved: brought up to date, or why not (`paths`: why -> the paths in the way)."""

    lane: str | None
    path: str
    status: Literal["updated", "blocked", "stale", "broken"]
    reason: str | None = meta(omit="none", default=None)
    paths: dict[str, tuple[str, ...]] | None = meta(omit="none", default=None)
    behind: str | None = meta(omit="none", default=None, doc="the trunk's head its files still lack")
    hint: str | None = meta(omit="none", default=None)


class NoteConflict(Record):
    state: str
    reason: str


class NotesMerged(Record):
    """Transition notes merged record by record, and those that could not be."""

    merged: int
    conflicts: tuple[NoteConflict, ...]


class LedgerSynced(Record):
    """Ledger ops that came in, went out, were replayed on top of the remote's, and were refused."""

    came_in: int
    went_out: int
    replayed: int
    refused: int


class SyncReport(Record):
    """What a pull, push or sync did: refs that came in and went out, what was held back for a sync, what
    diverged (nothing overwritten), lanes kept, refs refused as invalid, ledger ops refused per actor, the
    workspaces brought up to date, and the notes and ledger merged."""

    remote: str
    mode: Literal["pull", "push", "sync"]
    attempts: int
    came_in: tuple[RefMove, ...]
    went_out: tuple[RefMove, ...]
    held_back: tuple[RefMove, ...]
    diverged: tuple[Diverged, ...]
    kept: tuple[KeptLane, ...]
    invalid: tuple[InvalidRef, ...]
    refused: dict[str, tuple[RefusedOp, ...]]
    workspaces: tuple[WorkspaceSync, ...]
    notes: NotesMerged
    ledger: LedgerSynced
    problem: dict[str, Any] | None = meta(
        default=None, doc="what a person must settle (a diverged lane, an invalid ref) as the error it amounts "
                          "to, with `exit_code`; null when nothing")
