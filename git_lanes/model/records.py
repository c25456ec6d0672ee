"""Transition records: what changed, why (intent), at what cost, and how it was decided.

Stored as one JSON note per state commit under refs/notes/lanes; every record carries a format version.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal, TypeVar

from git_lanes.errors import MalformedRecord, UnsupportedFormat, UserError
from git_lanes.model.field_types import Range, Text
from git_lanes.model.format import FORMAT_VERSION, MAX_CALLS, MAX_SECONDS, MAX_TOKENS, MAX_USD, check_format
from git_lanes.model.frozen import field, replace
from git_lanes.model.ids import Actor, LaneName, TransitionId
from git_lanes.model.record import Record, key, meta
from git_lanes.model.text import is_text

STATUSES = ("proposed", "accepted", "rejected")
Status = Literal["proposed", "accepted", "rejected"]
MAX_PROMPT = 100_000
MAX_LABEL = 200

Tokens = Annotated[int, Range(0, MAX_TOKENS)]
T = TypeVar("T", bound="Transition")
Label = Annotated[str, Text(code="invalid_intent", max_chars=MAX_LABEL, name=True)]

__all__ = ["FORMAT_VERSION", "MAX_CALLS", "MAX_SECONDS", "MAX_TOKENS", "MAX_USD", "STATUSES", "Cost", "CostTotals",
           "Evaluation", "HeldExtra", "Hold", "Intent",
           "PromotionExtra",
           "ResetExtra", "Transition", "check_format"]


class Intent(Record):
    """Why a state exists: the prompt that caused it and who acted on it."""

    prompt: Annotated[str, Text(code="invalid_prompt", multiline=True, max_chars=MAX_PROMPT, nonblank=True,
                                blank_code="empty_prompt")]
    agent_id: Actor
    agent_type: Label | None = None
    model: Label | None = None
    tags: tuple[Annotated[str, Text(code="invalid_tag", what="a tag", max_chars=MAX_LABEL, nonblank=True,
                                         name=True)], ...] = ()
    # Anything else the caller wants kept with the intent (the SDK's `add_metadata`); JSON values.
    metadata: dict[str, Any] = meta(omit="empty", default_factory=dict)

    INVALID = "invalid_intent"

    def check(self) -> None:
        try:
            valid = all(self.metadata) and json.dumps(self.metadata, allow_nan=False) \
                and all(is_text(text) for text in _texts(self.metadata))
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise UserError("intent metadata must map non-empty names to JSON values, its text valid UTF-8 "
                            "without NUL", code="invalid_metadata")

    @property
    def summary(self) -> str:
        return self.prompt.strip().splitlines()[0]


def _texts(value: object) -> list[object]:
    """Every string in a JSON value, keys included: each must be text git and strict JSON readers carry."""
    if isinstance(value, dict):
        return [*value, *(text for item in value.values() for text in _texts(item))]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _texts(item)]
    return [value] if isinstance(value, str) else []


def _cost_error(name: str, value: object) -> UserError:
    return UserError(f"{name.replace('_', '-')} must be a non-negative number, got {value!r}", code="invalid_cost")


_COST_LIMITS = {"tokens_in": MAX_TOKENS, "tokens_out": MAX_TOKENS, "api_calls": MAX_CALLS, "wall_time": MAX_SECONDS,
                "cost_usd": MAX_USD}


class Cost(Record):
    """What one transition cost. Each figure is bounded (D8), so totals stay finite. A figure a repository
    already holds above its bound (an older git-lanes took `--wall-time 1e308`) reads as the bound: the
    transition still shows, and its cost saturates as totals do."""

    tokens_in: Tokens = 0
    tokens_out: Tokens = 0
    api_calls: Annotated[int, Range(0, MAX_CALLS)] = 0
    wall_time: Annotated[float, Range(0, MAX_SECONDS)] = 0.0
    cost_usd: Annotated[float, Range(0, MAX_USD)] = 0.0

    INVALID = "invalid_cost"

    def __post_init__(self) -> None:
        for name, limit in _COST_LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value == value \
                    or value < 0 or value in (float("inf"), float("-inf")):
                raise _cost_error(name, value)
            if value > limit and self.reading_stored():
                object.__setattr__(self, name, type(value)(limit))
            elif value > limit:
                raise UserError(f"{name.replace('_', '-')} must be at most {limit:,}, got {value!r}",
                                code="invalid_cost")
        super().__post_init__()

    @classmethod
    def capped(cls, tokens_in: int = 0, tokens_out: int = 0, api_calls: int = 0, wall_time: float = 0.0,
               cost_usd: float = 0.0) -> Cost:
        """A cost measured rather than given (a turn's usage, read from an agent's transcript): a figure above
        its bound is kept at the bound, as a stored one reads and as totals saturate, not refused: nobody
        typed it, and a refusal would leave the turn unrecorded."""
        return cls(min(tokens_in, MAX_TOKENS), min(tokens_out, MAX_TOKENS), min(api_calls, MAX_CALLS),
                   min(wall_time, float(MAX_SECONDS)), min(cost_usd, float(MAX_USD)))

    def __add__(self, other: Cost) -> Cost:
        """One transition's cost, added up from parts (still bounded); sum many with `CostTotals`."""
        if not isinstance(other, Cost):
            return NotImplemented
        total = CostTotals.of(self) + other
        return Cost(total.tokens_in, total.tokens_out, total.api_calls, total.wall_time, total.cost_usd)


