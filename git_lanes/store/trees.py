"""Building trees from edits and diffing trees, both costing what changed rather than the tree's size."""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict
from typing import cast

import pygit2

from git_lanes.model.entries import Change, Entry

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
    """Paths that differ between two trees, descending only into subtrees whose ids differ, so the cost
    follows what changed (libgit2's tree diff walks every entry of both trees: ~10 ms at 50,000 files for a
    one-file change). A file on one side and a folder on the other is the file deleted (or added) and every
    file beneath the folder added (or deleted), as git reports it."""
    changes: list[Change] = []
    _diff(repo, pygit2.Oid(hex=old) if old else None, pygit2.Oid(hex=new) if new else None, "", changes)
    changes.sort(key=lambda change: change.path)
    return changes


def _diff(repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid | None, prefix: str,
          changes: list[Change]) -> None:
    if old == new:
        return
    before = _raw_entries(repo, old) if old is not None else {}
    after = _raw_entries(repo, new) if new is not None else {}
    for name in before.keys() | after.keys():
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        path = prefix + os.fsdecode(name)  # as pygit2 names paths
        was_tree = was is not None and was[0] == TREE_MODE
        now_tree = now is not None and now[0] == TREE_MODE
        if was_tree or now_tree:
            _diff(repo, pygit2.Oid(raw=was[1]) if was is not None and was_tree else None,
                  pygit2.Oid(raw=now[1]) if now is not None and now_tree else None, f"{path}/", changes)
        old_leaf = Entry(was[1].hex(), was[0]) if was is not None and not was_tree else None
        new_leaf = Entry(now[1].hex(), now[0]) if now is not None and not now_tree else None
        if old_leaf is not None or new_leaf is not None:
            changes.append(Change(path, _kind(old_leaf, new_leaf), old_leaf, new_leaf))


def _raw_entries(repo: pygit2.Repository, tree: pygit2.Oid) -> dict[bytes, tuple[int, bytes]]:
    """A tree's entries, name -> (mode, raw id), read from the object's bytes: building pygit2's entry
    objects (each mode an enum) costs more than the comparison they are for. The mode is compared as a
    number, since other tools write some zero-padded (`040000`), which git reads as the same mode."""
    global parses
    kept = _parsed.get(repo)
    if kept is None:
        kept = _parsed[repo] = OrderedDict()
    entries = kept.get(tree.raw)
    if entries is not None:
        kept.move_to_end(tree.raw)
        return entries
    data = repo[tree].read_raw()
    width = len(tree.raw)
    entries = {}
    position = 0
    while position < len(data):
        space = data.index(b" ", position)
        end = data.index(b"\0", space)
        entries[data[space + 1:end]] = (int(data[position:space], 8), data[end + 1:end + 1 + width])
        position = end + 1 + width
    parses += 1
    if len(data) <= _KEPT_TREE_BYTES:
        kept[tree.raw] = entries
        if len(kept) > _KEPT_TREES:
            kept.popitem(last=False)
    return entries


def _entry(diff_file: pygit2.DiffFile) -> Entry:
    return Entry(str(diff_file.id), diff_file.mode)


def _kind(old: Entry | None, new: Entry | None) -> str:
    if old is None:
        return "added"
    if new is None:
        return "deleted"
    if (old.mode == pygit2.GIT_FILEMODE_LINK) != (new.mode == pygit2.GIT_FILEMODE_LINK) or \
            (old.mode == pygit2.GIT_FILEMODE_COMMIT) != (new.mode == pygit2.GIT_FILEMODE_COMMIT):
        return "type"
    if old.oid == new.oid:
        return "mode"
    return "modified"


def entry_at(repo: pygit2.Repository, tree: str, path: str) -> Entry | None:
    try:
        obj = cast(pygit2.Tree, repo[tree])[path]
    except KeyError:
        return None
    return Entry(str(obj.id), obj.filemode)
