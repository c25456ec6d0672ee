"""Building trees from edits and diffing trees, both costing what changed rather than the tree's size."""

from __future__ import annotations

import pygit2

from git_lanes.model.entries import Change, Entry

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
    base_tree = repo[base] if base else None
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
        if len(repo[sub_tree]) == 0:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=sub_tree), TREE_MODE)
    return str(builder.write())


def diff_trees(repo: pygit2.Repository, old: str | None, new: str | None) -> list[Change]:
    """Paths that differ between two trees. libgit2 skips subtrees whose ids are equal."""
    old_tree = repo[old] if old else repo[repo.TreeBuilder().write()]
    new_tree = repo[new] if new else repo[repo.TreeBuilder().write()]
    diff = old_tree.diff_to_tree(new_tree)
    changes: dict[str, Change] = {}
    for delta in diff.deltas:
        old_entry = _entry(delta.old_file) if delta.status != pygit2.GIT_DELTA_ADDED else None
        new_entry = _entry(delta.new_file) if delta.status != pygit2.GIT_DELTA_DELETED else None
        path = delta.new_file.path if new_entry else delta.old_file.path
        if path in changes:
            # libgit2 reports a type change (file <-> link) as a delete plus an add of the same path
            prior = changes[path]
            old_entry = prior.old or old_entry
            new_entry = prior.new or new_entry
        changes[path] = Change(path, _kind(old_entry, new_entry), old_entry, new_entry)
    return [changes[p] for p in sorted(changes)]


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
        obj = repo[tree][path]
    except KeyError:
        return None
    return Entry(str(obj.id), obj.filemode)
