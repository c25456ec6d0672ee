"""Tree objects as bytes: git's canonical form, read and written without libgit2 (`store/object_cache.py`
keeps what these parse). Entries are kept whole, spelled as the tree spells them, so writing an edited tree
sorts and joins bytes without encoding its untouched entries again; a tree that differs from one parsed
before by an entry or two is parsed against it (`parse_near`)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate
from operator import itemgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TREE_MODE = 0o040000
# name -> (mode, object id, sort key, the entry as the tree object spells it): kept whole so that writing
# an edited tree sorts and joins bytes without encoding its untouched entries again.
Item = tuple[int, str, bytes, bytes]
TreeEntries = dict[str, Item]
# A tree's bytes, its entries, and the entries in the order the bytes spell them (None: the order of
# `entries`, which is the bytes' order for a tree parsed from them).
Layout = tuple[bytes, TreeEntries, list[Item] | None]


def item(name: str, mode: int, oid: str) -> Item:
    encoded = name.encode("utf-8", "surrogateescape")
    return (mode, oid, encoded + b"/" if mode == TREE_MODE else encoded,
            b"%o %s\0%s" % (mode, encoded, bytes.fromhex(oid)))


def parse_tree(data: bytes, width: int = 20) -> TreeEntries:
    """The entries of a tree object. A tree another process wrote (the ledger's `tasks/` holds up to 256
    fan-out folders) is parsed on every op of a ledger shared by several writers, so a well-formed tree is
    checked and split by regular expressions, in C; anything else is left to `parse_tree_slowly`, which reads
    what git reads and refuses the rest as it always did."""
    scanned = scan(data, width)
    return parse_tree_slowly(data, width) if scanned is None else scanned[0]


def scan(data: bytes, width: int) -> tuple[TreeEntries, bool] | None:
    """`parse_tree` of a well-formed tree, and whether its entries, in order, spell it byte for byte (no
    zero-padded mode, no name twice); None for anything else."""
    patterns = _TREE_PATTERNS.get(width)
    if patterns is None:
        import re  # loaded by the first tree read

        entry = rb"([0-7]+) ([^\0]*)\0(.{%d})" % width
        patterns = _TREE_PATTERNS[width] = (re.compile(rb"(?:%s)*" % entry.replace(b"(", b"(?:"), re.DOTALL),
                                            re.compile(entry, re.DOTALL))
    whole, one = patterns
    if whole.fullmatch(data) is None:
        return None
    entries: TreeEntries = {}
    spelled = True
    found = one.findall(data)
    for digits, encoded, raw_id in found:
        name = encoded.decode("utf-8", "surrogateescape")
        if digits == b"40000":
            entries[name] = (TREE_MODE, raw_id.hex(), encoded + b"/", b"40000 %s\0%s" % (encoded, raw_id))
        elif digits[0] != 0x30:
            entries[name] = (int(digits, 8), raw_id.hex(), encoded, b"%s %s\0%s" % (digits, encoded, raw_id))
        else:  # a mode another tool zero-padded (`040000`): kept as git writes it
            mode = int(digits, 8)
            entries[name] = (mode, raw_id.hex(), encoded + b"/" if mode == TREE_MODE else encoded,
                             b"%o %s\0%s" % (mode, encoded, raw_id))
            spelled = False
    return entries, spelled and len(entries) == len(found)


def parse_near(data: bytes, near: Layout, width: int) -> tuple[TreeEntries, list[Item]] | None:
    """`parse_tree(data)`, given a tree `near` that `data` probably differs from by a few entries; with them,
    the entries in the bytes' order. Only the bytes that differ are parsed: the shared start and end are
    found by bisection; between them, a stretch as long in both is halved at an entry boundary of `near`
    until the halves are equal (whole entries of `near`, reused) or one entry or two long (parsed). Each
    stretch parsed must be whole entries spelled as git writes them, so their concatenation is the one
    parse of `data`; None when one is not, or a name would appear twice (the caller parses the whole tree)."""
    old, old_entries, ordered = near
    if ordered is None:
        ordered = list(old_entries.values())
    starts = [0, *accumulate(map(len, map(itemgetter(3), ordered)))]  # entry k spans starts[k]:starts[k + 1]
    shared = _common_prefix(old, data)
    first = bisect_right(starts, shared) - 1  # the entries wholly inside the shared start
    start = starts[first]
    tail = _common_suffix(old, data, min(len(old), len(data)) - start)
    after = max(first, bisect_left(starts, len(old) - tail))  # the first entry wholly inside the shared end
    end = len(data) - (len(old) - starts[after])
    whole = (first, after, start, end)  # entries [first, after) of `near` became data[start:end]
    if starts[after] - start == end - start:
        halved: list[tuple[int, int, int, int]] = []
        _differing(old, data, starts, first, after, start, halved)
        found = _replaced(data, width, old_entries, ordered, halved)
        if found is not None:
            return found
    # lengths that differ, or an entry gone and another come within a halved stretch: the middle, whole
    return _replaced(data, width, old_entries, ordered, [whole])


def _replaced(data: bytes, width: int, old_entries: TreeEntries, ordered: list[Item],
              stretches: list[tuple[int, int, int, int]]) -> tuple[TreeEntries, list[Item]] | None:
    """The entries (and their order) of `ordered` with each stretch of them replaced by the bytes of `data`
    it became, parsed; None when one of those is not whole entries spelled as git writes them."""
    entries = dict(old_entries)
    pieces: list[Item] = []
    kept = 0
    for first, after, start, end in stretches:
        scanned = scan(data[start:end], width)
        if scanned is None or not scanned[1]:
            return None
        for gone in ordered[first:after]:
            del entries[_name(gone)]
        entries.update(scanned[0])
        pieces += ordered[kept:first]
        pieces += scanned[0].values()
        kept = after
    pieces += ordered[kept:]
    if len(entries) != len(pieces):
        return None  # a name of a parsed stretch also in the shared parts: git's fsck refuses such a tree anyway
    return entries, pieces


def _differing(old: bytes, data: bytes, starts: list[int], first: int, after: int, start: int,
               found: list[tuple[int, int, int, int]]) -> None:
    """Add to `found` the stretches where entries [first, after) of `old` differ from as many bytes of
    `data` from `start`, halving at `old`'s entry boundaries."""
    end = start + starts[after] - starts[first]
    if old[starts[first]:starts[after]] == data[start:end]:
        return
    if after - first <= 2:
        found.append((first, after, start, end))
        return
    middle = (first + after) // 2
    _differing(old, data, starts, first, middle, start, found)
    _differing(old, data, starts, middle, after, start + starts[middle] - starts[first], found)


