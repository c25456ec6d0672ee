"""The control plane on the light storage path: what every agent hook does, without pygit2.

A hook opens the repository from the session's directory, reads the policy blob at the trunk's committed head
(never a workspace's `.lanes.toml`, so a lane cannot loosen its own wall), and appends to the run's log under
the runs' lock, deciding against the state the log folds to: check and charge are one step. Steps that need
the whole API (a resume briefing, the turn's snapshot) are passed in as callables by the face and run
outside that lock. This module holds what every tool call runs; `sessions` the once-a-session or
once-a-turn events, so a tool call loads none of them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from git_lanes.domain import admission, runs, steering, usage
from git_lanes.errors import Conflict, NotARepository, NotFound, UnsupportedFormat, command
from git_lanes.model.calls import HookEvent, Verdict, bounded
from git_lanes.model.policy import CONFIG, Policy
from git_lanes.model.refs import WORKSPACES_DIR
from git_lanes.model.runs import RunEvent, RunState, validate_run_id
from git_lanes.store import gitfiles, ref_files
from git_lanes.store.objects import parse_commit, parse_tree
from git_lanes.store.runlog import RunLog

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

CAS_ATTEMPTS = 5
ERROR_CHARS = 500
RUN_ID_CHARS = 16  # as `run start` and session_run_id make them


class LightRepo:
    """A repository opened for the hook path: its location, trunk, run logs and (lazily) policy. A plain
    class, as the hook path's other helpers: it pays for every class it creates on each tool call."""

    __slots__ = ("where", "trunk", "log", "_policy")

    def __init__(self, where: gitfiles.Location, trunk: str, log: RunLog) -> None:
        self.where, self.trunk, self.log = where, trunk, log
        self._policy: Policy | None = None

    @property
    def root(self) -> Path:
        return Path(self.where.root)

    @property
    def common_dir(self) -> Path:
        return Path(self.where.common_dir)

    def policy(self) -> Policy:
        if self._policy is None:
            self._policy = load_policy(self)
        return self._policy


def open_repo(cwd: str | os.PathLike, trunk: str | None = None) -> LightRepo:
    where = gitfiles.discover(cwd)
    trunk = trunk or gitfiles.read_config(where.common_dir).get("lanes.trunk")
    if not trunk:
        raise NotARepository(f"{where.root} is not set up for lanes", code="not_initialized",
                             hint=f"run {command('init')}, or uninstall the hooks from this agent's settings")
    return LightRepo(where, trunk, RunLog(Path(where.common_dir)))


def load_policy(repo: LightRepo) -> Policy:
    """The policy of `.lanes.toml` at the trunk's committed head (defaults when the trunk has none)."""
    tree = trunk_tree(repo)
    if tree is None:
        raise NotFound(f"the trunk {repo.trunk!r} has no commit, so there is no policy to read",
                       code="no_policy", hint=f"commit on the trunk ({command('init')} makes the first state)")
    entry = tree.get(CONFIG)
    if entry is None:
        return Policy()

    def invalid(message: str) -> UnsupportedFormat:
        return UnsupportedFormat(message.replace(CONFIG, f"{CONFIG} on the trunk", 1), code="invalid_policy",
                                 hint=f"fix {CONFIG} on the trunk; until then every agent tool call is denied")

    return Policy.from_toml(parsed_config(repo, entry[1], invalid), source=entry[1])


def parsed_config(repo: LightRepo, blob: str, invalid: Callable[[str], Exception]) -> dict:
    """The trunk's `.lanes.toml` (blob `blob`) parsed: from the copy an earlier call kept, else parsed now
    and kept. A file that is not valid TOML is never kept, so it is refused on every call."""
    data = repo.log.parsed_config(blob)
    if data is None:
        from git_lanes.model import config

        data = config.parse(repo.log.objects.read_typed(blob, b"blob"), invalid)
        repo.log.save_parsed_config(blob, data)
    return data


def trunk_tree(repo: LightRepo) -> dict | None:
    """The tree of the trunk's committed head, where the policy and the lane setup are read from."""
    head = ref_files.read_ref(repo.common_dir, f"refs/heads/{repo.trunk}")
    if head is None:
        return None
    headers, _ = parse_commit(repo.log.objects.read_typed(head, b"commit"))
    return parse_tree(repo.log.objects.read_typed(headers["tree"][0], b"tree"))


