"""Each lanes operation an API method performs is one entry of the operation log: the decorator that makes it so.

Its own module, since every command loads it with CoreApi, and the log's reader (`oplog.py`) only `op log` and
`undo` need."""

from __future__ import annotations

import functools
from collections.abc import Callable

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])


def first_line(text: object) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


def recorded(describe: Callable[[dict[str, Any]], str]) -> Callable[[F], F]:
    """Make an API method one entry of the operation log, described by `describe(its arguments)`; its actor
    is the `agent_id` or `actor` argument when given (an agent id, refused when it is none), else git's
    configured identity."""
    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            import inspect

            from git_lanes.domain import oplog

            bound = inspect.signature(method).bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = bound.arguments
            actor = arguments.get("agent_id")
            if actor is None:
                actor = arguments.get("actor")
            if actor is not None:  # refused before anything moves, an empty one too, as on every command
                from git_lanes.model.ids import AgentId

                actor = AgentId(actor)
            with oplog.operation(self.ctx, describe(arguments)[:200], actor):
                return method(self, *args, **kwargs)
        return wrapper  # type: ignore[return-value]
    return decorate
