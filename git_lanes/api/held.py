"""A repository held open can disappear under its holder: an MCP server, a dashboard or an SDK session runs
for hours while someone removes or moves the directory. Every later call then fails somewhere deep
(a missing file, a ref that reads as absent, so "no lane named ..."), which the faces could only report as an
internal error. `held` makes each public method of an API class say what happened instead: the repository is
gone. Its own module: CoreApi and every mixin load it."""

from __future__ import annotations

import functools
from types import FunctionType  # loaded with functools

from git_lanes.errors import RepositoryGone

TYPE_CHECKING = False  # not `from typing import …`: every command loads this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T", bound=type)
    F = TypeVar("F", bound=Callable[..., Any])

CO_GENERATOR = 0x20  # inspect.CO_GENERATOR, without importing inspect at start-up


def held(cls: T) -> T:
    """Make every public method `cls` defines raise RepositoryGone when the repository is gone: checked before
    the call (a read of a removed repository could otherwise answer "nothing there"; one stat) and after a
    failure (it went during the call, or is going). Generators and class-level attributes are left as they
    are."""
    for name, value in list(vars(cls).items()):
        if name.startswith("_") or not isinstance(value, FunctionType) or value.__code__.co_flags & CO_GENERATOR \
                or getattr(value, "needs_no_repository", False):
            continue
        setattr(cls, name, _checked(value))
    return cls


def needs_no_repository(method: F) -> F:
    """Leave `method` as it is in a `held` class: it must work with the repository gone (`close`)."""
    method.needs_no_repository = True  # type: ignore[attr-defined]
    return method


def _checked(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        store = self.ctx.store
        if not store.present():
            raise gone(store)
        try:
            return method(self, *args, **kwargs)
        except RepositoryGone:
            raise
        except Exception as exc:
            if store.present(entirely=True):
                raise
            raise gone(store) from exc
    return call


def gone(store: Any) -> RepositoryGone:
    return RepositoryGone(f"the repository {store.root} is gone: it was removed or moved after it was opened",
                          hint="open it again where it is now (a server holding it open must be restarted there)")
