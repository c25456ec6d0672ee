"""The control plane's session and turn events on the light storage path: a prompt, a session's start (with
the resume briefing and the lane's variables), compaction, a subagent's or the session's end, and the end
of a turn (its usage and snapshot). Once per session or turn, not per tool call: `control` keeps what every
tool call runs."""

from __future__ import annotations

import os

from git_lanes.domain import control, runs, steering
from git_lanes.errors import command, command_line
from git_lanes.model.calls import HookEvent, Verdict, bounded
from git_lanes.model.policy import CONFIG
from git_lanes.model.refs import flat_name
from git_lanes.model.runs import RunEvent, RunState

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

PROMPT_CHARS = 2000
BRIEF_SOURCES = ("resume", "compact")


def record(event: HookEvent, now: float, kind: str, data: dict[str, Any], *, with_usage: bool = False,
           deliver: str | None = None) -> tuple[RunState, str | None]:
    """Append one event of `kind` (starting the run if needed, reading new usage first when asked); with
    `deliver`, also hand over the messages told to the run, whose text is returned with the state. An ended
    run takes no event, only the usage read when asked."""
    hc = control.context(event, now)
    told: list[str | None] = [None]

    def step(head: str | None, state: RunState | None) -> list[RunEvent]:
        if state is not None and control.ended(state):
            return control.usage_events(hc, state) if with_usage else []
        events = control.implicit_start(hc, state)
        if with_usage:
            events += control.usage_events(hc, state or runs.fold(None, hc.run, events[0]))
        delivered: list[RunEvent] = []
        if deliver is not None:
            delivered, told[0] = steering.deliver(state, deliver, now)
        return events + [RunEvent(kind, now, data)] + delivered

    state, _ = control.transact(hc.repo, hc.run, step)
    assert state is not None
    return state, told[0]


def prompt(event: HookEvent, now: float) -> Verdict:
    # Usage first: the transcript may still be catching up on the turn before (it is written as the session
    # goes), and what it holds at the prompt was spent before it; the turn counts from after it.
    _, told = record(event, now, "prompt", {"text": bounded(event.prompt or "", PROMPT_CHARS)}, with_usage=True,
                     deliver="prompt")
    return Verdict(context=told)


def session_start(event: HookEvent, now: float, brief: Callable[[control.LightRepo, str], str | None]) -> Verdict:
    """Record the session boundary; on a resume or after compaction (or a new session of a run that already
    worked), first build the briefing from durable state, while the in-flight set still describes the
    session that stopped."""
    hc = control.context(event, now)
    _, state = control.read_state(hc.repo, hc.run)
    text = None
    if state is not None and (event.source in BRIEF_SOURCES or state.calls or state.sessions):
        text = brief(hc.repo, hc.run)
    data = {"session": event.session, "source": event.source or "startup", "cli": event.cli}
    if event.model:
        data["model"] = event.model
    state, told = record(event, now, "session_start", data, deliver="session_start")
    if text is None:
        budget = state.spent.get(state.phase, 0.0)
        limit = hc.repo.policy().budget(state.phase)
        text = (f"git-lanes run {hc.run[:8]} ({state.agent}, lane {state.lane or '-'}): phase {state.phase}, "
                f"{budget:g} of {limit if limit is not None else '?'} step units used. "
                f"{command('run show', hc.run[:8])} shows the budget; {command('run phase', hc.run[:8], 'PHASE')} "
                "moves on.")
    variables = lane_variables(hc.repo, state.lane)
    if variables:
        shown = ", ".join(f"{name}={value}" for name, value in variables)
        text += (f"\nLane {state.lane}'s variables (its own ports): {shown}. Use them for servers and tests "
                 f"(`eval \"$({command_line('lane env', state.lane, shell=True)})\"` sets them in a shell).")
    return Verdict(context=text + (f"\n\n{told}" if told else ""), env=variables)


