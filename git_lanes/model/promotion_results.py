"""What `promote` and `evaluate` return, as records (DESIGN §3): the plan of a promotion (what each side
changed since the merge base, and the paths changed on both), then what became of it."""

from __future__ import annotations

from typing import Any, Literal

from git_lanes.model.record import Record, meta
from git_lanes.model.records import Transition
from git_lanes.model.results import PathChange
from git_lanes.model.workspace_results import Decided, WorktreeUpdate


class Collision(Record):
    """A path both sides changed: how the lane changed it and how the target did. For a file on one side
    where the other changed something beneath it as a directory, one kind is `beneath` and `beneath` lists
    those deeper paths."""

    path: str
    lane: str
    target: str
    beneath: tuple[PathChange, ...] = meta(omit="empty", default=())


class Way(Record):
    """One way out of a collision, with the command that takes it."""

    way: Literal["rerun", "resolve", "force"]
    command: str
    what: str


class Unsnapshotted(Record):
    """Edits in the promoted lane's workspace that no state holds, so the promotion did not take them (it takes
    the lane's accepted head only): how many paths, which, and how to snapshot them and promote again. Never
    included, never discarded: they stay in the workspace."""

    lane: str
    workspace: str
    count: int
    paths: tuple[str, ...]
    hint: str


UNSNAPSHOTTED_DOC = "edits in the lane's workspace that no state holds, not promoted; null when there are none"


class PromotionPlan(Record):
    """Promoting `lane` into `target`: their heads, their merge base, what changed on one side only, what
    changed identically on both, and the collisions (changed differently on both)."""

    lane: str
    target: str
    lane_head: str
    target_head: str
    merge_base: str | None
    collisions: tuple[Collision, ...]
    lane_only: tuple[PathChange, ...]
    target_only: tuple[PathChange, ...]
    same_on_both: tuple[str, ...]


class PromotionPreview(PromotionPlan):
    """`promote --dry-run`: the plan and its verdict, nothing written; `ways` out when it would collide, and
    the collision as the `problem` the real run would stop with (so the dry run exits as it would).
    `left_pending`: the lane's proposals still awaiting a decision (promotion takes its accepted head)."""

    status: Literal["up_to_date", "collision", "clean"]
    left_pending: tuple[str, ...]
    problem: dict[str, Any] | None = meta(
        default=None, doc="the error the real run would raise (its record, with `exit_code`); null when it "
                          "would not stop")
    dry_run: bool = True
    ways: tuple[Way, ...] = meta(omit="empty", default=())
    unsnapshotted: Unsnapshotted | None = meta(default=None, doc=UNSNAPSHOTTED_DOC)


class UpToDate(PromotionPlan):
    """A promotion with nothing to do: the target already holds everything the lane does."""

    status: Literal["up_to_date"]
    transition: None
    attempts: int
    left_pending: tuple[str, ...]
    unsnapshotted: Unsnapshotted | None = meta(default=None, doc=UNSNAPSHOTTED_DOC)


class Promoted(PromotionPlan):
    """A promotion proposed on the target, and what became of it (`status` is its transition's): accepted,
    or still proposed (not asked to accept, or held for a person). `forced`: the colliding paths where the
    lane's version won (the target's is in `backup`). `worktree`: the target's checked-out worktree brought
    up to date. `attempts`: how many tries a moving target took."""

    status: Literal["proposed", "accepted", "rejected"]
    transition: Decided
    forced: tuple[str, ...]
    backup: str | None
    worktree: WorktreeUpdate | None
    attempts: int
    left_pending: tuple[str, ...]
    unsnapshotted: Unsnapshotted | None = meta(default=None, doc=UNSNAPSHOTTED_DOC)


class Evaluated(Transition):
    """A pending proposal with the gates' new evaluations recorded, and the names of the gates that ran."""

    gates: tuple[str, ...] = ()
