"""Upkeep (`git lanes gc`): what may go once it is older than the age asked for, and the tombstones that keep
it gone. Rejected states (superseded proposals among them), backups, the logs of ended runs (and of stopped
spawned runs, which never end by themselves), and workspaces whose lane was deleted are pruned; lane heads,
pending proposals, deletion markers and everything they reach stay, and `git gc` then drops only objects
nothing reaches.

A pruned ref that travels (a rejected state, a run's log) would come back from any remote that still has it,
so pruning records a tombstone in the ledger (`pruned/<oid[:2]>/<oid>.json`: the refs that pointed at that
commit); the ledger travels and merges like every op, and sync deletes a ref its tombstone covers on either
side instead of copying it back, as a lane's deletion marker does."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from git_lanes.domain import lanes, transitions
from git_lanes.domain.context import Context
from git_lanes.domain.tombstones import TRAVELLING, tombstone_path
from git_lanes.errors import LanesError, UserError
from git_lanes.ledger import Op, Tx
from git_lanes.model import refs
from git_lanes.model.text import quoted

DAY = 86400.0
AGE_HINT = "give a number with a unit: 30d, 12h, 90m, 2w, 45s (0 prunes everything eligible)"
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": DAY, "w": 7 * DAY}
DEFAULT_AGE = 30 * DAY
MAX_PRUNED_PER_OP = 5000


def parse_age(text: str) -> float:
    """`30d`, `12h`, `90m`, `2w`, `45s` or a bare number of seconds."""
    value = text.strip().lower()
    unit = UNITS.get(value[-1:], None) if value else None
    number = value[:-1] if unit is not None else value
    try:
        seconds = float(number) * (unit or 1.0)
    except ValueError:
        seconds = -1.0
    if not value or seconds < 0 or seconds != seconds:
        raise UserError(f"invalid age {quoted(text)}", code="invalid_age", hint=AGE_HINT)
    return seconds


def check_age(seconds: float, now: float, given: object) -> float:
    """`seconds` if it is an age something can have now: none reaches back before 1970, where git's dates
    start (a typo like `99999999999d` would prune nothing without a word, an infinite one cannot be asked
    of git at all)."""
    if not 0 <= seconds <= now:  # nan fails both
        reason = "it reaches back before 1970" if seconds > now else "it is not a number of seconds from 0 up"
        raise UserError(f"invalid age {quoted(str(given))}: {reason}", code="invalid_age", hint=AGE_HINT)
    return seconds


@dataclass
class Candidates:
    """What gc would remove, by kind; each entry a dict naming it (`ref`, `oid`, `age`, ...)."""

    rejected: list[dict] = field(default_factory=list)
    superseded: list[dict] = field(default_factory=list)
    backups: list[dict] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)
    workspaces: list[dict] = field(default_factory=list)
    kept: list[dict] = field(default_factory=list)

    def refs(self) -> list[dict]:
        return self.rejected + self.superseded + self.backups + self.runs

    def to_dict(self) -> dict:
        return {"rejected": self.rejected, "superseded": self.superseded, "backups": self.backups,
                "runs": self.runs, "workspaces": self.workspaces}


def find(ctx: Context, cutoff: float, ended_runs: dict[str, tuple[str, float]]) -> Candidates:
    """Everything older than `cutoff` that gc removes. `ended_runs` maps each run done with to the head of its
    log that said so and when it was done with: a log that moved since (a run taken up again) stays."""
    found = Candidates()
    store = ctx.store
    for ref, oid in sorted(store.list_refs(refs.REJECTED).items()):
        if store.object_kind(oid) != "commit":  # no state git-lanes wrote, and no age: `doctor` names it
            continue
        record = transitions.load_readable(ctx, oid)
        when = (record.decided_at or record.created_at) if record is not None else store.commit_info(oid).time
        if when is None or when > cutoff:
            continue
        entry = {"ref": ref, "oid": oid, "transition": ref[len(refs.REJECTED):], "time": when,
                 "lane": record.lane if record else None, "reason": record.reason if record else None}
        if record is not None and record.status != "rejected":
            # Accepted on another machine while rejected here: the merged record says accepted and the lane
            # moved to the state, so only the stale ref goes; the record is the lane's history.
            entry["record_kept"] = record.status
        superseded = record is not None and (record.reason or "").startswith("superseded")
        (found.superseded if superseded else found.rejected).append(entry)
    for ref, oid in sorted(store.list_refs(refs.BACKUPS).items()):
        if store.object_kind(oid) != "commit":
            continue
        when = store.commit_info(oid).time
        if when <= cutoff:
            found.backups.append({"ref": ref, "oid": oid, "time": when})
    for ref, oid in sorted(store.list_refs(refs.RUNS).items()):
        run = ref[len(refs.RUNS):]
        head, when = ended_runs.get(run, (None, cutoff + 1))
        if head == oid and when <= cutoff:
            found.runs.append({"ref": ref, "oid": oid, "run": run, "time": when})
    orphan_workspaces(ctx, cutoff, found)
    return found


def pruned_records(ctx: Context, removed: list[dict]) -> list[str]:
    """The states among the removed rejected and superseded `removed` whose transition records go with them:
    not one whose record says it was accepted, nor one a pending proposal still names."""
    proposals = ctx.store.list_refs(refs.PROPOSALS)
    return [e["oid"] for e in removed if not e.get("record_kept") and transitions.load_readable(ctx, e["oid"])
            is not None and not proposals.get(refs.proposal_ref(e["transition"]))]


def orphan_workspaces(ctx: Context, cutoff: float, found: Candidates) -> None:
    """Workspaces under .lanes/workspaces whose lane is gone, untouched since `cutoff`. One holding edits no
    state holds is kept for a person."""
    base = (ctx.store.root / refs.WORKSPACES_DIR).resolve()
    for worktree in ctx.store.list_worktrees():
        if worktree.is_main or base not in worktree.path.parents:
            continue
        lane = worktree.path.relative_to(base).as_posix()
        if ctx.store.read_ref(refs.lane_ref(lane, ctx.trunk)) is not None:
            continue
        when = _last_touched(worktree.path)
        if when > cutoff:
            continue
        entry = {"lane": lane, "path": str(worktree.path), "head": worktree.head, "time": when}
        if worktree.broken:
            # Not the worktree git made there (a .git pointing at a live lane's worktree): removing it would
            # unregister that one, and its files are not known to be anyone's copy.
            found.kept.append(entry | {"reason": "workspace_broken", "paths": [],
                                       "hint": f"{worktree.broken}; move it away by hand if nothing in it is needed"})
            continue
        changed = ctx.store.changed_paths(worktree.path) if worktree.path.exists() else {}
        nested = ctx.store.nested_repositories(worktree.path) if worktree.path.is_dir() else []
        histories = ctx.store.submodule_histories(worktree.path) if worktree.path.is_dir() else []
        if changed:
            found.kept.append(entry | {"reason": "unsaved_edits", "paths": sorted(changed)[:20],
                                       "hint": f"commit or copy them, then `git worktree remove {worktree.path}`"})
        elif histories:  # its submodules' repositories, kept in its private git dir, would go with it
            found.kept.append(entry | {"reason": "nested_repository", "paths": histories[:20],
                                       "hint": "keep what you need of these submodule repositories, then remove "
                                               "them yourself; the next gc removes the rest"})
        elif nested:  # a repository of its own may hold the only copy of its history: never deleted
            found.kept.append(entry | {"reason": "nested_repository", "paths": nested[:20],
                                       "hint": f"move them out of {worktree.path}; the next gc removes the rest"})
        else:
            found.workspaces.append(entry)


def _last_touched(path: Path) -> float:
    try:
        return max(os.stat(path).st_mtime, os.stat(path / ".git").st_mtime)
    except OSError:
        return 0.0


def remove_workspace(ctx: Context, entry: dict) -> None:
    """Remove a workspace whose lane is gone, keeping its head under the lane's deletion marker first when
    nothing else reaches it, so its commits are never pruned. Call with the writers' lock held."""
    head = entry.get("head")
    marker = refs.deleted_ref(entry["lane"])
    current = ctx.store.read_ref(marker)
    if head and (current is None or not ctx.store.is_ancestor(head, current)) and not _reachable(ctx, head):
        from git_lanes.store import RefUpdate

        ctx.store.update_refs([RefUpdate(marker, head, current, f"lanes: gc keeps {entry['lane']}'s last head")])
    ctx.store.remove_worktree(Path(entry["path"]))


