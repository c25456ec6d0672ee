"""Runs as a fold over their event log: the pure rules that turn an event into the run's next state, and the
views every face shows (a run, its timeline, statistics). No I/O here."""

from __future__ import annotations

import time as _time

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.frozen import replace
from git_lanes.model.policy import Policy
from git_lanes.model.runs import STATS_GROUPS, RunEvent, RunState, Usage

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

# A gap between two events longer than this is idle time, not work: wall time counts at most this much of it.
IDLE_CAP_SECONDS = 600.0
DAY_KEYS = ("calls", "blocked", "input", "output", "cache_read", "cache_write", "cost_usd", "wall")


def day_of(moment: float) -> str:
    return _time.strftime("%Y-%m-%d", _time.gmtime(moment))


def start(run: str, event: RunEvent) -> RunState:
    if event.type != "run_start":
        raise UnsupportedFormat(f"run {run} does not begin with run_start")
    return RunState(id=run, agent=event.get("agent"), phase=event.get("phase"), created_at=event.time,
                    lane=event.get("lane"), task=event.get("task"), goal=event.get("goal"), cli=event.get("cli"),
                    session=event.get("session"), updated_at=event.time, events=1)


def fold(state: RunState | None, run: str, event: RunEvent) -> RunState:
    """The run's state after `event`. Deterministic: the same log always folds to the same state."""
    if state is None:
        return start(run, event)
    if event.type == "run_start":
        raise UnsupportedFormat(f"run {run} starts twice")
    gap = min(max(0.0, event.time - state.updated_at), IDLE_CAP_SECONDS)
    day = day_of(event.time)
    days = {k: dict(v) for k, v in state.days.items()}
    today = days.setdefault(day, dict.fromkeys(DAY_KEYS, 0))
    today["wall"] = round(today["wall"] + gap, 3)
    changes: dict[str, Any] = {"events": state.events + 1, "updated_at": max(state.updated_at, event.time),
                               "wall": round(state.wall + gap, 3), "days": days}
    rule = _RULES.get(event.type)
    if rule is not None:
        changes.update(rule(state, event, today))
    return replace(state, **changes)


def _session_start(state: RunState, event: RunEvent, today: dict) -> dict:
    # A session boundary: whatever the last session left in flight is what it was doing when it stopped.
    return {"session": event.get("session"), "sessions": state.sessions + 1, "in_flight": {},
            "interrupted": dict(state.in_flight) or dict(state.interrupted), "cli": event.get("cli") or state.cli}


def _prompt(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"turn": {"prompt": event.get("text"), "started": event.time, "usage": state.usage.to_dict()}}


def _attempted(state: RunState, event: RunEvent, today: dict) -> dict:
    phase, weight = event.get("phase"), float(event.get("weight"))
    spent = dict(state.spent)
    spent[phase] = round(spent.get(phase, 0.0) + weight, 6)
    in_flight = dict(state.in_flight)
    in_flight[event.get("tool_use_id")] = {"tool": event.get("tool"), "input": event.get("input"),
                                           "time": event.time, "weight": weight}
    today["calls"] += 1
    changes = {"spent": spent, "calls": state.calls + 1, "in_flight": in_flight}
    if event.get("plan") is not None:
        changes["plan"] = tuple(event.get("plan"))
    return changes


def _blocked(state: RunState, event: RunEvent, today: dict) -> dict:
    today["blocked"] += 1
    return {"blocked": state.blocked + 1}


def _completed(state: RunState, event: RunEvent, today: dict) -> dict:
    in_flight = dict(state.in_flight)
    in_flight.pop(event.get("tool_use_id"), None)
    key = "failed" if event.type == "tool_failed" else "completed"
    return {key: getattr(state, key) + 1, "in_flight": in_flight}


def _phase(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"phase": event.get("phase")}


def _usage(state: RunState, event: RunEvent, today: dict) -> dict:
    delta = Usage.from_dict(event.to_dict())
    for kind, value in delta.tokens_dict().items():
        today[kind] += value
    today["cost_usd"] = round(today["cost_usd"] + delta.cost_usd, 6)
    changes: dict[str, Any] = {"usage": state.usage + delta}
    if event.get("transcript") is not None:
        changes["transcript"] = event.get("transcript")
    return changes


def _turn_closing(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"turn": state.turn | {"closing": _fields(event)}}


def _turn_end(state: RunState, event: RunEvent, today: dict) -> dict:
    transition = event.get("transition")
    # The next turn's usage counts from here, whether or not a prompt starts it.
    changes: dict[str, Any] = {"turn": {"started": event.time, "usage": state.usage.to_dict()},
                               "transitions": state.transitions + ((transition,) if transition else ())}
    if state.ending:
        # `run end` came while this turn was being closed: the run ends with the turn, which is its last event
        changes |= {"status": "ended", "ended_at": event.time}
    return changes


def _run_end(state: RunState, event: RunEvent, today: dict) -> dict:
    if event.get("pending"):
        return {"ending": _fields(event)}
    return {"status": "ended", "ended_at": event.time, "ending": {}}


