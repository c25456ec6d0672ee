"""Small trees and blobs read and written by id, kept in memory for a process that holds the repository open.

The ledger reads the same few trees and records on every op (the root, `tasks/`, an agent, the board's
last folders) and rewrites a handful of them. Reading each through pygit2 costs an object lookup, and
often a file read and an inflate, every time; editing with a `TreeBuilder` reads back what it just wrote.
Objects never change under their id, so a copy kept by id can never be stale: this cache serves repeated
reads from memory and learns the trees it writes as it writes them. It never answers whether an object is
on disk (every write goes to the object database, even of an object it has seen), so it cannot make a
commit point at something `git gc` pruned.

Trees are written in git's canonical form (entries sorted with a folder's name compared as if it ended in
`/`, modes in octal without leading zeros), byte for byte what `git mktree` and libgit2 write."""

from __future__ import annotations

from itertools import islice
from operator import itemgetter

import pygit2

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TREE_MODE = 0o040000
# Entries kept of each kind; past that the older half is dropped. A ledger tree holds at most ~100
# entries and a record a few KiB, so the cache stays within a few MB.
MAX_TREES = 4096
MAX_BLOBS = 4096
MAX_BLOB_BYTES = 64 * 1024

# name -> (mode, object id, sort key, the entry as the tree object spells it): kept whole so that writing
# an edited tree sorts and joins bytes without encoding its untouched entries again.
Item = tuple[int, str, bytes, bytes]
TreeEntries = dict[str, Item]


class ObjectCache:
    def __init__(self, repo: pygit2.Repository, objects_dir: str) -> None:
        self.repo = repo
        self.objects_dir = objects_dir
        self._trees: dict[str, TreeEntries] = {}
        self._blobs: dict[str, bytes] = {}
        self._commit_trees: dict[str, str] = {}
        self._durable: bool | None = None  # read from the config at the first write, with _shared, _level
        self._shared = 0
        self._level = 1

    # -- reading ---------------------------------------------------------------------------------------
    def tree(self, oid: str) -> TreeEntries:
        """The entries of tree `oid` (shared: callers must not change them). KeyError when it is missing or
        not a tree."""
        entries = self._trees.get(oid)
        if entries is None:
            kind, data = self.repo.odb.read(pygit2.Oid(hex=oid))
            if kind != pygit2.GIT_OBJECT_TREE:
                raise KeyError(oid)
            entries = parse_tree(data, len(pygit2.Oid(hex=oid).raw))
            _keep(self._trees, oid, entries, MAX_TREES)
        return entries

    def folder(self, tree: str, path: str) -> TreeEntries | None:
        """The entries of the folder at `path` in `tree` ("" is the tree itself); None when there is none."""
        entries = self.tree(tree)
        if not path:
            return entries
        for part in path.split("/"):
            found = entries.get(part)
            if found is None or found[0] != TREE_MODE:
                return None
            entries = self.tree(found[1])
        return entries

    def entry(self, tree: str, path: str) -> tuple[int, str] | None:
        """(mode, id) at `path` in `tree`, or None."""
        folder, _, name = path.rpartition("/")
        entries = self.folder(tree, folder)
        found = None if entries is None else entries.get(name)
        return None if found is None else (found[0], found[1])

    def blob(self, oid: str) -> bytes:
        data = self._blobs.get(oid)
        if data is None:
            kind, data = self.repo.odb.read(pygit2.Oid(hex=oid))
            if kind != pygit2.GIT_OBJECT_BLOB:
                raise KeyError(oid)
            if len(data) <= MAX_BLOB_BYTES:
                _keep(self._blobs, oid, data, MAX_BLOBS)
        return data

    def tree_of(self, commit: str) -> str:
        tree = self._commit_trees.get(commit)
        if tree is None:
            tree = str(self.repo[pygit2.Oid(hex=commit)].peel(pygit2.Commit).tree_id)
            _keep(self._commit_trees, commit, tree, MAX_TREES)
        return tree

    # -- writing ---------------------------------------------------------------------------------------
    def _write(self, kind: bytes, data: bytes) -> str:
        from git_lanes.store.objects import write_loose  # loaded by the first write, not by readers

        if self._durable is None:
            self._durable = _wants_durable_objects(self.repo.config)
            self._shared = _shared_permissions(self.repo.config)
            self._level = _loose_compression(self.repo.config)
        return write_loose(self.objects_dir, kind, data, durable=self._durable, shared=self._shared,
                           level=self._level)

    def write_blob(self, data: bytes) -> str:
        oid = self._write(b"blob", data)
        if len(data) <= MAX_BLOB_BYTES:
            _keep(self._blobs, oid, data, MAX_BLOBS)
        return oid

    def write_tree(self, entries: TreeEntries) -> str:
        oid = self._write(b"tree", encode_tree(entries))
        _keep(self._trees, oid, entries, MAX_TREES)
        return oid

    def write_commit(self, tree: str, parents: list[str], author: pygit2.Signature, committer: pygit2.Signature,
                     message: str) -> str:
        """A commit as libgit2's `create_commit` writes it; the signatures were checked when pygit2 made them."""
        lines = [f"tree {tree}", *(f"parent {parent}" for parent in parents), f"author {_signed(author)}",
                 f"committer {_signed(committer)}"]
        oid = self._write(b"commit", ("\n".join(lines) + "\n\n" + message).encode())
        _keep(self._commit_trees, oid, tree, MAX_TREES)
        return oid

    def edit(self, base: str | None, edits: dict[str, tuple[int, str] | None]) -> str:
        """The tree `base` with each path set to its (mode, id) (None deletes), writing only the folders on
        the edited paths. A folder left empty disappears, as in git; a file replacing a folder drops what
        was beneath it."""
        return self.write_tree(self._edited(base, edits))

    def _edited(self, base: str | None, edits: dict[str, tuple[int, str] | None]) -> TreeEntries:
        entries: TreeEntries = dict(self.tree(base)) if base else {}
        grouped: dict[str, dict[str, tuple[int, str] | None]] = {}
        for path, entry in edits.items():
            head, _, rest = path.partition("/")
            if rest:
                grouped.setdefault(head, {})[rest] = entry
            elif entry is None:
                entries.pop(head, None)
            else:
                entries[head] = item(head, *entry)
        for name, sub_edits in grouped.items():
            if edits.get(name) is not None:
                continue  # a file replaced the folder; nothing beneath it survives
            existing = entries.get(name)
            sub_base = existing[1] if existing is not None and existing[0] == TREE_MODE else None
            sub_entries = self._edited(sub_base, sub_edits)
            if sub_entries:
                entries[name] = item(name, TREE_MODE, self.write_tree(sub_entries))
            else:
                entries.pop(name, None)
        return entries


