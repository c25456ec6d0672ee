"""Agents in the ledger: who they are, their leases, and the wake queue that `wait` drains.

An agent's lease (15 minutes by default) is extended by the calls that show it is at work (register,
heartbeat, claiming a task or files, publishing its dirty set). A task whose owner's lease lapsed is open
again. Leases are judged against op time inside the fold, and against the reader's clock in views."""

from __future__ import annotations

import re
from typing import Any

from git_lanes.domain.board_index import current_seq
from git_lanes.domain import stored
from git_lanes.errors import NotFound, UserError, command
from git_lanes.ledger import Op, State, Tx
from git_lanes.model.ids import validate_agent_id, validate_lane_name
from git_lanes.model.text import quoted

LEASE_SECONDS = 15 * 60
# A call that extends the lease as a side effect (any MCP tool call) appends only when the lease was last
# extended longer ago than this, so reading the board twice a second does not write the ledger twice a second.
TOUCH_INTERVAL = 60
SYSTEM = "git-lanes"
MAX_WAKES = 200
Reader = State | Tx


def agent_path(agent: str) -> str:
    return f"agents/{agent}.json"


def wakes_path(agent: str) -> str:
    return f"wakes/{agent}.json"


def reader_path(agent: str) -> str:
    return f"board/readers/{agent}.json"


def get_agent(state: Reader, agent: str) -> dict:
    path = agent_path(validate_agent_id(agent))
    record = state.get(path)
    if record is None:
        raise NotFound(f"no agent named {quoted(agent)}", code="unknown_agent",
                       hint=f"register it with {command('agent register', agent)}")
    return stored.checked(path, record)


def lease_alive(record: dict | None, now: float) -> bool:
    return record is not None and float(record.get("lease_until") or 0) >= now


def lease_needs_extending(record: dict | None, now: float) -> bool:
    """Whether a call at `now` should extend the lease: the agent is unknown yet, or its lease was last
    extended more than TOUCH_INTERVAL seconds ago."""
    if record is None:
        return True
    return float(record.get("lease_until") or 0) < now + LEASE_SECONDS - TOUCH_INTERVAL


def first_call(tx: Tx, agent: str) -> bool:
    """Whether a call of `agent` now is its first (no record of it yet): `touch` registers it. A heartbeat
    says so, since a mistyped name registers a ghost agent while the real one's lease lapses."""
    return not tx.peek(agent_path(agent))  # as `touch` judges it


# The result key naming the agents an op registered without being asked to (CoordinationFold): the API turns
# it into a notice and takes it out of the record it returns. The ops that register on purpose, or that say
# so in their own result (`registered`), give none.
NEW_AGENTS = "new_agents"
SAY_REGISTERED = frozenset({"agent.register", "agent.heartbeat"})


def new_agents(state: State, edits: dict[str, Any]) -> list[str]:
    """The agents whose record an op's `edits` create: names `state` did not know."""
    return sorted(path[len("agents/"):-len(".json")] for path, record in edits.items()
                  if record is not None and path.startswith("agents/") and path.endswith(".json")
                  and state.peek(path) is None)


def first_seen_notice(agent: str, known: list[str]) -> str:
    """What a face tells the caller whose op registered `agent` unasked: a mistyped name (GIT_LANES_AGENT,
    --agent, agent_id) would otherwise make a second agent that then holds claims and tasks in silence."""
    import difflib

    like = difflib.get_close_matches(agent, [k for k in known if k != agent], n=1)
    return (f"agent {quoted(agent)} was not known here: this call registered it"
            + (f" (did you mean {quoted(like[0])}?)" if like else ""))


