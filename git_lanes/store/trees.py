"""Building trees from edits and diffing trees, both costing what changed rather than the tree's size."""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict
from typing import cast

import pygit2

from git_lanes.model.entries import Change, Entry, tree_changes

# Trees parsed for diffing, per repository object, by raw id. A held-open process diffs each new state
# against the last several times (the snapshot's exclusive paths, its protected paths, the operation log's
# notes), so every root tree was parsed 4-8 times, ~0.4 ms each at 500 entries. An id names content, so a
# kept parse is never stale; only small trees are kept, the last few.
_KEPT_TREES = 64
_KEPT_TREE_BYTES = 1 << 20
_parsed: weakref.WeakKeyDictionary[pygit2.Repository, OrderedDict[bytes, dict[bytes, tuple[int, bytes]]]] = \
    weakref.WeakKeyDictionary()
parses = 0  # trees parsed so far in this process (the tests count them)

FILE_MODES = {pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE, pygit2.GIT_FILEMODE_LINK}
TREE_MODE = pygit2.GIT_FILEMODE_TREE


def edit_tree(repo: pygit2.Repository, base: str | None, edits: dict[str, Entry | None]) -> str:
    """Return the tree `base` with each path set to its entry (None deletes), rewriting only touched subtrees.

    Empty directories left by deletions disappear, as in git."""
    grouped: dict[str, dict[str, Entry | None]] = {}
    leaves: dict[str, Entry | None] = {}
    for path, entry in edits.items():
        head, _, rest = path.partition("/")
        if rest:
            grouped.setdefault(head, {})[rest] = entry
        else:
            leaves[head] = entry
    base_tree = cast(pygit2.Tree, repo[base]) if base else None
    builder = repo.TreeBuilder(base_tree) if base_tree is not None else repo.TreeBuilder()
    for name, entry in leaves.items():
        if entry is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=entry.oid), entry.mode)
    for name, sub_edits in grouped.items():
        if name in leaves and leaves[name] is not None:
            continue  # a file replaced the directory; nothing beneath it survives
        existing = base_tree[name] if base_tree is not None and name in base_tree else None
        sub_base = str(existing.id) if existing is not None and existing.filemode == TREE_MODE else None
        sub_tree = edit_tree(repo, sub_base, sub_edits)
        if len(cast(pygit2.Tree, repo[sub_tree])) == 0:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=sub_tree), TREE_MODE)
    return str(builder.write())


def diff_trees(repo: pygit2.Repository, old: str | None, new: str | None) -> list[Change]:
    """Paths that differ between two trees (model/entries.py's `tree_changes`), read as raw bytes."""
    return tree_changes(lambda tree: _raw_entries(repo, tree), bytes.fromhex(old) if old else None,
                        bytes.fromhex(new) if new else None, os.fsdecode, bytes.hex)  # names as pygit2 gives them


def _raw_entries(repo: pygit2.Repository, tree: bytes) -> dict[bytes, tuple[int, bytes]]:
    """Tree `tree`'s (a raw id) entries, name -> (mode, raw id), read from the object's bytes: building pygit2's entry
    objects (each mode an enum) costs more than the comparison they are for. The mode is compared as a
    number, since other tools write some zero-padded (`040000`), which git reads as the same mode."""
    global parses
    kept = _parsed.get(repo)
    if kept is None:
        kept = _parsed[repo] = OrderedDict()
    entries = kept.get(tree)
    if entries is not None:
        kept.move_to_end(tree)
        return entries
    data = repo[pygit2.Oid(raw=tree)].read_raw()
    width = len(tree)
    entries = {}
    position = 0
    while position < len(data):
        space = data.index(b" ", position)
        end = data.index(b"\0", space)
        entries[data[space + 1:end]] = (int(data[position:space], 8), data[end + 1:end + 1 + width])
        position = end + 1 + width
    parses += 1
    if len(data) <= _KEPT_TREE_BYTES:
        kept[tree] = entries
        if len(kept) > _KEPT_TREES:
            kept.popitem(last=False)
    return entries


def _entry(diff_file: pygit2.DiffFile) -> Entry:
    return Entry(str(diff_file.id), diff_file.mode)


def entry_at(repo: pygit2.Repository, tree: str, path: str) -> Entry | None:
    try:
        obj = cast(pygit2.Tree, repo[tree])[path]
    except KeyError:
        return None
    return Entry(str(obj.id), obj.filemode)
