"""The foundation of the API: opening a repository, lanes, transitions, inspection."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from git_lanes.api.held import held, needs_no_repository
from git_lanes.api.recording import first_line, recorded
from git_lanes.domain.context import Context
from git_lanes.errors import NotARepository, Refused, UserError, command, option
from git_lanes.model.ids import AgentId

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Self

    from git_lanes.domain import attention, gates, inspect, lane_setup, lanes, restore, setup, transitions
    from git_lanes.model.records import Cost, Intent, Transition
    from git_lanes.model.results import History, LaneCreated, LaneInfo, TransitionDetail
    from git_lanes.model.workspace_results import (Decided, LaneDeleted, LaneDetail, RepositoryStatus, Restored,
                                                   Unchanged)
    from git_lanes.store import open_store
    from git_lanes.store.setup import init_repository


@held
class CoreApi:
    """A repository opened for lanes. Long-lived faces keep one open so start-up is paid once."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, clock: Callable[[], float] = time.time) -> None:
        from git_lanes.store import open_store

        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise UserError(f"a repository path is a str or os.PathLike, not {type(path).__name__} {path!r}",
                            code="invalid_path")
        store = open_store(path)
        trunk = store.config_get("lanes.trunk")
        if not trunk:
            raise NotARepository(f"{store.root} is not set up for lanes", code="not_initialized",
                                 hint=f"run {command('init')}")
        self.ctx = Context(store, trunk, clock)

    @needs_no_repository
    def close(self) -> None:
        """Give back what holding the repository open took: the watchers of the workspaces this process
        snapshotted (inotify instances). The object stays usable; a later snapshot watches again."""
        self.ctx.store.stop_watching()

    def another(self) -> Self:
        """A second handle on this repository, for another thread (libgit2's objects are not shared between
        threads). Unlike opening its path again, it says so when the repository has gone from there."""
        return type(self)(self.root, clock=self.ctx.clock)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @classmethod
    def init(cls, path: str | os.PathLike[str] | None = None, trunk: str | None = None,
             clock: Callable[[], float] = time.time) -> tuple[CoreApi, dict[str, Any]]:
        """Set up `path` for lanes (running `git init` first in a plain directory). Idempotent."""
        from git_lanes.domain import lanes, setup
        from git_lanes.store import gitfiles, open_store
        from git_lanes.store.setup import init_repository

        from pathlib import Path  # here: the light sync imports this package, and loads no pathlib

        directory = Path(path or os.getcwd()).resolve()
        gitfiles.require_utf8_place(str(directory))  # before `git init` makes a repository there
        if trunk is not None:
            lanes.validate_lane_name(trunk)
        created_repo = False
        try:
            store = open_store(directory)
        except NotARepository:
            directory.mkdir(parents=True, exist_ok=True)
            init_repository(directory, trunk or "main")
            store = open_store(directory)
            created_repo = True
        chosen = setup.choose_trunk(store, trunk)
        lanes.validate_lane_name(chosen)
        report = setup.initialize(store, chosen, clock())
        report["created_repository"] = created_repo
        return cls(store.root, clock=clock), report

    @property
    def root(self) -> Path:
        """The repository's top directory (the main worktree)."""
        return self.ctx.store.root

    @property
    def trunk(self) -> str:
        """The trunk lane's name (git config lanes.trunk)."""
        return self.ctx.trunk

    @contextmanager
    def _writing(self) -> Iterator[Context]:
        """Serialize with every other local writer and finish what a killed one left half-done. Every ref it
        moves goes into the operation log (one entry, or part of the operation already running)."""
        from git_lanes.domain import oplog, transitions

        with self.ctx.store.locked(), oplog.operation(self.ctx, locked=True):
            transitions.recover(self.ctx)
            oplog.recover(self.ctx)
            yield self.ctx

    def _workspace(self, lane: str | None, cwd: str | os.PathLike[str] | None) -> tuple[str, Path]:
        from git_lanes.domain import lanes

        if lane is not None:
            return lane, lanes.require_workspace(self.ctx, lane)
        from pathlib import Path

        return lanes.lane_at(self.ctx, Path(cwd or os.getcwd()))

    # -- lanes -----------------------------------------------------------------------------------------
    @recorded(lambda a: f"create lane {a['name']}" + (f" from {a['source']}" if a["source"] else ""))
    def lane_create(self, name: str, source: str | None = None, *, setup: bool = True,
                    actor: str | None = None) -> LaneCreated:
        """Create lane `name` and its workspace, then (unless `setup` is False) apply the trunk's `[setup]`
        outside the lock: ports, copied files, the setup command (a failure is reported, the lane kept).
        `actor`: the agent acting, recorded in the operation log (default: git's user name)."""
        from git_lanes.domain import inspect, lane_setup, lanes
        from git_lanes.model.results import LaneCreated

        manifest = lane_setup.load(self.ctx) if setup else None  # a broken [setup] refuses before anything
        with self._writing() as ctx:
            # Any state a person can name elsewhere (restore, diff) starts a lane too: a transition id as well.
            start = inspect.resolve_state(ctx, source) if source is not None else None
            lane, created = lanes.create(ctx, name, start)
        result = lane.to_dict() | {"created": created}
        if manifest is not None and not manifest.empty:
            result["setup"] = self._set_up(manifest, name, lane.workspace, None).to_dict()  # type: ignore[attr-defined]
        return LaneCreated.from_dict(result)

    def lane_list(self) -> list[LaneInfo]:
        """Every lane, the trunk first: name, ref, head, whether it is the trunk, and its workspace (None when not
        checked out here)."""
        from git_lanes.domain import lanes
        from git_lanes.model.results import LaneInfo

        return [LaneInfo.from_dict(lane.to_dict()) for lane in lanes.list_lanes(self.ctx)]

    def lane_show(self, name: str) -> LaneDetail:
        """One lane: its head and workspace, unsnapshotted paths (`dirty`), paths a promotion left needing
        attention, pending proposals, the last 10 transitions with totals, and whether it holds work no
        other lane has (`unpromoted`)."""
        from git_lanes.domain import attention, inspect, lanes, transitions
        from git_lanes.model.workspace_results import LaneDetail

        lane = lanes.get_lane(self.ctx, name)
        changed = inspect.unsnapshotted(self.ctx, name, lane.workspace) if lane.workspace else {}
        recent = inspect.history(self.ctx, lane=name, limit=10)
        return LaneDetail.from_dict(lane.to_dict() | {
            "dirty": changed,
            "attention": attention.needing(self.ctx, name, lane.workspace) if lane.workspace else [],
            "proposals": [t.to_dict() for t in transitions.pending_for(self.ctx, name)],
            "recent": recent["transitions"], "totals": recent["totals"],
            "unpromoted": False if lane.is_trunk else lanes.unpromoted(self.ctx, name),
            "unreadable": recent["unreadable"],
        })

    def lane_path(self, name: str) -> str:
        """The path of lane `name`'s workspace (NotFound when it has none here)."""
        from git_lanes.domain import lanes

        lanes.lane_head(self.ctx, name)
        return str(lanes.require_workspace(self.ctx, name))

    @recorded(lambda a: f"delete lane {a['name']}" + (" --force" if a["force"] else ""))
    def lane_delete(self, name: str, *, force: bool = False, actor: str | None = None) -> LaneDeleted:
        """Delete lane `name` and remove its workspace. Refused (Refused) while it has unsnapshotted edits (or
        files its `[setup]` copied there, changed since), unpromoted work or pending proposals, unless `force`:
        then edits are kept in a backup ref and proposals are rejected and kept. The last head stays at refs/lanes/deleted/. `actor`: as for
        `lane_create`."""
        from git_lanes.domain import lane_setup, lanes, restore, transitions
        from git_lanes.model.workspace_results import LaneDeleted

        with self._writing() as ctx:
            path = lanes.workspace_path(ctx, name) if name != ctx.trunk else None
            pending = transitions.pending_for(ctx, name)
            if pending and not force and name != ctx.trunk:
                raise Refused(f"lane {name!r} has {len(pending)} pending proposal(s) "
                              f"({', '.join(t.id[:8] for t in pending)})", code="pending_proposals",
                              hint=f"accept or reject them first, or pass {option('force')} (they are rejected and "
                                   "kept under refs/lanes/rejected/)")
            if path is not None:
                lanes.require_removable(ctx, name, path)
            unsaved = path is not None and restore.has_unsaved(ctx, name, path)
            copies = lane_setup.changed_copies(ctx, path) if path is not None else []
            kept = None
            if (unsaved or copies) and force and path is not None:
                kept = restore.backup(ctx, name, path, ctx.store.content_tree(path, copies), f"deleting lane {name}")
            result = lanes.delete(ctx, name, force=force, unsaved=unsaved, backup=kept, setup_copies=copies)
            if path is not None:
                from git_lanes.domain import oplog

                oplog.files_moved(name)  # its workspace went too: undoing the delete makes it again
            for proposal in pending:
                transitions.reject(ctx, proposal, f"lane {name} was deleted")
        released = self._release_ports(name)  # type: ignore[attr-defined]
        return LaneDeleted.from_dict(result | {"rejected_proposals": [t.id for t in pending],
                                               "released_ports": released})

    # -- transitions -----------------------------------------------------------------------------------
    @recorded(lambda a: f"commit{' on ' + a['lane'] if a['lane'] else ''}: {first_line(a['prompt'])}")
    def commit(self, prompt: str, agent_id: str, *, lane: str | None = None,
               cwd: str | os.PathLike[str] | None = None,
               agent_type: str | None = None, model: str | None = None, tags: tuple[str, ...] = (),
               cost: Cost | None = None, auto_accept: bool = False,
               metadata: dict[str, Any] | None = None) -> Decided | Unchanged:
        """Snapshot a workspace as a proposed transition of its lane; with `auto_accept`, decide it too (the
        trunk's gates judge it; one that changes a protected path is held for a person, still proposed).
        `Unchanged` when the workspace matches its lane head: no state is made."""
        from git_lanes.domain import gates, lanes, transitions
        from git_lanes.model.records import Cost, Intent
        from git_lanes.model.workspace_results import Decided, Unchanged

        intent = Intent(prompt=prompt, agent_id=AgentId(agent_id), agent_type=agent_type, model=model, tags=tags,
                        metadata=metadata or {})
        cost = cost or Cost()
        name, path = self._workspace(lane, cwd)
        if auto_accept:
            # Trunk gates that cannot be read refuse before anything is proposed: after, every retry left
            # one more pending proposal of the same content behind.
            gates.load(self.ctx)
        with self._writing() as ctx:
            record = transitions.propose(ctx, name, path, intent, cost)
            if record is None:
                return Unchanged("unchanged", name, lanes.lane_head(ctx, name),
                                 f"nothing to snapshot: workspace of {name!r} matches its lane head")
            if auto_accept and not gates.scoped(ctx, record):
                # Nothing to run, so propose and decide in one critical section: no other writer can
                # accept the same content in between and leave this proposal superseded.
                return Decided.from_dict(gates.decide(ctx, record, (), auto=True))
        if auto_accept:
            return self._decide(record, raced=True)
        return Decided.from_dict(record.to_dict())

    def _decide(self, record: Transition, *, raced: bool = False) -> Decided:
        """Run the trunk's gates on the proposed tree, then accept it, or reject it when a required gate
        failed (GateFailed, exit 4). The gates run outside the writers' lock: one may take minutes.
        `raced`: the record was proposed by this call, so another writer deciding it while the gates ran is
        a lost race (see gates.decide_raced), not a request to decide a decided transition."""
        from git_lanes.domain import gates
        from git_lanes.model.workspace_results import Decided

        evaluations = gates.evaluate(self.ctx, record)
        with self._writing() as ctx:
            if raced:
                return Decided.from_dict(gates.decide_raced(ctx, record, evaluations))
            return Decided.from_dict(gates.decide(ctx, record, evaluations, auto=False))

    @recorded(lambda a: f"accept {str(a['transition_id'])[:8]}")  # str: the id is checked inside
    def accept(self, transition_id: str, *, actor: str | None = None) -> Decided:
        """Accept proposal `transition_id` (a unique prefix): the trunk's gates judge it first (GateFailed and
        rejected when a required one fails), then its lane moves by compare-and-swap (Conflict when the
        lane moved since it was proposed). `actor`: as for `lane_create`."""
        from git_lanes.domain import transitions

        return self._decide(transitions.find(self.ctx, transition_id))

    @recorded(lambda a: f"reject {str(a['transition_id'])[:8]}")
    def reject(self, transition_id: str, reason: str | None = None, *, actor: str | None = None) -> Transition:
        """Reject proposal `transition_id` with `reason`; the attempt is kept under refs/lanes/rejected/ as
        signal. `actor`: as for `lane_create`."""
        from git_lanes.domain import transitions
        from git_lanes.model.text import check_reason

        reason = check_reason(reason)
        with self._writing() as ctx:
            return transitions.reject(ctx, transitions.find(ctx, transition_id), reason)

    @recorded(lambda a: f"restore {a['lane'] or 'workspace'} to {a['state']}")
    def restore(self, state: str, *, lane: str | None = None, cwd: str | os.PathLike[str] | None = None,
                force: bool = False, actor: str | None = None) -> Restored:
        """Make a workspace's files equal `state` (a lane, transition id or revision) without moving its lane: the
        next commit records the return as a new transition. Unsnapshotted edits are refused, or with
        `force` kept in a backup ref first. `actor`: as for `lane_create`."""
        from git_lanes.domain import inspect, oplog, restore
        from git_lanes.model.workspace_results import Restored

        name, path = self._workspace(lane, cwd)
        with self._writing() as ctx:
            # What an undo puts back. Read only when the restore can go ahead: without unsaved edits the
            # content is a state's and writes no object, so a refused restore writes nothing.
            before = ctx.store.content_tree(path) if force or not restore.has_unsaved(ctx, name, path) else None
            result = restore.restore(ctx, name, path, inspect.resolve_state(ctx, state), force=force)
            if before is not None:
                oplog.workspace_changed(name, before, ctx.store.content_tree(path))
            return Restored.from_dict(result)

    # -- inspection ------------------------------------------------------------------------------------
    def status(self) -> RepositoryStatus:
        """Every lane with its workspace, unsnapshotted and needing-attention paths, and the pending proposals."""
        from git_lanes.domain import inspect
        from git_lanes.model.workspace_results import RepositoryStatus

        return RepositoryStatus.from_dict(inspect.status(self.ctx))

    def history(self, *, lane: str | None = None, status: str | None = None, agent: str | None = None,
                limit: int | None = None, grep: str | None = None, tag: str | None = None, since: str | None = None,
                model: str | None = None) -> History:
        """Transitions newest first (filtered by lane, status and agent, at most `limit`) with totals of their cost
        over all that match and counts per status; `grep` (a regular expression over the prompt), `tag`, `since`
        (a moment as git's `--since` takes it, model/moments.py: `2.hours.ago`, `2026-12-01`, `@1700000000`…) and
        `model` (part of the model's name) narrow them down."""
        from git_lanes.domain import inspect, trace
        from git_lanes.model.results import History

        filters = (grep, tag, since, model)
        moment = None
        if since is not None:  # its parser's patterns cost start-up that a plain `history` does not pay
            from git_lanes.model.moments import parse_moment

            moment = parse_moment(since, self.ctx.now())
        matches = trace.matcher(grep, tag, moment, model) if any(f is not None for f in filters) else None
        return History.from_dict(inspect.history(self.ctx, lane=lane, status=status, agent=agent, limit=limit,
                                                 matches=matches))

    def trace(self, state: str, limit: int | None = None) -> dict[str, Any]:
        """The chain of transitions, promotions and resets that led to `state`, across lanes."""
        from git_lanes.domain import trace

        return trace.trace(self.ctx, state, limit)

    def show(self, transition_id: str) -> TransitionDetail:
        """One transition (by unique id prefix): its record (intent, cost, status, evaluations) and the paths it
        changed."""
        from git_lanes.domain import inspect, transitions
        from git_lanes.model.results import TransitionDetail

        return TransitionDetail.from_dict(inspect.show(self.ctx, transitions.find(self.ctx, transition_id)))

    def diff(self, old: str, new: str, mode: str = "patch") -> dict[str, Any]:
        """The changes between two states (lanes, transition ids or revisions) as `patch`, `stat` or `name-only`."""
        from git_lanes.domain import inspect

        return inspect.diff(self.ctx, old, new, mode)
