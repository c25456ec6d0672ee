"""Sync: fetch the remote's lane state, merge it with ours, push the result under a lease; retry on a race.

A sync killed at any instant leaves both sides consistent: the fetch only refreshes the tracking copies, the
local merge is one compare-and-swap transaction (workspaces follow afterwards and catch up on the next sync),
and the remote changes only through one leased push. The next sync picks up wherever this one stopped."""

from __future__ import annotations

import os
import time

from git_lanes.domain import lanes, oplog, sync_plan
from git_lanes.domain.context import Context
from git_lanes.domain.wording import some
from git_lanes.domain.sync_plan import Plan
from git_lanes.errors import Conflict, LanesError, command, problem
from git_lanes.model import refs
from git_lanes.store import RefUpdate
from git_lanes.store import remote as transport
from git_lanes.store.follow import fast_forward_files

TYPE_CHECKING = False  # the light sync loads neither typing nor pathlib
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

MAX_ATTEMPTS = 10


def describe(remote: str | None) -> str:
    """The operation log's line for a sync, as both paths (the light one and the API's) record it."""
    return f"sync {remote or ''}".strip()


class Report:
    """What a sync did, across its attempts. (A plain class: see sync_plan.Plan.)"""

    def __init__(self, remote: str, mode: str) -> None:
        self.remote, self.mode = remote, mode
        self.attempts = 0
        self.merged_here = False  # a local merge ran: an error after it still reports what it did
        self.came_in: list[dict] = []
        self.went_out: list[dict] = []
        self.held_back: list[dict] = []
        self.diverged: list[dict] = []
        self.kept: list[dict] = []
        self.invalid: list[dict] = []
        self.refused: dict[str, list[dict]] = {}
        self.workspaces: list[dict] = []
        self.notes: dict = {"merged": 0, "conflicts": []}
        self.ledger: dict = {"came_in": 0, "went_out": 0, "replayed": 0, "refused": 0}

    def absorb_local(self, plan: Plan) -> None:
        """What this attempt changed here: it stays changed even if the push must be retried."""
        self.came_in += [move.to_dict() for move in plan.local]
        seen = {op["id"] for ops in self.refused.values() for op in ops}
        for op in plan.refused:
            if op["id"] not in seen:
                self.refused.setdefault(op["actor"], []).append(op)
        self.ledger["came_in"] += plan.ledger["came_in"]
        self.ledger["replayed"] += plan.ledger["replayed"]
        self.ledger["refused"] = sum(len(ops) for ops in self.refused.values())
        self.notes["merged"] += plan.notes["merged"]
        self.notes["conflicts"] += plan.notes["conflicts"]

    def absorb_final(self, plan: Plan, pushed: bool) -> None:
        self.diverged, self.kept, self.held_back = plan.diverged, plan.kept, plan.held_back
        self.invalid = plan.invalid
        if pushed:
            self.went_out = [move.to_dict() for move in plan.remote]
            self.ledger["went_out"] = plan.ledger["went_out"]

    def problem(self) -> Conflict | None:
        """What a person must settle after this sync, as the error it amounts to (exit 3): a lane, run log
        or shared fact that diverged, or a ref git-lanes would never write. A diverged deletion marker keeps
        both sides' and needs no one."""
        diverged = [d for d in self.diverged if d["kind"] in ("lane", "run", "meta")]
        if not diverged and not self.invalid:
            return None
        parts = [f"{d['kind']} {d['name']} diverged" for d in diverged]
        parts += [f"refused {i['ref']} ({i['side']}): {i['reason']}" for i in self.invalid]
        return Conflict(f"synced with {self.remote}, but {some(parts)}", code="diverged" if diverged else "invalid_refs",
                        hint="the report says how on for each; everything else moved")

    def to_dict(self) -> dict:
        found = self.problem()
        return {"problem": problem(found) if found else None,
                "remote": self.remote, "mode": self.mode, "attempts": self.attempts, "came_in": self.came_in,
                "went_out": self.went_out, "held_back": self.held_back, "diverged": self.diverged,
                "kept": self.kept, "invalid": self.invalid, "refused": self.refused, "workspaces": self.workspaces, "notes": self.notes,
                "ledger": self.ledger}


