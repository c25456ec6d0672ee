"""The publisher tool set (publishing a ticket, its lock, and what follows a merge) and the maintenance tools
that keep integration and the repository tidy (the merge queue, gc). Each is one API call; its result is what
the CLI's `--json` prints for the same step."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from git_lanes.mcp.binding import Binding, ToolSpec
from git_lanes.mcp.params import AgentId, TicketId

Remote = Annotated[str | None, Field(description="A configured git remote (default: the ticket's, else "
                                                 "lanes.remote, else origin).")]


def tools(face: Binding) -> list[ToolSpec]:
    def publisher_status() -> dict:
        """Count the tickets ready to publish, published and merged, each with its pull request and the
        publish lock held on it, if any."""
        return face.api.publish_status()

    def publish_ticket(ticket_id: TicketId, remote: Remote = None,
                       branch: Annotated[str | None, Field(description="The branch to push (default: "
                                                                       "lanes/ticket/<short-id>).")] = None,
                       base: Annotated[str | None, Field(description="The branch the pull request merges into "
                                                                     "(default: the trunk).")] = None,
                       pr: Annotated[str | None, Field(description="After a publish that stopped before "
                                                               "recording its pull request: that pull request's "
                                                               "address, recorded without running the command; "
                                                               "`new` when none was opened.")] = None,
                       agent_id: AgentId = None) -> dict:
        """Push a ready ticket's integration lane as a branch (fast-forward only) and open its pull request
        with the configured command (pr_opened; pr_updated on a re-publish of the same branch). With no
        command configured, no pull request is opened: status branch_published, pull_request false, and a
        hint says where to open one. Another
        publisher at work on the ticket is `conflict` (reason publish_locked); one that stopped after running
        the command without recording its pull request is `conflict` (reason publish_interrupted) until `pr`
        says what the forge has."""
        return face.api.publish(ticket_id, remote=remote, branch=branch, base=base, actor=face.actor(agent_id),
                                pr=pr)

    def acquire_publish_lock(ticket_id: TicketId,
                             ttl: Annotated[float | None, Field(gt=0, le=86400, description="Seconds the lock "
                                                                "holds (default [publish] lock_ttl, 300).")]
                             = None, agent_id: AgentId = None) -> dict:
        """Take the ticket's publish lock, for publishing step by step. Returns its token (needed to release
        it). Another live holder is `conflict` naming it; a lock whose holder died or whose time ran out is
        taken over."""
        return face.api.acquire_publish_lock(ticket_id, face.actor(agent_id), ttl)

    def release_publish_lock(ticket_id: TicketId,
                             token: Annotated[str | None, Field(description="The token acquire_publish_lock "
                                                                "returned; without it, whatever lock is held "
                                                                "goes.")] = None,
                             agent_id: AgentId = None) -> dict:
        """Let go of the ticket's publish lock. A lock another token holds is `conflict` (reason
        publish_locked) and stays; no lock at all is `released: false`."""
        return face.api.release_publish_lock(ticket_id, token, face.actor(agent_id))

    def close_ticket_on_merge(ticket_id: TicketId, remote: Remote = None, agent_id: AgentId = None) -> dict:
        """Close a published ticket if its branch reached its base on the remote (a merge, fast-forward,
        rebase or squash: seen by ancestry, tree or patch id), posting pr_merged (branch_merged for a branch published with no pull request); `merged: false`
        otherwise."""
        return face.api.close_ticket_on_merge(ticket_id, remote, face.actor(agent_id))

    def clear_integration_branch(ticket_id: TicketId) -> dict:
        """Delete a closed ticket's integration lane tickets/<short-id> (its last head stays under
        refs/lanes/deleted/; the deletion travels on sync). Refused while the ticket is open."""
        return face.api.clear_integration_branch(ticket_id)

    def release_ticket_claims(ticket_id: TicketId, agent_id: AgentId = None) -> dict:
        """Release every file claim made for one of the ticket's tasks, whoever holds it."""
        return face.api.release_ticket_claims(ticket_id, face.actor(agent_id))

    def process_merge_queue(agent_id: AgentId = None) -> dict:
        """Integrate, one at a time through the merge gate, the tasks sent back for review whose lane moved
        since (their owner reran them); each integrates or goes back to its owner again."""
        return face.api.process_merge_queue(face.actor(agent_id))

    def gc(older_than: Annotated[str, Field(description="Prune only what is older than this: 30d, 12h, 90m, 2w, "
                                                         "45s; 0 for everything eligible.")] = "30d",
           dry_run: Annotated[bool, Field(description="Only list what would be removed.")] = False,
           agent_id: AgentId = None) -> dict:
        """Remove rejected states, superseded proposals, backups, ended runs' logs and workspaces of deleted
        lanes older than the age, then run git gc; report what went and the bytes freed. Lane heads, pending
        proposals and open tasks' lanes, and all they reach, stay."""
        return face.api.gc(older_than=older_than, dry_run=dry_run, actor=face.actor(agent_id))

    publisher = [publisher_status, publish_ticket, acquire_publish_lock, release_publish_lock,
                 close_ticket_on_merge, clear_integration_branch, release_ticket_claims]
    return [ToolSpec(fn, toolset="publisher", read_only=fn is publisher_status, touches=False) for fn in publisher] \
        + [ToolSpec(process_merge_queue, toolset="maintenance", touches=False),
           ToolSpec(gc, toolset="maintenance", touches=False)]