def closing(state: RunState, host: str, running: Any) -> bool:
    """Whether a Stop hook is closing the run's turn now, on this machine (`running(pid, ticks)` asks the OS):
    it recorded the turn's usage and is making its snapshot, and will record the turn's end with it. One that
    died there closes nothing."""
    hook = (state.turn or {}).get("closing") or {}
    return bool(hook) and hook.get("host") == host and running(hook.get("pid"), hook.get("ticks"))


def end_events(state: RunState, now: float, reason: str | None, turn_closing: bool) -> list[RunEvent]:
    """What `run end` appends: nothing to an ended run (nor again while its end waits); the end itself; or,
    while a Stop hook closes a turn (`turn_closing`), a pending end, which that turn's end completes, so the
    turn is wholly recorded before the run ends and nothing follows the end."""
    if state.status == "ended" or (state.ending and turn_closing):
        return []
    data: dict[str, Any] = {"reason": reason} if reason else {}
    return [RunEvent("run_end", now, data | ({"pending": True} if turn_closing else {}))]


def _update(state: RunState, event: RunEvent, today: dict) -> dict:
    return {key: event.get(key) for key in ("goal", "task", "lane") if key in event.data}


def _fields(event: RunEvent) -> dict:
    return {k: v for k, v in event.data.items()} | {"time": event.time}


def _spawn(state: RunState, event: RunEvent, today: dict) -> dict:
    changes: dict[str, Any] = {"launch": _fields(event)}
    if event.get("pipeline"):
        changes["pipeline"] = {"stage": None, "status": "pending", "fixes": 0, "history": []}
    return changes


def _supervisor(state: RunState, event: RunEvent, today: dict) -> dict:
    # A supervisor that starts (again) clears an earlier stop: resuming is starting over from the briefing.
    if event.get("status") == "ended":
        return {"supervisor": {}}
    return {"supervisor": _fields(event), "stop": {}}


def _queued(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"supervisor": state.supervisor | {"queued": event.time}}


def _agent_started(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"process": _fields(event), "supervisor": {k: v for k, v in state.supervisor.items() if k != "queued"}}


def _agent_exited(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"process": {}, "exit": _fields(event)}


def _stop_requested(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"stop": _fields(event)}


def _stopped(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"stop": state.stop | _fields(event) | {"done": True}, "process": {}, "supervisor": {}}


def _message(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"inbox": state.inbox + ({k: event.get(k) for k in ("id", "text", "from")} | {"time": event.time},)}


def _delivered(state: RunState, event: RunEvent, today: dict) -> dict:
    ids = set(event.get("ids") or ())
    return {"inbox": tuple(m for m in state.inbox if m.get("id") not in ids)}


PIPELINE_HISTORY = 50


def _pipeline(state: RunState, event: RunEvent, today: dict) -> dict:
    stage, status = event.get("stage"), event.get("status")
    pipeline = dict(state.pipeline or {"fixes": 0, "history": []})
    pipeline.update(stage=stage, status=status, updated=event.time)
    if status == "resumed":
        pipeline["fixes"] = 0  # a person looked at it: the fix attempts count again from here
    if stage == "fix" and status == "started":
        pipeline["fixes"] = int(pipeline.get("fixes", 0)) + 1
    for key in ("verify", "plan", "ship", "reason"):
        if event.get(key) is not None:
            pipeline[key] = event.get(key)
    entry = {"stage": stage, "status": status, "time": event.time}
    if event.get("reason"):
        entry["reason"] = event.get("reason")
    pipeline["history"] = (list(pipeline.get("history") or []) + [entry])[-PIPELINE_HISTORY:]
    return {"pipeline": pipeline}


def _budget_alert(state: RunState, event: RunEvent, today: dict) -> dict:
    return {"alerts": state.alerts | {f"{event.get('scope')}:{event.get('key')}": event.get("level")}}


_RULES = {"session_start": _session_start, "prompt": _prompt, "tool_attempted": _attempted,
          "tool_blocked": _blocked, "tool_completed": _completed, "tool_failed": _completed, "phase": _phase,
          "usage": _usage, "turn_closing": _turn_closing, "turn_end": _turn_end, "run_end": _run_end,
          "run_update": _update, "spawn": _spawn,
          "supervisor": _supervisor, "queued": _queued, "agent_started": _agent_started, "agent_exited": _agent_exited,
          "stop_requested": _stop_requested, "stopped": _stopped, "message": _message,
          "message_delivered": _delivered, "pipeline": _pipeline, "budget_alert": _budget_alert}