# -- lanes and workspaces, read from the files --------------------------------------------------------------
def lane_at(repo: LightRepo, cwd: str) -> tuple[str | None, str | None]:
    """(lane, its workspace) for a session working in `cwd`; (None, None) outside every lane."""
    directory = Path(cwd).resolve()
    common_dir = Path(repo.common_dir).resolve()
    if directory == common_dir or common_dir in directory.parents:
        return None, None  # a git directory (a lane's private one too) lies in no work tree, as lanes.lane_at says
    workspaces = (repo.root / WORKSPACES_DIR).resolve()
    if directory == workspaces or workspaces in directory.parents:
        for probe in (directory, *directory.parents):
            if probe == workspaces:
                break
            if (probe / ".git").is_file():
                return probe.relative_to(workspaces).as_posix(), str(probe)
        return None, None
    lanes_dir = workspaces.parent
    if (directory == repo.root or repo.root in directory.parents) and lanes_dir not in directory.parents \
            and directory != lanes_dir and _main_on_trunk(repo):
        return repo.trunk, str(repo.root)
    return None, None


def workspace_of(repo: LightRepo, lane: str | None) -> str | None:
    return lane_workspace(repo, lane)[0]


def lane_workspace(repo: LightRepo, lane: str | None) -> tuple[str | None, str | None]:
    """(the lane's workspace here or None, why what stands at its path is not the lane's worktree or None).
    A run's writes are confined to its workspace, so a path replaced by a symlink to another lane's workspace
    (or a folder whose .git names another worktree) is no workspace: its writes would land in that lane."""
    if lane is None:
        return None, None
    if lane == repo.trunk:
        return (repo.where.root if _main_on_trunk(repo) else None), None
    path = os.path.join(repo.where.root, WORKSPACES_DIR, lane)
    if not os.path.lexists(path):
        return None, None
    problem = gitfiles.worktree_problem(repo.where.root, repo.where.common_dir, path)
    if problem is None:
        return path, None
    # As the lanes' own reading (domain.lanes.workspace_state): one being made, or an empty folder, is none.
    if gitfiles.worktree_unfinished(path) or (os.path.isdir(path) and not os.path.islink(path)
                                              and not os.listdir(path)):
        return None, None
    return None, problem


def _main_on_trunk(repo: LightRepo) -> bool:
    try:
        head = (repo.common_dir / "HEAD").read_text().strip()
    except OSError:
        return False
    return head == f"ref: refs/heads/{repo.trunk}"


# -- the run's log ----------------------------------------------------------------------------------------
def session_run_id(cli: str, session: str) -> str:
    """The run a session with no explicit run belongs to: the same session always finds the same run."""
    from git_lanes.model.digest import sha1

    return sha1(f"{cli}\0{session}".encode()).hexdigest()[:16]


def resolve_run(repo: LightRepo, given: str) -> str:
    """A run id from a full id or a unique prefix."""
    given = given.strip().lower()
    if not given or any(c not in "0123456789abcdef" for c in given):
        validate_run_id(given)
    if len(given) == RUN_ID_CHARS and repo.log.head(given) is not None:
        return given  # a whole id (GIT_LANES_RUN as set by `run start`): no other id starts with it
    from git_lanes.model.names import resolve_prefix

    return resolve_prefix(given, repo.log.runs(), "run", hint=f"list them with {command('run list')}",
                          code="unknown_run")


def read_state(repo: LightRepo, run: str) -> tuple[str | None, RunState | None]:
    head = repo.log.head(run)
    if head is None:
        return None, None
    try:
        data = json.loads(repo.log.state_at(head))
    except ValueError as exc:
        raise UnsupportedFormat(f"run {run[:8]}'s state is not JSON: {exc}",
                                hint=f"inspect it with `git log refs/lanes/runs/{run}`") from None
    return head, RunState.from_dict(data)


