"""The control plane's policy: the `[budget]`, `[commands]`, `[phases]`, `[spend]`, `[claims]`, `[prices]` and
`[stop]` tables of `.lanes.toml` at the trunk's committed head, with flow's numbers as defaults.

Every key can be overridden; an unknown key in one of these tables is an error (a typo must not silently
loosen a wall). Tables that belong to other parts of git-lanes (`[[gate]]`) are left alone."""

from __future__ import annotations

import math

from git_lanes.errors import UserError
from git_lanes.model.format import MAX_USD
from git_lanes.model.frozen import Frozen, field

TYPE_CHECKING = False  # not `from typing import …`: the agent-hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

CONFIG = ".lanes.toml"
FORMAT = 1
DEFAULT_WEIGHTS = {"Agent": 5.0, "Task": 5.0, "MultiEdit": 2.5, "Write": 2.0, "Edit": 1.5, "NotebookEdit": 1.5,
                   "Bash": 1.0, "Read": 0.25, "Glob": 0.1, "Grep": 0.1}
DEFAULT_PHASES = (("plan", 15.0), ("execute", 40.0), ("verify", 15.0), ("ship", 8.0))
DEFAULT_DENY = ("rm -rf *", "git push --force *", "curl *")
SNAPSHOT_MODES = ("propose", "accept", "off")
FOREIGN_WRITES = ("warn", "deny")
# USD per million tokens, matched by the longest key contained in the model's name; "*" is the fallback.
DEFAULT_PRICES: dict[str, tuple[float, float, float, float]] = {
    "opus": (15.0, 75.0, 1.5, 18.75),
    "sonnet": (3.0, 15.0, 0.3, 3.75),
    "haiku": (1.0, 5.0, 0.1, 1.25),
    "gpt-5": (1.25, 10.0, 0.125, 1.25),
    "gemini-2.5-pro": (1.25, 10.0, 0.31, 1.25),
    "gemini": (0.3, 2.5, 0.075, 0.3),
    "*": (3.0, 15.0, 0.3, 3.75),
}
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
TABLES = {
    "budget": {"weights", "default_weight", "phases"},
    "commands": {"allow", "deny"},
    "phases": {"read_only"},
    "spend": {"usd_per_run", "usd_per_day"},
    "claims": {"foreign_writes"},
    "prices": None,  # any model name
    "stop": {"snapshot"},
}


class Price(Frozen):
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, tokens: dict[str, int]) -> float:
        """What `tokens` cost, at most MAX_USD: a price of 1e300 a token, or a count no float holds, costs the
        bound, never infinity or an OverflowError (a transcript's figures are nobody's typed input)."""
        try:
            total = sum(tokens.get(kind, 0) * float(getattr(self, kind)) for kind in PRICE_KEYS) / 1_000_000
        except OverflowError:
            return float(MAX_USD)
        return total if total <= MAX_USD else float(MAX_USD)


