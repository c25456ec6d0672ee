"""File-claim globs: repository-relative, '/'-separated; `*`, `?` and `[…]` match within one path segment,
`**` matches any number of segments, and a glob without wildcards names that path and everything beneath it.
Matching is pure and light, so the agent-hook path checks claims without loading the ledger's machinery."""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache

MAGIC = set("*?[")


def segments(glob: str) -> tuple[str, ...]:
    parts = tuple(glob.split("/"))
    return parts if any(MAGIC & set(p) for p in parts) else parts + ("**",)


def glob_matches(glob: str, path: str) -> bool:
    sg, sp = segments(glob), tuple(path.split("/"))

    @lru_cache(maxsize=None)
    def walk(i: int, j: int) -> bool:
        if i == len(sg):
            return j == len(sp)
        if sg[i] == "**":
            return walk(i + 1, j) or (j < len(sp) and walk(i, j + 1))
        return j < len(sp) and fnmatchcase(sp[j], sg[i]) and walk(i + 1, j + 1)

    return walk(0, 0)