def append(repo: LightRepo, run: str, head: str | None, state: RunState | None,
           event: RunEvent) -> tuple[str, RunState]:
    """Append `event` on top of `head` (call inside `repo.log.locked()`)."""
    new_state = runs.fold(state, run, event)
    message = runs.summary_line(new_state, event) + "\n\n" + \
        json.dumps(event.to_dict(), sort_keys=True, ensure_ascii=False) + "\n"
    blob = json.dumps(new_state.to_dict(), sort_keys=True, indent=1, ensure_ascii=False).encode() + b"\n"
    identity = f"{_ident(new_state.agent)} <agent@lanes>"
    return repo.log.append(run, head, blob, message, identity, event.time), new_state


def _ident(name: str) -> str:
    return "".join(c for c in name if c not in "<>\n\r\0") or "agent"


def transact(repo: LightRepo, run: str, step: Callable[[str | None, RunState | None], list[RunEvent]]) \
        -> tuple[RunState | None, list[RunEvent]]:
    """Under the runs' lock: read the run's head and state, let `step` decide the events to append from them,
    append them. A ref moved by a writer outside the lock (sync) is re-read and decided again."""
    with repo.log.locked():
        for attempt in range(CAS_ATTEMPTS):
            head, state = read_state(repo, run)
            events = step(head, state)
            try:
                for event in events:
                    head, state = append(repo, run, head, state, event)
            except Conflict:
                if attempt == CAS_ATTEMPTS - 1:
                    raise
                continue
            return state, events
    raise AssertionError("unreachable")


def start_event(repo: LightRepo, now: float, *, agent: str, lane: str | None, phase: str | None = None,
                task: str | None = None, goal: str | None = None, cli: str | None = None,
                session: str | None = None) -> RunEvent:
    data = {"agent": agent, "phase": phase or repo.policy().first_phase, "lane": lane, "task": task,
            "goal": goal, "cli": cli, "session": session}
    return RunEvent("run_start", now, {k: v for k, v in data.items() if v is not None or k == "lane"})


# -- hook events --------------------------------------------------------------------------------------------
class HookContext:
    __slots__ = ("repo", "run", "event", "now")

    def __init__(self, repo: LightRepo, run: str, event: HookEvent, now: float) -> None:
        self.repo, self.run, self.event, self.now = repo, run, event, now


def context(event: HookEvent, now: float) -> HookContext:
    repo = open_repo(event.cwd)
    run = resolve_run(repo, event.run) if event.run else session_run_id(event.cli, event.session)
    return HookContext(repo, run, event, now)


def ended(state: RunState | None) -> bool:
    """Whether the run has ended: its hooks then record no more work (tool calls, prompts, turns), only the
    usage its session still spends, as `usage_events` reads it: the daily limit (all runs, from their logs)
    must count money a session bound to an ended run goes on spending."""
    return state is not None and state.status == "ended"


def implicit_start(hc: HookContext, state: RunState | None) -> list[RunEvent]:
    if state is not None:
        return []
    lane, _ = lane_at(hc.repo, hc.event.cwd)
    return [start_event(hc.repo, hc.now, agent=run_agent(hc, lane), lane=lane, cli=hc.event.cli,
                        session=hc.event.session)]


def run_agent(hc: HookContext, lane: str | None) -> str:
    """The agent of a run a hook starts. One named by GIT_LANES_AGENT must be an agent id, as on every command
    (refused, so the call is denied, rather than a run whose every turn's snapshot fails); without one, the
    one live agent holding the run's lane, as `run start` takes it (the agent that took the lane through the
    MCP server beside the hooks: its claims are the run's own, not another agent's); else the session id, or
    where that is no agent id, `<cli>-<run>` as spawn names an agent."""
    from git_lanes.model.ids import AgentId  # once per session: the hook path does not load it otherwise

    if hc.event.agent is not None:
        return AgentId(hc.event.agent)
    holder = lane_holder(hc.repo, lane, hc.now) if lane is not None else None
    if holder is not None:
        return holder
    return hc.event.session if AgentId.problem(hc.event.session) is None else f"{hc.event.cli}-{hc.run[:8]}"


