"""Tasks: a dependency DAG with compare-and-swap claims. Each task carries a version bumped by every change;
a claim names the version it saw (or none) and exactly one of several concurrent claimers wins, the others
getting a conflict at once. A claimed task whose owner's lease lapsed is open again; a blocked one stays put.
Finishing a task wakes the owners of the tasks it makes ready, and may make its ticket ready."""

from __future__ import annotations

from git_lanes.domain import claims, stored, tickets
from git_lanes.domain.agents import Reader, add_wake, agent_path, lease_alive, touch, validate_agent_id
from git_lanes.domain.board import add_post
from git_lanes.domain.task_records import (get_task, readable, resolve_task, save_task, task_ids, task_path,
                                           validate_title)
from git_lanes.errors import Conflict, MalformedRecord, Refused, StaleState, UserError, command
from git_lanes.ledger import Op, Tx
from git_lanes.model.coordination import (MAX_DEPENDS, MAX_DESCRIPTION, MAX_NOTE, MAX_REASON, MAX_TITLE,
                                         TASK_STATUSES)
from git_lanes.model.names import validate_lane_name
from git_lanes.model.text import check_text

__all__ = ["HELD", "MAX_TITLE", "block", "claim", "create", "dep_add", "done", "get_task", "handoff", "list_tasks",
           "resolve_task", "resume", "save_task", "task_ids", "task_path", "validate_title", "view"]

# Statuses in which the owner keeps the task whatever its lease: paused by hand, or sent back by integration.
HELD = ("blocked", "needs_review")


def is_ready(state: Reader, task: dict) -> bool:
    """Every task it depends on is done (one set aside as malformed is not: it cannot be shown done)."""
    upstream = readable(state, task["depends"], get_task)
    return len(upstream) == len(task["depends"]) and all(dep["status"] == "done" for dep in upstream)


def owner_alive(state: Reader, task: dict, now: float) -> bool:
    return task.get("owner") is not None and lease_alive(state.get(agent_path(task["owner"])), now)


def effective_status(state: Reader, task: dict, now: float) -> str:
    """`claimed` turns back into `open` once the owner's lease lapsed; every other status is as stored."""
    if task["status"] == "claimed" and not owner_alive(state, task, now):
        return "open"
    return task["status"]


def create(tx: Tx, op: Op) -> dict:
    args = op.args
    title = validate_title(args.get("title"))
    description = check_text(args.get("description") or "", "the description", code="invalid_description",
                             multiline=True, max_chars=MAX_DESCRIPTION)
    depends = list(dict.fromkeys(args.get("depends") or []))
    if len(depends) > MAX_DEPENDS:
        raise UserError(f"a task may depend on at most {MAX_DEPENDS} tasks", code="too_many_depends")
    files = claims.validate_globs(args.get("files") or [])
    ticket = args.get("ticket")
    if ticket is not None:
        tickets.get_ticket(tx, ticket)
    task = {"id": op.id, "title": title, "description": description, "depends": depends, "dependents": [],
            "ticket": None, "files": files, "status": "open", "owner": None, "lane": None, "version": 1,
            "created": op.time, "created_by": op.actor, "updated": op.time, "blocked_reason": None,
            "done_at": None}
    for dep in depends:
        upstream = get_task(tx, dep)
        upstream["dependents"] = upstream["dependents"] + [op.id]
        tx.put(task_path(dep), upstream)
    tx.put(task_path(op.id), task)
    if ticket is not None:
        tickets.attach(tx, op, ticket, task)
    return {"task": op.id, "version": 1, "ready": is_ready(tx, task), "ticket": ticket}


