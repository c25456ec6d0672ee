"""`doctor`: a registry of health checks. Each check looks at one part of the setup and returns findings
(`ok`, `warn` or `fail`, a message, a hint); `Lanes.doctor()` runs them all. Another part of git-lanes adds
its checks with `@check("name")` in its own module and lists that module in CHECK_MODULES."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError, UserError
from git_lanes.model.frozen import Frozen
from git_lanes.model.text import quoted

# The modules whose import registers the checks (with @check), in the order they report. Not imported here:
# this module is a mixin of Lanes, loaded by every command; the checks only by doctor.
CHECK_MODULES = ["git_lanes.api.hook_checks", "git_lanes.api.health"]
# `fixed`: a finding `--fix` repaired (it was `was`). A finding may carry a `repair` (a callable doing what is
# safe to do about it), which `doctor(fix=True)` runs; the others are left for a person, with their hint.
STATUSES = ("ok", "warn", "fail", "fixed")


class Where(Frozen):
    """What a check may look at besides the repository: the user's home and Codex's."""

    home: Path
    codex_home: Path | None = None


Check = Callable[[Any, Where], list[dict[str, Any]]]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    def register(function: Check) -> Check:
        CHECKS[name] = function
        return function
    return register


def finding(status: str, message: str, hint: str | None = None, *, repair: Callable[[], Any] | None = None,
            **details: Any) -> dict[str, Any]:
    assert status in STATUSES
    return {"status": status, "message": message, **({"hint": hint} if hint else {}),
            **({"repair": repair} if repair else {}), **details}


@held
class DoctorApi:
    ctx: Context

    def doctor(self, where: Where, only: tuple[str, ...] = (), *, fix: bool = False) -> dict[str, Any]:
        """Run the repository's health checks (all, or those named in `only`) and report each finding with what to
        do about it; with `fix`, run the repairs findings carry and report what is left for a person."""
        for module in CHECK_MODULES:
            importlib.import_module(module)
        groups = {name.split(".")[0] for name in CHECKS}
        unknown = [o for o in only if o not in CHECKS and o not in groups]
        if unknown:  # a mistyped name would otherwise run nothing and pass
            raise UserError(f"no check named {quoted(unknown[0])}", code="unknown_check",
                            hint=f"checks: {', '.join(sorted(groups | set(CHECKS)))}")
        results = []
        for name, function in CHECKS.items():
            if only and not any(name == o or name.startswith(o + ".") for o in only):
                continue
            try:
                found = function(self, where)
            except LanesError as exc:
                found = [finding("fail", exc.message, exc.hint)]
            results += [{"check": name, **_repaired(f, fix)} for f in found]
        return {"ok": all(r["status"] != "fail" for r in results), "checks": results, "fix": fix,
                "fixed": sum(1 for r in results if r["status"] == "fixed"),
                "left": sum(1 for r in results if r["status"] in ("warn", "fail"))}


def _repaired(found: dict[str, Any], fix: bool) -> dict[str, Any]:
    """The finding after `--fix` ran its repair (or marked `fixable` when it was not asked to)."""
    repair = found.pop("repair", None)
    if repair is None:
        return found
    if not fix:
        return found | {"fixable": True}
    try:
        repair()
    except LanesError as exc:
        return found | {"repair_failed": exc.message}
    return found | {"status": "fixed", "was": found["status"]}
