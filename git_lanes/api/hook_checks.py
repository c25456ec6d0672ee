"""doctor's checks of the agent hooks: each CLI's hooks installed and runnable, the trunk's policy readable,
every run's state the fold of its log. Registered (with `check`) when doctor imports this module."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

from git_lanes.api.doctor import Check, Where, check, finding
from git_lanes.domain import hook_settings
from git_lanes.errors import LanesError, command


def _command_runs(command: str) -> bool:
    """Whether the program a hook command starts exists (a missing one fails open: the CLI runs the tool)."""
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
            if not report["hooked"] and not report["misplaced"]:
                continue
            broken = [c for commands in report["commands"].values() for c in commands if not _command_runs(c)]
            again = f"run {command('uninstall', cli, scope=scope)}, then {command('install', cli, scope=scope)}"
            if report["disabled"]:
                found.append(finding("fail", f"{cli} {scope} hooks in {path} are switched off: {report['disabled']}",
                                     "remove that setting, or no hook holds", settings=str(path)))
            elif report["misplaced"]:
                found.append(finding("fail", f"{cli} {scope} hooks in {path} are misplaced: "
                                             f"{'; '.join(report['misplaced'][:3])}", again, settings=str(path)))
            elif report["narrowed"]:
                found.append(finding("fail", f"{cli} {scope} hooks in {path} let calls past them: "
                                             f"{', '.join(report['narrowed'][:3])} match only some", again,
                                     settings=str(path)))
            elif broken:
                found.append(finding("fail", f"{cli} {scope} hooks in {path} run a program that is not there: "
                                             f"{broken[0]}", f"run {command('install', cli, scope=scope)} again",
                                     settings=str(path)))
            elif report["missing"]:
                found.append(finding("fail", f"{cli} {scope} hooks in {path} lack {', '.join(report['missing'])}",
                                     f"run {command('install', cli, scope=scope)}", settings=str(path)))
            else:
                found.append(finding("ok", f"{cli} {scope} hooks installed in {path}", settings=str(path)))
        return found or [finding("warn", f"no {cli} hooks installed",
                                 f"{command('install', cli)} if agents here use it")]
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
