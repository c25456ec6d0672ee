"""Transition records: what changed, why (intent), at what cost, and how it was decided.

Stored as one JSON note per state commit under refs/notes/lanes; every record carries a format version.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from git_lanes.errors import UnsupportedFormat, UserError

FORMAT_VERSION = 1
STATUSES = ("proposed", "accepted", "rejected")
KINDS = ("init", "commit", "promote", "reset")


def check_format(record: dict, what: str) -> None:
    version = record.get("format")
    if not isinstance(version, int) or version // 1 != FORMAT_VERSION:
        raise UnsupportedFormat(f"{what} has format {version!r}; this git-lanes reads format {FORMAT_VERSION}",
                                hint="upgrade git-lanes")


@dataclass(frozen=True)
class Intent:
    """Why a state exists: the prompt that caused it and who acted on it."""

    prompt: str
    agent_id: str
    agent_type: str | None = None
    model: str | None = None
    tags: tuple[str, ...] = ()
    # Anything else the caller wants kept with the intent (the SDK's `add_metadata`); JSON values.
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.prompt.strip():
            raise UserError("the prompt (-m) must not be empty", code="empty_prompt")
        if not self.agent_id.strip() or any(c in self.agent_id for c in "<>\n"):
            raise UserError(f"invalid agent id {self.agent_id!r}", code="invalid_agent",
                            hint="pass --agent-id or set GIT_LANES_AGENT")
        object.__setattr__(self, "tags", tuple(self.tags))
        if any(not tag.strip() or "\n" in tag for tag in self.tags):
            raise UserError("a tag must be a non-empty single line", code="invalid_tag")
        try:
            valid = all(isinstance(key, str) and key for key in self.metadata) and json.dumps(dict(self.metadata))
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise UserError("intent metadata must map non-empty names to JSON values", code="invalid_metadata")

    @property
    def summary(self) -> str:
        return self.prompt.strip().splitlines()[0]

    def to_dict(self) -> dict:
        return {"prompt": self.prompt, "agent_id": self.agent_id, "agent_type": self.agent_type,
                "model": self.model, "tags": list(self.tags),
                **({"metadata": dict(self.metadata)} if self.metadata else {})}

    @classmethod
    def from_dict(cls, data: dict) -> Intent:
        return cls(prompt=data["prompt"], agent_id=data["agent_id"], agent_type=data.get("agent_type"),
                   model=data.get("model"), tags=tuple(data.get("tags") or ()),
                   metadata=data.get("metadata") or {})


@dataclass(frozen=True)
class Cost:
    tokens_in: int = 0
    tokens_out: int = 0
    api_calls: int = 0
    wall_time: float = 0.0
    cost_usd: float = 0.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
                raise UserError(f"{name.replace('_', '-')} must be a non-negative number, got {value!r}",
                                code="invalid_cost")

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.tokens_in + other.tokens_in, self.tokens_out + other.tokens_out,
                    self.api_calls + other.api_calls, round(self.wall_time + other.wall_time, 6),
                    round(self.cost_usd + other.cost_usd, 6))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Cost:
        return cls(**{k: data.get(k, 0) for k in ("tokens_in", "tokens_out", "api_calls", "wall_time",
                                                  "cost_usd")})


@dataclass(frozen=True)
class Evaluation:
    """One gate's verdict on one candidate tree."""

    gate: str
    passed: bool
    required: bool = True
    exit_code: int | None = None
    duration: float = 0.0
    output_tail: str = ""
    tree: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Evaluation:
        return cls(**{k: data[k] for k in ("gate", "passed", "required", "exit_code", "duration",
                                           "output_tail", "tree") if k in data})


@dataclass(frozen=True)
class Transition:
    """A proposal to move `lane` from state `base` to state `state` (both commit ids)."""

    id: str
    lane: str
    base: str | None
    state: str
    tree: str
    status: str
    intent: Intent
    cost: Cost = field(default_factory=Cost)
    kind: str = "commit"
    evaluations: tuple[Evaluation, ...] = ()
    created_at: float = 0.0
    decided_at: float | None = None
    reason: str | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise UserError(f"unknown transition status {self.status!r}")
        object.__setattr__(self, "evaluations", tuple(self.evaluations))

    def decided(self, status: str, at: float, reason: str | None = None) -> Transition:
        return replace(self, status=status, decided_at=at, reason=reason or self.reason)

    def with_evaluations(self, evaluations: tuple[Evaluation, ...]) -> Transition:
        return replace(self, evaluations=tuple(evaluations))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION, "id": self.id, "kind": self.kind, "lane": self.lane,
            "from": self.base, "to": self.state, "tree": self.tree, "status": self.status,
            "intent": self.intent.to_dict(), "cost": self.cost.to_dict(),
            "evaluations": [e.to_dict() for e in self.evaluations],
            "created_at": self.created_at, "decided_at": self.decided_at, "reason": self.reason,
            **({"extra": self.extra} if self.extra else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: dict) -> Transition:
        check_format(data, "transition record")
        return cls(id=data["id"], lane=data["lane"], base=data.get("from"), state=data["to"],
                   tree=data["tree"], status=data["status"], intent=Intent.from_dict(data["intent"]),
                   cost=Cost.from_dict(data.get("cost") or {}), kind=data.get("kind", "commit"),
                   evaluations=tuple(Evaluation.from_dict(e) for e in data.get("evaluations") or ()),
                   created_at=data.get("created_at", 0.0), decided_at=data.get("decided_at"),
                   reason=data.get("reason"), extra=data.get("extra") or {})

    @classmethod
    def from_json(cls, text: str) -> Transition:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UnsupportedFormat(f"transition note is not JSON: {exc}") from None
        return cls.from_dict(data)

    @classmethod
    def from_note(cls, text: str) -> Transition | None:
        """The record a note under refs/notes/lanes holds, or None for a note that is not one (people and
        tools may write there with `git notes --ref lanes`). A record followed by text, as `git notes
        append` leaves it, still reads; a record of an unknown format version still fails."""
        try:
            data, _ = json.JSONDecoder().raw_decode(text.lstrip())
        except ValueError:
            return None
        if not isinstance(data, dict) or "format" not in data or "id" not in data:
            return None
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise UnsupportedFormat(f"transition record {str(data.get('id'))[:16]!r} is malformed: "
                                    f"{type(exc).__name__} {exc}",
                                    hint="fix or remove the note with `git notes --ref lanes`") from None
