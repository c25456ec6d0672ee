"""Runs and their events: the records of the control plane's log (`refs/lanes/runs/<run>`).

A run is one agent's piece of work. Its log is append-only; each event commit also carries the run's
`RunState`, the fold of the log up to that event (computed by `git_lanes.domain.runs.fold`), so budgets and
spend are read from one blob and are always a function of the log, never a counter someone keeps."""

from __future__ import annotations

import math
import re

from git_lanes.errors import UnsupportedFormat, UserError
from git_lanes.model.format import check_format as format_check
from git_lanes.model.frozen import Frozen, field, fields

TYPE_CHECKING = False  # not `from typing import …`: the agent-hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
# How `run stats` groups its rows: by who, where, which run or task, or by day.
STATS_GROUPS = ("agent", "lane", "run", "task", "day")
RUN_ID = re.compile(r"[0-9a-f]{4,40}")
EVENT_TYPE = re.compile(r"[a-z][a-z_]{1,39}")
# A tool call's events name the call by the CLI's `tool_use_id` (as the issue and DESIGN.md name it). They also
# carry it as `id`, the name git-lanes wrote before and still requires; an event that has only `id` (written
# before) is read as naming its `tool_use_id`.
TOOL_EVENTS = frozenset({"tool_attempted", "tool_blocked", "tool_completed", "tool_failed"})
# What each event records besides its type and time (DESIGN.md §6; the list plus the run's own
# start and end). Older readers fold unknown types as no-ops; a new major format is refused.
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "run_start": ("agent", "phase"),
    "session_start": ("session", "source"),
    "prompt": ("text",),
    "tool_attempted": ("tool", "input", "weight", "phase", "tool_use_id"),
    "tool_blocked": ("tool", "input", "weight", "phase", "tool_use_id", "reason"),
    "tool_completed": ("tool_use_id", "tool"),
    "tool_failed": ("tool_use_id", "tool"),
    "phase": ("phase",),
    "usage": ("tokens", "cost_usd"),
    "compact": ("trigger",),
    "turn_closing": ("pid",),  # a Stop hook records the turn (its snapshot outside the lock): pid, ticks, host
    "turn_end": (),
    "subagent_stop": (),
    "session_end": ("reason",),
    "run_end": (),
    # Agents git-lanes starts itself (`git lanes spawn`): the launch, its supervisor, each agent process,
    # a stop, messages for the model (`tell`), the task pipeline's stages and budget alerts.
    "spawn": ("cli", "command"),
    "supervisor": ("pid",),
    "queued": ("live", "max_parallel"),
    "agent_started": ("pid",),
    "agent_exited": ("pid",),
    "stop_requested": ("reason",),
    "stopped": ("reason",),
    "message": ("id", "text"),
    "message_delivered": ("ids", "via"),
    "pipeline": ("stage", "status"),
    "budget_alert": ("scope", "key", "level"),
}
TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")
STATUSES = ("active", "ended")


def check_format(data: Any, what: str) -> dict[str, Any]:
    """`data` as a record of a format this git-lanes reads (the one rule in model/format.py)."""
    if not isinstance(data, dict):
        raise UnsupportedFormat(f"{what} is not a JSON object")
    format_check(data, what, FORMAT)
    return data


def validate_run_id(run: Any) -> str:
    if not isinstance(run, str) or not RUN_ID.fullmatch(run):
        from git_lanes.model.text import quoted  # only an error needs it

        raise UserError(f"invalid run id {quoted(run)}", code="invalid_run",
                        hint="run ids are lowercase hex")
    return run


class RunEvent(Frozen):
    """One entry of a run's log. `data` holds the type's fields (EVENT_FIELDS) and any optional ones."""

    type: str
    time: float
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.type, str) or not EVENT_TYPE.fullmatch(self.type):
            raise UnsupportedFormat(f"invalid run event type {self.type!r}")
        if isinstance(self.time, bool) or not isinstance(self.time, (int, float)) or not math.isfinite(self.time):
            raise UnsupportedFormat(f"run event {self.type} has no valid time")
        if not isinstance(self.data, dict):
            raise UnsupportedFormat(f"run event {self.type} has no fields")
        missing = [key for key in EVENT_FIELDS.get(self.type, ()) if key not in self.data]
        if missing:
            raise UnsupportedFormat(f"run event {self.type} lacks {', '.join(missing)}")

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "type": self.type, "time": self.time, **self.data}

    @classmethod
    def from_dict(cls, data: Any) -> RunEvent:
        record = dict(check_format(data, "run event"))
        record.pop("format")
        if record.get("type") in TOOL_EVENTS and "tool_use_id" not in record and "id" in record:
            record["tool_use_id"] = record["id"]
        try:
            return cls(type=record.pop("type"), time=record.pop("time"), data=record)
        except KeyError as exc:
            raise UnsupportedFormat(f"run event lacks {exc.args[0]!r}") from None