def run(ctx: Context, remote: str, mode: str, *, lock: Callable | None = None,
        sleep: Callable[[float], None] = time.sleep, gate: Callable[[Plan], None] | None = None,
        only: tuple[str, ...] | None = None) -> dict:
    """Pull, push or sync with `remote`. `lock` serializes the local merge with every other local writer
    (the store's lock by default); the network is never used while it is held. `gate` sees each plan before
    anything moves and may stop the sync there by raising (the light path's way out, api/sync_light.py).
    `only`: the kinds of ref that move (("ledger",) settles a claim on the remote's ledger, leaving lanes
    and workspaces to the next full sync)."""
    from git_lanes.domain import oplog  # loaded already: the operation this sync runs in records it

    transport.check_remote(ctx.store, remote)
    oplog.ledger_as_spans()
    report = Report(remote, mode)
    try:
        return _attempts(ctx, remote, mode, report, lock or ctx.store.locked, sleep, gate, only)
    except (transport.RemoteFailed, Conflict) as exc:
        if report.merged_here:
            # what already moved here stays moved: the error's record says what, as a report would
            exc.details = {**exc.details, "report": report.to_dict()}
        raise


def _attempts(ctx: Context, remote: str, mode: str, report: Report, locked: Callable,
              sleep: Callable[[float], None], gate: Callable[[Plan], None] | None,
              only: tuple[str, ...] | None = None) -> dict:
    for attempt in range(1, MAX_ATTEMPTS + 1):
        report.attempts = attempt
        fetch = transport.fetch(ctx.store, remote, ctx.trunk)
        fetched = fetch.refs
        with locked():
            if ctx.store.list_refs(refs.PROPOSALS):  # a decision a killed process left half made
                from git_lanes.domain import transitions

                transitions.recover(ctx)
            plan = sync_plan.build(ctx, remote, fetched, mode, fetch.unstorable)
            if only is not None:
                plan.keep_only(only)
            if gate is not None:
                gate(plan)
            if mode != "push":
                apply_local(ctx, remote, plan, report)
                report.absorb_local(plan)
                report.merged_here = True
        if mode == "pull" or not plan.remote:
            report.absorb_final(plan, pushed=False)
            return report.to_dict()
        result = transport.push(ctx.store, remote, plan.push_updates())
        if result.ok:
            _record_pushed(ctx, remote, plan, fetched)
            report.absorb_final(plan, pushed=True)
            return report.to_dict()
        if not result.raced:
            ref, reason = result.refusal()
            said = f" ({result.server_said})" if result.server_said else ""
            hint = ("a server-side hook or permission refused the push; nothing merged here is lost, and the "
                    "next sync pushes it once the remote accepts it")
            if "checked out" in reason:
                hint = (f"{remote} is a working repository with that branch checked out, and git refuses to "
                        f"move it under its files: sync through a bare repository (`git clone --bare`)")
            raise transport.RemoteFailed(f"{remote} refused {ref}: {reason}{said}", hint=hint)
        # Another machine pushed first: merge with what it pushed and try again, a little later each time.
        import random

        sleep(random.uniform(0, min(1.0, 0.02 * 2 ** attempt)))
    raise Conflict(f"{remote} kept moving: gave up after {MAX_ATTEMPTS} attempts", code="sync_raced",
                   hint="everything merged so far is kept; run the sync again")


def apply_local(ctx: Context, remote: str, plan: Plan, report: Report) -> None:
    """Move every local ref of the plan in one compare-and-swap transaction, then bring workspaces along."""
    store = ctx.store
    trunk_move = next((m for m in plan.local if m.kind == "lane" and m.name == ctx.trunk and m.new), None)
    if trunk_move is not None:
        # The main worktree follows the trunk branch itself, so its files must move first: moving the branch
        # under them would make the next snapshot revert what came in.
        main = lanes.workspace_path(ctx, ctx.trunk)
        blocked = fast_forward_files(store, main, store.tree_of(trunk_move.new)) if main else None
        if blocked:
            plan.local.remove(trunk_move)
            report.workspaces.append({"lane": ctx.trunk, "path": str(main), "status": "blocked",
                                      "reason": _describe(blocked), "paths": blocked, "behind": trunk_move.new,
                                      "hint": _way_on(blocked, main, "git lanes sync")})
        elif main is not None:
            oplog.files_moved(ctx.trunk)
            report.workspaces.append({"lane": ctx.trunk, "path": str(main), "status": "updated"})
    store.update_refs([RefUpdate(m.ref, m.new, m.old, f"lanes: {m.how} {m.kind} {m.name} from {remote}")
                       for m in plan.local])
    moved = {m.name for m in plan.local if m.kind == "lane" and m.name != ctx.trunk}
    report.workspaces += catch_up_workspaces(ctx, moved)


