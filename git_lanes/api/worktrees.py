"""Agents and their workspaces through the API: assign an agent a lane (creating or reusing it and its
workspace), list them, release them, reclaim those of agents that went away; and the lease side of "any call
from an agent shows it is alive", which the long-lived faces call."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError
from git_lanes.model import refs
from git_lanes.model.names import validate_lane_name

if TYPE_CHECKING:
    from git_lanes.model.worktree_results import OrphansReclaimed, WorktreeAssigned, WorktreeReleased, WorktreeRow
    from git_lanes import ledger
    from git_lanes.domain import agents, inspect, lane_setup, lanes, worktrees


@held
class WorktreeApi:
    """Mixed into `Lanes`, next to CoreApi (`ctx`, `_writing`) and LedgerApi (`_state`, `_append`)."""

    ctx: Context
    _writing: Callable[[], AbstractContextManager[Context]]
    _state: Callable[[], ledger.State]
    _append: Callable[[str, str, dict[str, Any]], dict[str, Any]]

    def agent_lane(self, agent: str) -> str:
        """The lane assigned to `agent`; a clear error (`no_lane`) when it has none."""
        from git_lanes.domain import worktrees

        return worktrees.require_lane(self._state(), agent)

    def touch_agent(self, agent: str) -> dict[str, Any] | None:
        """Extend `agent`'s lease (registering it on its first call), unless it was extended within the last
        minute: then nothing is written and None is returned. Long-lived faces call this on every call an
        agent makes, as Lockage extends the lease on almost every tool call."""
        from git_lanes.domain import agents

        agents.validate_agent_id(agent)
        record = self._state().get(agents.agent_path(agent))
        if not agents.lease_needs_extending(record, self.ctx.now()):
            return None
        return self._append("agent.touch", agent, {"agent": agent})

    def assign_worktree(self, agent: str, lane: str | None = None, base: str | None = None, *,
                        setup: bool = True) -> WorktreeAssigned:
        """Give `agent` a lane to work in and return its workspace path: `lane`, else the lane it already
        has, else `agent/<id>`. A missing lane is created (from `base`, default the trunk's head) and a
        missing workspace is made, with the trunk's `[setup]` applied unless `setup` is False; an existing
        one is reused. A lane another live agent holds is refused (`lane_assigned`, exit 3)."""
        from git_lanes.domain import inspect, lane_setup, lanes, worktrees
        from git_lanes.model.worktree_results import WorktreeAssigned

        state = self._state()
        name = validate_lane_name(lane or worktrees.assigned_lane(state, agent) or worktrees.default_lane(agent))
        worktrees.check_free(state, name, agent, self.ctx.now())  # refused before anything is made on disk
        manifest = lane_setup.load(self.ctx) if setup else None  # a broken [setup] refuses before anything
        with self._writing() as ctx:
            exists = ctx.store.read_ref(refs.lane_ref(name, ctx.trunk)) is not None
            made_workspace = exists and lanes.workspace_path(ctx, name) is None and name != ctx.trunk
            if not exists or made_workspace:
                start = inspect.resolve_state(ctx, base) if base is not None and not exists else None
                lanes.create(ctx, name, start)
            path = lanes.require_workspace(ctx, name)
            head = lanes.lane_head(ctx, name)
        assigned = self._append("worktree.assign", agent, {"agent": agent, "lane": name})
        made = made_workspace or not exists
        result = {"agent": agent, "lane": name, "workspace": str(path), "head": head, "created": not exists,
                  "workspace_created": made, "previous_lane": assigned["previous_lane"],
                  "lease_until": assigned["lease_until"], "op": assigned["op"]}
        if made and manifest is not None and not manifest.empty:
            result["setup"] = self._set_up(manifest, name, path, agent).to_dict()  # type: ignore[attr-defined]
        return WorktreeAssigned.from_dict(result)

    def list_worktrees(self) -> list[WorktreeRow]:
        """Every lane that has a workspace here, with the agents assigned to it and whether they are alive. A
        broken workspace (see `git lanes status`) is listed with `broken`, saying why, and no `workspace`."""
        from git_lanes.domain import agents, lanes
        from git_lanes.model.worktree_results import WorktreeRow

        state = self._state()
        now = self.ctx.now()
        assigned: dict[str, list[dict[str, Any]]] = {}
        for row in agents.list_agents(state, now):
            if row["lane"]:
                assigned.setdefault(row["lane"], []).append({"id": row["id"], "alive": row["alive"]})
        return [WorktreeRow.from_dict(lane.to_dict() | {"agents": assigned.get(lane.name, [])})
                for lane in lanes.list_lanes(self.ctx) if lanes.has_workspace_here(self.ctx, lane)]

    def release_worktree(self, agent: str, *, keep_workspace: bool = False) -> WorktreeReleased:
        """`agent` gives its lane back. Its workspace is removed unless `keep_workspace`, another live agent
        still works there, or it is the trunk's; the lane and its states stay (assign it again to get a new
        workspace). A workspace holding work no state holds is refused (`dirty_workspace`) before anything
        changes: commit first."""
        from git_lanes.model.worktree_results import WorktreeReleased

        released = self._release(agent, keep_workspace=keep_workspace, only_if_lapsed=False)
        assert released is not None
        return WorktreeReleased.from_dict(released)

    def _release(self, agent: str, *, keep_workspace: bool, only_if_lapsed: bool) -> dict[str, Any] | None:
        from git_lanes.domain import agents, worktrees

        lane = worktrees.lane_to_release(self._state(), agent)
        removed = None
        with self._writing() as ctx:  # ledger appends take this lock too: the state read here holds
            state = self._state()
            if only_if_lapsed and (worktrees.assigned_lane(state, agent) != lane
                                   or agents.lease_alive(state.get(agents.agent_path(agent)), ctx.now())):
                return None  # the agent came back meanwhile
            others = [a for a in worktrees.holders(state, lane, ctx.now()) if a != agent]
            if not keep_workspace and not others:
                removed = worktrees.remove_workspace(ctx, lane)
        released = self._append("worktree.release", agent, {"agent": agent})
        return {"agent": agent, "lane": lane, "workspace_removed": str(removed) if removed else None,
                "op": released["op"]}

    def reclaim_orphan_worktrees(self, *, dry_run: bool = False) -> OrphansReclaimed:
        """Release the lanes of agents whose lease lapsed and remove their workspaces, except where a
        workspace holds work no state holds (kept and listed, with the reason) or the agent came back."""
        from git_lanes.domain import worktrees
        from git_lanes.model.worktree_results import OrphansReclaimed

        reclaimed, kept = [], []
        for orphan in worktrees.orphans(self._state(), self.ctx.now()):
            entry = {"agent": orphan["agent"], "lane": orphan["lane"]}
            if dry_run:
                with self._writing() as ctx:
                    path, keep = worktrees.removable(ctx, orphan["lane"])
                if keep in ("unsaved", "nested"):
                    reason = "dirty_workspace" if keep == "unsaved" else "nested_repository"
                    kept.append(entry | {"reason": reason, "workspace": str(path)})
                else:
                    reclaimed.append(entry | {"workspace": str(path) if path and keep is None else None})
                continue
            try:
                result = self._release(orphan["agent"], keep_workspace=False, only_if_lapsed=True)
            except LanesError as exc:
                kept.append(entry | {"reason": exc.code, "message": exc.message})
                continue
            if result is not None:
                reclaimed.append(entry | {"workspace": result["workspace_removed"]})
        return OrphansReclaimed.from_dict({"dry_run": dry_run, "reclaimed": reclaimed, "kept": kept})