def _wants_durable_objects(config: pygit2.Config) -> bool:
    from git_lanes.store.objects import durable_objects

    try:
        fsync_object_files = config.get_bool("core.fsyncObjectFiles")
    except KeyError:
        fsync_object_files = False
    except pygit2.GitError:
        fsync_object_files = True  # a value git would refuse: the safer reading
    try:
        fsync: str | None = config["core.fsync"]
    except KeyError:
        fsync = None
    return durable_objects(fsync_object_files, fsync)


def _shared_permissions(config: pygit2.Config) -> int:
    from git_lanes.store.objects import shared_permissions

    try:
        return shared_permissions(config["core.sharedRepository"])
    except KeyError:
        return 0


def _loose_compression(config: pygit2.Config) -> int:
    from git_lanes.store.objects import loose_compression

    def value(key: str) -> str | None:
        try:
            found: str | None = config[key]  # None for a key without a value
        except KeyError:
            return None
        return found

    return loose_compression(value("core.looseCompression"), value("core.compression"))


def _signed(signature: pygit2.Signature) -> str:
    offset = signature.offset
    sign = "-" if offset < 0 else "+"
    return f"{signature.name} <{signature.email}> {signature.time} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


def _keep(cache: dict[str, Any], key: str, value: object, limit: int) -> None:
    if len(cache) >= limit:
        for old in list(islice(cache, limit // 2)):
            del cache[old]
    cache[key] = value


def item(name: str, mode: int, oid: str) -> Item:
    encoded = name.encode("utf-8", "surrogateescape")
    return (mode, oid, encoded + b"/" if mode == TREE_MODE else encoded,
            b"%o %s\0%s" % (mode, encoded, bytes.fromhex(oid)))


def parse_tree(data: bytes, width: int = 20) -> TreeEntries:
    """The entries of a tree object. A tree another process wrote (the ledger's `tasks/` holds up to 256
    fan-out folders) is parsed on every op of a ledger shared by several writers, so a well-formed tree is
    checked and split by regular expressions, in C; anything else is left to `_parse_tree_slowly`, which reads
    what git reads and refuses the rest as it always did."""
    patterns = _TREE_PATTERNS.get(width)
    if patterns is None:
        import re  # loaded by the first tree read

        entry = rb"([0-7]+) ([^\0]*)\0(.{%d})" % width
        patterns = _TREE_PATTERNS[width] = (re.compile(rb"(?:%s)*" % entry.replace(b"(", b"(?:"), re.DOTALL),
                                            re.compile(entry, re.DOTALL))
    whole, one = patterns
    if whole.fullmatch(data) is None:
        return _parse_tree_slowly(data, width)
    entries: TreeEntries = {}
    for digits, encoded, raw_id in one.findall(data):
        name = encoded.decode("utf-8", "surrogateescape")
        if digits == b"40000":
            entries[name] = (TREE_MODE, raw_id.hex(), encoded + b"/", b"40000 %s\0%s" % (encoded, raw_id))
        elif digits[0] != 0x30:
            entries[name] = (int(digits, 8), raw_id.hex(), encoded, b"%s %s\0%s" % (digits, encoded, raw_id))
        else:  # a mode another tool zero-padded (`040000`): kept as git writes it
            mode = int(digits, 8)
            entries[name] = (mode, raw_id.hex(), encoded + b"/" if mode == TREE_MODE else encoded,
                             b"%o %s\0%s" % (mode, encoded, raw_id))
    return entries


_TREE_PATTERNS: dict[int, tuple[Any, Any]] = {}


def _parse_tree_slowly(data: bytes, width: int) -> TreeEntries:
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
