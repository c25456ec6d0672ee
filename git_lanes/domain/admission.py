"""Admission control (flow's pre-tool hook, DESIGN.md §6): may this tool call run, and what does it cost?
Pure decisions over the policy, the run's state and where the call writes; the caller reads and charges.

Checks, in order: a run that ended admits nothing; `git lanes run …` itself always passes (the model must be
able to move on when a budget is spent), but `run resume --spawn`, which starts an agent; shell lines are
parsed and every command judged; writes are confined to the run's own lane workspace, and to nothing in a
read-only phase; past a spend limit nothing that writes or runs passes; a write into another agent's claim
warns or is denied; last, the step budget of the run's phase must hold the call's weight."""

from __future__ import annotations

import os

from git_lanes.domain.wording import dollars
from git_lanes.errors import LanesError, command
from git_lanes.model.calls import ToolCall
from git_lanes.model.policy import Policy
from git_lanes.model.refs import LANES_DIR, WORKSPACES_DIR
from git_lanes.model.runs import RunState

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from git_lanes.domain.ownership import Exclusive
    from git_lanes.domain.shell import ShellLine

CONTROL_COMMANDS = {"phase", "show", "resume", "events", "list", "stats", "end"}
EPSILON = 1e-9


class Place:
    """Where the call happens: the repository's main worktree, its common git dir, the run's own lane
    workspace (None when it has none), the session's directory, the user's home, and why what stands at
    the lane's workspace path is not its worktree (then `workspace` is None).

    (This module's helpers are plain slotted classes, not dataclasses: the hook path pays for every class it
    creates on each tool call.)"""

    __slots__ = ("root", "common_dir", "workspace", "cwd", "home", "broken")

    def __init__(self, root: str, common_dir: str, workspace: str | None, cwd: str, home: str | None = None,
                 broken: str | None = None) -> None:
        self.root, self.common_dir, self.workspace, self.cwd, self.home = root, common_dir, workspace, cwd, home
        self.broken = broken

    @property
    def lanes_dir(self) -> str:
        return os.path.join(self.root, LANES_DIR)

    @property
    def workspaces_dir(self) -> str:
        return os.path.join(self.root, WORKSPACES_DIR)


class Decision:
    """May the call run, at what weight, why not, what to warn about; `control`: a free `git lanes run …`."""

    __slots__ = ("allow", "weight", "reason", "warnings", "control")

    def __init__(self, allow: bool, weight: float, reason: str | None = None, warnings: tuple[str, ...] = (),
                 control: bool = False) -> None:
        self.allow, self.weight, self.reason, self.warnings, self.control = allow, weight, reason, warnings, control


class Spend:
    __slots__ = ("run_usd", "day_usd")

    def __init__(self, run_usd: float, day_usd: float) -> None:
        self.run_usd, self.day_usd = run_usd, day_usd


class _Check:
    __slots__ = ("call", "policy", "state", "place", "warnings")

    def __init__(self, call: ToolCall, policy: Policy, state: RunState, place: Place) -> None:
        self.call, self.policy, self.state, self.place = call, policy, state, place
        self.warnings: list[str] = []


def decide(policy: Policy, state: RunState, call: ToolCall, place: Place, spend: Spend,
           claims: dict[str, list[str]], exclusive: tuple[Exclusive, ...] = ()) -> Decision:
    weight = policy.weight(call.tool, call.canonical)
    check = _Check(call, policy, state, place)
    if state.status == "ended":
        return ended(state, weight)
    try:
        line = _parse(call.command) if call.command is not None else None
    except LanesError as exc:
        return Decision(False, weight, exc.message + (f" ({exc.hint})" if exc.hint else ""))
    if line is not None and _is_control(line):
        return Decision(True, 0.0, control=True)
    reason = (_commands(check, line) or _writes(check, line) or _spend(check, spend)
              or _exclusive(check, line, exclusive) or _claims(check, line, claims) or _budget(check, weight))
    return Decision(reason is None, weight, reason, tuple(check.warnings))


def ended(state: RunState, weight: float = 0.0) -> Decision:
    """The deny of every tool call of an ended run. This session stays bound to the ended run (its id comes
    from the session's), so nothing the model runs can start another: the way on is the person's, and the
    model should stop and say so."""
    return Decision(False, weight, f"run {state.id[:8]} has ended ({command('run end')}), so this session "
                                   "may run no more tools; stop here and tell the person, who can start a new "
                                   f"session or a new run for it ({command('run start')}, then GIT_LANES_RUN)")


def _parse(command: str) -> ShellLine:
    from git_lanes.domain import shell  # the parser loads only when a shell line arrives

    return shell.parse(command)