def _saturated(value: float) -> float:
    """A float sum kept finite: sums of bounded figures never get near the largest float, but a sum must
    never be what breaks a reader (D8), so one that overflowed stays at the largest finite value."""
    return value if value <= _LARGEST else _LARGEST


_LARGEST = sys.float_info.max


class CostTotals(Record):
    """Figures summed over transitions: unbounded per field, but sums of bounded figures, and saturating,
    so always finite."""

    tokens_in: int = 0
    tokens_out: int = 0
    api_calls: int = 0
    wall_time: float = 0.0
    cost_usd: float = 0.0

    @classmethod
    def of(cls, cost: Cost | CostTotals) -> CostTotals:
        return cls(cost.tokens_in, cost.tokens_out, cost.api_calls, cost.wall_time, cost.cost_usd)

    def __add__(self, other: Cost | CostTotals) -> CostTotals:
        if not isinstance(other, (Cost, CostTotals)):
            return NotImplemented
        return CostTotals(self.tokens_in + other.tokens_in, self.tokens_out + other.tokens_out,
                          self.api_calls + other.api_calls, _saturated(round(self.wall_time + other.wall_time, 6)),
                          _saturated(round(self.cost_usd + other.cost_usd, 6)))

    __radd__ = __add__


class Evaluation(Record):
    """One gate's verdict on one candidate tree."""

    gate: str
    passed: bool
    required: bool = True
    exit_code: int | None = None
    duration: float = 0.0
    output_tail: str = ""
    tree: str | None = None


class Hold(Record):
    """Why an auto-accepted transition was held for a person (it changes protected paths)."""

    reason: str
    paths: tuple[str, ...]


class HeldExtra(Record):
    """What a commit held for a person records."""

    held: Hold


class PromotionExtra(Record):
    """What a promotion's transition records beyond the common fields."""

    promoted_lane: LaneName
    lane_head: str
    merge_base: str | None
    forced: tuple[str, ...] = meta(omit="empty", default=(), doc="colliding paths the lane's version won on")
    backup: str | None = meta(omit="none", default=None, doc="the ref keeping the target's versions")
    held: Hold | None = meta(omit="none", default=None, doc="why it waits for a person")


class ResetExtra(Record):
    """What a `lane reset`'s kept attempt records: the lane it was reset onto and that lane's head."""

    onto: LaneName
    new_head: str


class Transition(Record):
    """A proposal to move `lane` from state `base` to state `state` (both commit ids)."""

    id: TransitionId
    lane: str  # as lenient as the lanes that may exist (a name under an older, looser rule still reads)
    base: str | None = field(metadata={"key": "from"})
    state: str = field(metadata={"key": "to"})
    tree: str
    status: Status
    intent: Intent
    cost: Cost = field(default_factory=Cost)
    kind: str = "commit"
    evaluations: tuple[Evaluation, ...] = ()
    created_at: float = 0.0
    decided_at: float | None = None
    reason: str | None = None
    # Unknown extras (from a newer git-lanes of the same format) are kept as they are.
    extra: PromotionExtra | ResetExtra | HeldExtra | dict[str, Any] = meta(omit="empty", default_factory=dict)

    def check(self) -> None:
        if not self.state or not self.tree:
            raise UserError("a transition names its state and tree", code=self.INVALID)

    def decided(self, status: Status, at: float, reason: str | None = None) -> Transition:
        return replace(self, status=status, decided_at=at, reason=reason or self.reason)

    def with_evaluations(self, evaluations: tuple[Evaluation, ...]) -> Transition:
        return replace(self, evaluations=tuple(evaluations))

    @property
    def promotion(self) -> PromotionExtra | None:
        return self.extra if isinstance(self.extra, PromotionExtra) else None

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT_VERSION, **super().to_dict()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = super().json_schema()
        return schema | {"properties": {"format": {"const": FORMAT_VERSION}, **schema["properties"]}}

    @classmethod
    def from_dict(cls: type[T], data: Any) -> T:
        check_format(data, "transition record")
        for name in ("id", "lane", "to", "tree", "status", "intent"):
            if name not in data:
                raise UserError(f"transition record lacks {name!r}", code=cls.INVALID)
        return super().from_dict({**data, "extra": data.get("extra") or {}, "cost": data.get("cost") or {},
                                   "evaluations": data.get("evaluations") or ()})

    @classmethod
    def from_json(cls, text: str) -> Transition:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UnsupportedFormat(f"transition note is not JSON: {exc}") from None
        return cls.from_stored(data)

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
        found = data["format"]
        if isinstance(found, bool) or not isinstance(found, (int, float)) or found != found:
            # not a version a newer git-lanes could have written (that would be a number): a bad record
            raise MalformedRecord(f"transition record {str(data.get('id'))[:16]!r} has format {found!r}",
                                  hint="fix or remove the note with `git notes --ref lanes`")
        return cls.decode(data, f"transition record {str(data.get('id'))[:16]!r}",
                          hint="fix or remove the note with `git notes --ref lanes`")
