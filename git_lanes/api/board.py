"""The board through the API, and waiting for wake-ups: posts to everyone or to one agent, read cursors,
questions resolved and answered, and a wait that returns when a wake or an unread post arrives. Each write is
one ledger op (`ledger.py` appends it)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import gone, held
from git_lanes.api.ledger import LedgerApi
from git_lanes.domain import BOARD_LIMIT
from git_lanes.errors import UserError
from git_lanes.model.ids import AgentId

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.model import ledger_results as results

DEFAULT_WAIT = 60.0
MAX_WAIT = 24 * 3600.0
PRESENCE_SECONDS = 1.0  # how often a wait looks whether the repository is still there


@held
class BoardApi(LedgerApi):
    """Mixed into `Lanes`."""

    # -- board -----------------------------------------------------------------------------------------
    def board_post(self, text: str, agent: str, kind: str = "note", to: str | None = None) -> results.Posted:
        """Post `text` (at most 16 KiB) on the board, to everyone else or to agent `to` only."""
        from git_lanes.domain import board
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        board.validate_text(text)
        return self._append_as(results.Posted, "board.post", agent,
                               {"text": text, "kind": board.validate_kind(kind), "to": to})

    def board_read(self, agent: str | None = None, *, unread_only: bool = False, everything: bool = False,
                   limit: int = BOARD_LIMIT, unanswered: bool = False) -> results.BoardRead:
        """Posts for `agent` (all unread ones plus the `limit` recent ones, or only unread), marking them read.
        Without an agent, the board's recent posts, marking nothing. With `unanswered`, every question still
        open however old (those `agent` may see, unless `everything`), marking nothing, `limit` aside."""
        from git_lanes.domain import agents, board
        from git_lanes.model import ledger_results as results
        from git_lanes.domain.wording import checked_limit
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import PostView

        checked_limit(limit)
        if unanswered and unread_only:
            raise UserError("read either the unread posts or the unanswered questions, not both",
                            code="conflicting_filters")
        state = self._state()
        set_aside: list[dict[str, str]] = []
        if unanswered:
            return self._unanswered(state, agent, everything)
        if agent is None:
            posts = board.recent(state, None, limit, True, set_aside)
            return results.BoardRead(None, tuple(PostView.from_dict(board.view(p)) for p in posts), 0, None,
                                     Listing((), set_aside).unreadable)
        agent = AgentId(agent)
        unread = board.unread(state, agent, set_aside)
        shown = {p["seq"]: p for p in unread}
        if not unread_only:
            shown.update({p["seq"]: p for p in board.recent(state, agent, limit, everything, set_aside)})
        unread_seqs = {p["seq"] for p in unread}
        through = None
        place = agents.reader_path(agent)  # none yet, or one that cannot be read: this read writes it
        if unread or state.get(place) is None or any(u["key"] == place for u in set_aside):
            through = max(unread_seqs, default=board.current_seq(state))
            self._append("board.read", agent, {"agent": agent, "through": through})
        posts = [board.view(p) | {"unread": p["seq"] in unread_seqs} for _, p in sorted(shown.items())]
        return results.BoardRead(agent, tuple(PostView.from_dict(p) for p in posts), len(unread), through,
                                 Listing((), set_aside).unreadable)

    def _unanswered(self, state: ledger.State, agent: str | None, everything: bool) -> results.BoardRead:
        from git_lanes.domain import board, questions
        from git_lanes.model import ledger_results as results
        from git_lanes.model.coordination import PostView
        from git_lanes.model.record import Listing

        set_aside: list[dict[str, str]] = []
        reader = None if agent is None else AgentId(agent)
        posts = [p for p in questions.open_posts(state, set_aside)
                 if reader is None or everything or p["to"] in (None, reader) or p["from"] == reader]
        return results.BoardRead(reader, tuple(PostView.from_dict(board.view(p)) for p in posts),
                                 0 if reader is None else board.unread_count(state, reader), None,
                                 Listing((), set_aside).unreadable)

    def board_resolve(self, post: int | str, actor: str | None = None) -> results.PostResolved:
        """Mark `post` (a question, say) resolved: its number (12 or "#12") or a unique prefix of its id. A
        second resolver gets a Conflict."""
        from git_lanes.domain import board
        from git_lanes.model import ledger_results as results

        who = self._actor(actor)
        # The op names the post by number, which a sync's replay renumbers with the posts it moves.
        seq = board.post_number(self._state(), post)
        return self._append_as(results.PostResolved, "board.resolve", who, {"post": seq})

    def board_answer(self, post: int | str, text: str, agent: str) -> results.PostAnswered:
        """Answer question `post` (as `board_resolve` takes it): a post to its asker naming it, and the
        question resolved, in one op."""
        from git_lanes.domain import board
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        board.validate_text(text)
        seq = board.post_number(self._state(), post)
        return self._append_as(results.PostAnswered, "board.answer", agent, {"post": seq, "text": text})

    # -- waiting ---------------------------------------------------------------------------------------
    def wait(self, agent: str, timeout: float = DEFAULT_WAIT, *, stop: threading.Event | None = None) \
            -> results.WaitResult:
        """Return as soon as a wake is queued for `agent` (a task of its became ready, an overlap, a refused
        op) or an unread post for it arrives — or at `timeout` seconds, or when `stop` is set (a caller that
        gave up: reason `cancelled`, nothing taken). What it returns is taken: the wakes leave the queue and
        the posts are marked read, so the next wait does not wake for them again. Watching costs a stat per
        few milliseconds and takes no lock."""
        from git_lanes.domain import agents, board
        from git_lanes.ledger.watch import LedgerWatch

        agent = AgentId(agent)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout <= MAX_WAIT:
            raise UserError(f"timeout must be between 0 and {MAX_WAIT:.0f} seconds", code="invalid_timeout")
        started = time.monotonic()
        deadline = started + timeout
        watch = LedgerWatch(self.ctx.store.common_dir)
        while True:
            if stop is not None and stop.is_set():
                return self._nothing(agent, "cancelled", started)
            state = self._state()
            wakes = agents.pending_wakes(state, agent)
            posts = board.unread(state, agent)
            if wakes or posts:
                taken = self._take(agent, wakes, posts, time.monotonic() - started)
                if taken is not None:
                    return taken
            # A repository removed during the wait is said to be gone within a second: the removal wakes the
            # watch as the ledger's ref goes, but may not have reached the rest yet, and a ledger that is not
            # there reads as an empty one, with nothing to wake for.
            while not watch.wait(min(deadline, time.monotonic() + PRESENCE_SECONDS), stop):
                if stop is not None and stop.is_set():
                    return self._nothing(agent, "cancelled", started)
                if time.monotonic() >= deadline:
                    return self._nothing(agent, "timeout", started)
                if not self.ctx.store.present(entirely=True):
                    raise gone(self.ctx.store)

    @staticmethod
    def _nothing(agent: str, reason: str, started: float) -> results.WaitResult:
        from git_lanes.model import ledger_results as results

        return results.WaitResult(AgentId(agent), reason, (), (), round(time.monotonic() - started, 3))

    def _take(self, agent: str, wakes: list[dict[str, Any]], posts: list[dict[str, Any]], waited: float) \
            -> results.WaitResult | None:
        """Take what was seen; None when another waiter for the same agent took all of it first."""
        from git_lanes.domain import board
        from git_lanes.model import ledger_results as results

        through = max((p["seq"] for p in posts), default=None)
        result = self._append("wake.take", agent, {"agent": agent, "wakes": [w["id"] for w in wakes],
                                                   "through": through})
        wakes = [w for w in wakes if w["id"] in set(result["taken"])]
        if not wakes and not posts:
            return None
        kinds = [w["kind"] for w in wakes]
        reason = next((k for k in ("task_ready", "needs_review", "overlap", "refused") if k in kinds), "post")
        return results.WaitResult.from_dict({"agent": agent, "reason": reason, "wakes": wakes,
                                             "posts": [board.view(p) for p in posts], "waited": round(waited, 3)})
