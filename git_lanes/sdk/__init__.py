"""The Python SDK: one agent's session on a repository, for orchestrators that script agents.

    from git_lanes import AgentSession
    session = AgentSession("./repo", agent_id="coder-1", agent_type="feature_dev", lane="feature/auth")
    with session.work("Add the login form", tags=["auth"], auto_accept=True) as w:
        (w.path / "login.py").write_text("...")
        w.record_tokens(tokens_in=2000, tokens_out=1200, cost_usd=0.03)

Like every face it only translates: each call is one call of the `Lanes` API, and errors are the API's own
(`Conflict`, `GateFailed`, `NotFound`, `UserError`, all `LanesError`s, importable from `git_lanes`), their hints
naming the SDK's calls (git_lanes/sdk/advice.py)."""

from __future__ import annotations

import contextvars
import functools
import os
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from git_lanes.api import Lanes
from git_lanes.model.ids import validate_agent_id, validate_lane_name
from git_lanes.errors import GateFailed, LanesError, UserError, take_notices
from git_lanes.sdk.advice import advise, advised_error
from git_lanes.model.ledger_results import (AgentRegistered, BoardRead, ClaimsAdded, Heartbeat, Posted, TaskClaimed,
                                            TaskDone, WaitResult)
from git_lanes.model.records import Cost, Intent, Transition
from git_lanes.model.text import as_reason
from git_lanes.model.workspace_results import Decided, Unchanged

T = TypeVar("T")

# Whether a `told` call is running in this context: the outermost one tells the notices.
_TELLING: contextvars.ContextVar[bool] = contextvars.ContextVar("git_lanes_sdk_telling", default=False)
WAIT_SECONDS = 60.0  # how long `wait` waits when not told
# Metadata names that are fields of the intent itself rather than free-form metadata.
INTENT_FIELDS = ("model", "agent_type")


class LanesWarning(UserWarning):
    """What a call went on past (a lost operation log head it started afresh): the CLI's `warning:` lines,
    given to Python's `warnings` so that a script sees them once and can filter or raise them."""


@contextmanager
def advising() -> Iterator[None]:
    """Raises what its block raises, a LanesError with its hints naming the SDK's calls."""
    try:
        yield
    except LanesError as exc:
        advised_error(exc)
        raise


class AdvisedApi:
    """`session.api`: the `Lanes` API the session holds, each call's errors naming the SDK's calls as the
    session's own do (those hints name `session.api` calls: what they raise must read alike), and what each
    went on past told as a LanesWarning, as the session's own calls tell it. The calls are the API's,
    unchanged; the API itself is `.lanes`."""

    def __init__(self, lanes: Lanes) -> None:
        self.lanes = lanes

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.lanes, name)
        if name.startswith("_") or not callable(value):
            return value

        @functools.wraps(value)
        def advised(*args: Any, **kwargs: Any) -> Any:
            return told(lambda: value(*args, **kwargs))

        return advised

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.lanes!r}>"


def told(call: Callable[[], T]) -> T:
    """`call()`, then each notice it gave (errors.notice) as a LanesWarning pointing at the caller's line,
    whether the call returned or raised, so none waits for a later call; a `told` inside another leaves its
    notices to the outer one, the caller's own call. An error it raises, and a command a notice advises, name
    the SDK's calls."""
    outer = not _TELLING.get()
    if outer:
        take_notices()  # what an earlier call on this thread left (the `Lanes` API called directly) is not this one's
    token = _TELLING.set(True)
    try:
        with advising():
            return call()
    finally:
        _TELLING.reset(token)
        for message in take_notices() if outer else ():
            warnings.warn(advise(message) or message, LanesWarning, stacklevel=3)


def one_of(name: str, value: Any, former: str, given: Any) -> Any:
    """A keyword's value under its name or its former spelling (kept so that callers written for it keep
    working); both at once is refused, as they might say different things."""
    if value is not None and given is not None and value != given:
        raise UserError(f"{name} and {former} are one keyword; give it once", code="usage")
    return value if value is not None else given


