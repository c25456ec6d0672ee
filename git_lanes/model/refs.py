"""The storage contract's ref names (DESIGN.md §1), in one place."""

from __future__ import annotations

DEFAULT_TRUNK = "main"
LANE_HEADS = "refs/lanes/heads/"
PROPOSALS = "refs/lanes/proposals/"
REJECTED = "refs/lanes/rejected/"
BACKUPS = "refs/lanes/backups/"
DELETED = "refs/lanes/deleted/"
LEDGER = "refs/lanes/ledger"
RUNS = "refs/lanes/runs/"
# Facts every machine must agree on; `trunk` names the trunk lane, so a clone can find it.
META = "refs/lanes/meta/"
TRUNK_META = META + "trunk"
NOTES = "refs/notes/lanes"
# This repository's operation log (local, never synced): one commit per lanes operation that moved refs.
OPLOG = "refs/lanes/oplog"
# What an undo replaced, kept reachable (local, like every backup): refs/lanes/backups/-undo/<random id>. A
# lane's name never starts with '-', so no lane's backups (refs/lanes/backups/<lane>/) can share it; older
# versions kept them under undo/, a lane named `undo`'s own. An entry's `backup` names its undo's either way.
UNDO_BACKUPS = BACKUPS + "-undo/"
REMOTE_PREFIX = "refs/lanes-remote/"
# git-lanes' own folder in the main worktree (excluded there); no state may track anything under it
LANES_DIR = ".lanes"
WORKSPACES_DIR = LANES_DIR + "/workspaces"


def is_local(ref: str) -> bool:
    """A ref each machine keeps for itself (backups, the operation log): written by git-lanes, never synced."""
    return ref.startswith(BACKUPS) or ref == OPLOG


def lane_ref(lane: str, trunk: str) -> str:
    return f"refs/heads/{trunk}" if lane == trunk else LANE_HEADS + lane


def deleted_ref(lane: str) -> str:
    """Where a deleted lane's last head is kept. The name is one flat component ('/' written as %2F): lanes
    `p/q` and, later, `p` can both be deleted, where nested names would clash as a file and a folder."""
    return DELETED + flat_name(lane)


def flat_name(lane: str) -> str:
    """A lane name as one path component ('/' as %2F, '%' as %25), for refs and ledger records."""
    return lane.replace("%", "%25").replace("/", "%2F")


def deleted_lane(marker_name: str) -> str:
    """The lane a deletion marker's name (the part after DELETED) stands for."""
    return marker_name.replace("%2F", "/").replace("%25", "%")


def proposal_ref(transition_id: str) -> str:
    return PROPOSALS + transition_id


def rejected_ref(transition_id: str) -> str:
    return REJECTED + transition_id
