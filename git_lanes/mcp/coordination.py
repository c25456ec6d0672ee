"""The coordination tools, named as Lockage names them: agents, tasks, tickets, file claims, dirty sets, the
board and waiting. Each is one API call; its result is what the CLI's `--json` prints."""

from __future__ import annotations

import threading
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field

from git_lanes.domain import BOARD_LIMIT
from git_lanes.errors import LanesError
from git_lanes.mcp.binding import Binding, ToolSpec
from git_lanes.mcp.params import AgentId, Globs, PostKind, TaskId, TaskStatus, TicketId

# While wait_for_unblock waits, a progress notification goes out this often (and once at the start).
PROGRESS_SECONDS = 1.0


def tools(face: Binding) -> list[ToolSpec]:
    """The coordination tools, bound to `face` (the repository and the server's agent)."""

    def register_agent(agent_id: AgentId = None,
                       kind: Annotated[str | None, Field(description="What sort of agent, e.g. claude.")] = None,
                       lane: Annotated[str | None, Field(description="The lane it works in (it must exist; "
                                                                     "assign_worktree creates one).")] = None
                       ) -> dict:
        """Register an agent (or update its kind and lane) and start its 15-minute lease. Call it first: posts
        sent to everyone before an agent's first call do not flood in, posts sent to it directly do."""
        return face.api.agent_register(face.agent(agent_id), kind, lane)

    def heartbeat(agent_id: AgentId = None) -> dict:
        """Extend the agent's lease; report its unread posts, pending wakes and refused ops; refresh its dirty
        set from its lane's workspace."""
        return face.api.agent_heartbeat(face.agent(agent_id))

    def create_task(title: Annotated[str, Field(description="One line saying what needs doing.")],
                    description: Annotated[str | None, Field(description="What needs doing, in more words.")]
                    = None,
                    depends: Annotated[list[str], Field(description="Tasks (ids or prefixes) that must be done "
                                                                    "first.")] = (),
                    ticket_id: Annotated[str | None, Field(description="The ticket this task belongs to.")] = None,
                    files: Annotated[list[str], Field(description="Globs of the files the task will touch; "
                                                                  "claimed for whoever claims the task.")] = (),
                    agent_id: AgentId = None) -> dict:
        """Create a task (optionally depending on others, in a ticket, with the files it will touch) and
        return its id and version. The owners of tasks waiting on it are woken when it is done."""
        return face.api.task_create(title, actor=face.actor(agent_id), description=description,
                                    depends=tuple(depends), ticket=ticket_id, files=tuple(files))

    def list_tasks(ready_only: Annotated[bool, Field(description="Only open tasks whose dependencies are all "
                                                                 "done: what can start now.")] = False,
                   status: Annotated[TaskStatus | None, Field(description="Only tasks with this status.")] = None,
                   owner: Annotated[str | None, Field(description="Only tasks this agent holds.")] = None
                   ) -> list[dict]:
        """List tasks, oldest first, with status, owner, version and whether they are ready."""
        return face.api.task_list(ready=ready_only, status=status, owner=owner)

    def get_task(task_id: TaskId) -> dict:
        """Show one task: version, status, owner, lane, dependencies (with their status), files, ticket."""
        return face.api.task_show(task_id)

    def claim_task(task_id: TaskId,
                   version: Annotated[int | None, Field(description="Claim only if the task is still at this "
                                                                    "version (compare-and-swap).")] = None,
                   lane: Annotated[str | None, Field(description="The lane the work happens in (default: the "
                                                                 "agent's lane).")] = None,
                   ahead: Annotated[bool, Field(description="Claim it even though its dependencies are not "
                                                            "done (the default; wait_for_unblock returns when "
                                                            "they are); false refuses such a task.")] = True,
                   agent_id: AgentId = None) -> dict:
        """Claim a task. Of several agents claiming one task exactly one wins; the others get a `conflict`
        error at once and should take another task (list_tasks with ready_only). A task whose dependencies
        are not done is claimed ahead of them (`ready` false); with ahead false it is refused (`task_not_ready`). The task's files become
        the agent's file claims; overlaps with other agents are returned as warnings, never blocking."""
        return face.api.task_claim(task_id, face.agent(agent_id), version, lane, ahead=ahead)

    def add_dependency(task_id: TaskId,
                       depends_on: Annotated[str, Field(description="The task (id or prefix) that must be done "
                                                                    "first.")],
                       agent_id: AgentId = None) -> dict:
        """Make a task wait for another. A dependency that would close a cycle is refused and the cycle named."""
        return face.api.task_dep_add(task_id, depends_on, face.actor(agent_id))

    def task_done(task_id: TaskId, integrate: Annotated[bool, Field(
                      description="Promote the task's lane through the merge gate first (into its ticket's "
                                  "integration lane, else the trunk); false only marks it done.")] = True,
                  agent_id: AgentId = None) -> dict:
        """Mark a task done, integrating its lane first: a collision (`conflict`) or a failing gate
        (`gate_failed`) moves nothing and sends the task back to its owner as needs_review with a handoff post.
        The owners of the tasks it makes ready are woken, and a ticket whose tasks are all done gets a
        ticket_ready post. A task another live agent holds is refused (`conflict`)."""
        return face.api.task_done(task_id, face.actor(agent_id), integrate=integrate)

    def block_task(task_id: TaskId, reason: Annotated[str, Field(description="Why the work cannot go on.")],
                   agent_id: AgentId = None) -> dict:
        """Pause a task; its owner keeps it (a blocked task does not lapse). Post the reason as a question too."""
        return face.api.task_block(task_id, reason, face.actor(agent_id))

    def resume_task(task_id: TaskId, agent_id: AgentId = None) -> dict:
        """Resume a task that block_task paused: it is claimed by its owner again."""
        return face.api.task_resume(task_id, face.actor(agent_id))

    def handoff_task(task_id: TaskId,
                     to_agent: Annotated[str, Field(description="The new owner (it need not have started yet).")],
                     note: Annotated[str | None, Field(description="A word for the new owner, added to the "
                                                                   "handoff post.")] = None,
                     agent_id: AgentId = None) -> dict:
        """Hand a task to another agent: owner, lane, file claims and dirty set move together in one step, and
        the new owner gets a handoff post."""
        return face.api.task_handoff(task_id, to_agent, face.actor(agent_id), note)

    def open_ticket(title: Annotated[str, Field(description="One line naming the piece of work.")],
                    agent_id: AgentId = None) -> dict:
        """Open a ticket to group tasks; when all its tasks are done a ticket_ready post says so."""
        return face.api.ticket_open(title, face.actor(agent_id))

    def link_task_to_ticket(ticket_id: TicketId, task_id: TaskId, agent_id: AgentId = None) -> dict:
        """Make a task part of a ticket (leaving any ticket it was in). `ready` names the tickets this made
        ready, `reopened` the ready or published ones it opened again."""
        return face.api.ticket_link(ticket_id, task_id, face.actor(agent_id))

    def list_tickets() -> list[dict]:
        """List tickets with how many of their tasks are done."""
        return face.api.ticket_list()

    def claim_files(globs: Globs,
                    task_id: Annotated[str | None, Field(description="The task these files are for.")] = None,
                    agent_id: AgentId = None) -> dict:
        """Claim the files you mean to change. Overlaps with other agents' claims and dirty files are returned
        and wake those agents; nothing is ever blocked."""
        return face.api.claim_add(globs, face.agent(agent_id), task_id)

    def release_files(globs: Annotated[list[str], Field(description="The claimed globs to release; empty: all "
                                                                    "of the agent's claims.")] = (),
                      agent_id: AgentId = None) -> dict:
        """Release the agent's file claims on these globs (all of them when none are given), e.g. when done
        with an area, so other agents are no longer warned about it."""
        return face.api.claim_release(face.agent(agent_id), globs)

    def list_claims(agent: Annotated[str | None, Field(description="Only this agent's claims.")] = None
                    ) -> list[dict]:
        """List file claims: who means to change what."""
        return face.api.claim_list(agent)

    def publish_dirty(agent_id: AgentId = None) -> dict:
        """Compute the agent's dirty set from git (its lane's workspace against the lane head) and publish it.
        Returns overlaps with other agents (waking them) and the changed files outside its own claims."""
        return face.api.dirty_publish(face.agent(agent_id))

    def list_dirty() -> list[dict]:
        """List every agent's published dirty set: who actually changed what."""
        return face.api.dirty_list()

    def post_board(text: Annotated[str, Field(description="The message (at most 16 KiB).")],
                   kind: Annotated[PostKind, Field(description="note, question (why you are stuck) or handoff."
                                                   )] = "note",
                   to_agent: Annotated[str | None, Field(description="Send to this agent only; default: "
                                                                     "everyone else.")] = None,
                   agent_id: AgentId = None) -> dict:
        """Post on the board. An unread post wakes its reader's wait_for_unblock."""
        return face.api.board_post(text, face.agent(agent_id), kind, to_agent)

    def read_board(unread_only: Annotated[bool, Field(description="Only unread posts.")] = False,
                   unanswered_only: Annotated[bool, Field(description="Only the questions nobody answered or "
                                                          "resolved yet, every one however old; marks nothing "
                                                          "read, and limit does not apply.")] = False,
                   all_posts: Annotated[bool, Field(description="Include posts sent to other agents.")] = False,
                   limit: Annotated[int, Field(ge=0, le=1000, description="How many recent posts to include "
                                                                          "besides the unread ones.")] = BOARD_LIMIT,
                   agent_id: AgentId = None) -> dict:
        """Read the board as the agent: its unread posts and recent ones. What is shown is marked read.
        Without any agent, the whole board is shown and nothing is marked."""
        return face.api.board_read(face.actor(agent_id), unread_only=unread_only, everything=all_posts,
                                   limit=limit, unanswered=unanswered_only)

    def resolve_question(post: Annotated[int | str, Field(description="The post to resolve: its number (12 or "
                                                                      "\"#12\") or a unique prefix of its id.")],
                         agent_id: AgentId = None) -> dict:
        """Mark a post (a question, say) resolved."""
        return face.api.board_resolve(post, face.actor(agent_id))

    def answer_question(post: Annotated[int | str, Field(description="The question: its number (12 or \"#12\") "
                                                                   "or a unique prefix of its id.")],
                        text: Annotated[str, Field(description="The answer (at most 16 KiB).")],
                        agent_id: AgentId = None) -> dict:
        """Answer a question: a post to its asker naming it, and the question resolved, in one step. A post
        that is not a question is refused (reason not_a_question)."""
        return face.api.board_answer(post, text, face.agent(agent_id))

    async def wait_for_unblock(ctx: Context,
                               timeout_s: Annotated[float, Field(ge=0, le=86400, description="Return after this "
                                                                 "many seconds even if nothing happened.")] = 60.0,
                               agent_id: AgentId = None) -> dict:
        """Wait until something concerns the agent and say what: a task of its became ready (task_ready),
        another agent stepped into its files (overlap), one of its ops was refused by a sync (refused), an
        unread post for it arrived (post), or the timeout passed (timeout). What it returns is taken (wakes
        leave the queue, posts are marked read). Progress notifications go out while it waits; cancelling the
        request ends the wait at once and takes nothing."""
        agent = face.agent(agent_id)
        stop = threading.Event()

        def wait() -> dict:
            return face.touched(agent, lambda: face.api.wait(agent, timeout_s, stop=stop))

        async def report() -> None:
            started = anyio.current_time()
            while True:
                waited = anyio.current_time() - started
                await ctx.report_progress(round(min(waited, timeout_s), 3), timeout_s,
                                          f"waiting for a wake or an unread post for {agent}")
                await anyio.sleep(PROGRESS_SECONDS)

        outcome: list[Any] = []  # the wait's result or its LanesError, kept out of the task group, which would
        async with anyio.create_task_group() as group:  # wrap an error in an ExceptionGroup
            group.start_soon(report)
            try:
                outcome.append(await anyio.to_thread.run_sync(wait, abandon_on_cancel=True))
            except LanesError as exc:
                outcome.append(exc)
            finally:
                stop.set()  # a cancelled call abandons the thread: this ends its wait before it takes anything
                group.cancel_scope.cancel()
        if isinstance(outcome[0], LanesError):
            raise outcome[0]
        result: dict[str, Any] = outcome[0]
        return result

    return [
        ToolSpec(register_agent, touches=False), ToolSpec(heartbeat, touches=False), ToolSpec(create_task),
        ToolSpec(list_tasks, read_only=True), ToolSpec(get_task, read_only=True),
        ToolSpec(claim_task, touches=False), ToolSpec(add_dependency), ToolSpec(task_done), ToolSpec(block_task),
        ToolSpec(resume_task), ToolSpec(handoff_task), ToolSpec(open_ticket), ToolSpec(link_task_to_ticket),
        ToolSpec(list_tickets, read_only=True), ToolSpec(claim_files, touches=False),
        ToolSpec(release_files), ToolSpec(list_claims, read_only=True),
        ToolSpec(publish_dirty, touches=False), ToolSpec(list_dirty, read_only=True),
        ToolSpec(post_board), ToolSpec(read_board), ToolSpec(resolve_question), ToolSpec(answer_question),
        ToolSpec(wait_for_unblock, touches=False),
    ]

