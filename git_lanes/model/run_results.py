"""What the runs API returns, as records: a run as `run show` and `run list` print it. One definition for the
CLI's `--json`, the MCP tools, the SDK and the OpenAPI document. (The hook path folds runs with the light
`model/runs.py` types and never builds these.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from git_lanes.model.record import Record, meta


@dataclass(frozen=True)
class RunUsage(Record):
    """Tokens by kind, dollars and model messages a run's transcript reported."""

    input: int
    output: int
    cache_read: int
    cache_write: int
    cost_usd: float
    messages: int


@dataclass(frozen=True)
class ToolInFlight(Record):
    """A tool call attempted and not yet completed (interrupted: the session ended before it did)."""

    id: str | None
    tool: str | None
    input: Any
    time: float
    weight: float


@dataclass(frozen=True)
class PhaseBudget(Record):
    """A phase's step budget (None: unlimited), what the run spent in it, and what is left."""

    budget: float | None
    spent: float
    left: float | None


@dataclass(frozen=True)
class RunView(Record):
    """A run: who, where and in which phase, its counts and spending (`spent` per phase against the budget,
    `tokens` and `cost_usd` from its transcript), the tool calls in flight or interrupted, and whether it waits
    for a person (`awaiting_input`). `budget` per phase when asked for."""

    id: str
    agent: str
    phase: str
    created_at: float
    lane: str | None
    task: str | None
    goal: str | None
    cli: str | None
    status: Literal["active", "ended"]
    updated_at: float
    ended_at: float | None
    events: int
    session: str | None
    sessions: int
    spent: dict[str, float]
    calls: int
    blocked: int
    completed: int
    failed: int
    in_flight: tuple[ToolInFlight, ...]
    interrupted: tuple[ToolInFlight, ...]
    usage: RunUsage
    days: dict[str, dict[str, Any]]
    wall: float
    transcript: dict[str, Any]
    turn: dict[str, Any]
    plan: tuple[dict[str, Any], ...]
    transitions: tuple[str, ...]
    awaiting_input: bool
    tokens: dict[str, int]
    cost_usd: float
    budget: dict[str, PhaseBudget] | None = meta(omit="none", default=None)


@dataclass(frozen=True)
class RunEnded(RunView):
    """`run end`: the run, and whether it had ended already (then nothing was recorded)."""

    already_ended: bool = False