def lane_variables(repo: control.LightRepo, lane: str | None) -> tuple[tuple[str, str], ...]:
    """The lane's [setup] env with its reserved ports filled in, read from the trunk's committed head and the
    ledger; nothing when the trunk declares none or the lane holds too few ports (`lane setup` fixes that)."""
    workspace = control.workspace_of(repo, lane)
    if lane is None or workspace is None:
        return ()
    from git_lanes.errors import LanesError
    from git_lanes.model.lane_setup import PortsHeld, Setup, invalid

    trunk = control.trunk_tree(repo)
    entry = trunk.get(CONFIG) if trunk is not None else None
    if entry is None:
        return ()
    try:
        setup = Setup.from_config(control.parsed_config(repo, entry[1], invalid))
        path = f"ports/{flat_name(lane)}.json"
        held = steering.LedgerReader(repo).record(path) if setup.env else None
        ports = PortsHeld.decode(held, f"ledger record {path}").ports if held is not None else ()
        env = setup.render_env(lane=lane, ports=ports, workspace=workspace, root=str(repo.root), trunk=repo.trunk)
    except (LanesError, ValueError, TypeError):
        return ()
    return tuple(sorted(env.items()))


def with_usage(event: HookEvent, now: float, kind: str, data: dict[str, Any]) -> Verdict:
    """Events at which the transcript has new usage worth recording: compaction, a subagent's or the
    session's end."""
    record(event, now, kind, data, with_usage=True)
    return Verdict()


def stop(event: HookEvent, now: float, snapshot: Callable[[control.LightRepo, RunState, str], dict]) -> Verdict:
    """The end of an agent turn: record its usage, snapshot the workspace as a state of the lane (the turn's
    prompt as intent, its tokens and dollars as cost; `[stop] snapshot`), record the turn's end. The snapshot
    takes the writers' lock and may run gates, so it runs outside the runs' lock; the first record marks the
    turn as closing by this process, so a `run end` that comes meanwhile waits for the turn's end (see
    `runs.end_events`) rather than cut the turn in two. Of an ended run only the usage is recorded (the daily
    limit counts it), and the CLI is let stop."""
    from git_lanes.model.runs import Usage
    from git_lanes.store import processes

    hc = control.context(event, now)

    told: list[str | None] = [None]
    me = os.getpid()
    closing = {"pid": me, "ticks": processes.start_ticks(me), "host": processes.hostname()}

    def usage_step(head: str | None, state: RunState | None) -> list[RunEvent]:
        if state is not None and control.ended(state):
            return control.usage_events(hc, state)
        events = control.implicit_start(hc, state)
        delivered, told[0] = steering.deliver(state, "stop", now)
        events += control.usage_events(hc, state or runs.fold(None, hc.run, events[0])) + delivered
        return events if told[0] else events + [RunEvent("turn_closing", now, closing)]

    state, _ = control.transact(hc.repo, hc.run, usage_step)
    assert state is not None
    if state.status == "ended":
        # `git lanes run end` closed the run: a turn the session still ends is no work of it, so no snapshot
        # and no turn. Blocking would send the model back into tools that are all denied: the stop goes ahead.
        return Verdict()
    if told[0]:
        # The turn is not over: a Stop hook that blocks makes the model continue, with this as its reason.
        return Verdict(proceed=told[0])
    mode = hc.repo.policy().snapshot
    result = snapshot(hc.repo, state, mode) if mode != "off" else {"status": "off"}
    spent = state.usage.minus(Usage.from_dict((state.turn or {}).get("usage")))
    data = {"tokens": spent.tokens_dict(), "cost_usd": spent.cost_usd, "snapshot": result.get("status")}
    data |= {k: result[k] for k in ("transition", "message") if result.get(k)}

    def end_step(head: str | None, current: RunState | None) -> list[RunEvent]:
        # Ended meanwhile only by an end that took this hook for gone (another machine's, or a pid reused):
        # the ended run still takes nothing.
        return [] if current is None or control.ended(current) else [RunEvent("turn_end", now, data)]

    control.transact(hc.repo, hc.run, end_step)
    if result.get("transition"):
        notice = f"git-lanes: this turn is transition {result['transition'][:8]} ({result.get('status')}) " \
                 f"of lane {state.lane}"
        return Verdict(notice=notice)
    if result.get("status") == "failed":
        return Verdict(notice=f"git-lanes: the turn's snapshot failed: {result.get('message')}")
    return Verdict()
