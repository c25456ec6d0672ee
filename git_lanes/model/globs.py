"""File-claim globs: repository-relative, '/'-separated; `*`, `?` and `[…]` match within one path segment,
`**` matches any number of segments, and a glob without wildcards names that path and everything beneath it.
Matching is pure and light, so the agent-hook path checks claims without loading the ledger's machinery."""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache

MAGIC = set("*?[")


def wildcard_match(text: str, pattern: str) -> bool:
    """`fnmatchcase(text, pattern)`, without compiling a regular expression for the patterns made of literal
    text and `*` alone (nearly all that policies and claims hold): fnmatch compiles each pattern once per
    process, a few hundred microseconds that every agent-hook process would pay afresh."""
    if "?" in pattern or "[" in pattern:
        return fnmatchcase(text, pattern)
    parts = pattern.split("*")
    if len(parts) == 1:
        return text == pattern
    first, last = parts[0], parts[-1]
    if len(text) < len(first) + len(last) or not text.startswith(first) or not text.endswith(last):
        return False
    position, end = len(first), len(text) - len(last)
    for middle in parts[1:-1]:  # leftmost matches leave the most room for what follows
        found = text.find(middle, position, end)
        if found < 0:
            return False
        position = found + len(middle)
    return True


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
        return j < len(sp) and wildcard_match(sp[j], sg[i]) and walk(i + 1, j + 1)

    return walk(0, 0)