def _reachable(ctx: Context, commit: str) -> bool:
    for name in lanes.lane_names(ctx):
        try:
            head = lanes.lane_head(ctx, name)
        except LanesError:  # a lane ref git-lanes never wrote (doctor names it): reaches nothing we keep
            continue
        if ctx.store.is_ancestor(commit, head):
            return True
    return False


# -- tombstones in the ledger ---------------------------------------------------------------------------
def prune(tx: Tx, op: Op) -> dict:
    """`gc.prune`: record that `refs` (each {ref, oid}) were pruned, so sync deletes them on every side."""
    entries = op.args.get("refs")
    if not isinstance(entries, list) or len(entries) > MAX_PRUNED_PER_OP:
        raise UserError(f"a gc.prune op names between 0 and {MAX_PRUNED_PER_OP} refs", code="invalid_prune")
    recorded = 0
    for entry in entries:
        ref, oid = (entry or {}).get("ref"), (entry or {}).get("oid")
        if not isinstance(ref, str) or not ref.startswith(TRAVELLING) or not isinstance(oid, str) or len(oid) < 40:
            raise UserError(f"cannot record {ref!r} as pruned", code="invalid_prune")
        path = tombstone_path(oid)
        record = tx.get(path) or {"oid": oid, "refs": [], "time": op.time}
        if ref not in record["refs"]:
            record["refs"] = sorted([*record["refs"], ref])
            tx.put(path, record)
            recorded += 1
    return {"pruned": recorded}
