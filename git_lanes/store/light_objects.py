"""The light store's reads of the object database (issue 15): commits, trees and the paths in them, a diff of
two trees and a note, answered as `repo.Store` answers them, from git's object files (`objects.ObjectStore`)
without pygit2.

`NeedsFullStore`, the light store's one way of saying it cannot answer exactly, is defined here, in the
lowest of its modules: an object in a format it does not read, a commit in another encoding, an object of
another kind than asked for."""

from __future__ import annotations

import os

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.entries import TREE, Change, Entry, tree_changes
from git_lanes.store.values import CommitInfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_lanes.store.objects import ObjectStore


class NeedsFullStore(Exception):
    """The light store cannot answer this exactly: run the ordinary (pygit2) path instead. Raised only before
    the light store has written anything a caller could see."""


class ObjectReads:
    """The object reads of `light.LightStore`, which sets the attributes below."""

    common_dir: str
    _objects: ObjectStore | None
    _commits: dict[str, CommitInfo]
    _kinds: dict[str, str]  # of objects read that are not commits (those are in _commits)

    @property
    def objects(self) -> ObjectStore:
        """The object database, opened on first use: the sync starts its fetch before it loads the reader
        (zlib, hashing, ~1 ms), which it first needs once the fetch is in."""
        if self._objects is None:
            from git_lanes.store.objects import ObjectStore

            self._objects = ObjectStore(os.path.join(self.common_dir, "objects"))
        return self._objects

    def _read(self, oid: str) -> tuple[bytes, bytes]:
        try:
            return self.objects.read(oid)
        except UnsupportedFormat as exc:
            raise NeedsFullStore(exc.message) from None

    def object_kind(self, oid: str) -> str | None:
        # Read once: sync asks it of every synced ref on both sides (twenty lanes on one commit: one read,
        # not forty, each a pack lookup, an inflate and its deltas). A commit read here is kept whole.
        if oid in self._commits:
            return "commit"
        kind = self._kinds.get(oid)
        if kind is None:
            try:
                found, data = self.objects.read(oid)
            except UnsupportedFormat:
                return None
            kind = found.decode()
            if kind == "commit":
                self._commits[oid] = _commit_info(oid, data)
            else:
                self._kinds[oid] = kind
        return kind

    def commit_info(self, oid: str) -> CommitInfo:
        found = self._commits.get(oid)
        if found is None:
            kind, data = self._read(oid)
            if kind != b"commit":
                raise NeedsFullStore(f"{oid} is a {kind.decode()}, not a commit")
            found = _commit_info(oid, data)
            self._commits[oid] = found
        return found

    def tree_of(self, commit: str) -> str:
        return self.commit_info(commit).tree


    def _tree(self, oid: str) -> dict[str, tuple[int, str]]:
        kind, data = self._read(oid)
        if kind != b"tree":
            raise NeedsFullStore(f"{oid} is a {kind.decode()}, not a tree")
        from git_lanes.store.objects import parse_tree

        return parse_tree(data)

    def entry_at(self, tree: str, path: str) -> Entry | None:
        rest = path.split("/")
        entries = self._tree(tree)
        for index, name in enumerate(rest):
            found = entries.get(name)
            if found is None:
                return None
            if index == len(rest) - 1:
                return Entry(found[1], found[0])
            if found[0] != TREE:
                return None
            entries = self._tree(found[1])
        return None

    def read_path(self, tree: str, path: str) -> bytes | None:
        entry = self.entry_at(tree, path)
        return None if entry is None else self._read(entry.oid)[1]

    def list_tree(self, tree: str, path: str = "") -> dict[str, Entry]:
        if path:
            entry = self.entry_at(tree, path)
            if entry is None or entry.mode != TREE:
                return {}
            tree = entry.oid
        return {name: Entry(oid, mode) for name, (mode, oid) in self._tree(tree).items()}

    # the ledger's record reads (repo.Store keeps them in a cache; one sync reads a few)
    def record_tree(self, commit: str) -> str:
        return self.tree_of(commit)

    def read_record(self, tree: str, path: str) -> bytes | None:
        entry = self.entry_at(tree, path)
        return None if entry is None or entry.mode == TREE else self._read(entry.oid)[1]

    def record_names(self, tree: str, path: str = "") -> dict[str, bool]:
        return {name: entry.mode == TREE for name, entry in self.list_tree(tree, path).items()}

    def diff_trees(self, old: str | None, new: str | None) -> list[Change]:
        """As `trees.diff_trees`, with trees read by our own reader."""
        return tree_changes(self._tree, old, new, str, str)

    def read_note_at(self, tree: str | None, target: str) -> str | None:
        """The note for `target` in notes tree `tree`, whatever its fanout."""
        prefix, rest = "", target
        while tree is not None and rest:
            entries = self._tree(tree)
            if rest in entries:  # an entry that is no file (a gitlink a remote pushed) reads as no record
                mode, oid = entries[rest]
                return self._read(oid)[1].decode(errors="replace") if mode in (0o100644, 0o100755) else ""
            head = entries.get(rest[:2])
            tree = head[1] if head is not None and head[0] == TREE else None
            prefix, rest = prefix + rest[:2] + "/", rest[2:]
        return None


def _commit_info(oid: str, data: bytes) -> CommitInfo:
    from git_lanes.store.objects import parse_commit

    headers, message = parse_commit(data)
    if "encoding" in headers or "tree" not in headers:
        raise NeedsFullStore(f"commit {oid} is not plain UTF-8")
    author = headers.get("author", [""])[0]
    ident, _, stamp = author.rpartition("> ")
    when = stamp.split()[0] if stamp else "0"
    committer = headers.get("committer", [""])[0].rpartition("> ")[2].split()
    return CommitInfo(oid, headers["tree"][0], tuple(headers.get("parent", [])), message,
                      ident + ">" if ident else author, int(committer[0]) if committer else int(when))