def _name(entry: Item) -> str:
    key = entry[2]
    return (key[:-1] if entry[0] == TREE_MODE else key).decode("utf-8", "surrogateescape")


def _common_prefix(a: bytes, b: bytes) -> int:
    """How many bytes `a` and `b` share at the start: bisection with slice comparisons (memcmp)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """How many bytes (at most `limit`) `a` and `b` share at the end."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:] == b[len(b) - middle:]:
            low = middle
        else:
            high = middle - 1
    return low


_TREE_PATTERNS: dict[int, tuple[Any, Any]] = {}


def parse_tree_slowly(data: bytes, width: int) -> TreeEntries:
    entries: TreeEntries = {}
    position = 0
    while position < len(data):
        space = data.index(b" ", position)
        nul = data.index(b"\0", space)
        encoded = data[space + 1:nul]
        mode = int(data[position:space], 8)
        end = nul + 1 + width
        raw = data[position:end] if data[position] != 0x30 else b"%o %s\0%s" % (mode, encoded, data[nul + 1:end])
        entries[encoded.decode("utf-8", "surrogateescape")] = (
            mode, data[nul + 1:end].hex(), encoded + b"/" if mode == TREE_MODE else encoded, raw)
        position = end
    return entries


def encode_tree(entries: TreeEntries) -> bytes:
    """Git's canonical tree: entries sorted by name, a folder's name compared as if it ended in `/`; a mode
    another tool wrote zero-padded (`040000`) is written as git writes it."""
    return b"".join(map(itemgetter(3), sorted(entries.values(), key=itemgetter(2))))
