"""How messages name many things at once."""

from __future__ import annotations

TYPE_CHECKING = False  # collections.abc for annotations only: collections costs a light sync ~1 ms
if TYPE_CHECKING:
    from collections.abc import Sequence


SHOWN = 5


def some(items: Sequence[str], limit: int = SHOWN) -> str:
    """The first `limit` items, comma-separated, and how many more there are: "a, b, c and 4 more"."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