def _is_control(line: ShellLine) -> bool:
    def control(argv: tuple[str, ...]) -> bool:
        words = list(argv)
        if words[:1] == ["git"] and words[1:2] == ["lanes"]:
            words = words[2:]
        elif words and os.path.basename(words[0]) == "git-lanes":
            words = words[1:]
        else:
            return False
        # `run resume --spawn` starts an agent CLI: no way to move on, but work (and spend) of its own
        return words[:1] == ["run"] and len(words) > 1 and words[1] in CONTROL_COMMANDS and "--spawn" not in words

    return bool(line.commands) and not line.writes and not line.unlinks and all(control(c.argv) for c in line.commands)


def _commands(check: _Check, line: ShellLine | None) -> str | None:
    if line is None:
        return None
    from git_lanes.domain import shell

    return shell.check(line, check.policy.allow, check.policy.deny)


def write_targets(check: _Check, line: ShellLine | None) -> tuple[list[str], str | None]:
    """Absolute paths the call writes, or a reason when one cannot be known before it runs. A relative
    target of a shell line that changes directory (`cd /elsewhere && echo x > f`) counts wherever it may
    land: in the session's directory and in each directory the line moves to."""
    place = check.place
    targets = []
    cwd = os.path.join(place.cwd, check.call.cwd) if check.call.cwd else place.cwd
    home = place.home if line is None or "HOME" not in line.sets else None
    places = [cwd]
    for directory in line.directories if line is not None else ():
        if directory == "-":
            continue
        searched = "CDPATH" in line.sets and not directory.startswith(("/", "./", "../", "~", "$")) \
            and directory not in (".", "..")
        moved = resolve(directory, places[-1], home) if not searched else None
        if moved is None:
            places.append("")  # unknown: a relative write after it cannot be placed
            continue
        places.append(moved)
    pwd_known = line is None or "PWD" not in line.sets
    shell = line.writes if line is not None else ()
    unlinked = line.unlinks if line is not None else ()
    given = [*check.call.paths, *shell]
    for number, raw in enumerate([*given, *unlinked]):
        relative = not raw.startswith(("/", "~", "$HOME", "${HOME}"))
        for base in places if relative else places[:1]:
            path = resolve(raw, base, home, physical=number >= len(check.call.paths)) \
                if base and (pwd_known or "PWD" not in raw) else None
            if path is None:
                return [], f"cannot tell where `{raw}` is before the command runs; write to a plain path"
            # `rm link` removes the link, an entry of its directory: the directory is what is written
            targets.append(_real(path) if number < len(given) else
                           os.path.join(_real(os.path.dirname(path)), os.path.basename(path)))
    return list(dict.fromkeys(targets)), None


def _writes(check: _Check, line: ShellLine | None) -> str | None:
    targets, problem = write_targets(check, line)
    if problem:
        return problem
    place, state, policy = check.place, check.state, check.policy
    workspace = _real(place.workspace) if place.workspace else None
    root, git_dir, lanes_dir = _real(place.root), _real(place.common_dir), _real(place.lanes_dir)
    workspaces_dir = _real(place.workspaces_dir)
    for path in targets:
        if _inside(path, git_dir) or (workspace and _inside(path, os.path.join(workspace, ".git"))) or \
                (_inside(path, root) and ".git" in os.path.relpath(path, root).split(os.sep)):
            return (f"{path} is inside git's own files (.git: the refs, config and worktrees every lane shares): "
                    "agents write only to their lane's workspace, and move lanes with `git lanes` commands")
        mine = workspace is not None and _inside(path, workspace) and \
            (workspace != root or not _inside(path, lanes_dir))
        if not mine and _inside(path, root):
            where = "another lane's workspace" if _inside(path, workspaces_dir) else \
                f"git-lanes' own folder {LANES_DIR}" if _inside(path, lanes_dir) else "the main worktree"
            if workspace is None and place.broken:
                return (f"{path} is in {where}, and the workspace of run {state.id[:8]}'s lane {state.lane} is "
                        f"broken: {place.broken}; {command('doctor')} shows the repair")
            if workspace is None:
                return f"{path} is in {where}, and run {state.id[:8]} has no lane workspace to write in"
            return f"{path} is in {where}, outside this run's lane workspace {workspace}"
        if mine and state.phase in policy.read_only:
            following = policy.next_phase(state.phase)
            way = f"when the plan is ready, run {command('run phase', state.id[:8], following)}" if following \
                else "ask the person to move the run to a phase that allows writes"
            return f"phase {state.phase} is read-only: {os.path.relpath(path, workspace)} is a project file; {way}"
    for lane in (*check.call.lanes, *(line.lanes if line is not None else ())):
        if lane != state.lane:
            return (f"`git lanes` would rewrite the workspace of lane {lane[:100]}, outside this run's lane "
                    f"{state.lane or '(none)'}: agents write only to their own lane's workspace")
        if state.phase in policy.read_only:
            return f"phase {state.phase} is read-only: `git lanes` would rewrite this lane's workspace"
    return None


