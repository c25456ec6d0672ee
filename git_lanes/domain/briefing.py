"""Resume by briefing (flow's recovery): a new session of a run starts from a projection of durable state,
never from chat history. What was in flight when the last session stopped, what actually landed on disk (the
workspace against its lane head), the plan, the budget left, the task and its dependencies, unread posts,
claim overlaps, and whether the trunk moved since the lane forked, with the paths that would collide.

The model reconciles: re-running an in-flight call blindly could do a thing twice; the diff says whether it
landed."""

from __future__ import annotations

from typing import Any

from git_lanes import ledger
from git_lanes.domain import board, claims, lanes, promotion, runs, tasks
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError, command
from git_lanes.model.policy import Policy
from git_lanes.model.runs import RunState

DIFF_LINES = 120
MAX_CHARS = 9000  # Claude Code caps hook output at 10,000 characters
POSTS = 10


def build(ctx: Context, state: RunState, policy: Policy, now: float) -> dict[str, Any]:
    """The briefing as a record (each section) and as the text injected into the new session."""
    record: dict[str, Any] = {
        "run": state.id, "agent": state.agent, "lane": state.lane, "goal": state.goal, "phase": state.phase,
        "status": state.status,
        "budget": runs.budgets(state, policy),
        "plan": list(state.plan),
        "in_flight": runs.calls(state.in_flight or state.interrupted),
        "task": _task(ctx, state, now),
        "disk": _disk(ctx, state),
        "posts": _posts(ctx, state),
        "trunk": _trunk(ctx, state),
    }
    record["overlaps"] = _overlaps(ctx, state, [f["path"] for f in record["disk"]["files"]])
    record["text"] = render(record)
    return record


def _task(ctx: Context, state: RunState, now: float) -> dict | None:
    if not state.task:
        return None
    try:
        ledger_state = ledger.state_at(ctx.store, ledger.head(ctx.store))
        task = tasks.view(ledger_state, tasks.get_task(ledger_state, state.task), now)
        task["depends_status"] = {d: tasks.get_task(ledger_state, d)["status"] for d in task["depends"]}
        return task
    except LanesError as exc:
        return {"id": state.task, "error": exc.message}


def _disk(ctx: Context, state: RunState) -> dict:
    """`git diff` of the workspace against its lane head, new files included, bounded; where there is no
    workspace to look in, why (`problem`): a briefing must not say that nothing changed there."""
    if not state.lane:
        return _no_disk("the run works in no lane, so there is no workspace to look in")
    try:
        head = lanes.lane_head(ctx, state.lane)
    except LanesError:
        return _no_disk(f"lane {state.lane} no longer exists, so there is no workspace to look in "
                        f"({command('lane list')} shows the lanes; a deleted one is kept under refs/lanes/deleted/)")
    path, broken = lanes.workspace_state(ctx, state.lane)
    if path is None:
        return _no_disk(f"the workspace of lane {state.lane} is broken: {broken}" if broken else
                        f"lane {state.lane} has no workspace here ({command('lane create', state.lane)} makes it "
                        f"again from the lane head; what was not snapshotted is not in it)")
    head_tree = ctx.store.tree_of(head)
    now_tree = ctx.store.content_tree(path)
    files = [{"path": c.path, "kind": c.kind} for c in ctx.store.diff_trees(head_tree, now_tree)]
    lines = ctx.store.patch(head_tree, now_tree).splitlines()
    return {"workspace": str(path), "diff": "\n".join(lines[:DIFF_LINES]),
            "more_lines": max(0, len(lines) - DIFF_LINES), "files": files, "problem": None}


def _no_disk(problem: str) -> dict:
    return {"workspace": None, "diff": "", "more_lines": 0, "files": [], "problem": problem}


def _ledger_state(ctx: Context) -> ledger.State:
    return ledger.state_at(ctx.store, ledger.head(ctx.store))


def _posts(ctx: Context, state: RunState) -> list[dict]:
    try:
        return [board.view(p) for p in board.unread(_ledger_state(ctx), state.agent)][-POSTS:]
    except LanesError:
        return []


