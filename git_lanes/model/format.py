"""Format versions of stored JSON records (DESIGN.md §1): every record carries `format`; a reader rejects a
major version it does not know with a clear error rather than a guess."""

from __future__ import annotations


from git_lanes.errors import UnsupportedFormat

TYPE_CHECKING = False  # not `from typing import …`: the agent-hook path never loads typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FORMAT_VERSION = 1

# The bounds of each stored cost figure (a transition's cost; a transcript's usage is read within them): large
# enough for any real run, small enough that no sum of them reaches infinity (D8): a total over a million
# transitions stays below 1e18. Here, not in records.py, because the agent-hook path reads transcripts and
# loads this module, not that one.
MAX_TOKENS = 10**12
MAX_CALLS = 10**9
MAX_SECONDS = 10**8
MAX_USD = 10**9


def check_format(record: Mapping[str, Any], what: str, version: int = FORMAT_VERSION) -> None:
    """Raise UnsupportedFormat unless `record["format"]` is a number whose major version is `version`
    (1 and 1.2 read as format 1; a minor version only adds what an older reader may ignore)."""
    found = record.get("format")
    if type(found) is int and found == version:  # what every writer of this format writes
        return
    if isinstance(found, bool) or not isinstance(found, (int, float)) or found != found \
            or found in (float("inf"), float("-inf")) or int(found) != version:
        raise UnsupportedFormat(f"{what} has format {found!r}; this git-lanes reads format {version}",
                                hint="upgrade git-lanes")
