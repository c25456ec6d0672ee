"""Foundation-first dispatch through the API: a plan becomes a ticket, tasks with dependencies and exclusive
file claims in one ledger op, then lanes: the foundation's at once, each feature's from the foundation's
accepted head as soon as the foundation's task is done (its owner, if any, is woken by `task_ready`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.api.recording import recorded
from git_lanes.errors import LanesError, Refused
from git_lanes.model import refs

if TYPE_CHECKING:  # the domain loads inside the methods that use it: every command imports this module
    from git_lanes import ledger
    from git_lanes.domain.context import Context
    from git_lanes.model.results import LaneCreated


@held
class DispatchApi:
    """Mixed into `Lanes`, next to CoreApi (`lane_create`) and LedgerApi (`_state`, `_append`, `_actor`)."""

    ctx: Context
    _state: Callable[[], ledger.State]
    _append: Callable[[str, str, dict[str, Any]], dict[str, Any]]
    _actor: Callable[[str | None], str]
    lane_create: Callable[..., LaneCreated]

    @recorded(lambda a: f"dispatch {'(dry run) ' if a['dry_run'] else ''}plan from {a['source'] or 'text'}")
    def dispatch(self, text: str | bytes, *, source: str | None = None, dry_run: bool = False,
                 actor: str | None = None) -> dict[str, Any]:
        """Dispatch the plan `text` (TOML, see model/plan.py). Overlapping ownership (glob overlap included),
        an unknown start, or a plan lane that exists already or could not exist beside a lane here (`a` beside
        `a/b`), refuse it before anything is created. Dispatching the same plan again creates what is missing
        (lanes whose tasks became ready) and changes nothing else."""
        from git_lanes import ledger
        from git_lanes.domain import inspect, lanes, plans
        from git_lanes.domain.coordination import FOLD
        from git_lanes.model.plan import DispatchPlan

        plan = plans.checked(DispatchPlan.parse(text))
        state = self._state()
        existing = plans.find_by_name(state, plan.name)
        if existing is not None:
            changed = plans.differences(existing, plan)
            if changed:
                raise Refused(f"plan {plan.name!r} was dispatched already, and this one differs: {', '.join(changed)}",
                              code="plan_changed", details={"plan": existing["id"], "differences": changed},
                              hint="a dispatched plan does not change: dispatch what is new as a plan of its own "
                                   "(another name), or put the file back as it was")
            if dry_run:
                return self.dispatch_status(existing["id"]) | {"already": True, "dry_run": True, "lanes_created": []}
            return self.dispatch_status(existing["id"]) | {"already": True, "lanes_created": self._advance(existing)}
        start = inspect.resolve_state(self.ctx, plan.start) if plan.start else None
        taken = [t.lane for t in plan.tasks if self.ctx.store.read_ref(refs.lane_ref(t.lane, self.ctx.trunk))]
        if taken:
            raise Refused(f"lane {taken[0]} already exists; a plan's lanes are its own", code="lane_exists",
                          hint="name other lanes (lane_prefix, or lane = ... per task), or delete that lane first")
        for task in plan.tasks:  # else the plan would stand with a lane that can never be made
            lanes.refuse_name_clash(self.ctx, task.lane)
        args = {"plan": plan.to_dict()}
        who = self._actor(actor)
        if dry_run:
            op = ledger.make_op("plan.dispatch", who, args, self.ctx.now())
            _, result = FOLD.apply(state, op)  # raises what the real dispatch would refuse
            return {"dry_run": True, "name": plan.name, "ticket": plan.ticket, "start": start or self.ctx.trunk,
                    "tasks": [t.to_dict() for t in plan.tasks]}
        dispatched = self._append("plan.dispatch", who, args)
        record = plans.resolve(self._state(), dispatched["plan"])
        created = self._advance(record, start)
        return dispatched | {"lanes_created": created}

    def _advance(self, plan: dict[str, Any], start: str | None = None) -> list[dict[str, Any]]:
        """Create the lanes the plan's state calls for: the foundation's, then each feature whose dependencies
        are all done, from the foundation's accepted head."""
        from git_lanes.domain import tasks

        state = self._state()
        foundation = next(t for t in plan["tasks"] if t["task"] == plan["foundation"])
        created = []
        if not self._lane_exists(foundation["lane"]):
            created.append(self._make_lane(foundation["lane"], start or plan.get("start")))
        for entry in plan["tasks"]:
            if entry["task"] == plan["foundation"] or self._lane_exists(entry["lane"]):
                continue
            task = tasks.get_task(state, entry["task"])
            if task["status"] != "done" and tasks.is_ready(state, task):
                base = foundation["lane"] if self._lane_exists(foundation["lane"]) else self.ctx.trunk
                created.append(self._make_lane(entry["lane"], base))
        return created

    def _lane_exists(self, lane: str) -> bool:
        return self.ctx.store.read_ref(refs.lane_ref(lane, self.ctx.trunk)) is not None

    def _make_lane(self, lane: str, source: str | None) -> dict[str, Any]:
        try:
            made = self.lane_create(lane, source)
        except LanesError as exc:  # the plan stands; the lane is reported missing and made on the next run
            return {"lane": lane, "error": exc.code, "message": exc.message}
        return {"lane": lane, "head": made["head"], "workspace": made["workspace"],
                **({"setup": made["setup"]["status"]} if made.get("setup") else {})}

    def _after_task_done(self, task_id: str) -> list[dict[str, Any]]:
        """When a plan's task is done, the lanes of the tasks it made ready are created (TasksApi.task_done)."""
        from git_lanes.domain import plans, tasks

        state = self._state()
        task = tasks.get_task(state, task_id)
        plan = plans.of_task(state, task)
        return self._advance(plan) if plan else []

    def dispatch_status(self, plan: str) -> dict[str, Any]:
        """A plan's progress: each task's status, owner, lane (its head and how far ahead of the trunk), and
        what it owns."""
        from git_lanes.domain import lanes, plans, tasks

        state = self._state()
        record = plans.resolve(state, plan)
        now = self.ctx.now()
        rows = []
        trunk_head = lanes.lane_head(self.ctx, self.ctx.trunk)
        for entry in record["tasks"]:
            task = tasks.view(state, tasks.get_task(state, entry["task"]), now)
            head = self.ctx.store.read_ref(refs.lane_ref(entry["lane"], self.ctx.trunk))
            ahead = self.ctx.store.ahead_behind(head, trunk_head)[0] if head else None
            rows.append({"key": entry["key"], "task": entry["task"], "title": entry["title"], "status": task["status"],
                         "ready": task["ready"], "owner": task["owner"], "lane": entry["lane"], "head": head,
                         "ahead_of_trunk": ahead, "owns": entry["owns"], "depends": entry["depends"],
                         "foundation": entry["task"] == record["foundation"]})
        done = sum(1 for r in rows if r["status"] == "done")
        exclusive = bool(state.names("exclusive")) and any(state.get(f"exclusive/{r['task']}.json") for r in rows)
        return {"plan": record["id"], "name": record["name"], "ticket": record["ticket"], "tasks": rows,
                "done": done, "total": len(rows), "complete": done == len(rows), "exclusive": exclusive}
