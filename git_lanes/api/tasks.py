"""Tasks and tickets through the API: creating tasks with their dependencies and files, claiming them by
compare-and-swap, their status from claim to done, and the tickets that group them. Each write is one ledger op
(`ledger.py` appends it); each read, one read of the head's tree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.api.ledger import LedgerApi, R
from git_lanes.model.ids import AgentId, LedgerId

if TYPE_CHECKING:
    from git_lanes.model import ledger_results as results
    from git_lanes.model.coordination import TaskDetail, TaskView, TicketDetail, TicketView


@held
class TasksApi(LedgerApi):
    """Mixed into `Lanes` behind IntegrationApi, which extends `task_done` with the merge gate."""

    def _task_id(self, task: str) -> str:
        """The task an id or unique prefix names, for an op on it. A whole id is taken as it is: the op's fold
        refuses one the ledger lacks (`unknown_task`) when it applies, which a look at the state first could
        only race; so a writer reads nothing before it appends (under contention, the commits every other
        writer appended since its last op)."""
        from git_lanes.domain import tasks
        from git_lanes.model.names import id_text

        whole = id_text(task, "task").strip().lower()
        return whole if LedgerId.valid(whole) else tasks.resolve_task(self._state(), task)

    # -- tasks -----------------------------------------------------------------------------------------
    def task_create(self, title: str, *, actor: str | None = None, description: str | None = None,
                    depends: tuple[str, ...] = (), ticket: str | None = None, files: tuple[str, ...] = ()) \
            -> results.TaskCreated:
        """Create a task (id = the op's id). `depends` and `ticket` take unique id prefixes; `files` are
        globs claimed for whoever claims the task. `actor` defaults to the person in git's identity."""
        from git_lanes.domain import claims, tasks, tickets
        from git_lanes.model import ledger_results as results

        state = self._state()
        args = {"title": title, "description": description or "",
                "depends": [tasks.resolve_task(state, d) for d in depends],
                "ticket": tickets.resolve_ticket(state, ticket) if ticket is not None else None, "files": list(files)}
        tasks.validate_title(title)
        claims.validate_globs(list(files))
        return self._append_as(results.TaskCreated, "task.create", self._actor(actor), args)

    def task_dep_add(self, task: str, depends_on: str, actor: str | None = None) -> results.DependencyAdded:
        """Make `task` wait for `depends_on`; a dependency that would close a cycle is refused and named."""
        from git_lanes.domain import tasks
        from git_lanes.model import ledger_results as results

        state = self._state()
        return self._append_as(results.DependencyAdded, "task.dep_add", self._actor(actor), {
            "task": tasks.resolve_task(state, task), "depends_on": tasks.resolve_task(state, depends_on)})

    def task_list(self, *, ready: bool = False, status: str | None = None, owner: str | None = None) \
            -> list[TaskView]:
        """Tasks oldest first, as seen now (a lapsed owner's task is open); `ready`: open tasks whose
        dependencies are all done."""
        from git_lanes.domain import tasks
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import TaskView

        set_aside: list[dict[str, str]] = []
        rows = tasks.list_tasks(self._state(), self.ctx.now(), ready=ready, status=status, owner=owner,
                                set_aside=set_aside)
        return Listing([TaskView.from_dict(row) for row in rows], set_aside)

    def task_show(self, task: str) -> TaskDetail:
        """One task (by unique id prefix) with the status of each task it depends on."""
        from git_lanes.domain import tasks
        from git_lanes.model.coordination import TaskDetail

        state = self._state()
        record = tasks.view(state, tasks.get_task(state, tasks.resolve_task(state, task)), self.ctx.now())
        upstream = tasks.readable(state, record["depends"], tasks.get_task)  # one that cannot be read is left out
        record["depends_status"] = {d["id"]: d["status"] for d in upstream}
        return TaskDetail.from_dict(record)

    def task_claim(self, task: str, agent: str, version: int | None = None, lane: str | None = None, *,
                   ahead: bool = True) -> results.TaskClaimed:
        """Claim `task` for `agent` by compare-and-swap: exactly one of several concurrent claimers wins, the
        others get a Conflict at once (`task_claimed`, or `version_conflict` when `version` is not the
        task's). A task whose dependencies are not done is claimed ahead of them (`ready` false in the result):
        its owner is woken when they are done, as the ledger's wake-ups intend. With `ahead=False` such a claim
        is refused instead (`task_not_ready`, naming them). The task's files become the agent's claims;
        overlaps are reported."""
        from git_lanes.domain import lanes, tasks
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        if lane is not None:
            lanes.lane_head(self.ctx, lane)
        task_id = self._task_id(task)
        return self._append_as(results.TaskClaimed, "task.claim", agent,
                            {"task": task_id, "agent": agent, "version": version, "lane": lane, "ahead": bool(ahead)})

    def _task_op(self, result: type[R], op_type: str, task: str, actor: str | None, **args: Any) -> R:
        task_id = self._task_id(task)
        return self._append_as(result, op_type, self._actor(actor), {"task": task_id, **args})

    def task_done(self, task: str, actor: str | None = None) -> results.TaskDone:
        """Mark `task` done; wake the owners of the tasks it makes ready; the ticket it completes becomes
        ready. An agent cannot finish a task another live agent holds (Conflict); a person may."""
        from git_lanes.model import ledger_results as results

        return self._task_op(results.TaskDone, "task.done", task, actor)

    def task_block(self, task: str, reason: str, actor: str | None = None) -> results.TaskStatusChanged:
        """Pause `task` saying why; its owner keeps it (a blocked task does not lapse)."""
        from git_lanes.model import ledger_results as results

        return self._task_op(results.TaskStatusChanged, "task.block", task, actor, reason=reason)

    def task_resume(self, task: str, actor: str | None = None) -> results.TaskStatusChanged:
        """Resume a blocked task: claimed again by its owner, or open."""
        from git_lanes.model import ledger_results as results

        return self._task_op(results.TaskStatusChanged, "task.resume", task, actor)

    def task_handoff(self, task: str, to: str, actor: str | None = None, note: str | None = None) \
            -> results.TaskHandedOff:
        """Hand `task` to agent `to`: owner, lane, file claims and dirty set move in one op, and `to` gets a
        handoff post (with `note`), even before it has started."""
        from git_lanes.model import ledger_results as results

        to = AgentId(to)
        return self._task_op(results.TaskHandedOff, "task.handoff", task, actor, to=to, note=note)

    # -- tickets ---------------------------------------------------------------------------------------
    def ticket_open(self, title: str, actor: str | None = None) -> results.TicketOpened:
        """Open a ticket (a group of tasks); when all its tasks are done a ticket_ready post appears."""
        from git_lanes.model import ledger_results as results

        return self._append_as(results.TicketOpened, "ticket.open", self._actor(actor), {"title": title})

    def ticket_link(self, ticket: str, task: str, actor: str | None = None) -> results.TicketLinked:
        """Make `task` part of `ticket` (leaving any ticket it was in); both take unique id prefixes. The
        result names the tickets this made ready (`ready`) and the ready or published ones it opened again
        (`reopened`)."""
        from git_lanes.domain import tasks, tickets
        from git_lanes.model import ledger_results as results

        state = self._state()
        return self._append_as(results.TicketLinked, "ticket.link", self._actor(actor), {
            "ticket": tickets.resolve_ticket(state, ticket), "task": tasks.resolve_task(state, task)})

    def ticket_list(self) -> list[TicketView]:
        """Tickets oldest first, with how many of their tasks are done."""
        from git_lanes.domain import tickets
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import TicketView

        set_aside: list[dict[str, str]] = []
        return Listing([TicketView.from_dict(row) for row in tickets.list_tickets(self._state(), set_aside)],
                       set_aside)

    def ticket_show(self, ticket: str) -> TicketDetail:
        """One ticket (by unique id prefix) with its tasks."""
        from git_lanes.domain import tasks, tickets
        from git_lanes.model.coordination import TicketDetail

        state = self._state()
        record = tickets.view(state, tickets.get_ticket(state, tickets.resolve_ticket(state, ticket)))
        now = self.ctx.now()
        record["task_records"] = [tasks.view(state, tasks.get_task(state, t), now) for t in record["tasks"]]
        return TicketDetail.from_dict(record)