def catch_up_workspaces(ctx: Context, moved: set[str]) -> list[dict]:
    """Bring every linked workspace whose lane moved ahead of it up to date when its edits allow, else say
    so. Every lane is looked at, so a sync killed before this step is completed by the next one."""
    found = []
    known = set(lanes.lane_names(ctx))
    for worktree in ctx.store.list_worktrees():
        name = _lane_of(ctx, worktree.path)
        if worktree.broken and name in moved:
            found.append({"lane": name, "path": str(worktree.path), "status": "broken", "reason": worktree.broken,
                          "hint": f"repair it with `git worktree repair {worktree.path}`, or move it away and "
                                  f"{command('lane create', name)}"})
        if worktree.is_main or worktree.head is None or worktree.broken:
            continue
        try:
            head = lanes.lane_head(ctx, name) if name and name in known else None
        except LanesError:  # a lane head git-lanes never wrote: sync reports the ref, the rest goes on
            continue
        if head is None or head == worktree.head or not ctx.store.is_ancestor(worktree.head, head):
            continue
        blocked = fast_forward_files(ctx.store, worktree.path, ctx.store.tree_of(head))
        if blocked is None:
            oplog.files_moved(name)
            ctx.store.set_workspace_head(worktree.path, head)
            found.append({"lane": name, "path": str(worktree.path), "status": "updated"})
        elif name in moved:
            # `git lanes commit` refuses a workspace behind its lane, so the edits go through git's stash
            # (or into a backup ref), never into a snapshot that would revert what came in.
            lane_ref = refs.lane_ref(name, ctx.trunk)
            hint = _way_on(blocked, worktree.path, f"git merge --ff-only {lane_ref}")
            if not any("nested" in why or "index" in why for why in blocked):  # a forced restore would not do there
                hint += f"; or {command('restore', name, w=name, force=True)} (your edits are kept in a backup ref)"
            found.append({"lane": name, "path": str(worktree.path), "status": "stale", "reason": _describe(blocked),
                          "paths": blocked, "hint": hint})
    return found


def _describe(blocked: dict[str, list[str]]) -> str:
    return "; ".join(f"{why}: {some(paths)}" for why, paths in blocked.items())


def _way_on(blocked: dict[str, list[str]], where: Path, step: str) -> str:
    """What a person runs to let the files move: stash edits and untracked files (a plain `git stash` keeps
    untracked files in the way) around `step`; a nested repository must be moved by hand."""
    if any("index" in why for why in blocked):
        return f"let the git command at work in {where} finish, then {command('sync')} again"
    nested = [path for why, paths in blocked.items() if "nested repository" in why for path in paths]
    if nested:
        return (f"move {some(nested)} out of {where} (git-lanes never deletes a folder holding a "
                f".git), then `{step}`")
    ignored = [path for why, paths in blocked.items() if "ignored" in why for path in paths]
    if ignored:
        return (f"move {some(ignored)} out of {where} (ignored, so no state and no `git stash` holds it), "
                f"then `{step}`")
    route = f"in {where}: `git stash --include-untracked && {step} && git stash pop`, then resolve what git marks"
    untracked = [path for why, paths in blocked.items() if "untracked" in why for path in paths]
    if untracked:
        # git's pop will not write an untracked file over one the step brought in: it stays in the stash
        route += (f"; git then keeps your untracked {some(untracked)} in the stash (`git show 'stash@{{0}}^3:"
                  f"{untracked[0]}'`)")
    return route


def _lane_of(ctx: Context, path: str | os.PathLike[str]) -> str | None:
    base = os.path.realpath(os.path.join(ctx.store.root, refs.WORKSPACES_DIR))
    # not resolved: a workspace path replaced by a symlink names its own lane, not the link's target
    where = os.path.abspath(path)
    if where == base:
        return "."
    beneath = base if base.endswith(os.sep) else base + os.sep
    return where[len(beneath):] if where.startswith(beneath) else None


def _record_pushed(ctx: Context, remote: str, plan: Plan, fetched: dict[str, str]) -> None:
    """Keep the tracking copies true after a push; a failure only means a concurrent fetch refreshed them."""
    updates = [RefUpdate(transport.tracking_ref(remote, m.ref), m.new, fetched.get(m.ref),
                         f"lanes: pushed to {remote}") for m in plan.remote]
    try:
        ctx.store.update_refs(updates)
    except Conflict:
        pass