def _spend(check: _Check, spend: Spend) -> str | None:
    if not check.call.changes_things:
        return None
    policy = check.policy
    if policy.usd_per_run is not None and spend.run_usd >= policy.usd_per_run - EPSILON:
        return (f"the spend limit is reached: this run cost {dollars(spend.run_usd)} of {dollars(policy.usd_per_run)} "
                "(usd_per_run); no more writes or commands. Summarize where you are for the person")
    if policy.usd_per_day is not None and spend.day_usd >= policy.usd_per_day - EPSILON:
        return (f"the daily spend limit is reached: runs cost {dollars(spend.day_usd)} today of "
                f"{dollars(policy.usd_per_day)} (usd_per_day); no more writes or commands today")
    return None


def _claims(check: _Check, line: ShellLine | None, claims: dict[str, list[str]]) -> str | None:
    from git_lanes.model.globs import glob_matches

    workspace = check.place.workspace
    if not workspace or not claims:
        return None
    targets, _ = write_targets(check, line)
    for path in targets:
        if not _inside(path, _real(workspace)):
            continue
        relative = os.path.relpath(path, _real(workspace)).replace(os.sep, "/")
        for agent, globs in sorted(claims.items()):
            glob = next((g for g in globs if glob_matches(g, relative)), None)
            if glob is None or agent == check.state.agent:
                continue
            message = f"{relative} is claimed by {agent} ({glob})"
            if check.policy.foreign_writes == "deny":
                return message + "; writing there is denied: coordinate on the board " \
                                 f"({command('board post', '...', to=agent)})"
            check.warnings.append(f"warning: {message}; coordinate before changing it")
    return None


def _exclusive(check: _Check, line: ShellLine | None, claims: tuple[Exclusive, ...]) -> str | None:
    """A write into a path another task owns exclusively (a dispatch plan) is denied whatever
    `foreign_writes` says: the same rule `commit` enforces, decided before the write happens."""
    workspace = check.place.workspace
    if not workspace or not claims:
        return None
    from git_lanes.domain.ownership import foreign, message

    targets, _ = write_targets(check, line)
    root = _real(workspace)
    paths = [os.path.relpath(path, root).replace(os.sep, "/") for path in targets if _inside(path, root)]
    violations = foreign(claims, check.state.lane, paths)
    if not violations:
        return None
    owner = violations[0].claim.owner
    return message(violations, "this call") + "; it is denied: " + \
        (f"ask {owner} on the board ({command('board post', '...', to=owner)})" if owner else
         f"ask on the board ({command('board post', '...')})")


def _budget(check: _Check, weight: float) -> str | None:
    state, policy = check.state, check.policy
    budget = policy.budget(state.phase)
    run = state.id[:8]
    if budget is None:
        return (f"phase {state.phase!r} has no step budget in .lanes.toml; move to one that has: "
                f"{command('run phase', run, policy.first_phase)}")
    spent = state.spent.get(state.phase, 0.0)
    if spent + weight <= budget + EPSILON:
        left = budget - spent - weight
        if left < min(3.0, budget * 0.1) + EPSILON:
            check.warnings.append(f"{left:g} of {budget:g} step units left in phase {state.phase}")
        return None
    following = policy.next_phase(state.phase)
    way = (f"Summarize what you did and what remains, then continue in the next phase with "
           f"{command('run phase', run, following)}") if following else \
        (f"Summarize what you did and what remains, then end the run with {command('run end', run)} "
         "or ask the person to raise the budget")
    return (f"the step budget of phase {state.phase} is spent ({spent:g} of {budget:g} units used; this "
            f"{check.call.tool} costs {weight:g}). {way}")


def resolve(target: str, cwd: str, home: str | None, physical: bool = False) -> str | None:
    """An absolute, normalised path for a write target, or None when it depends on the run-time
    environment (a variable other than HOME or PWD, a command substitution). `$PWD` is where the command
    runs, so it is `cwd`. `physical`: left for the file system to resolve (`_real`), as a shell's open()
    does: `link/..` is the link target's parent, where bash's `cd link/..` and a file tool's path go up as
    text."""
    path = target
    if path == "~" or path.startswith("~/"):
        if not home:
            return None
        path = home + path[1:]
    for name, value in (("HOME", home), ("PWD", cwd)):
        if value:
            path = path.replace("${" + name + "}", value).replace("$" + name, value)
    if "$" in path or "`" in path or path.startswith("~"):
        return None
    joined = os.path.join(cwd, path)
    return joined if physical else os.path.normpath(joined)


def _real(path: str) -> str:
    """`path` with symbolic links resolved as far as it exists (a new file's directory may be a link)."""
    return os.path.realpath(path)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
