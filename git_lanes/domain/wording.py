"""How messages name many things at once."""

from __future__ import annotations

from git_lanes.errors import UserError

TYPE_CHECKING = False  # collections.abc for annotations only: collections costs a light sync ~1 ms
if TYPE_CHECKING:
    from collections.abc import Sequence


SHOWN = 5


def some(items: Sequence[str], limit: int = SHOWN) -> str:
    """The first `limit` items, comma-separated, and how many more there are: "a, b, c and 4 more"."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def dollars(amount: float) -> str:
    """An amount in dollars, to the cent unless that would hide it: a spend of $0.012 against a limit of
    $0.01 read "$0.01 of $0.01", and a limit of $0.001 read "$0.00"."""
    return f"${amount:.2f}" if abs(amount - round(amount, 2)) < 1e-9 else f"${amount:.4f}"


def checked_limit(limit: int | None) -> int | None:
    """How many items a list shows (`-n/--limit`), one rule for every list, `git log -n`'s: any whole number
    from 0 (which shows none) up; a bigger one than there are items shows them all. None is no limit."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise UserError(f"the limit must be a whole number from 0 up, got {limit!r}", code="invalid_limit")
    return limit
