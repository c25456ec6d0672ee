"""Which agent works in which lane (Lockage's assign / list / release worktree), decided once for every face.

An agent's assigned lane is the `lane` of its ledger record: its dirty set is computed there, its task claims
default to it, and the lane-taking calls of the MCP and SDK faces default to it. A lane is assigned to at most
one live agent at a time (separate workspaces are the point); an agent whose lease lapsed no longer holds its
lane, and its workspace is an orphan that `reclaim` may remove when nothing in it would be lost."""

from __future__ import annotations

from pathlib import Path

from git_lanes.domain import lanes, restore
from git_lanes.domain.agents import Reader, agent_path, get_agent, lease_alive, touch, validate_agent_id
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, Refused, UserError, command
from git_lanes.ledger import Op, State, Tx
from git_lanes.model import refs
from git_lanes.model.ids import AgentId
from git_lanes.model.names import validate_lane_name
from git_lanes.model.text import quoted

LANE_PREFIX = "agent/"


def default_lane(agent: str) -> str:
    """The lane an agent gets when it names none: `agent/<id>`, apart from people's lanes."""
    return validate_lane_name(LANE_PREFIX + validate_agent_id(agent))


def assigned_lane(state: Reader, agent: str) -> str | None:
    record = state.get(agent_path(validate_agent_id(agent)))
    return record.get("lane") if record else None


def require_lane(state: Reader, agent: str) -> str:
    """The agent's assigned lane, for calls whose lane defaults to it."""
    lane = assigned_lane(state, agent)
    if lane is None:
        raise UserError(f"agent {agent!r} has no lane assigned, and no lane was named", code="no_lane",
                        hint=f"assign it one ({command('agent register', agent, lane='LANE')}), or name the lane")
    return lane


def lane_to_release(state: Reader, agent: str) -> str:
    """The lane an agent gives back: its assigned one (a release names no lane, so none to name instead)."""
    lane = assigned_lane(state, agent)
    if lane is None:
        raise UserError(f"agent {agent!r} has no lane to give back", code="no_lane",
                        hint="nothing to release: it gave its lane back already, or never had one")
    return lane


def holders(state: Reader, lane: str, now: float) -> list[str]:
    """The live agents whose assigned lane is `lane`."""
    found = []
    for name in state.names("agents"):
        record = state.get(f"agents/{name}")
        if record and record.get("lane") == lane and lease_alive(record, now):
            found.append(record["id"])
    return found


def working_agent(state: Reader, lane: str | None, task: str | None, now: float) -> str:
    """The agent a run works as when none is named: the owner of its task, else the one live agent whose lane
    it works in. A run's agent decides whose claims its writes must respect and whose lease its calls
    extend, so where neither tells who it is, the run is refused rather than given a guess."""
    from git_lanes.domain.task_records import get_task

    owner = get_task(state, task).get("owner") if task is not None else None
    if isinstance(owner, str) and AgentId.problem(owner) is None:  # a person who claimed it is no agent
        return owner
    found = holders(state, lane, now) if lane is not None else []
    if len(found) == 1:
        return found[0]
    where = "it works in no lane" if lane is None else \
        f"lane {quoted(lane)} is assigned to {'no live agent' if not found else ', '.join(found)}"
    raise UserError(f"no agent named for the run, and {where}", code="no_agent",
                    hint="name the agent doing the work, or set GIT_LANES_AGENT")


def check_free(state: Reader, lane: str, agent: str, now: float) -> None:
    """Refuse a lane another live agent works in: two agents in one workspace overwrite each other."""
    others = [a for a in holders(state, lane, now) if a != agent]
    if others:
        raise Conflict(f"lane {lane!r} is assigned to {', '.join(others)}, whose lease is alive",
                       code="lane_assigned", details={"lane": lane, "holders": others},
                       hint="work in a lane of your own (leave the lane out to get one), or have its task handed "
                            f"over ({command('task handoff')})")


# -- ledger ops ------------------------------------------------------------------------------------------
def assign(tx: Tx, op: Op) -> dict:
    """`worktree.assign`: the agent works in `lane` from now on (checked free under the ledger's lock)."""
    agent = validate_agent_id(op.args.get("agent"))
    lane = validate_lane_name(op.args.get("lane") or "")
    previous = assigned_lane(tx, agent)
    check_free(tx, lane, agent, op.time)
    record = touch(tx, agent, op.time, lane=lane)
    return {"agent": agent, "lane": lane, "previous_lane": previous, "lease_until": record["lease_until"]}


def release(tx: Tx, op: Op) -> dict:
    """`worktree.release`: the agent no longer holds a lane. Its lease is left as it is."""
    agent = validate_agent_id(op.args.get("agent"))
    record = dict(get_agent(tx, agent))
    previous = record.get("lane")
    if previous is not None:
        record["lane"] = None
        tx.put(agent_path(agent), record)
    return {"agent": agent, "lane": previous}


# -- workspaces ------------------------------------------------------------------------------------------
def orphans(state: State, now: float) -> list[dict]:
    """Agents whose lease lapsed while they held a lane: their workspaces are orphans."""
    found = []
    for name in state.names("agents"):
        record = state.get(f"agents/{name}")
        if record and record.get("lane") and not lease_alive(record, now):
            found.append({"agent": record["id"], "lane": record["lane"], "lease_until": record.get("lease_until")})
    return found


def removable(ctx: Context, lane: str) -> tuple[Path | None, str | None]:
    """(the lane's workspace, why it must stay or None). The trunk's is the main worktree and always stays;
    a workspace holding content no state holds (unsnapshotted edits, plain git commits, files its `[setup]`
    copied there and changed since) stays too."""
    if ctx.store.read_ref(refs.lane_ref(lane, ctx.trunk)) is None:  # a lane deleted meanwhile
        return None, None
    path = lanes.workspace_path(ctx, lane)
    if path is None:
        return None, None
    if lane == ctx.trunk:
        return path, "trunk"
    from git_lanes.domain import lane_setup  # with the first removal, not at start-up

    if restore.has_unsaved(ctx, lane, path) or lane_setup.changed_copies(ctx, path):
        return path, "unsaved"
    if ctx.store.nested_repositories(path) or ctx.store.submodule_histories(path):
        return path, "nested"
    return path, None


def remove_workspace(ctx: Context, lane: str) -> Path | None:
    """Remove the lane's workspace (the lane and its states stay; `lane create` makes it again). Refuses
    where something would be lost. Returns the removed path, or None when there was none."""
    path, keep = removable(ctx, lane)
    if path is None:
        return None
    if keep == "trunk":
        return None
    if keep == "unsaved":
        raise Refused(f"the workspace of lane {lane!r} holds work no state holds yet ({path})",
                      code="dirty_workspace", details={"lane": lane, "workspace": str(path)},
                      hint="commit it first (or restore the workspace to its lane to discard it), then release")
    if keep == "nested":
        lanes.require_removable(ctx, lane, path)
    ctx.store.remove_worktree(path)
    return path