class Policy(Frozen):
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    default_weight: float = 1.0
    phases: tuple[tuple[str, float], ...] = DEFAULT_PHASES
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = DEFAULT_DENY
    read_only: tuple[str, ...] = ("plan",)
    usd_per_run: float | None = 5.0
    usd_per_day: float | None = 25.0
    foreign_writes: str = "warn"
    prices: dict[str, Price] = field(default_factory=lambda: {k: Price(*v) for k, v in DEFAULT_PRICES.items()})
    snapshot: str = "propose"
    source: str | None = None  # the blob it was read from; None for the defaults

    def __post_init__(self) -> None:
        if not self.phases:
            raise _invalid("[budget] phases must name at least one phase")
        if self.foreign_writes not in FOREIGN_WRITES:
            raise _invalid(f"[claims] foreign_writes must be one of {', '.join(FOREIGN_WRITES)}")
        if self.snapshot not in SNAPSHOT_MODES:
            raise _invalid(f"[stop] snapshot must be one of {', '.join(SNAPSHOT_MODES)}")
        unknown = [p for p in self.read_only if p not in self.phase_names]
        if unknown:
            raise _invalid(f"[phases] read_only names unknown phase(s) {', '.join(unknown)}")

    @property
    def phase_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.phases)

    @property
    def first_phase(self) -> str:
        return self.phases[0][0]

    def budget(self, phase: str) -> float | None:
        return dict(self.phases).get(phase)

    def next_phase(self, phase: str) -> str | None:
        names = self.phase_names
        return names[names.index(phase) + 1] if phase in names and names.index(phase) + 1 < len(names) else None

    def weight(self, tool: str, canonical: str) -> float:
        for name in (tool, canonical):
            if name in self.weights:
                return self.weights[name]
        return self.default_weight

    def price(self, model: str | None) -> Price:
        name = (model or "").lower()
        matches = [key for key in self.prices if key != "*" and key.lower() in name]
        return self.prices[max(matches, key=len)] if matches else self.prices.get("*", Price(0, 0, 0, 0))

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "source": self.source,
                "budget": {"weights": self.weights, "default_weight": self.default_weight,
                           "phases": dict(self.phases)},
                "commands": {"allow": list(self.allow) if self.allow is not None else None, "deny": list(self.deny)},
                "phases": {"read_only": list(self.read_only)},
                "spend": {"usd_per_run": self.usd_per_run, "usd_per_day": self.usd_per_day},
                "claims": {"foreign_writes": self.foreign_writes},
                "prices": {k: {key: getattr(p, key) for key in PRICE_KEYS} for k, p in self.prices.items()},
                "stop": {"snapshot": self.snapshot}}

    @classmethod
    def from_toml(cls, data: dict[str, Any], source: str | None = None) -> Policy:
        """The policy a parsed `.lanes.toml` declares; defaults for whatever it leaves out."""
        for table, keys in TABLES.items():
            value = data.get(table, {})
            if not isinstance(value, dict):
                raise _invalid(f"[{table}] must be a table")
            extra = sorted(set(value) - keys) if keys is not None else []
            if extra:
                raise _invalid(f"[{table}] has unknown key(s) {', '.join(extra)}")
        budget, commands = data.get("budget", {}), data.get("commands", {})
        spend, prices = data.get("spend", {}), dict(cls().prices)
        for model, value in data.get("prices", {}).items():
            prices[model] = _price(model, value)
        weights = dict(DEFAULT_WEIGHTS)
        weights.update({str(k): _number(v, f"[budget] weights.{k}") for k, v in
                        _table(budget.get("weights", {}), "[budget] weights").items()})
        phases = budget.get("phases")
        phase_table = DEFAULT_PHASES if phases is None else tuple(
            (str(k), _number(v, f"[budget] phases.{k}")) for k, v in _table(phases, "[budget] phases").items())
        default_read_only = ["plan"] if "plan" in dict(phase_table) else []
        return cls(
            weights=weights,
            default_weight=_number(budget.get("default_weight", 1.0), "[budget] default_weight"),
            phases=phase_table,
            allow=_patterns(commands["allow"], "allow") if "allow" in commands else None,
            deny=_patterns(commands.get("deny", list(DEFAULT_DENY)), "deny"),
            read_only=_patterns(data.get("phases", {}).get("read_only", default_read_only), "read_only", "[phases]"),
            usd_per_run=_limit(spend, "usd_per_run", 5.0), usd_per_day=_limit(spend, "usd_per_day", 25.0),
            foreign_writes=data.get("claims", {}).get("foreign_writes", "warn"),
            prices=prices, snapshot=data.get("stop", {}).get("snapshot", "propose"), source=source)


def _invalid(message: str) -> UserError:
    return UserError(f"{CONFIG}: {message}", code="invalid_policy",
                     hint=f"fix {CONFIG} on the trunk; until then every agent tool call is denied")


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid(f"{where} must be a table")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
        raise _invalid(f"{where} must be a non-negative number, got {value!r}")
    return float(value)


def _limit(table: dict[str, Any], key: str, default: float) -> float | None:
    """A spend limit; `false` (or a negative number) switches it off."""
    value = table.get(key, default)
    if value is False:
        return None
    return _number(value, f"[spend] {key}")


def _patterns(value: Any, key: str, table: str = "[commands]") -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _invalid(f"{table} {key} must be a list of non-empty strings")
    return tuple(" ".join(v.split()) for v in value)


def _price(model: str, value: Any) -> Price:
    table = _table(value, f"[prices] {model}")
    extra = sorted(set(table) - set(PRICE_KEYS))
    if extra:
        raise _invalid(f"[prices] {model} has unknown key(s) {', '.join(extra)}")
    return Price(*(_number(table.get(k, 0.0), f"[prices] {model}.{k}") for k in PRICE_KEYS))