class Usage(Frozen):
    """Tokens by kind and what they cost, for a message, a turn or a run."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost_usd: float = 0.0
    messages: int = 0

    def __post_init__(self) -> None:
        for name, value in self.to_dict().items():
            # an int is finite whatever its size (math.isfinite raises OverflowError on one no float holds)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                    or (isinstance(value, float) and not math.isfinite(value)):
                raise UnsupportedFormat(f"usage {name} must be a non-negative number, got {value!r}")

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input + other.input, self.output + other.output, self.cache_read + other.cache_read,
                     self.cache_write + other.cache_write, round(self.cost_usd + other.cost_usd, 6),
                     self.messages + other.messages)

    def minus(self, other: Usage) -> Usage:
        """What this total added since `other` (never negative: a transcript that shrank counts nothing)."""
        return Usage(max(0, self.input - other.input), max(0, self.output - other.output),
                     max(0, self.cache_read - other.cache_read), max(0, self.cache_write - other.cache_write),
                     max(0.0, round(self.cost_usd - other.cost_usd, 6)), max(0, self.messages - other.messages))

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def tokens_dict(self) -> dict[str, int]:
        return {kind: getattr(self, kind) for kind in TOKEN_KINDS}

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input, "output": self.output, "cache_read": self.cache_read,
                "cache_write": self.cache_write, "cost_usd": self.cost_usd, "messages": self.messages}

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        if not isinstance(data, dict):
            return cls()
        tokens: dict[str, Any] = data["tokens"] if isinstance(data.get("tokens"), dict) else data
        return cls(**{k: tokens.get(k, 0) for k in TOKEN_KINDS}, cost_usd=data.get("cost_usd", 0.0),
                   messages=data.get("messages", 0))


class RunState(Frozen):
    """A run as its log folds to: who, where, which phase, what was spent, what is in flight."""

    id: str
    agent: str
    phase: str
    created_at: float
    lane: str | None = None
    task: str | None = None
    goal: str | None = None
    cli: str | None = None
    status: str = "active"
    updated_at: float = 0.0
    ended_at: float | None = None
    events: int = 0
    session: str | None = None
    sessions: int = 0
    spent: dict[str, float] = field(default_factory=dict)
    calls: int = 0
    blocked: int = 0
    completed: int = 0
    failed: int = 0
    in_flight: dict[str, dict[str, Any]] = field(default_factory=dict)
    interrupted: dict[str, dict[str, Any]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    days: dict[str, dict[str, Any]] = field(default_factory=dict)  # UTC day -> calls, blocked, tokens, cost, wall time
    wall: float = 0.0  # seconds of activity (gaps between events, each capped)
    transcript: dict[str, Any] = field(default_factory=dict)
    turn: dict[str, Any] = field(default_factory=dict)
    plan: tuple[dict[str, Any], ...] = ()
    transitions: tuple[str, ...] = ()
    launch: dict[str, Any] = field(default_factory=dict)  # how `spawn` starts its agent: cli, command, log
    supervisor: dict[str, Any] = field(default_factory=dict)  # the process driving it: pid, host, started
    process: dict[str, Any] = field(default_factory=dict)  # the agent process running now, if any
    exit: dict[str, Any] = field(default_factory=dict)  # how the last agent process ended
    stop: dict[str, Any] = field(default_factory=dict)  # a stop asked for since the supervisor started
    inbox: tuple[dict[str, Any], ...] = ()  # messages told to the run, not yet delivered to the model
    pipeline: dict[str, Any] = field(default_factory=dict)  # the task pipeline's stage, attempts, verdicts
    alerts: dict[str, str] = field(default_factory=dict)  # "scope:key" -> the budget level already raised
    ending: dict[str, Any] = field(default_factory=dict)  # `run end` asked while a Stop hook closed a turn

    def __post_init__(self) -> None:
        validate_run_id(self.id)
        if not isinstance(self.agent, str) or not self.agent.strip():
            raise UnsupportedFormat(f"run {self.id} has no agent")
        if self.status not in STATUSES:
            raise UnsupportedFormat(f"run {self.id} has unknown status {self.status!r}")
        object.__setattr__(self, "plan", tuple(self.plan))
        object.__setattr__(self, "transitions", tuple(self.transitions))
        object.__setattr__(self, "inbox", tuple(self.inbox))

    def to_dict(self) -> dict[str, Any]:
        record = {f.name: getattr(self, f.name) for f in fields(self)}
        record["usage"] = self.usage.to_dict()
        record["plan"] = list(self.plan)
        record["transitions"] = list(self.transitions)
        record["inbox"] = list(self.inbox)
        return {"format": FORMAT, **record}

    @classmethod
    def from_dict(cls, data: Any) -> RunState:
        record = dict(check_format(data, "run state"))
        record.pop("format")
        unknown = set(record) - {f.name for f in fields(cls)}
        for key in unknown:  # written by a newer minor version: keep reading what we know
            record.pop(key)
        record["usage"] = Usage.from_dict(record.get("usage"))
        try:
            return cls(**record)
        except TypeError as exc:
            raise UnsupportedFormat(f"run state is malformed: {exc}") from None
