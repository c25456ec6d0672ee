"""Budgets per lane, task and ticket: a limit in dollars and/or tokens, kept in the ledger
(`budgets/<scope>/<key>.json`), and how far the spend against one has gone.

At WARN_AT of either limit the agent is warned through its hooks; at the limit its write and exec tools are
blocked and its task is blocked with a board post (warn, pause, stop). Light: the agent-hook path reads these
records with the standard library."""

from __future__ import annotations

import math
from typing import Any

from git_lanes.errors import MalformedRecord, UserError
from git_lanes.model.frozen import Frozen

SCOPES = ("lane", "task", "ticket")
WARN_AT = 0.8
LEVELS = ("ok", "warn", "exhausted")
DIRECTORY = "budgets"


def budget_path(scope: str, key: str) -> str:
    """Where a budget lives in the ledger tree; a lane's `/` is written %2F so each key is one file."""
    return f"{DIRECTORY}/{scope}/{encode_key(key)}.json"


def encode_key(key: str) -> str:
    return key.replace("%", "%25").replace("/", "%2F")


def decode_key(name: str) -> str:
    return name.replace("%2F", "/").replace("%25", "%")


class Budget(Frozen):
    scope: str
    key: str
    usd: float | None = None
    tokens: int | None = None
    set_by: str | None = None
    set_at: float = 0.0

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise UserError(f"unknown budget scope {self.scope!r}; one of {', '.join(SCOPES)}", code="invalid_budget")
        if not isinstance(self.key, str) or not self.key:
            raise UserError("a budget needs a lane, task or ticket", code="invalid_budget")
        if self.usd is None and self.tokens is None:
            raise UserError("a budget needs a limit in dollars or in tokens (or both)", code="invalid_budget")
        if self.usd is not None and (isinstance(self.usd, bool) or not isinstance(self.usd, (int, float))
                                     or not math.isfinite(self.usd) or self.usd < 0):
            raise UserError(f"--usd must be a non-negative number of dollars, got {self.usd!r}", code="invalid_budget")
        if self.tokens is not None and (isinstance(self.tokens, bool) or not isinstance(self.tokens, int)
                                        or self.tokens < 0):
            raise UserError(f"--tokens must be a non-negative whole number, got {self.tokens!r}",
                            code="invalid_budget")
        if self.set_by is not None and not isinstance(self.set_by, str):
            raise UserError(f"set_by must be an actor's name, got {self.set_by!r}", code="invalid_budget")
        if isinstance(self.set_at, bool) or not isinstance(self.set_at, (int, float)) \
                or not 0 <= self.set_at < math.inf:
            raise UserError(f"set_at must be a time, got {self.set_at!r}", code="invalid_budget")

    @property
    def label(self) -> str:
        return f"{self.scope} {self.key[:8] if self.scope != 'lane' else self.key}"

    def to_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "key": self.key, "usd": self.usd, "tokens": self.tokens, "set_by": self.set_by,
                "set_at": self.set_at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Budget:
        return cls(scope=data.get("scope", ""), key=data.get("key", ""), usd=data.get("usd"),
                   tokens=data.get("tokens"), set_by=data.get("set_by"), set_at=data.get("set_at") or 0.0)

    @classmethod
    def decode(cls, data: Any, what: str, hint: str | None = None) -> Budget:
        """A budget the ledger holds (`budgets/<scope>/<key>.json`), which a peer may have written with
        anything in it: a wrong shape is a MalformedRecord naming the record (`what`), as for every record
        of the ledger (domain/stored.py), not a complaint about options nobody gave."""
        try:
            if not isinstance(data, dict):
                raise TypeError(f"not a JSON object but {type(data).__name__}")
            return cls.from_dict(data)
        except UserError as exc:
            raise MalformedRecord(f"{what} is malformed: {exc.message}", hint=hint) from None
        except (TypeError, ValueError) as exc:
            raise MalformedRecord(f"{what} is malformed: {exc}", hint=hint) from None


def ratio(budget: Budget, usd: float, tokens: int) -> float:
    """The larger of spent/limit over the limits the budget sets (a zero limit is reached at once)."""
    parts = []
    if budget.usd is not None:
        parts.append(math.inf if budget.usd == 0 and usd >= 0 else usd / budget.usd)
    if budget.tokens is not None:
        parts.append(math.inf if budget.tokens == 0 else tokens / budget.tokens)
    return max(parts)


def level(budget: Budget, usd: float, tokens: int) -> str:
    used = ratio(budget, usd, tokens)
    if used >= 1.0 - 1e-9:
        return "exhausted"
    return "warn" if used >= WARN_AT - 1e-9 else "ok"


def describe(budget: Budget, usd: float, tokens: int) -> str:
    """`$0.42 of $0.50, 9000 of 10000 tokens` for the limits the budget sets."""
    parts = []
    if budget.usd is not None:
        parts.append(f"${usd:.2f} of ${budget.usd:.2f}")
    if budget.tokens is not None:
        parts.append(f"{tokens} of {budget.tokens} tokens")
    return ", ".join(parts)