def lane_holder(repo: LightRepo, lane: str, now: float) -> str | None:
    """The one live agent whose assigned lane is `lane` (`agents/<id>.json` in the ledger's state, as
    domain/worktrees.py `holders` reads it), or None where none or several are."""
    from git_lanes.model.ids import AgentId

    ledger = steering.LedgerReader(repo)
    found = []
    for name in ledger.names("agents"):
        record = ledger.record(f"agents/{name}") if name.endswith(".json") else None
        if not isinstance(record, dict) or record.get("lane") != lane:
            continue
        agent, until = record.get("id"), record.get("lease_until")
        # a record a peer wrote malformed is passed over, as read_claims passes it over
        if isinstance(agent, str) and AgentId.problem(agent) is None and isinstance(until, (int, float)) \
                and not isinstance(until, bool) and until >= now:
            found.append(agent)
    return found[0] if len(found) == 1 else None


def usage_events(hc: HookContext, state: RunState | None) -> list[RunEvent]:
    cursor = state.transcript if state is not None else {}
    found = usage.refresh(hc.event.cli, hc.event.transcript, cursor, hc.repo.policy())
    if found is None:
        return []
    delta, following = found
    return [RunEvent("usage", hc.now, {"tokens": delta.tokens_dict(), "cost_usd": delta.cost_usd,
                                       "messages": delta.messages, "transcript": following})]


def pre_tool(event: HookEvent, now: float, exhausted: Callable[[LightRepo, str, list[dict]], None] | None = None) \
        -> Verdict:
    """Admit or deny one tool call and charge it, in one step under the runs' lock. Messages told to the run
    ride along as context; budgets of its lane, task and ticket warn, then deny writes and commands, and
    `exhausted` (run outside the lock) blocks the task of a budget this call found spent."""
    hc = context(event, now)
    policy = hc.repo.policy()
    call = event.call
    assert call is not None
    outcome: dict[str, Any] = {}

    def step(head: str | None, state: RunState | None) -> list[RunEvent]:
        if ended(state):
            # denied, and not recorded: an ended run takes no more events (nor the usage they would read)
            outcome.update(decision=admission.ended(state), budget=steering.BudgetCheck(), told=None)
            return []
        events = implicit_start(hc, state)
        if events:
            state = runs.fold(None, hc.run, events[0])
        assert state is not None
        if call.changes_things and (policy.usd_per_run is not None or policy.usd_per_day is not None
                                    or state.lane or state.task):
            found = usage_events(hc, state)
            for extra in found:
                state = runs.fold(state, hc.run, extra)
            events += found
        workspace, broken = lane_workspace(hc.repo, state.lane)
        place = admission.Place(str(hc.repo.root), str(hc.repo.common_dir), workspace, event.cwd, event.home,
                                broken)
        spend = admission.Spend(state.usage.cost_usd, day_spend(hc.repo, hc.run, state, now))
        writes = bool(call.paths or call.command)
        ledger = steering.LedgerReader(hc.repo) if writes or state.lane or state.task else None
        claims = read_claims(hc.repo, ledger) if writes and policy.foreign_writes else {}
        decision = admission.decide(policy, state, call, place, spend, claims,
                                    read_exclusive(hc.repo, ledger) if writes else ())
        budget = steering.check(hc.repo, state, call, now, ledger) if not decision.control \
            else steering.BudgetCheck()
        delivered, told = steering.deliver(state, "pre_tool", now)
        outcome.update(decision=decision, budget=budget, told=told)
        data = {"tool": call.tool, "input": call.summary, "weight": decision.weight, "phase": state.phase,
                "tool_use_id": call.id, "id": call.id, "kind": call.kind}
        if decision.allow and budget.deny is None:
            data["weight"] = 0.0 if decision.control else decision.weight
            if call.plan is not None:
                data["plan"] = list(call.plan)
            if decision.control:
                data["control"] = True
            return events + budget.events + delivered + [RunEvent("tool_attempted", now, data)]
        reason = decision.reason if not decision.allow else budget.deny
        return events + budget.events + delivered + [RunEvent("tool_blocked", now, {**data, "reason": reason})]

    transact(hc.repo, hc.run, step)
    decision, budget, told = outcome["decision"], outcome["budget"], outcome["told"]
    if budget.exhausted and exhausted is not None:
        exhausted(hc.repo, hc.run, budget.exhausted)
    context_text = "\n".join([*decision.warnings, *budget.warnings, *([told] if told else [])]) or None
    if decision.allow and budget.deny is None:
        return Verdict(True, context=context_text)
    return Verdict(False, reason=f"git-lanes: {decision.reason if not decision.allow else budget.deny}",
                   context=context_text)


