"""Finishing a task through the merge gate: `task done` promotes the task's lane into its ticket's integration
lane (or the trunk) before the task is marked done; a collision or a failing gate sends it back to its owner
instead (DESIGN.md §3's refusal to guess, applied to the coordination model)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.api.tasks import TasksApi
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, GateFailed, LanesError, NotFound, Refused, command
from git_lanes.model import refs

if TYPE_CHECKING:
    from git_lanes.model import ledger_results as results


@held
class IntegrationApi(TasksApi):
    """Mixed into `Lanes` ahead of TasksApi, whose `task_done` it extends with integration, and next to
    PromotionApi, whose merge gate it goes through."""

    ctx: Context
    _writing: Callable[[], AbstractContextManager[Context]]
    promote: Callable[..., Any]  # a Promoted | UpToDate record, read like its JSON

    def task_done(self, task: str, actor: str | None = None, *, integrate: bool = True) -> results.TaskDone:
        """Mark `task` done. With `integrate` (the default) and a lane on the task, its lane's accepted head is
        promoted first, through the merge gate and the trunk's gates, into the ticket's integration lane
        (`tickets/<short-id>`, made from the trunk on the first landing) or, with no ticket, into the trunk.
        On a collision (Conflict, exit 3) or a failing required gate (GateFailed, exit 4) nothing moves and
        the task goes back to its owner as `needs_review` with a handoff post and a wake. A dispatch plan's
        task done creates the lanes of the tasks it made ready, from the plan's foundation (`lanes_created`)."""
        from git_lanes.domain import oplog, tasks
        from git_lanes.model import ledger_results as results

        # One entry of the operation log for the whole command (the integration lane made, the promotion, the
        # task marked done, the lanes it made ready), so `git lanes undo` right after undoes all of it.
        task_id = tasks.resolve_task(self._state(), task)
        description = f"task done {task_id[:8]}"
        with oplog.operation(self.ctx, description, actor) as recorder:
            try:
                done = self._integrate_and_finish(task_id, actor, integrate)
            except LanesError:
                if recorder.description == description:
                    recorder.description = f"task done {task_id[:8]} refused: sent back or left as it was"
                raise
            created = self._after_task_done(done.task)  # type: ignore[attr-defined]  # DispatchApi's
        extra: dict[str, Any] = {"lanes_created": created} if created else {}
        if done.ticket_ready is not None:
            # Ready by the ticket's rule (every task done); whether there is work to publish is publish's rule.
            unpublishable = self._nothing_to_publish(done.ticket_ready)
            if unpublishable is not None:
                extra["ticket_unpublishable"] = unpublishable
        return results.TaskDone.from_dict(done.to_dict() | extra) if extra else done

    def _nothing_to_publish(self, ticket_id: str) -> dict[str, Any] | None:
        from git_lanes.domain import integration, tickets

        return integration.unpublishable(self.ctx, tickets.get_ticket(self._state(), ticket_id))

    def _integrate_and_finish(self, task: str, actor: str | None, integrate: bool) -> results.TaskDone:
        # Loaded here, not at start-up: most commands never finish a task (see test_startup_imports).
        from git_lanes import ledger
        from git_lanes.domain import integration, lanes, promotion, tasks
        from git_lanes.model import ledger_results as results

        state = self._state()
        task_id = tasks.resolve_task(state, task)
        record = tasks.get_task(state, task_id)
        who = self._actor(actor)
        if not integrate or not record.get("lane"):
            return self._task_op(results.TaskDone, "task.done", task_id, actor)
        # Refuse what the fold would refuse (already done, another live agent's) before anything moves.
        tasks.done(ledger.Tx(state), ledger.make_op("task.done", who, {"task": task_id}, self.ctx.now()))
        lane, target = record["lane"], integration.target_for(self.ctx, record)
        if lane == target:
            return self._task_op(results.TaskDone, "task.done", task_id, actor)
        try:  # before the integration lane is made: a refused task done leaves nothing behind
            lanes.lane_head(self.ctx, lane)
        except NotFound as exc:
            raise NotFound(f"task {task_id[:8]}'s lane {lane!r} does not exist: nothing to integrate",
                           code=exc.code, details={"task": task_id, "lane": lane},
                           hint=f"{command('lane create', lane)} and commit the work there, or "
                                f"{command('task done', task_id[:8], no_integrate=True)} marks it done as it is"
                           ) from None
        with self._writing() as ctx:
            created = integration.ensure_lane(ctx, target)
        try:
            report = self.promote(lane, target, prompt=f"Integrate task {task_id[:8]}: {record['title']}",
                                  agent_id=actor or None, auto_accept=True)  # as _actor reads it
        except Conflict as exc:
            if exc.code != "collision":
                raise
            paths = [c["path"] for c in exc.details.get("collisions", [])]
            raise self._sent_back(exc, task_id, who, lane, target, "collision", paths=paths,
                                  ways=exc.details.get("ways") or promotion.ways_on(lane, target)) from None
        except GateFailed as exc:
            transition = exc.details.get("transition") or {}
            failed = [e["gate"] for e in transition.get("evaluations", []) if e.get("required") and not e.get("passed")]
            raise self._sent_back(exc, task_id, who, lane, target, "gate_failed", gates=failed,
                                  ways=integration.ways_after_gate_failure(lane, target)) from None
        transition = report.get("transition") or {}
        if report["status"] not in ("accepted", "up_to_date"):
            # held for a person (it changes a protected path): nothing moved, and it is not the owner's to fix
            raise Refused(f"integrating task {task_id[:8]} into {target} waits for a person: "
                          f"{((transition.get('extra') or {}).get('held') or {}).get('reason') or report['status']}",
                          code="integration_held",
                          details={"task": task_id, "into": target, "transition": transition},
                          hint=f"a person accepts it with {command('accept', str(transition.get('id'))[:8])}, then "
                               f"{command('task done', task_id[:8])} finishes the task")
        integrated = {"into": target, "lane": lane, "status": report["status"],
                      "transition": transition.get("id"), "state": transition.get("to")}
        done = self._task_op(results.TaskDone, "task.done", task_id, actor, integrated=integrated)
        return results.TaskDone.from_dict(done.to_dict() | {"integrated": integrated | {
            "created_lane": created, "left_pending": report.get("left_pending", []),
            "unsnapshotted": report.get("unsnapshotted")}})

    def _sent_back(self, exc: LanesError, task_id: str, actor: str, lane: str, target: str, reason: str, *,
                   paths: list[str] | None = None, gates: list[str] | None = None,
                   ways: list[dict[str, Any]] | None = None) -> LanesError:
        """Record that the task goes back to its owner, then the error to raise: the promotion's own, with
        what happened to the task added."""
        from git_lanes.model.text import shown_path

        review = self._append("task.review", actor, {  # the ledger writes strict UTF-8 JSON: paths as text
            "task": task_id, "into": target, "reason": reason, "paths": [shown_path(p) for p in paths or []],
            "gates": gates or [],
            "ways": ways or [], "lane_head": self.ctx.store.read_ref(refs.lane_ref(lane, self.ctx.trunk))})
        owner = review.get("owner")
        exc.message = (f"task {task_id[:8]} did not integrate into {target}; sent back to {owner or 'nobody'} as "
                       f"needs_review\n{exc.message}")
        exc.details.update({"task": task_id, "into": target, "sent_back": review})
        exc.hint = "\n".join(f"  {w['way']}: `{w['command']}`" for w in ways or []) + \
            f"\nthen finish it again: {command('task done', task_id[:8])}"
        return exc

    def process_merge_queue(self, actor: str | None = None) -> dict[str, Any]:
        """Integrate, one at a time through the merge gate, every task waiting in the queue: sent back for
        review (`needs_review`) and rerun since, its lane having moved past where it stood when it was sent
        back. Oldest first; each is finished as `task done` would finish it. A task whose lane has not moved
        waits for its owner."""
        from git_lanes.domain import tasks

        waiting = [t for t in tasks.list_tasks(self._state(), self.ctx.now(), status="needs_review")]
        integrated, failed, untouched = [], [], []
        for task in waiting:
            review = task.get("review") or {}
            head = self.ctx.store.read_ref(refs.lane_ref(task["lane"], self.ctx.trunk)) if task.get("lane") else None
            if head is None or head == review.get("lane_head"):
                untouched.append({"task": task["id"], "lane": task.get("lane"), "owner": task["owner"]})
                continue
            try:
                done = self.task_done(task["id"], actor)
            except LanesError as exc:
                failed.append({"task": task["id"], "lane": task["lane"], "error": exc.code, "message": exc.message})
                continue
            integrated.append({"task": task["id"], "lane": task["lane"], "into": (done.integrated or {}).get("into"),
                               "ticket_ready": done.ticket_ready})
        return {"integrated": integrated, "sent_back": failed, "waiting": untouched}