def _overlaps(ctx: Context, state: RunState, edited: list[str]) -> list[dict]:
    """The agent's claims that overlap others' claims or dirty sets, and its changes on disk that sit in
    another agent's claim or dirty set: a run the hooks drive claims nothing by itself, yet its edits can."""
    try:
        ledger_state = _ledger_state(ctx)
        mine = claims.claimed_globs(ledger_state, state.agent)
        found = claims.claim_overlaps(ledger_state, state.agent, mine) if mine else []
        return found + (claims.dirty_overlaps(ledger_state, state.agent, edited) if edited else [])
    except LanesError:
        return []


def _trunk(ctx: Context, state: RunState) -> dict | None:
    if not state.lane or state.lane == ctx.trunk:
        return None
    try:
        plan = promotion.plan(ctx, state.lane, ctx.trunk)
    except LanesError as exc:
        return {"error": exc.message}
    moved = plan.base != plan.target_head
    return {"moved": moved, "base": plan.base, "head": plan.target_head,
            "collisions": [c.path for c in plan.comparison.collisions],
            "changed": [c.path for c in plan.comparison.target_only][:50]}


def render(record: dict[str, Any]) -> str:
    run = record["run"][:8]
    lines = [f"# git-lanes briefing: run {run} ({record['agent']}, lane {record['lane'] or '-'})",
             "Built from durable state (the run's log and git), not from chat history. Reconcile what was in "
             "flight with what is on disk before redoing anything."]
    if record["goal"]:
        lines.append(f"Goal: {record['goal']}")
    task = record["task"]
    if task:
        deps = ", ".join(f"{d[:8]} {s}" for d, s in (task.get("depends_status") or {}).items()) or "none"
        lines.append(f"Task {task['id'][:8]}: {task.get('title', task.get('error'))} "
                     f"[{task.get('status', '?')}]; depends on: {deps}")
    budget = record["budget"].get(record["phase"], {})
    if record["status"] == "ended":
        # Every tool call of an ended run is denied: the session is to report, not to carry on.
        lines.append(f"Run {run} has ended ({command('run end')}): this session may run no tools. Tell the person "
                     f"what was left (below); they can start a new run for it ({command('run start')}).")
    else:
        lines.append(f"Phase {record['phase']}: {budget.get('spent', 0):g} of {budget.get('budget')} step units "
                     f"used, {budget.get('left')} left. Move on with {command('run phase', run, 'NEXT')}.")
    if record["plan"]:
        lines.append("Plan:")
        lines += [f"  [{s.get('status', '?')}] {s.get('step', '')}" for s in record["plan"]]
    flights = record["in_flight"]
    lines.append("In flight when the last session stopped (attempted, never completed):" if flights else
                 "Nothing was in flight.")
    lines += [f"  {f['tool']} {f['input']} (id {f['id']})" for f in flights]
    disk = record["disk"]
    if disk["files"]:
        lines.append(f"On disk in {disk['workspace']}, not yet snapshotted (git diff against the lane head):")
        lines += [f"  {f['kind']} {f['path']}" for f in disk["files"][:30]]
        lines += ["```diff", disk["diff"], "```"]
        if disk["more_lines"]:
            lines.append(f"… {disk['more_lines']} more lines")
    elif disk.get("problem"):
        lines.append(f"On disk: {disk['problem']}.")
    else:
        lines.append("On disk: the workspace matches its lane head.")
    for post in record["posts"]:
        lines.append(f"Unread post {post['seq']} from {post['from']} ({post['kind']}): {post['text'][:300]}")
    for overlap in record["overlaps"]:
        if "glob" in overlap:
            lines.append(f"Claim overlap: your {overlap['glob']} with {overlap['agent']}'s "
                         f"{overlap.get('claim') or overlap.get('file')}")
        elif overlap.get("dirty"):
            lines.append(f"Overlap: {overlap['agent']} also has unsnapshotted changes to {overlap['file']}")
        else:
            lines.append(f"Claim overlap: your change to {overlap['file']} is in {overlap['agent']}'s claim "
                         f"{overlap['claim']}")
    trunk = record["trunk"]
    if trunk and trunk.get("moved"):
        lines.append(f"The trunk moved since this lane forked ({len(trunk['changed'])} paths changed there).")
        if trunk["collisions"]:
            lines.append("These paths would collide on promotion: " + ", ".join(trunk["collisions"][:30]))
    text = "\n".join(lines)
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 40] + "\n… (briefing cut to fit)"
