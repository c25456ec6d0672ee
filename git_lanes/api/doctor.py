"""`doctor`: a registry of health checks. Each check looks at one part of the setup and returns findings
(`ok`, `warn` or `fail`, a message, a hint); `Lanes.doctor()` runs them all. Another part of git-lanes adds
its checks with `@check("name")` in its own module and lists that module in CHECK_MODULES."""

from __future__ import annotations

import importlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from git_lanes.domain import hook_settings
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError
from git_lanes.model.frozen import Frozen

if TYPE_CHECKING:
    from git_lanes.domain import control, runs
    from git_lanes.model.runs import RunEvent

CHECK_MODULES = ["git_lanes.api.doctor", "git_lanes.api.health"]
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


class DoctorApi:
    ctx: Context

    def doctor(self, where: Where, only: tuple[str, ...] = (), *, fix: bool = False) -> dict[str, Any]:
        """Run the repository's health checks (all, or those named in `only`) and report each finding with what to
        do about it; with `fix`, run the repairs findings carry and report what is left for a person."""
        for module in CHECK_MODULES:
            importlib.import_module(module)
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


def _command_runs(command: str) -> bool:
    """Whether the program a hook command starts exists (a missing one fails open: the CLI runs the tool)."""
    import shlex  # here: every command loads this module (a mixin of Lanes), only doctor uses shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    program = words[0]
    return Path(program).is_file() if "/" in program else shutil.which(program) is not None


def _hooks(cli: str) -> Check:
    def run(api: Any, where: Where) -> list[dict[str, Any]]:
        found = []
        for scope in hook_settings.SCOPES:
            path = hook_settings.settings_path(cli, scope, api.root, where.home, where.codex_home)
            report = hook_settings.inspect(path, cli)
            if not report["hooked"]:
                continue
            broken = [c for commands in report["commands"].values() for c in commands if not _command_runs(c)]
            if broken:
                found.append(finding("fail", f"{cli} {scope} hooks in {path} run a program that is not there: "
                                             f"{broken[0]}", f"run `git lanes install {cli} --scope {scope}` again",
                                     settings=str(path)))
            elif report["missing"]:
                found.append(finding("fail", f"{cli} {scope} hooks in {path} lack {', '.join(report['missing'])}",
                                     f"run `git lanes install {cli} --scope {scope}`", settings=str(path)))
            else:
                found.append(finding("ok", f"{cli} {scope} hooks installed in {path}", settings=str(path)))
        return found or [finding("warn", f"no {cli} hooks installed",
                                 f"`git lanes install {cli}` if agents here use it")]
    return run


for _cli in hook_settings.SPECS:
    check(f"hooks.{_cli}")(_hooks(_cli))


@check("hooks.policy")
def _policy(api: Any, where: Where) -> list[dict[str, Any]]:
    from git_lanes.domain import control

    repo = control.open_repo(api.root, trunk=api.trunk)
    policy = repo.policy()
    source = f"{control.CONFIG} at the trunk's head" if policy.source else "the defaults (no .lanes.toml on the trunk)"
    return [finding("ok", f"the policy reads: {source}; phases {', '.join(policy.phase_names)}")]


@check("hooks.runs")
def _runs(api: Any, where: Where) -> list[dict[str, Any]]:
    """Every run's state is the fold of its log (nothing edited a state blob by hand)."""
    from git_lanes.domain import control, runs
    from git_lanes.model.runs import RunEvent

    repo = control.open_repo(api.root, trunk=api.trunk)
    bad = []
    heads = repo.log.runs()
    for run, head in heads.items():
        try:
            _, stored = control.read_state(repo, run)
            state = None
            for _, message in reversed(list(repo.log.commits(head))):
                state = runs.fold(state, run, RunEvent.from_dict(json.loads(message.partition("\n\n")[2])))
            if state != stored:
                bad.append(f"{run[:8]}: its state does not match its log")
        except (LanesError, ValueError) as exc:
            bad.append(f"{run[:8]}: {exc}")
    if bad:
        return [finding("fail", "run logs damaged: " + "; ".join(bad[:5]),
                        "see `git log refs/lanes/runs/<run>`; a damaged run denies its agent's calls")]
    return [finding("ok", f"{len(heads)} run logs replay to their states")]