def summary_line(state: RunState, event: RunEvent) -> str:
    """The event commit's subject: what `git log --oneline refs/lanes/runs/<run>` shows."""
    kind, get = event.type, event.get
    if kind == "run_start":
        text = f"start in {get('lane') or '-'}, phase {get('phase')}" + (f": {get('goal')}" if get("goal") else "")
    elif kind in ("tool_attempted", "tool_blocked"):
        left = ""
        if kind == "tool_attempted":
            left = f" [{get('phase')} {state.spent.get(get('phase'), 0):g}]"
        text = f"{'blocked ' if kind == 'tool_blocked' else ''}{get('tool')} ({float(get('weight')):g}){left}: " \
               f"{get('input')}" + (f" — {get('reason')}" if kind == "tool_blocked" else "")
    elif kind in ("tool_completed", "tool_failed"):
        text = f"{'failed' if kind == 'tool_failed' else 'done'} {get('tool')}"
    elif kind == "phase":
        text = f"phase {get('previous') or '-'} -> {get('phase')}"
    elif kind == "usage":
        text = f"usage {Usage.from_dict(event.to_dict()).tokens} tokens, ${float(get('cost_usd')):.4f}"
    elif kind == "prompt":
        text = f"prompt: {get('text')}"
    elif kind == "session_start":
        text = f"session {get('source')} {str(get('session'))[:12]}"
    elif kind == "pipeline":
        text = f"pipeline {get('stage')} {get('status')}" + (f" ({get('reason')})" if get("reason") else "")
    elif kind in ("agent_started", "agent_exited"):
        how = f" code {get('code')}" if get("code") is not None else f" signal {get('signal')}" \
            if get("signal") is not None else ""
        text = f"{kind.replace('_', ' ')} pid {get('pid')}{how}" + (f" ({get('stage')})" if get("stage") else "")
    elif kind == "message":
        text = f"message from {get('from') or '-'}: {get('text')}"
    elif kind == "budget_alert":
        text = f"budget {get('level')}: {get('scope')} {get('key')}" + (f" ({get('detail')})" if get("detail") else "")
    else:
        text = kind.replace("_", " ") + (f" ({get('reason')})" if get("reason") else "")
    line = f"{state.agent}: {text}"
    return " ".join(line.split())[:200]


# -- views ------------------------------------------------------------------------------------------------
def budgets(state: RunState, policy: Policy) -> dict[str, dict]:
    """Budget, spent and left per phase (phases the run spent in but the policy no longer names too)."""
    rows = {}
    for phase in (*policy.phase_names, *[p for p in state.spent if p not in policy.phase_names]):
        budget = policy.budget(phase)
        spent = state.spent.get(phase, 0.0)
        rows[phase] = {"budget": budget, "spent": spent,
                       "left": None if budget is None else round(max(0.0, budget - spent), 6)}
    return rows


def awaiting_input(state: RunState) -> bool:
    """The agent ended its turn and no prompt came since: the run waits for a person."""
    return state.status == "active" and not state.in_flight and bool(state.turn) and "prompt" not in state.turn


def calls(tools: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls attempted and not completed, oldest first, each named by its `tool_use_id` (and, as before,
    `id`)."""
    return [{"tool_use_id": k, "id": k, **v} for k, v in sorted(tools.items(), key=lambda i: i[1]["time"])]


def view(state: RunState, policy: Policy | None = None) -> dict:
    record = state.to_dict()
    record["awaiting_input"] = awaiting_input(state)
    record.pop("format")
    record["in_flight"] = calls(state.in_flight)
    record["interrupted"] = calls(state.interrupted)
    record["tokens"] = state.usage.tokens_dict()
    record["cost_usd"] = state.usage.cost_usd
    if policy is not None:
        record["budget"] = budgets(state, policy)
    return record


def timeline(events: list[RunEvent]) -> list[dict]:
    """Every event with its timing: seconds since the run started and since the previous event, and for a
    completed or failed tool its duration since it was attempted."""
    rows = []
    first = events[0].time if events else 0.0
    previous = first
    attempted: dict[str, float] = {}
    for number, event in enumerate(events, 1):
        row = event.to_dict()
        row.pop("format")
        row |= {"seq": number, "elapsed": round(event.time - first, 3), "delta": round(event.time - previous, 3)}
        if event.type == "tool_attempted":
            attempted[event.get("tool_use_id")] = event.time
        elif event.type in ("tool_completed", "tool_failed") and event.get("duration") is None \
                and event.get("tool_use_id") in attempted:
            row["duration"] = round(event.time - attempted[event.get("tool_use_id")], 3)
        rows.append(row)
        previous = event.time
    return rows


def stats(states: list[RunState], by: str = "agent", since: str | None = None) -> list[dict]:
    """Calls, blocked calls, tokens, cost and wall time per group, counting only days from `since` on."""
    groups: dict[str, dict] = {}
    for state in states:
        for day, counts in state.days.items():
            if since is not None and day < since:
                continue
            key = day if by == "day" else (state.id if by == "run" else getattr(state, by)) or "-"
            row = groups.setdefault(key, {by: key, **dict.fromkeys(DAY_KEYS, 0), "runs": set()})
            for name in DAY_KEYS:
                row[name] = round(row[name] + counts.get(name, 0), 6)
            row["runs"].add(state.id)
    rows = []
    for key in sorted(groups):
        row = groups[key]
        row["runs"] = len(row["runs"])
        row["tokens"] = sum(row[k] for k in ("input", "output", "cache_read", "cache_write"))
        rows.append(row)
    return rows
