"""Dispatch plans in the ledger: one `plan.dispatch` op creates the ticket, every task with its dependencies
(features depend on the foundation), their exclusive file claims and the plan record (`plans/<id>.json`), or
nothing at all: two tasks owning the same path, glob overlap included, or a path an earlier plan's task still
owns, refuse it before anything exists. Task ids derive from the op's id, so a replay (sync) makes the same."""

from __future__ import annotations

import hashlib

from git_lanes.domain import claims, exclusive, tasks, tickets
from git_lanes.domain.agents import Reader
from git_lanes.errors import NotFound, Refused, command
from git_lanes.ledger import Op, Tx
from git_lanes.model.frozen import replace
from git_lanes.model.globs import MAGIC
from git_lanes.model.names import resolve_prefix
from git_lanes.ledger.state import MALFORMED_HINT
from git_lanes.model.plan import DispatchedPlan, DispatchPlan, PlanTask, invalid
from git_lanes.model.text import quoted

DIRECTORY = "plans"


def plan_path(plan_id: str) -> str:
    return f"{DIRECTORY}/{plan_id}.json"


def task_id(op_id: str, key: str) -> str:
    return hashlib.sha1(f"{op_id}:{key}".encode()).hexdigest()[:16]


def checked(plan: DispatchPlan) -> DispatchPlan:
    """`plan` with its globs normalised, refusing overlapping ownership (naming the path)."""
    normal = []
    for task in plan.tasks:
        try:
            owns = tuple(claims.validate_globs(list(task.owns)))
        except Exception as exc:  # a UserError naming the glob
            raise invalid(f"{task.key}: {getattr(exc, 'message', exc)}") from None
        normal.append(replace(task, owns=owns))
    for index, first in enumerate(normal):
        for second in normal[index + 1:]:
            _refuse_overlap(first.key, first.owns, second.key, second.owns)
    return replace(plan, tasks=tuple(normal))


def _refuse_overlap(first: str, first_globs: tuple[str, ...], second: str, second_globs: tuple[str, ...],
                    what: str = "task") -> None:
    for a in first_globs:
        for b in second_globs:
            if claims.globs_overlap(a, b):
                path = _witness(a, b)
                raise Refused(f"{path} would be owned by both {first!r} ({a}) and {what} {second!r} ({b}); "
                              "nothing was created", code="ownership_overlap",
                              details={"path": path, "tasks": [first, second], "globs": [a, b]},
                              hint="give each path to one task only: narrow one of the globs")


def _witness(a: str, b: str) -> str:
    """Where the globs meet, as a person would name it: the more specific one (a plain path when either is
    one: it is, or lies beneath, the other)."""
    def literal(glob: str) -> int:
        return sum(1 for c in glob if c not in MAGIC and c not in "]")

    plain = [g for g in (a, b) if not MAGIC & set(g)]
    return max(plain or [a, b], key=lambda g: (literal(g), len(g)))


def dispatch(tx: Tx, op: Op) -> dict:
    """The fold of `plan.dispatch` (args: the plan's dict)."""
    plan = checked(DispatchPlan.from_dict(op.args["plan"]))
    if find_by_name(tx, plan.name) is not None:
        raise Refused(f"a plan named {plan.name!r} was dispatched already", code="plan_exists",
                      hint=f"see {command('dispatch status', plan.name)}")
    for held in exclusive.held(tx):
        for task in plan.tasks:
            _refuse_overlap(task.key, task.owns, f"{held.task[:8]} \"{held.title}\"", held.globs, "the task")
    tickets.open_ticket(tx, replace(op, args={"title": plan.ticket}))
    ids = {task.key: task_id(op.id, task.key) for task in plan.tasks}
    for task in plan.tasks:
        depends = [ids[d] for d in task.depends] + ([ids[plan.foundation.key]] if task is not plan.foundation else [])
        _create(tx, op, task, ids[task.key], depends, op.id)
    record = {"id": op.id, "name": plan.name, "ticket": op.id, "created": op.time, "created_by": op.actor,
              "foundation": ids[plan.foundation.key], "start": plan.start,
              "tasks": [{**task.to_dict(), "task": ids[task.key]} for task in plan.tasks]}
    tx.put(plan_path(op.id), record)
    return {"plan": op.id, "name": plan.name, "ticket": op.id,
            "tasks": [{"key": t.key, "task": ids[t.key], "lane": t.lane, "owns": list(t.owns)} for t in plan.tasks]}


def _create(tx: Tx, op: Op, task: PlanTask, new_id: str, depends: list[str], plan: str) -> None:
    sub = replace(op, id=new_id, type="task.create",
                  args={"title": task.title, "description": task.description, "depends": depends, "ticket": plan,
                        "files": list(task.owns)})
    tasks.create(tx, sub)
    record = tasks.get_task(tx, new_id)
    tx.put(tasks.task_path(new_id), {**record, "lane": task.lane, "plan": plan, "exclusive": True})
    tx.put(exclusive.exclusive_path(new_id), {"task": new_id, "plan": plan, "lane": task.lane, "title": task.title,
                                              "globs": list(task.owns)})
    if task.agent:
        tasks.claim(tx, replace(op, id=new_id, type="task.claim",
                                args={"task": new_id, "agent": task.agent, "lane": task.lane}))


def differences(record: dict, plan: DispatchPlan) -> list[str]:
    """How `plan` (checked) differs from the dispatched plan `record` of the same name, task by task: a
    dispatched plan does not change, so dispatching it again may only create what it still lacks."""
    before = {t["key"]: {k: v for k, v in t.items() if k != "task"} for t in record["tasks"]}
    after = {t.key: t.to_dict() for t in plan.tasks}
    return ([f"{key} is new" for key in after if key not in before]
            + [f"{key} is gone" for key in before if key not in after]
            + [f"{key} changed" for key in after if key in before and after[key] != before[key]])


def find_by_name(state: Reader, name: str) -> dict | None:
    for entry in state.names(DIRECTORY):
        record = _read(state, f"{DIRECTORY}/{entry}") or {}
        if record.get("name") == name:
            return record
    return None


def _read(state: Reader, path: str) -> dict | None:
    """The plan at `path`, or a MalformedRecord naming it when a peer wrote another shape there (every reader
    looks its foundation up among its tasks)."""
    record = state.get(path)
    return None if record is None else DispatchedPlan.decode(record, f"ledger record {path}", MALFORMED_HINT).record


def resolve(state: Reader, given: str) -> dict:
    """A plan by its name, or a unique prefix of its id (= its ticket's id)."""
    found = find_by_name(state, given)
    if found is not None:
        return found
    ids = [name[:-5] for name in state.names(DIRECTORY) if name.endswith(".json")]
    prefix = given.strip().lower()
    if not prefix or prefix.strip("0123456789abcdef"):
        raise NotFound(f"no plan named {quoted(given)}", code="unknown_plan", hint=f"see {command('ticket list')}")
    return _read(state, plan_path(resolve_prefix(prefix, ids, "plan", f"see {command('ticket list')}",
                                                 "unknown_plan"))) or {}


def of_task(state: Reader, task: dict) -> dict | None:
    return _read(state, plan_path(task["plan"])) if task.get("plan") else None