def dep_add(tx: Tx, op: Op) -> dict:
    task = get_task(tx, op.args.get("task"))
    upstream = get_task(tx, op.args.get("depends_on"))
    if task["id"] == upstream["id"]:
        raise UserError(f"task {task['id'][:8]} cannot depend on itself", code="dependency_on_self")
    if upstream["id"] in task["depends"]:
        return {"task": task["id"], "depends_on": upstream["id"], "added": False, "version": task["version"]}
    cycle = _path(tx, upstream["id"], task["id"])
    if cycle is not None:
        names = " -> ".join(t[:8] for t in [task["id"], *cycle])
        raise Refused(f"that dependency would make a cycle: {names}", code="cycle", details={"cycle": cycle})
    task["depends"] = task["depends"] + [upstream["id"]]
    upstream["dependents"] = upstream["dependents"] + [task["id"]]
    tx.put(task_path(upstream["id"]), upstream)
    save_task(tx, op, task)
    return {"task": task["id"], "depends_on": upstream["id"], "added": True, "version": task["version"]}


def _path(state: Reader, start: str, goal: str) -> list[str] | None:
    """A dependency path start -> … -> goal, if one exists."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen = set()
    while stack:
        node, path = stack.pop()
        if node == goal:
            return path
        if node in seen:
            continue
        seen.add(node)
        stack += [(dep, path + [dep]) for dep in get_task(state, node)["depends"]]
    return None


def claim(tx: Tx, op: Op) -> dict:
    agent = validate_agent_id(op.args.get("agent"))
    task = get_task(tx, op.args.get("task"))
    version = op.args.get("version")
    # Text or a fraction never equals the task's number: compared, it would pass for a lost race.
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise UserError(f"a task version is a whole number from 1, not {version!r}", code="invalid_version",
                        hint=f"give the version {command('task show')} prints, or none")
    if version is not None and version != task["version"]:
        raise Conflict(f"task {task['id'][:8]} is at version {task['version']}, not {version}",
                       code="version_conflict", details={"task": task["id"], "version": task["version"]},
                       hint=f"re-read it with {command('task show')}, or take another task")
    if task["status"] == "done":
        raise StaleState(f"task {task['id'][:8]} is already done", code="task_done")
    holder = task.get("owner")
    if holder not in (None, agent) and (task["status"] in HELD or owner_alive(tx, task, op.time)):
        raise Conflict(f"task {task['id'][:8]} is {task['status']} by {holder}", code="task_claimed",
                       details={"task": task["id"], "owner": holder, "version": task["version"]},
                       hint=f"take another task: {command('task list', ready=True)}")
    if holder == agent and task["status"] in ("claimed", *HELD):
        touch(tx, agent, op.time)
        # The owner naming another lane moves the task's work there: `task done` integrates the task's lane,
        # so a lane given and dropped would integrate work from the wrong one.
        lane = validate_lane_name(op.args["lane"]) if op.args.get("lane") else None
        if lane and lane != task.get("lane"):
            task.update(lane=lane)
            save_task(tx, op, task)
        return {"task": task["id"], "owner": agent, "version": task["version"], "already": True,
                "ready": is_ready(tx, task), "overlaps": []}
    # A task whose dependencies are not done is claimed ahead of them (its owner is woken when they are
    # done), unless the claim says `ahead: false` (--ready-only). The rule is as old as the `ahead` argument:
    # an op recorded before it has none and folds as it always did, so a replay decides the same for it.
    if op.args.get("ahead") is False and not is_ready(tx, task):
        raise _not_ready(tx, task)
    record = touch(tx, agent, op.time)
    lane = op.args.get("lane") or record.get("lane")
    task.update(owner=agent, status="claimed", lane=validate_lane_name(lane) if lane else task.get("lane"))
    save_task(tx, op, task)
    overlaps = claims.add_globs(tx, op, agent, task["files"], task["id"])["overlaps"] if task["files"] else []
    return {"task": task["id"], "owner": agent, "version": task["version"], "already": False,
            "previous_owner": holder if holder != agent else None, "ready": is_ready(tx, task),
            "overlaps": overlaps}


def _not_ready(state: Reader, task: dict) -> Refused:
    """The refusal of a claim of `task`, naming the dependencies it waits on (one set aside as malformed
    among them: it cannot be shown done)."""
    upstream = {dep["id"]: dep for dep in readable(state, task["depends"], get_task)}
    waiting = [dep for dep in task["depends"] if upstream.get(dep, {}).get("status") != "done"]
    named = [f"{dep[:8]} \"{upstream[dep]['title'][:60]}\" ({upstream[dep]['status']})" if dep in upstream
             else f"{dep[:8]} (unreadable)" for dep in waiting[:3]]
    more = f" and {len(waiting) - 3} more" if len(waiting) > 3 else ""
    return Refused(f"task {task['id'][:8]} is not ready: it waits on {', '.join(named)}{more}", code="task_not_ready",
                   details={"task": task["id"], "waiting_on": waiting},
                   hint=f"take a ready task ({command('task list', ready=True)}), or claim this one ahead of its "
                        f"dependencies, to be woken when they are done "
                        f"({command('task claim', task['id'][:8], ahead=True)})")


def _not_anothers(tx: Tx, op: Op, task: dict) -> None:
    """An agent may not finish or pause a task another live agent holds: it is most likely a former owner whose
    lease lapsed while someone else took the task over. A person (an actor that is not a registered agent) may."""
    owner = task.get("owner")
    if owner in (None, op.actor) or tx.get(agent_path(op.actor)) is None:
        return
    if task["status"] in HELD or owner_alive(tx, task, op.time):
        raise Conflict(f"task {task['id'][:8]} is {task['status']} by {owner}", code="task_claimed",
                       details={"task": task["id"], "owner": owner, "version": task["version"]},
                       hint=f"it is {owner}'s now; ask them on the board, or take another task")


def done(tx: Tx, op: Op) -> dict:
    task = get_task(tx, op.args.get("task"))
    if task["status"] == "done":
        raise StaleState(f"task {task['id'][:8]} is already done", code="task_done")
    _not_anothers(tx, op, task)
    task.update(status="done", done_at=op.time, blocked_reason=None)
    if isinstance(op.args.get("integrated"), dict):
        task["integrated"] = op.args["integrated"]
    save_task(tx, op, task)
    woken = []
    dependents = readable(tx, task["dependents"], get_task)  # one a peer broke cannot be woken, nor stop this
    for dependent in dependents:
        if dependent["status"] in ("claimed", *HELD) and dependent.get("owner") and is_ready(tx, dependent):
            add_wake(tx, dependent["owner"], op, "task_ready", {"task": dependent["id"], "title": dependent["title"],
                                                                "lane": dependent.get("lane")})
            woken.append({"agent": dependent["owner"], "task": dependent["id"]})
    ready = [d["id"] for d in dependents if d["status"] != "done" and is_ready(tx, d)]
    try:
        ticket = tickets.recheck(tx, op, task["ticket"]) if task["ticket"] else None
    except MalformedRecord:  # a ticket a peer broke is left as it is; the task is done all the same
        ticket = None
    # A dispatch plan's exclusive claims hold until its last task is done.
    from git_lanes.domain import exclusive

    released = exclusive.release_if_done(tx, task["plan"], lambda t: get_task(tx, t)["status"] == "done") \
        if task.get("plan") else []
    return {"task": task["id"], "version": task["version"], "now_ready": ready, "woken": woken,
            "ticket_ready": ticket, **({"exclusive_released": released} if released else {})}


def block(tx: Tx, op: Op) -> dict:
    task = get_task(tx, op.args.get("task"))
    reason = validate_title(op.args.get("reason"), MAX_REASON, "the reason", "reason") \
        if op.args.get("reason") is not None else None
    if not reason:
        raise UserError("say why the task is blocked (--reason)", code="empty_reason")
    if task["status"] in ("done", "blocked"):
        raise StaleState(f"task {task['id'][:8]} is already {task['status']}", code=f"task_{task['status']}")
    _not_anothers(tx, op, task)
    task.update(status="blocked", blocked_reason=reason)
    save_task(tx, op, task)
    return {"task": task["id"], "status": "blocked", "owner": task["owner"], "version": task["version"]}


def resume(tx: Tx, op: Op) -> dict:
    task = get_task(tx, op.args.get("task"))
    if task["status"] != "blocked":
        raise StaleState(f"task {task['id'][:8]} is {task['status']}, not blocked", code="not_blocked")
    task.update(status="claimed" if task["owner"] else "open", blocked_reason=None)
    if task["owner"]:
        touch(tx, task["owner"], op.time)
    save_task(tx, op, task)
    return {"task": task["id"], "status": task["status"], "owner": task["owner"], "version": task["version"]}


def handoff(tx: Tx, op: Op) -> dict:
    """The task moves to the new owner in this one op with what is its own: the file claims made for it, and
    its lane. An owner holding other tasks keeps their claims, its lane (when one of them works there), its
    unattributed claims and its dirty set; one holding only this task hands all of it over. A handoff post
    tells the new owner."""
    task = get_task(tx, op.args.get("task"))
    target = validate_agent_id(op.args.get("to"))
    if task["status"] == "done":
        raise StaleState(f"task {task['id'][:8]} is already done", code="task_done")
    source = task.get("owner")
    if source == target:
        raise StaleState(f"task {task['id'][:8]} is already {target}'s", code="handoff_to_owner")
    moved: dict = {"claims": [], "dirty": [], "lane": task.get("lane")}
    if source is not None:
        others = [t for t in readable(tx, task_ids(tx), get_task)
                  if t["owner"] == source and t["id"] != task["id"] and t["status"] in ("claimed", *HELD)]
        moved.update(claims.move(tx, source, target, task["id"], everything=not others))
        source_record = tx.get(agent_path(source))
        if source_record is not None:
            lane = source_record.get("lane")
            if not others:
                moved["lane"] = lane or task.get("lane")
            if any(t.get("lane") == moved["lane"] for t in others):
                moved["lane"] = None  # its other task works there: two owners in one workspace would clash
            elif lane is not None and lane == moved["lane"]:
                tx.put(agent_path(source), {**source_record, "lane": None})
    touch(tx, target, op.time, lane=moved["lane"])
    task.update(owner=target, status="claimed", lane=moved["lane"], blocked_reason=None)
    save_task(tx, op, task)
    note = op.args.get("note")
    if note is not None:
        check_text(note, "the note", code="invalid_note", multiline=True, max_chars=MAX_NOTE)
    text = f"task {task['id'][:8]} \"{task['title']}\" is yours now (from {source or 'nobody'})"
    post = add_post(tx, op, op.actor, "handoff", text + (f": {note}" if note else ""), target) \
        if target != op.actor else None
    return {"task": task["id"], "from": source, "to": target, "version": task["version"], "moved": moved,
            "post": post}


def view(state: Reader, task: dict, now: float) -> dict:
    status = effective_status(state, task, now)
    return {**{k: task.get(k) for k in ("id", "title", "description", "depends", "dependents", "ticket", "files",
                                        "owner", "lane", "version", "created", "created_by", "updated",
                                        "blocked_reason", "done_at", "integrated", "review")},
            **({"plan": task["plan"], "exclusive": bool(task.get("exclusive"))} if task.get("plan") else {}),
            "status": status, "stored_status": task["status"], "lapsed": status != task["status"],
            "ready": status != "done" and is_ready(state, task)}


def list_tasks(state: Reader, now: float, *, ready: bool = False, status: str | None = None,
               owner: str | None = None, set_aside: stored.SetAside | None = None) -> list[dict]:
    if status is not None and status not in TASK_STATUSES:
        # a misspelt status would list nothing, and "no such tasks" is a wrong answer, not an empty one
        raise UserError(f"unknown task status {status[:100]!r}; a task is {', '.join(TASK_STATUSES)}",
                        code="invalid_status")
    rows = [view(state, task, now) for task in readable(state, task_ids(state), get_task, set_aside)]
    if ready:
        rows = [r for r in rows if r["ready"] and r["status"] == "open"]
    if status:
        rows = [r for r in rows if r["status"] == status]
    if owner:
        rows = [r for r in rows if r["owner"] == owner and r["status"] != "open"]
    return sorted(rows, key=lambda r: (r["created"], r["id"]))
