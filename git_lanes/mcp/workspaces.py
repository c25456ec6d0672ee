"""The workspace and lanes tools: an agent's own lane and workspace (assign / list / release, and reclaiming
those of agents that went away), snapshots and their decisions, inspection, promotion and restore. Each is one
API call; its result is what the CLI's `--json` prints."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from git_lanes.mcp.binding import Binding, ToolSpec
from git_lanes.mcp.params import (AgentId, AgentType, ApiCalls, AutoAccept, CostUsd, DiffMode, Lane, LaneFilter,
                                  Model, Prompt, Tags, TokensIn, TokensOut, TransitionId, TransitionStatus, WallTime)
from git_lanes.model.promotion_results import Promoted, PromotionPreview, UpToDate
from git_lanes.model.records import Cost, Transition
from git_lanes.model.results import History, TransitionDetail
from git_lanes.model.workspace_results import Decided, RepositoryStatus, Restored, Unchanged
from git_lanes.model.worktree_results import OrphansReclaimed, WorktreeAssigned, WorktreeReleased, WorktreeRow


def tools(face: Binding) -> list[ToolSpec]:
    """The workspace and lanes tools, bound to `face` (the repository and the server's agent)."""

    def assign_worktree(lane: Annotated[str | None, Field(description="The lane to work in; default: the lane the "
                                                                      "agent has, else agent/<agent_id>.")] = None,
                        base: Annotated[str | None, Field(description="Where a new lane starts: a lane, transition "
                                                                      "id or git revision (default: the trunk's "
                                                                      "head).")] = None,
                        setup: Annotated[bool, Field(description="Apply the trunk's [setup] to a new workspace "
                                                                 "(ports, copied files, its command); false skips "
                                                                 "it, as for a broken [setup].")] = True,
                        agent_id: AgentId = None) -> WorktreeAssigned:
        """Get a workspace of your own: creates or reuses the agent's lane and its workspace (a git worktree)
        and returns the workspace path. Work only in there. A lane another live agent works in is refused
        (`conflict`)."""
        return face.api.assign_worktree(face.agent(agent_id), lane, base, setup=setup)

    def list_worktrees() -> list[WorktreeRow]:
        """List the lanes that have a workspace here, with the agents assigned to each."""
        return face.api.list_worktrees()

    def release_worktree(keep_workspace: Annotated[bool, Field(description="Keep the workspace directory; only "
                                                                           "give the lane back.")] = False,
                         agent_id: AgentId = None) -> WorktreeReleased:
        """Give the agent's lane back when done and remove its workspace (the lane and its states stay). A
        workspace holding work no state holds is refused: commit it first."""
        return face.api.release_worktree(face.agent(agent_id), keep_workspace=keep_workspace)

    def commit(prompt: Prompt, lane: Lane = None, tags: Tags = (), tokens_in: TokensIn = 0, tokens_out: TokensOut = 0,
               api_calls: ApiCalls = 0, wall_time: WallTime = 0.0, cost_usd: CostUsd = 0.0,
               auto_accept: AutoAccept = False, agent_type: AgentType = None, model: Model = None,
               agent_id: AgentId = None) -> Decided | Unchanged:
        """Snapshot the lane's workspace as a new state, recording the intent (prompt, tags) and the cost. It
        is proposed; with auto_accept the trunk's gates judge it and it is accepted at once. A workspace that
        matches its lane head makes no new state (status unchanged)."""
        return _record(face, prompt, lane, tags, Cost(tokens_in, tokens_out, api_calls, wall_time, cost_usd),
                       auto_accept, agent_type, model, agent_id)

    def propose(prompt: Prompt, lane: Lane = None, tags: Tags = (), tokens_in: TokensIn = 0,
                tokens_out: TokensOut = 0, api_calls: ApiCalls = 0, wall_time: WallTime = 0.0,
                cost_usd: CostUsd = 0.0, agent_type: AgentType = None, model: Model = None,
                agent_id: AgentId = None) -> Decided | Unchanged:
        """Snapshot the lane's workspace as a proposed state, to be accepted or rejected later."""
        return _record(face, prompt, lane, tags, Cost(tokens_in, tokens_out, api_calls, wall_time, cost_usd),
                       False, agent_type, model, agent_id)

    def accept(transition_id: TransitionId, agent_id: AgentId = None) -> Decided:
        """Accept a proposal: the trunk's gates judge it first (a failing required gate rejects it:
        `gate_failed`); then its lane moves to the proposed state (`conflict` if the lane moved meanwhile)."""
        return face.api.accept(transition_id, actor=face.actor(agent_id))

    def reject(transition_id: TransitionId,
               reason: Annotated[str | None, Field(description="Why; kept with the attempt as signal.")] = None,
               agent_id: AgentId = None) -> Transition:
        """Reject a proposal; the attempt is kept under refs/lanes/rejected/ as signal."""
        return face.api.reject(transition_id, reason, actor=face.actor(agent_id))

    def history(lane: LaneFilter = None, status: Annotated[TransitionStatus | None, Field(
                    description="Only transitions with this status.")] = None,
                agent: Annotated[str | None, Field(description="Only this agent's transitions.")] = None,
                limit: Annotated[int | None, Field(ge=0, description="At most this many (totals count all).")]
                = None) -> History:
        """List transitions newest first, with prompt, agent, tags and cost, plus totals."""
        return face.api.history(lane=lane, status=status, agent=agent, limit=limit)

    def show(transition_id: TransitionId) -> TransitionDetail:
        """Show one transition: its intent, cost, evaluations and changed paths."""
        return face.api.show(transition_id)

    def diff(a: Annotated[str, Field(description="The old state: a lane, transition id or git revision.")],
             b: Annotated[str, Field(description="The new state: a lane, transition id or git revision.")],
             mode: Annotated[DiffMode, Field(description="patch, stat or name-only.")] = "patch") -> dict:
        """Show the difference between two states."""
        return face.api.diff(a, b, mode)

    def status() -> RepositoryStatus:
        """Show lanes, workspaces, pending proposals and workspaces with unsnapshotted edits."""
        return face.api.status()

    def promote(lane: Lane = None,
                into: Annotated[str | None, Field(description="The lane to promote into; default: the trunk.")]
                = None, auto_accept: AutoAccept = False,
                force: Annotated[bool, Field(description="The lane's version wins on colliding paths; the "
                                                         "target's is kept in a backup ref.")] = False,
                dry_run: Annotated[bool, Field(description="Only report collisions and changes.")] = False,
                prompt: Annotated[str | None, Field(description="Why; default: \"Promote LANE into TARGET\".")]
                = None, tags: Tags = (), agent_id: AgentId = None) -> Promoted | UpToDate | PromotionPreview:
        """Promote the lane's accepted head into another lane, path by path. A path changed on both sides is
        a collision: nothing moves and the paths are listed (`conflict`); rerun from the target's head,
        resolve by hand, or force. The result is proposed on the target and judged by the trunk's gates."""
        name = face.lane(lane, agent_id)
        return face.api.promote(name, into, prompt=prompt, agent_id=face.actor(agent_id), tags=tuple(tags),
                                dry_run=dry_run, force=force, auto_accept=auto_accept)

    def restore(state: Annotated[str, Field(description="A lane, transition id or git revision.")],
                lane: Lane = None,
                force: Annotated[bool, Field(description="Restore even over unsnapshotted edits (they are kept "
                                                         "in a backup ref).")] = False,
                agent_id: AgentId = None) -> Restored:
        """Make the lane's workspace files equal a state; the lane does not move (commit to record it)."""
        return face.api.restore(state, lane=face.lane(lane, agent_id), force=force, actor=face.actor(agent_id))

    def reclaim_orphan_worktrees(dry_run: Annotated[bool, Field(description="Only say what would be reclaimed."
                                                                )] = False) -> OrphansReclaimed:
        """Release the lanes of agents whose lease lapsed and remove their workspaces; a workspace holding work
        no state holds is kept and listed."""
        return face.api.reclaim_orphan_worktrees(dry_run=dry_run)

    return [
        ToolSpec(assign_worktree, touches=False), ToolSpec(list_worktrees, read_only=True),
        ToolSpec(release_worktree), ToolSpec(commit), ToolSpec(propose), ToolSpec(accept), ToolSpec(reject),
        ToolSpec(history, read_only=True), ToolSpec(show, read_only=True), ToolSpec(diff, read_only=True),
        ToolSpec(status, read_only=True), ToolSpec(promote), ToolSpec(restore),
        ToolSpec(reclaim_orphan_worktrees, toolset="maintenance"),
    ]


def _record(face: Binding, prompt: str, lane: str | None, tags: list[str] | tuple[str, ...], cost: Cost,
            auto_accept: bool, agent_type: str | None, model: str | None, agent_id: str | None
            ) -> Decided | Unchanged:
    agent = face.agent(agent_id)
    return face.api.commit(prompt, agent, lane=face.lane(lane, agent), agent_type=agent_type, model=model,
                           tags=tuple(tags), cost=cost, auto_accept=auto_accept)