def post_tool(event: HookEvent, now: float) -> Verdict:
    hc = context(event, now)
    call = event.call
    assert call is not None
    data: dict[str, Any] = {"tool_use_id": call.id, "id": call.id, "tool": call.tool}
    if event.duration is not None:
        data["duration"] = round(event.duration, 3)
    if event.name == "tool_failed":
        data["error"] = bounded(event.error or "failed", ERROR_CHARS)
    kind = "tool_failed" if event.name == "tool_failed" else "tool_completed"
    told: list[str | None] = [None]

    def step(head: str | None, state: RunState | None) -> list[RunEvent]:
        if ended(state):
            return []
        delivered, told[0] = steering.deliver(state, "post_tool", now)
        return implicit_start(hc, state) + [RunEvent(kind, now, data)] + delivered

    transact(hc.repo, hc.run, step)
    return Verdict(context=told[0])


def day_spend(repo: LightRepo, run: str, state: RunState, now: float) -> float:
    """What every run here cost today (UTC), this run's state taken as given (it may not be written yet)."""
    today = runs.day_of(now)
    total = state.days.get(today, {}).get("cost_usd", 0.0)
    midnight = now - now % 86400  # UTC: a run whose log has not moved since spent nothing today
    for other, head in repo.log.runs_touched_since(midnight).items():
        if other == run:
            continue
        try:
            other_state = RunState.from_dict(json.loads(repo.log.state_at(head)))
        except (ValueError, UnsupportedFormat):
            continue  # a damaged log of another run must not stop this one; doctor reports it
        total += other_state.days.get(today, {}).get("cost_usd", 0.0)
    return round(total, 6)


def read_claims(repo: LightRepo, ledger: steering.LedgerReader | None = None) -> dict[str, list[str]]:
    """Every agent's claimed globs, from the ledger's state (`claims/<agent>.json`)."""
    ledger = ledger or steering.LedgerReader(repo)
    found = {}
    for name in ledger.names("claims"):
        record = ledger.record(f"claims/{name}") if name.endswith(".json") else None
        globs = record.get("globs", []) if record is not None else None
        # A record a peer wrote malformed (`"globs": 5`) is left out, as `claim list` leaves it out (doctor
        # names it): not an internal error that denies every write.
        if isinstance(globs, list) and all(isinstance(c, dict) and isinstance(c.get("glob"), str) for c in globs):
            found[name[:-5]] = [c["glob"] for c in globs]
    return found


def read_exclusive(repo: LightRepo, ledger: steering.LedgerReader | None = None) -> tuple:
    """The exclusive claims of dispatch plans (`exclusive/<task>.json` in the ledger's state), with the
    agent holding each task now."""
    ledger = ledger or steering.LedgerReader(repo)
    names = ledger.names("exclusive")
    if not names:
        return ()
    from git_lanes.domain.ownership import Exclusive  # only where a plan claimed files: the hook path stays lean

    found = []
    for name in names:
        record = ledger.record(f"exclusive/{name}") if name.endswith(".json") else None
        task = record.get("task") if record else None
        globs = record.get("globs", []) if record else None
        # left out when malformed, as domain/exclusive.py `held` leaves it out (model ExclusiveClaim)
        if not isinstance(task, str) or len(task) != 16 or task.strip("0123456789abcdef") \
                or not isinstance(globs, list) or not all(isinstance(glob, str) for glob in globs) \
                or not all(isinstance(record.get(key), (str, type(None))) for key in ("lane", "title", "plan")):
            continue
        holder = ledger.record(f"tasks/{task[:2]}/{task}.json") or {}
        found.append(Exclusive(task, str(record.get("title") or ""), str(record.get("lane") or ""),
                               tuple(record.get("globs") or ()), record.get("plan"), holder.get("owner")))
    return tuple(found)
