"""The tools of lane setup, dispatch plans and the operation log: a lane's variables, a plan's progress and
the operations undo can take back (core, reading only); dispatching a plan and undoing an operation, which a
person or a lead agent does (maintenance). Each is one API call; its result is what the CLI's `--json` prints."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from git_lanes.mcp.binding import Binding, ToolSpec
from git_lanes.mcp.params import AgentId, Lane


def tools(face: Binding) -> list[ToolSpec]:
    """The setup, dispatch and undo tools, bound to `face`."""

    def lane_env(lane: Lane = None, agent_id: AgentId = None) -> dict:
        """The lane's variables from the trunk's [setup] env (its reserved ports filled in, e.g. PORT):
        export them before starting a dev server or tests, so lanes never fight over a port."""
        return face.api.lane_env(face.lane(lane, agent_id))

    def dispatch_status(plan: Annotated[str, Field(description="The plan's name, or a prefix of its id.")]) -> dict:
        """A dispatched plan's progress: each task's status, owner, lane and the paths it owns exclusively."""
        return face.api.dispatch_status(plan)

    def op_log(limit: Annotated[int, Field(description="How many operations, newest first.", ge=0, le=500)] = 20
               ) -> list[dict]:
        """The operation log: lanes operations (commit, accept, promote, ...) and undoable ledger ops, newest
        first, with who did them and whether they were undone."""
        return face.api.op_log(limit)

    def dispatch(plan: Annotated[str, Field(description="The plan as TOML text (`git lanes dispatch --example` "
                                                        "shows one).")],
                 dry_run: Annotated[bool, Field(description="Only check the plan; create nothing.")] = False,
                 agent_id: AgentId = None) -> dict:
        """Dispatch a foundation-first plan: a ticket, its tasks with their dependencies and exclusive file
        claims, and the foundation's lane. Overlapping ownership is refused before anything is created."""
        return face.api.dispatch(plan, source="mcp", dry_run=dry_run, actor=face.actor(agent_id))

    def undo(operation: Annotated[str | None, Field(description="An operation id (prefix) from op_log; default: "
                                                                "the newest.")] = None,
             dry_run: Annotated[bool, Field(description="Only check that it can be undone.")] = False,
             agent_id: AgentId = None) -> dict:
        """Undo an operation: its refs move back by compare-and-swap, its ledger ops are reversed by inverse
        ops. Refused (`conflict`) when later work depends on it; undoing an undo redoes."""
        return face.api.undo(operation, actor=face.actor(agent_id), dry_run=dry_run)

    return [ToolSpec(lane_env, read_only=True), ToolSpec(dispatch_status, read_only=True),
            ToolSpec(op_log, read_only=True), ToolSpec(dispatch, toolset="maintenance"),
            ToolSpec(undo, toolset="maintenance")]
