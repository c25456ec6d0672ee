"""Seeing the whole project at once: where lanes stand and which would collide (the radar), spending over
time, and a feed of what changed, read from ref moves, for faces that update live (the HTTP server's event
stream, the MCP server's waits)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError, UserError

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import changes, costs, radar, transitions
    from git_lanes.store.refwatch import RefMove, RefWatch

# A feed that fell this far behind the ledger reports the count, not every op.
MAX_OPS_PER_EVENT = 50
MAX_FEED_WAIT = 3600.0


@held
class OverviewApi:
    ctx: Context

    def radar(self) -> dict[str, Any]:
        """Each lane's ahead/behind against the trunk, and every pair of lanes (the trunk included) that
        changed a same path since they forked, i.e. would collide on promotion."""
        from git_lanes.domain import radar

        return radar.radar(self.ctx)

    def cost(self) -> dict[str, Any]:
        """Cumulative tokens and dollars over time, per agent and per lane."""
        from git_lanes.domain import costs, transitions

        return costs.series(*transitions.scan(self.ctx))

    def watch(self) -> ChangeFeed:
        """A feed of what changes from now on; see ChangeFeed."""
        return ChangeFeed(self.ctx)


@held
class ChangeFeed:
    """What moved since the last look, as domain events: `{"kind": "lane", "lane", "old", "new"}`,
    `proposal`/`rejected` (id), `ledger` (the ops appended, oldest first), `run`, `notes`, `ref`.
    It reads ref files and takes no lock, so any number of watchers cost writers nothing."""

    def __init__(self, ctx: Context) -> None:
        from git_lanes.store.refwatch import RefWatch

        self.ctx = ctx
        self._watch = RefWatch(ctx.store.common_dir)

    def poll(self) -> list[dict[str, Any]]:
        """The events since the last look, without waiting."""
        return [self._event(move) for move in self._watch.moves()]

    def wait(self, timeout: float) -> list[dict[str, Any]]:
        """Events as soon as something moved, or [] after `timeout` seconds."""
        if not 0 <= timeout <= MAX_FEED_WAIT:
            raise UserError(f"timeout must be between 0 and {MAX_FEED_WAIT:.0f} seconds", code="invalid_timeout")
        moves = self._watch.wait(time.monotonic() + timeout)
        return [self._event(move) for move in moves]

    def _event(self, move: RefMove) -> dict[str, Any]:
        from git_lanes.domain import changes

        event = changes.classify(move.ref, self.ctx.trunk) | move.to_dict()
        if event["kind"] == "ledger" and move.new:
            event |= self._ops(move.old, move.new)
        return event

    def _ops(self, old: str | None, new: str) -> dict[str, Any]:
        from git_lanes import ledger

        ops: list[dict[str, Any]] = []
        commit: str | None = new
        try:
            while commit and commit != old and len(ops) < MAX_OPS_PER_EVENT:
                info = self.ctx.store.commit_info(commit)
                ops.append({"commit": commit, "summary": info.message.split("\n", 1)[0],
                            **ledger.read_op(self.ctx.store, commit).to_dict()})
                commit = info.parents[0] if info.parents else None
        except (LanesError, LookupError, OSError):
            # An op this version cannot read, or a commit not (yet) here, is still a move: the summary of
            # what could be read stands, and the move itself must reach every watcher.
            pass
        ops.reverse()
        return {"ops": ops, "more": bool(commit and commit != old)}
