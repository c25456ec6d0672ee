"""Publishing through the API: push a ticket's integration lane as a branch and open its pull request, under
the ticket's publish lock; count what is ready, published and merged; notice merged branches and close
their tickets. The publisher tool set of the MCP server calls the same steps one by one."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, NotFound, Refused, StaleState, UserError, command, option
from git_lanes.model import refs
from git_lanes.model.ids import Actor, random_hex
from git_lanes.store.stale import alive

if TYPE_CHECKING:
    # The domain and the network load inside the methods: most commands never publish (test_startup_imports).
    from git_lanes import ledger
    from git_lanes.store import scratch

PUBLISHABLE = ("ready", "published")


@held
class PublishingApi:
    """Mixed into `Lanes`, next to CoreApi (`ctx`, `_writing`), LedgerApi (`_state`, `_append`, `_actor`) and
    SyncApi (`_remote`)."""

    ctx: Context
    _writing: Callable[[], AbstractContextManager[Context]]
    _state: Callable[[], ledger.State]
    _actor: Callable[[str | None], Actor]
    _append: Callable[[str, str, dict[str, Any]], dict[str, Any]]
    _remote: Callable[[str | None], str]

    # -- the lock --------------------------------------------------------------------------------------
    def acquire_publish_lock(self, ticket: str, holder: str | None = None, ttl: float | None = None) -> dict[str, Any]:
        """Hold `ticket`'s publish lock for `ttl` seconds (default `[publish] lock_ttl`, 300). Another live
        holder's lock is a Conflict (exit 3) naming it; a lock whose holder's process is gone (on this host)
        or whose time ran out is taken over. Returns the lock with its `token`, which releases it."""
        from git_lanes.domain import publishing, tickets

        state = self._state()
        ticket_id = tickets.resolve_ticket(state, ticket)
        ttl = publishing.settings(self.ctx).lock_ttl if ttl is None else ttl
        held = publishing.current_lock(state, ticket_id, self.ctx.now())
        takeover = held["token"] if held is not None and _dead_here(held) else None
        return self._append("publish.lock", self._actor(holder), {
            "ticket": ticket_id, "token": random_hex(8), "ttl": ttl, "host": socket.gethostname(),
            "pid": os.getpid(), "takeover": takeover})

    def release_publish_lock(self, ticket: str, token: str | None = None, holder: str | None = None) -> dict[str, Any]:
        """Let go of `ticket`'s publish lock: the one `token` holds, else whatever lock there is (a person
        clearing one by hand). A lock another token holds is a Conflict (exit 3) naming its holder, and no
        lock at all is `released: False`: neither writes to the ledger."""
        from git_lanes.domain import publishing, tickets

        state = self._state()
        ticket_id = tickets.resolve_ticket(state, ticket)
        record = state.get(publishing.lock_path(ticket_id))
        if record is None:
            return {"ticket": ticket_id, "released": False}
        return self._append("publish.unlock", self._actor(holder),
                            {"ticket": ticket_id, "token": record["token"] if token is None else token})

    def _let_go(self, ticket_id: str, token: str, actor: str | None) -> None:
        """Release the lock this process took for its work; one that lapsed and was taken over meanwhile is
        the new holder's, and losing it must not hide how the work itself went."""
        try:
            self.release_publish_lock(ticket_id, token, actor)
        except Conflict as exc:
            if exc.code != "publish_locked":
                raise

    # -- publishing ------------------------------------------------------------------------------------
    def publish(self, ticket: str, *, remote: str | None = None, branch: str | None = None,
                base: str | None = None, actor: str | None = None, pr: str | None = None) -> dict[str, Any]:
        """Push `ticket`'s integration lane to `remote` as `branch` (default lanes/ticket/<short-id>) with a
        fast-forward-only push, then run `[publish] pr_command` (`update_command` on a re-publish of the same
        branch) and record the pull request with a `pr_opened` (`pr_updated`) post; with no command set, a
        `branch_published` post says no pull request was opened (`pull_request: false`, and a `hint` says
        where to open one). Publishing again once the command is set opens it. Refused for a ticket whose
        tasks are not all done; exit 3 when another publisher holds the ticket or the remote branch has commits
        the lane lacks. The command runs only after a `publish.intent` says it will: a publish that stopped
        after running it without recording its pull request refuses the next one (exit 3), since the forge
        may have opened it already. `pr` settles that: the pull request's address records it without running
        the command, `new` runs the command again."""
        from git_lanes.domain import integration, lanes, publishing, tickets
        from git_lanes.store import remote as transport

        if pr is not None:
            pr = publishing.validate_pr(pr)
        # The id is looked up here first: a typo fails at once, not after a round trip to the remote (or as an
        # unreachable remote). A ticket opened on another machine is here once a sync brought it.
        try:
            ticket_id = tickets.resolve_ticket(self._state(), ticket)
        except NotFound as exc:
            raise NotFound(exc.message, code=exc.code, details=exc.details,
                           hint=f"{exc.hint}; one opened on another machine is here after {command('sync')}") from None
        shared: str | None = self._remote(None)
        if shared is not None and publishing.shares_ledger(self.ctx, shared):
            self._exchange(shared)  # decide on what every machine has published so far
        else:
            shared = None
        state = self._state()
        record = tickets.view(state, tickets.get_ticket(state, ticket_id))
        if record["status"] == "closed":
            # Closed means merged (only `publish sync` closes a ticket): past publishing, a stale read (exit 3),
            # as `close_ticket_on_merge` says of the same ticket; finishing tasks is not the way on.
            url = (record.get("publication") or {}).get("url")
            raise StaleState(f"ticket {ticket_id[:8]} is closed: its pull request{f' {url}' if url else ''} "
                             "was merged", code="ticket_closed",
                             hint=f"{command('publish status')} lists it among the merged; new work goes in a "
                                  f"new ticket ({command('ticket open')})")
        if record["status"] not in PUBLISHABLE:
            raise Refused(f"ticket {ticket_id[:8]} is {record['status']}: {record['done']} of {record['total']} "
                          "tasks done", code="ticket_not_ready",
                          hint=f"{command('ticket show')} lists its tasks; {command('task done')} integrates each")
        previous = record.get("publication") or {}
        settings = publishing.settings(self.ctx)
        # Only what was not given defaults (to the last publication's, else the usual): an empty value given is
        # refused as given.
        remote = remote if remote is not None else previous.get("remote") or self._remote(None)
        url = transport.check_remote(self.ctx.store, remote)
        branch = publishing.validate_branch(branch if branch is not None else
                                            previous.get("branch") or publishing.default_branch(ticket_id))
        base = publishing.validate_branch(base if base is not None else previous.get("base") or self.ctx.trunk)
        refusal = integration.nothing_integrated(self.ctx, record)
        if refusal is not None:
            raise refusal
        lane = integration.integration_lane(ticket_id)
        head = lanes.lane_head(self.ctx, lane)
        publishing.require_base(self.ctx, remote, base)
        lock = self.acquire_publish_lock(ticket_id, actor, settings.lock_ttl)  # a live publisher: exit 3 first
        wrote = False
        try:
            pending = publishing.pending_intent(self._state(), ticket_id)
            if pending is not None and pr is None:
                raise publishing.interrupted(pending)  # before anything is pushed
            pushed = self._push(remote, branch, head, lane)
            values = {"branch": branch, "base": base, "remote": remote, "ticket": ticket_id,
                      "title": record["title"]}
            # A branch pushed with no pull request is not done with while there is a command to open one now.
            if not pushed and pr is None and (previous.get("head"), previous.get("branch"), previous.get("base")) \
                    == (head, branch, base) and (publishing.has_pull_request(previous) or not settings.pr_command):
                return {"ticket": ticket_id, "status": "unchanged", "branch": branch, "base": base,
                        "remote": remote, "head": head, "url": previous.get("url"), "pushed": False,
                        "pull_request": publishing.has_pull_request(previous), "command": None, "post": None,
                        **({} if publishing.has_pull_request(previous) else
                           {"hint": publishing.compare_hint(url, branch, base)})}
            update = publishing.updates(previous, remote, branch)
            # A pull request merged since (a task joined the ticket after it was published, reopening it) is
            # not updated: the work that followed opens one of its own, or no reviewer would see it.
            merged = update and self._merged(previous)
            update = update and not merged
            to_run = None if pr not in (None, publishing.NEW_PR) else \
                settings.update_command if update else settings.pr_command
            token = None
            if to_run:
                token = random_hex(8)
                self._append("publish.intent", self._actor(actor), {
                    "ticket": ticket_id, "token": token, "remote": remote, "branch": branch, "base": base,
                    "head": head, "update": update, **({"merged": previous["head"]} if merged else {}),
                    "host": socket.gethostname(), "pid": os.getpid(),
                    "replaces": pending["token"] if pending is not None else None})
                wrote = True
                if shared is not None:
                    joined = self._claim(shared, ticket_id, token, remote, branch, actor)
                    if joined is not None:
                        return joined | {"base": base, "head": head, "pushed": pushed}
            ran = self._run_pr_command(to_run, values, settings.timeout, ticket_id, token, actor) \
                if to_run and token else None
            found = publishing.url_in(ran.output_tail) if ran else pr if pr != publishing.NEW_PR else None
            result = self._append("ticket.publish", self._actor(actor), {
                "ticket": ticket_id, "remote": remote, "branch": branch, "base": base, "head": head, "url": found,
                "opened": ran is not None or found is not None, "token": token,
                **({"merged": previous["head"]} if merged else {})})
            wrote = True
        finally:
            self._let_go(ticket_id, lock["token"], actor)
            if shared is not None and wrote:
                self._tell_others(shared)
        opened = result["publication"]["pull_request"]
        return {"ticket": ticket_id, "status": result["kind"], "branch": branch, "base": base, "remote": remote,
                "head": head, "url": result["url"], "pushed": pushed, "pull_request": opened, "post": result["post"],
                "command": {"argv": publishing.command_line(to_run, values), "exit_code": ran.exit_code,
                            "output": ran.output_tail} if to_run and ran else None,
                **({} if opened else {"hint": publishing.compare_hint(url, branch, base)})}

    def _merged(self, publication: dict[str, Any]) -> bool:
        """Whether the head `publication` pushed reached the base it was to merge into, on its remote."""
        from git_lanes.domain import publishing
        from git_lanes.store import branches

        base_head = branches.fetch_branch(self.ctx.store, publication["remote"], publication["base"])
        return base_head is not None and publishing.merged_how(self.ctx, publication["head"], base_head) is not None

    def _claim(self, shared: str, ticket_id: str, token: str, remote: str, branch: str,
               actor: str | None) -> dict[str, Any] | None:
        """Make this publish's intent the ticket's on the ledger every machine syncs through, before the
        command runs. Another machine's that got there first: its pull request being opened is a Conflict
        (exit 3); one it opened for this branch meanwhile is joined (returned, nothing run)."""
        from git_lanes.domain import publishing, tickets
        from git_lanes.errors import LanesError

        try:
            self._exchange(shared)
        except LanesError:
            # Not known to hold on the remote: withdrawn here, so the next publish is not told it may have run.
            self._append("publish.failed", self._actor(actor), {"ticket": ticket_id, "token": token})
            raise
        state = self._state()
        held = publishing.pending_intent(state, ticket_id)
        if held is not None and held["token"] == token:
            return None
        if held is not None:
            raise publishing.interrupted(held)
        publication = tickets.get_ticket(state, ticket_id).get("publication") or {}
        if publishing.updates(publication, remote, branch):
            return {"ticket": ticket_id, "status": "unchanged", "branch": branch, "remote": remote,
                    "url": publication.get("url"), "pull_request": True, "command": None, "post": None,
                    "joined": publication.get("by")}
        raise Conflict(f"ticket {ticket_id[:8]}: {shared}'s ledger refused this publish's intent", code="publish_raced",
                       hint="publish again: it decides on what that ledger holds now")

    def _exchange(self, shared: str) -> None:
        """Bring the remote's ledger in and put this one's ops on it, replayed: the remote's ledger is where
        two machines' claims meet, so an intent that holds after this is the only one (the other machine's
        replay refuses its own)."""
        from git_lanes.domain import sync

        sync.run(self.ctx, shared, "sync", only=("ledger",))

    def _tell_others(self, shared: str) -> None:
        """Put what this publish recorded on the shared ledger, so another machine's next publish sees it;
        a failure only leaves that to the next sync."""
        from git_lanes.domain import publishing
        from git_lanes.errors import LanesError

        try:
            self._exchange(shared)
        except LanesError:
            pass

    def _push(self, remote: str, branch: str, head: str, lane: str) -> bool:
        """Fast-forward the remote's `branch` to `head`, or refuse. The lease alone would force, so the
        branch there is fetched and must be an ancestor of `head`; the lease then refuses it having moved."""
        from git_lanes.store import branches

        store = self.ctx.store
        there = branches.remote_head(store, remote, branch)
        if there == head:
            return False
        if there is not None:
            copy = branches.fetch_branch(store, remote, branch)
            if copy is not None and copy != there:
                there = copy  # it moved between the two looks: judge what the lease will expect
            if copy is None or not store.is_ancestor(there, head):
                error = self._not_forward(remote, branch, head, there, "it has commits the integration lane lacks")
                if copy is not None:  # their commits are here now: say how to bring them in, step by step
                    theirs = f"{lane}-{remote}"
                    error.hint = (f"publishing only fast-forwards {branch}; someone pushed to it: bring their "
                                  f"commits into {lane} ("
                                  f"{command('lane create', theirs, from_=branches.copy_ref(remote, branch))}, "
                                  f"{command('promote', theirs, into=lane, auto_accept=True)}, "
                                  f"{command('lane delete', theirs)}), then publish again; or "
                                  f"publish under another branch ({option('branch', 'NAME')})")
                raise error
        pushed = branches.push_branch(store, remote, branch, head, there)
        if not pushed.ok:
            raise self._not_forward(remote, branch, head, there, pushed.refusal()[1])
        return True

    @staticmethod
    def _not_forward(remote: str, branch: str, head: str, there: str | None, why: str) -> Conflict:
        return Conflict(f"{remote} refused to move {branch} to {head[:8]}: {why}", code="publish_rejected",
                        details={"branch": branch, "remote": remote, "head": head, "remote_head": there},
                        hint=f"publishing only fast-forwards {branch}; someone pushed to it: bring their commits "
                             f"into the integration lane, or publish under another branch ({option('branch', 'NAME')})")

    def _run_pr_command(self, argv_template: tuple[str, ...], values: dict[str, str], timeout: float, ticket_id: str,
                        token: str, actor: str | None) -> scratch.CommandResult:
        from git_lanes.domain import publishing
        from git_lanes.store import scratch

        argv = publishing.command_line(argv_template, values)
        ran = scratch.run_command(argv, self.ctx.store.root, timeout,
                                  {"GIT_LANES_TICKET": values["ticket"], "GIT_LANES_BRANCH": values["branch"],
                                   "GIT_LANES_BASE": values["base"]})
        if ran.exit_code != 0:
            # It said it failed: it opened nothing, and the next publish may run it again. (One that did not
            # finish in time may have, so its intent stays and the next publish asks.)
            if not ran.timed_out:
                self._append("publish.failed", self._actor(actor), {"ticket": ticket_id, "token": token})
            tail = "\n".join("  " + line for line in ran.output_tail.strip().splitlines()[-5:])
            status = f"exit {ran.exit_code}" if ran.exit_code is not None else "it did not finish"
            raise UserError(f"the pull request command failed ({status}): {' '.join(argv)}"
                            + (f"\n{tail}" if tail else ""), code="pr_command_failed",
                            hint=f"{values['branch']} is pushed; fix [publish] in .lanes.toml on the trunk (or "
                                 "the tool's login), then publish again; if the forge has a pull request from it "
                                 f"already, record it with {command('publish', ticket_id[:8], pr='URL')}")
        return ran

    # -- status and sync -------------------------------------------------------------------------------
    def publish_status(self) -> dict[str, Any]:
        """Tickets ready to publish, published (with their pull requests) and merged, and the locks held (a lock
        whose holder's process on this host is gone says `lapsed`: the next publisher takes it over), and the
        publishes that ran the pull request command without recording a pull request (`intent`). A ready
        ticket none of whose tasks integrated a change says so in `unpublishable`, as publish would refuse it."""
        from git_lanes.domain import integration, publishing, tickets

        state = self._state()
        now = self.ctx.now()
        rows = tickets.list_tickets(state)
        groups: dict[str, list[dict[str, Any]]] = {"open": [], "ready": [], "published": [], "merged": []}
        for row in rows:
            group = "merged" if row["status"] == "closed" else row["status"]
            lock = publishing.current_lock(state, row["id"], now)
            intent = publishing.pending_intent(state, row["id"])
            groups.setdefault(group, []).append({
                "ticket": row["id"], "title": row["title"], "done": row["done"], "total": row["total"],
                "publication": row.get("publication"),
                "lock": {**{k: lock[k] for k in ("holder", "until", "host", "pid")}, "lapsed": _dead_here(lock)}
                if lock else None,
                "intent": {k: intent.get(k) for k in ("by", "time", "remote", "branch", "host", "pid")}
                if intent else None,
                "unpublishable": integration.unpublishable(self.ctx, row) if group == "ready" else None})
        return {"counts": {name: len(found) for name, found in groups.items()}, **groups}

    def publish_sync(self, remote: str | None = None, actor: str | None = None) -> dict[str, Any]:
        """For every published ticket whose branch reached its base on the remote (by ancestry, by tree or
        by patch id, so squash and rebase merges count): post `pr_merged` and close it; then, for every
        closed ticket, delete its integration lane and release its tasks' claims."""
        from git_lanes.domain import publishing, tickets
        from git_lanes.store import branches
        from git_lanes.store import remote as transport

        if remote is not None:  # else a typo, or bytes that are not UTF-8, matched nothing and came back as is
            transport.check_remote(self.ctx.store, remote)
        state = self._state()
        merged, waiting, locked = [], [], []
        bases: dict[tuple[str, str], str | None] = {}
        for row in tickets.list_tickets(state):
            publication = row.get("publication") or {}
            if publishing.not_closable(row) is not None or (remote and publication.get("remote") != remote):
                continue
            where = (publication["remote"], publication["base"])
            if where not in bases:
                bases[where] = branches.fetch_branch(self.ctx.store, *where)
            base_head = bases[where]
            how = publishing.merged_how(self.ctx, publication["head"], base_head) if base_head else None
            if how is None:
                waiting.append({"ticket": row["id"], "branch": publication["branch"], "url": publication.get("url")})
                continue
            try:
                merged.append(self._close(row["id"], how, base_head, actor))
            except Conflict as exc:
                if exc.code != "publish_locked":
                    raise
                locked.append({"ticket": row["id"], "holder": exc.details.get("holder")})
        cleared = [self._tidy(row, actor) for row in tickets.list_tickets(self._state()) if row["status"] == "closed"]
        return {"remote": remote, "merged": merged, "waiting": waiting, "locked": locked,
                "tidied": [c for c in cleared if c["lane_deleted"] or c["claims_released"]]}

    def close_ticket_on_merge(self, ticket: str, remote: str | None = None, actor: str | None = None) -> dict[str, Any]:
        """Close a published ticket whose branch reached its base on the remote (`merged: false` otherwise)."""
        from git_lanes.domain import publishing, tickets
        from git_lanes.store import branches

        state = self._state()
        ticket_id = tickets.resolve_ticket(state, ticket)
        record = tickets.view(state, tickets.get_ticket(state, ticket_id))
        refusal = publishing.not_closable(record)  # as the close itself would refuse, before the fetch
        if refusal is not None:
            raise refusal
        publication = record["publication"]
        base_head = branches.fetch_branch(self.ctx.store, remote or publication["remote"], publication["base"])
        how = publishing.merged_how(self.ctx, publication["head"], base_head) if base_head else None
        if how is None:
            return {"ticket": ticket_id, "merged": False, "branch": publication["branch"], "base": publication["base"]}
        return self._close(ticket_id, how, base_head, actor) | {"merged": True}

    def _close(self, ticket_id: str, how: str, base_head: str | None, actor: str | None) -> dict[str, Any]:
        lock = self.acquire_publish_lock(ticket_id, actor)
        try:
            closed = self._append("ticket.close", self._actor(actor), {"ticket": ticket_id, "how": how,
                                                                      "base_head": base_head})
        finally:
            self._let_go(ticket_id, lock["token"], actor)
        return closed

    def _tidy(self, row: dict[str, Any], actor: str | None) -> dict[str, Any]:
        from git_lanes.domain import publishing

        lane_gone = self.clear_integration_branch(row["id"])["deleted"]
        released = self.release_ticket_claims(row["id"], actor)["released"] \
            if publishing.claims_of(self._state(), row) else []
        return {"ticket": row["id"], "lane_deleted": lane_gone, "claims_released": released}

    def clear_integration_branch(self, ticket: str) -> dict[str, Any]:
        """Delete a closed ticket's integration lane (its last head is kept under refs/lanes/deleted/, and the
        deletion travels on sync). An open ticket's lane holds work not yet merged: refused."""
        from git_lanes.domain import integration, lanes, tickets

        state = self._state()
        ticket_id = tickets.resolve_ticket(state, ticket)
        record = tickets.get_ticket(state, ticket_id)
        lane = integration.integration_lane(ticket_id)
        if record["status"] != "closed":
            raise Refused(f"ticket {ticket_id[:8]} is {record['status']}; its integration lane {lane} holds work not "
                          "merged yet", code="ticket_open", hint=f"{command('publish sync')} closes merged tickets")
        with self._writing() as ctx:
            if ctx.store.read_ref(refs.lane_ref(lane, ctx.trunk)) is None:
                return {"ticket": ticket_id, "lane": lane, "deleted": False}
            deleted = lanes.delete(ctx, lane, force=True, unsaved=False, backup=None)
        return {"ticket": ticket_id, "lane": lane, "deleted": True, "kept_at": deleted["kept_at"]}

    def release_ticket_claims(self, ticket: str, actor: str | None = None) -> dict[str, Any]:
        """Release every file claim made for one of the ticket's tasks, whoever holds it."""
        from git_lanes.domain import tickets

        ticket_id = tickets.resolve_ticket(self._state(), ticket)
        return self._append("ticket.release_claims", self._actor(actor), {"ticket": ticket_id})


def _dead_here(lock: dict[str, Any]) -> bool:
    """Whether the lock's holder was a process on this host that is gone (a publisher killed mid-way)."""
    pid = lock.get("pid")
    return lock.get("host") == socket.gethostname() and isinstance(pid, int) and pid != os.getpid() \
        and not alive(pid)