class AgentSession:
    """An agent (`agent_id`, optionally its role `agent_type` and `model`) working in one repository, in
    `lane` (default: the lane assigned to the agent, else `agent/<agent_id>`, created on first use). The
    repository is opened once and held: each call costs what the API costs."""

    def __init__(self, repo_path: str | os.PathLike[str] = ".", agent_id: str | None = None, *,
                 agent_type: str | None = None, lane: str | None = None, model: str | None = None) -> None:
        if agent_id is None:  # an empty one is refused below, as the CLI refuses `--agent ""`
            agent_id = os.environ.get("GIT_LANES_AGENT") or None  # set empty is unset, as for the CLI
        with advising():
            if agent_id is None:
                raise UserError("no agent_id given, and GIT_LANES_AGENT is not set", code="no_agent",
                                hint="pass agent_id, e.g. AgentSession(path, agent_id=\"coder-1\")")
            self.agent_id = validate_agent_id(agent_id)
            self._lane = validate_lane_name(lane) if lane is not None else None  # refused now, not at first use
            # Typed as what it answers like, for the reader's editor and checker: each call is the API's own.
            self.api = cast(Lanes, AdvisedApi(Lanes(repo_path)))
        self.agent_type = agent_type
        self.model = model
        self._made = False  # whether this session has made (or found) its lane and workspace yet

    def close(self) -> None:
        """Give back what the session holds open (the watcher of its workspace); `with AgentSession(...) as
        session:` does it at the end of the block. The session stays usable."""
        self.api.close()

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    @property
    def lane(self) -> str:
        """The lane this session works in, giving the agent one (and its workspace) if it has none yet."""
        if self._lane is None:
            self.workspace()
        assert self._lane is not None
        return self._lane

    def workspace(self) -> Path:
        """The session's workspace directory, made (with its lane) if missing, and the lane assigned to the
        agent. Refused (`Conflict`) when another live agent works in that lane."""
        assigned = told(lambda: self.api.assign_worktree(self.agent_id, self._lane))
        self._lane = assigned["lane"]
        self._made = True
        return Path(assigned["workspace"])

    def work(self, prompt: str, *, tags: list[str] | tuple[str, ...] = (), auto_accept: bool = False) -> Work:
        """A block of work on the session's workspace, recorded as one transition when the block ends:
        snapshotted and proposed, then (with `auto_accept`) judged by the gates and accepted; an exception in
        the block snapshots the attempt, rejects it with the exception as the reason, puts the workspace back
        to the lane head (`restore` the attempt's id to see it again) and propagates. An intent the model
        refuses (tags given as one string, a prompt that is not text) is refused here, before the work."""
        with advising():
            # from_dict, as a face reads what a caller sent: a list of tags is taken, a string refused
            intent = Intent.from_dict({"prompt": prompt, "agent_id": self.agent_id, "agent_type": self.agent_type,
                                       "model": self.model, "tags": tags})
        return Work(self, intent.prompt, intent.tags, auto_accept)

    # -- coordination, bound to the session's agent ---------------------------------------------------
    def _acting(self, call: Callable[[], T]) -> T:
        """`call()` as the session's agent, its lease extended first (at most one ledger write a minute), as
        the MCP server does on any call an agent makes: calls whose own op does not extend it (a post, a
        read, a wait, a commit) would otherwise let a busy agent lapse, its lane free for another to take."""
        told(lambda: self.api.touch_agent(self.agent_id))
        return told(call)

    def _named_lane(self) -> str | None:
        """The lane the session was given, made (with its workspace) on this first use; None if none was."""
        if self._lane is not None and not self._made:
            self.workspace()
        return self._lane

    def register(self, kind: str | None = None) -> AgentRegistered:
        """Register the agent (kind: `kind`, else the session's agent_type) and start its lease."""
        return told(lambda: self.api.agent_register(self.agent_id, kind or self.agent_type, self._named_lane()))

    def heartbeat(self) -> Heartbeat:
        """Extend the agent's lease; report its unread posts, pending wakes and refused ops."""
        return told(lambda: self.api.agent_heartbeat(self.agent_id))

    def claim_task(self, task_id: str, version: int | None = None, *, ahead: bool = True) -> TaskClaimed:
        """Claim a task for this agent (in the session's lane, if one is set). Exactly one of several
        claimers wins; the others get `Conflict` at once and can take another task. A task whose
        dependencies are not done is claimed ahead of them (`ready` false); with `ahead=False` it is refused
        (`UserError`, `task_not_ready`)."""
        return told(lambda: self.api.task_claim(task_id, self.agent_id, version, self._named_lane(), ahead=ahead))

    def claim_files(self, *globs: str | list[str] | tuple[str, ...], task_id: str | None = None) -> ClaimsAdded:
        """Claim the files this agent means to change (globs, given one by one or as a list); overlaps with
        others are returned, never blocking."""
        flat = [g for given in globs for g in (given if isinstance(given, (list, tuple)) else [given])]
        return told(lambda: self.api.claim_add(flat, self.agent_id, task_id))

    def post(self, text: str, kind: str = "note", to: str | None = None, *, to_agent: str | None = None) -> Posted:
        """Post on the board (kind note, question or handoff), to one agent (`to_agent`, as the MCP tool
        spells it; `to` is its former spelling) or to everyone else."""
        recipient = one_of("to_agent", to_agent, "to", to)
        return self._acting(lambda: self.api.board_post(text, self.agent_id, kind, recipient))

    def read_board(self, unread_only: bool = False, unanswered: bool = False, *,
                   unanswered_only: bool | None = None) -> BoardRead:
        """This agent's unread posts and recent ones; what is returned is marked read. With
        `unanswered_only` (as the MCP tool spells it; `unanswered` is its former spelling), every question it
        may see that nobody answered or resolved yet, however old, marking nothing."""
        only = bool(one_of("unanswered_only", unanswered_only, "unanswered", unanswered or None))
        return self._acting(lambda: self.api.board_read(self.agent_id, unread_only=unread_only, unanswered=only))

    def wait(self, timeout: float = WAIT_SECONDS, *, timeout_s: float | None = None) -> WaitResult:
        """Block until a task of this agent's becomes ready, another agent steps into its files, a post for
        it arrives, or `timeout_s` seconds pass (as the MCP tool spells it; `timeout` is its former spelling);
        the result says which (`reason`)."""
        if timeout_s is not None and timeout != WAIT_SECONDS:  # `timeout` given too, not its default
            one_of("timeout_s", timeout_s, "timeout", timeout)
        seconds = timeout if timeout_s is None else timeout_s
        return self._acting(lambda: self.api.wait(self.agent_id, seconds))

    def done(self, task_id: str) -> TaskDone:
        """Mark a task done, waking the owners of the tasks it makes ready."""
        return self._acting(lambda: self.api.task_done(task_id, self.agent_id))