def touch(tx: Tx, agent: str, time: float, *, extend: bool = True, kind: str | None = None,
          lane: str | None = None) -> dict:
    """The agent's record after it acted at `time`, created on its first call. Its board cursor starts
    at the board's current end then, so old broadcasts do not flood in (directed posts still reach it).
    Calls that do not extend the lease (a post) leave an existing record untouched."""
    validate_agent_id(agent)
    # Looked at, not copied (`peek`): only top-level keys change, in a dict of its own, and the caller reads
    # the record it gets. A deep copy of each record here was most of what this cost an op.
    existing = tx.peek(agent_path(agent))
    record = dict(existing) if existing else {"id": agent, "kind": "agent", "lane": None, "registered": time,
                                              "last_seen": time, "lease_until": time + LEASE_SECONDS}
    if kind is not None:
        record["kind"] = kind
    if lane is not None:
        record["lane"] = validate_lane_name(lane)
    if extend:
        record["lease_until"] = max(float(record["lease_until"]), time + LEASE_SECONDS)
        record["last_seen"] = time
    if existing is None or record != existing:
        tx.put(agent_path(agent), record)
    reader = tx.peek(reader_path(agent))
    if reader is None or reader.get("cursor") is None:
        tx.put(reader_path(agent), {**(reader or {"agent": agent, "cursor": None, "inbox": [], "own": []}),
                                    "cursor": current_seq(tx)})
    return record


def add_wake(tx: Tx, agent: str, op: Op, kind: str, detail: dict[str, Any]) -> None:
    """Queue a wake for `agent`: `wait` returns with it, and heartbeat reports it until then."""
    queue = stored.read_or_set_aside(tx, wakes_path(agent), []) or {"agent": agent, "wakes": []}  # a bad one restarts
    wake_id = f"{op.id}.{len(queue['wakes'])}"
    queue["wakes"] = (queue["wakes"] + [{"id": wake_id, "kind": kind, "time": op.time, "op": op.id,
                                         "by": op.actor, **detail}])[-MAX_WAKES:]
    tx.put(wakes_path(agent), queue)


def pending_wakes(state: Reader, agent: str) -> list[dict]:
    """The wakes queued for `agent`; none when its queue cannot be read (a peer's malformed record): waiting
    goes on, and `git lanes doctor` names the record."""
    return list((stored.read_or_set_aside(state, wakes_path(agent), []) or {}).get("wakes", []))


def take_wakes(tx: Tx, agent: str, ids: set[str]) -> list[dict]:
    queue = stored.read(tx, wakes_path(agent))
    if queue is None:
        return []
    taken = [w for w in queue["wakes"] if w["id"] in ids]
    queue["wakes"] = [w for w in queue["wakes"] if w["id"] not in ids]
    if queue["wakes"]:
        tx.put(wakes_path(agent), queue)
    else:
        tx.delete(wakes_path(agent))
    return taken


def register(tx: Tx, op: Op) -> dict:
    agent = validate_agent_id(op.args.get("agent"))
    existing = tx.get(agent_path(agent))
    existed = existing is not None
    # Registering again to set a lane (or to renew) names no kind: the one it was registered with stays.
    kind = op.args.get("kind") or (existing or {}).get("kind") or "agent"
    if not isinstance(kind, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,40}", kind):
        raise UserError(f"invalid agent kind {quoted(kind)}", code="invalid_kind")
    record = touch(tx, agent, op.time, kind=kind, lane=op.args.get("lane"))
    return {"agent": agent, "registered": not existed, "kind": record["kind"], "lane": record["lane"],
            "lease_until": record["lease_until"]}


def touch_op(tx: Tx, op: Op) -> dict:
    """`agent.touch`: the agent showed it is at work (registering it on its first call)."""
    agent = validate_agent_id(op.args.get("agent"))
    record = touch(tx, agent, op.time)
    return {"agent": agent, "lease_until": record["lease_until"]}


def list_agents(state: State, now: float, set_aside: stored.SetAside | None = None) -> list[dict]:
    """Every agent that can be read; one that cannot is set aside (noted in `set_aside`): the others still
    list, and `git lanes doctor` names it."""
    found = []
    for name in state.names("agents"):
        record = stored.read_or_set_aside(state, f"agents/{name}", [] if set_aside is None else set_aside)
        if record is not None:
            found.append(describe(record, now))
    return found


def describe(record: dict, now: float) -> dict:
    return {"id": record["id"], "kind": record.get("kind"), "lane": record.get("lane"),
            "registered": record.get("registered"), "last_seen": record.get("last_seen"),
            "lease_until": record.get("lease_until"), "alive": lease_alive(record, now)}