class Work:
    """What `AgentSession.work()` yields: the workspace `path`, and where to record the cost and metadata
    of the work. After the block, `result` is the transition record (or an `unchanged` record when the
    workspace matched its lane head)."""

    def __init__(self, session: AgentSession, prompt: str, tags: tuple[str, ...], auto_accept: bool) -> None:
        self.session = session
        self.prompt = prompt
        self.tags = tags
        self.auto_accept = auto_accept
        self.cost = Cost()
        self.metadata: dict[str, Any] = {}
        self.result: Transition | Unchanged | None = None
        self.path = Path()
        self._started = 0.0

    def record_tokens(self, tokens_in: int = 0, tokens_out: int = 0, cost_usd: float = 0.0,
                      api_calls: int = 0) -> None:
        """Add spending to this work's cost (calls add up)."""
        self.cost = self.cost + Cost(tokens_in=tokens_in, tokens_out=tokens_out, api_calls=api_calls,
                                     cost_usd=cost_usd)

    def add_metadata(self, key: str, value: Any) -> None:
        """Keep `key: value` with the intent (`model` and `agent_type` set those intent fields)."""
        self.metadata[key] = value

    def __enter__(self) -> Work:
        self.path = self.session.workspace()
        self._started = time.monotonic()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 _traceback: TracebackType | None) -> None:
        if error is None:
            try:
                self.result = self._record(self.auto_accept)
            except GateFailed as failed:  # recorded: the attempt is rejected with the gates' verdicts
                self.result = Transition.from_dict(failed.details["transition"])
                raise
            return
        if not isinstance(error, Exception):
            return  # KeyboardInterrupt, SystemExit: leave the workspace as it is and let it through
        try:
            attempt: Transition | Unchanged = self._record(False)
            if attempt.get("status") == "proposed":
                # Whatever the exception's text holds; a LanesError's message without the hint it shows here.
                text = error.message if isinstance(error, LanesError) else error
                reason = as_reason(f"{type(error).__name__}: {text}")
                attempt = told(lambda: self.session.api.reject(attempt["id"], reason, actor=self.session.agent_id))
                # The next block starts from the lane head; the attempt stays under refs/lanes/rejected/.
                told(lambda: self.session.api.restore(self.session.lane, lane=self.session.lane,
                                                      actor=self.session.agent_id))
            self.result = attempt
        except LanesError as failure:
            # The block's own error matters more; say on it why its attempt was not recorded.
            if hasattr(error, "add_note"):
                error.add_note(f"git-lanes could not record the failed attempt: {failure.message}")

    def _record(self, auto_accept: bool) -> Decided | Unchanged:
        session = self.session
        metadata = {k: v for k, v in self.metadata.items() if k not in INTENT_FIELDS}
        wall = Cost(wall_time=round(time.monotonic() - self._started, 3))
        return session._acting(lambda: session.api.commit(
            self.prompt, session.agent_id, lane=session.lane,
            agent_type=self.metadata.get("agent_type", session.agent_type),
            model=self.metadata.get("model", session.model), tags=self.tags, cost=self.cost + wall,
            auto_accept=auto_accept, metadata=metadata))
