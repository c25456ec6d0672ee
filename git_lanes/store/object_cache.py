"""Small trees and blobs read and written by id, kept in memory for a process that holds the repository open.

The ledger reads the same few trees and records on every op (the root, `tasks/`, an agent, the board's
last folders) and rewrites a handful of them. Reading each through pygit2 costs an object lookup, and
often a file read and an inflate, every time; editing with a `TreeBuilder` reads back what it just wrote.
Objects never change under their id, so a copy kept by id can never be stale: this cache serves repeated
reads from memory and learns the trees it writes as it writes them. It never answers whether an object is
on disk (every write goes to the object database, even of an object it has seen), so it cannot make a
commit point at something `git gc` pruned.

Trees are written in git's canonical form (entries sorted with a folder's name compared as if it ended in
`/`, modes in octal without leading zeros), byte for byte what `git mktree` and libgit2 write.

Several processes appending to one ledger each rewrite the same folders (the root, `tasks/` with up to 256
fan-out folders, the board's current bucket), so most trees one process reads were written by another a
moment ago and differ from the last version it saw at the same path by an entry or two. Such a tree is
parsed against that version: the bytes both share at the start and at the end are whole entries already
parsed, and only the few entries between them are read (`tree_bytes.parse_near`)."""

from __future__ import annotations

from contextlib import contextmanager
from itertools import islice
from operator import itemgetter

import pygit2

from git_lanes.store.tree_bytes import (TREE_MODE, Item, Layout, TreeEntries, parse_near, parse_tree_slowly,
                                        scan, item)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from types import ModuleType

    from git_lanes.store.objects import ObjectStore
    from git_lanes.store.values import CommitInfo

# Entries kept of each kind; past that the older half is dropped. A ledger tree holds at most ~100
# entries and a record a few KiB, so the cache stays within a few MB.
MAX_TREES = 4096
MAX_BLOBS = 4096
MAX_BLOB_BYTES = 64 * 1024
STORED_BYTES = 16 * 1024  # the largest record written stored when no compression level is configured
# Trees kept in their written form, to parse the next version at the same path against (one per path).
MAX_LAYOUTS = 1024
# Below this size a whole parse costs less than finding what changed (measured: 3 entries 3 us against 9,
# 10 entries about even, 256 entries with 4 changed 206 us against 64).
NEAR_BYTES = 512
# A batch of at least this many new objects is written as one pack (two files) instead of loose ones.
PACK_AT = 8



class ObjectCache:
    def __init__(self, repo: pygit2.Repository, objects_dir: str) -> None:
        self.repo = repo
        self.objects_dir = objects_dir
        self._trees: dict[str, TreeEntries] = {}
        self._blobs: dict[str, bytes] = {}
        self._commit_trees: dict[str, str] = {}
        self._layouts: dict[str, Layout] = {}
        self._near: dict[str, str] = {}  # folder path -> the tree last read or written there, with a layout
        self._durable: bool | None = None  # read from the config at the first write, with _shared, _level
        self._durable_packs = False
        self._shared = 0
        self._level: int | None = None  # None: the config sets no level (see `_write`)
        self._packing = False  # whether a batch may become a pack: the config lets git consolidate packs
        self._batch: dict[str, tuple[bytes, bytes]] | None = None  # id -> (kind, content), inside `batched`
        self._own: ObjectStore | None = None  # our own reader, for what libgit2 fails to read (`read_anyway`)
        self._keeps: list[str] = []  # `.keep` files guarding packs written here until a ref names them
        # git_lanes.store.loose_write, loaded by the first write, not by readers; kept here because an import in
        # a function is a few thousand instructions every call (sys.modules, then a failed `__path__`
        # look-up with its formatted AttributeError), and a ledger append wrote through four of them.
        self._objects: ModuleType | None = None
        self._sha1: Any = None  # OpenSSL's SHA-1, loaded with it: object ids are most of what a write hashes

    # -- reading ---------------------------------------------------------------------------------------
    def tree(self, oid: str, path: str | None = None) -> TreeEntries:
        """The entries of tree `oid` (shared: callers must not change them). KeyError when it is missing or
        not a tree. `path`: where the tree sits in the ledger ("" for the root), so a version another
        process wrote is parsed against the one last seen there."""
        entries = self._trees.get(oid)
        if entries is None:
            kind, data = self._read(oid)
            if kind != pygit2.GIT_OBJECT_TREE:
                raise KeyError(oid)
            width = len(pygit2.Oid(hex=oid).raw)
            near = self._layouts.get(self._near.get(path, "")) if path is not None and len(data) >= NEAR_BYTES \
                else None
            try:
                parsed = parse_near(data, near, width) if near is not None else None
            except (KeyError, ValueError, IndexError):  # never expected; a KeyError here would read as "missing"
                parsed = None
            if parsed is not None:
                entries, ordered = parsed
            else:
                scanned = scan(data, width)
                entries = parse_tree_slowly(data, width) if scanned is None else scanned[0]
                ordered = None  # the bytes' order
                if scanned is None or not scanned[1]:
                    path = None  # spelled as git would not write it: no layout to parse the next one against
            _keep(self._trees, oid, entries, MAX_TREES)
            if path is not None:
                self._remember(path, oid, (data, entries, ordered))
        return entries

    def _remember(self, path: str, oid: str, layout: Layout) -> None:
        _keep(self._layouts, oid, layout, MAX_LAYOUTS)
        _keep(self._near, path, oid, MAX_LAYOUTS)

    def folder(self, tree: str, path: str) -> TreeEntries | None:
        """The entries of the folder at `path` in `tree` ("" is the tree itself); None when there is none."""
        entries = self.tree(tree, "")
        if not path:
            return entries
        walked = ""
        for part in path.split("/"):
            found = entries.get(part)
            if found is None or found[0] != TREE_MODE:
                return None
            walked = f"{walked}/{part}" if walked else part
            entries = self.tree(found[1], walked)
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
            kind, data = self._read(oid)
            if kind != pygit2.GIT_OBJECT_BLOB:
                raise KeyError(oid)
            if len(data) <= MAX_BLOB_BYTES:
                _keep(self._blobs, oid, data, MAX_BLOBS)
        return data

    def _read(self, oid: str) -> tuple[int, bytes]:
        if self._batch is not None and oid in self._batch:
            kind, data = self._batch[oid]
            return _KIND_NUMBERS[kind], data
        try:
            found: tuple[int, bytes] = self.repo.odb.read(pygit2.Oid(hex=oid))
        except (KeyError, OSError, pygit2.GitError):
            ours = self.read_anyway(oid)
            if ours is None:
                raise
            return _KIND_NUMBERS[ours[0]], ours[1]
        return found

    def read_anyway(self, oid: str) -> tuple[bytes, bytes] | None:
        """(kind, content) of `oid` by our own reader (`objects.ObjectStore`), where libgit2 failed to read it
        (None: ours cannot either; the caller raises libgit2's error). libgit2 keeps the multi-pack-index it loaded and
        reads every object it names from the pack it names: while a `git repack` removes packs the index
        named, or for good where a `git multi-pack-index write` racing the ledger's roll-up listed a pack the
        roll-up then removed, it fails ("invalid packfile", or not found) where git reads on. Ours lists the
        packs that are there. Only called on a failure: reads cost what they did."""
        from git_lanes.errors import UnsupportedFormat

        if len(oid) not in (40, 64) or oid.strip("0123456789abcdef"):
            return None  # a prefix or a name: libgit2's own error says what is wrong with it
        if self._own is None:
            from git_lanes.store.objects import ObjectStore

            self._own = ObjectStore(self.objects_dir)
        try:
            return self._own.read(oid)
        except UnsupportedFormat:
            return None

    def tree_of(self, commit: str) -> str:
        tree = self._commit_trees.get(commit)
        if tree is None:
            try:
                tree = str(self.repo[pygit2.Oid(hex=commit)].peel(pygit2.Commit).tree_id)
            except (KeyError, OSError, pygit2.GitError):
                found = self.commit_anyway(commit)
                if found is None:
                    raise
                tree = found.tree
            _keep(self._commit_trees, commit, tree, MAX_TREES)
        return tree

    def commit_anyway(self, oid: str) -> CommitInfo | None:
        """Commit `oid` read by our own reader where libgit2 failed to (see `read_anyway`); None: not a
        commit, or ours cannot read it either."""
        from git_lanes.store.objects import parse_commit
        from git_lanes.store.values import CommitInfo

        found = self.read_anyway(oid)
        if found is None or found[0] != b"commit":
            return None
        headers, message = parse_commit(found[1])
        try:
            author = headers["author"][0].rsplit(" ", 2)[0]  # "name <email>", without its time and zone
            return CommitInfo(oid, headers["tree"][0], tuple(headers.get("parent", ())), message, author,
                              int(headers["committer"][0].rsplit(" ", 2)[1]))
        except (KeyError, IndexError, ValueError):
            return None  # damaged: not a commit ours can read either

    # -- writing ---------------------------------------------------------------------------------------
    @contextmanager
    def batched(self) -> Iterator[None]:
        """Objects written inside are held and written together when it ends: as one pack when there are at
        least PACK_AT of them, else loose. None is written when it ends by an exception (nothing can refer
        to them). Inside another batch it adds to that one."""
        if self._batch is not None:
            yield
            return
        self._batch = {}
        try:
            yield
            batch = self._batch
        finally:
            self._batch = None
        self._flush(batch)

    def _flush(self, batch: dict[str, tuple[bytes, bytes]]) -> None:
        if len(batch) >= PACK_AT and self._packing:
            from git_lanes.store.pack_write import write_pack

            _, keep = write_pack(self.objects_dir, [(oid, kind, data, self._level_for(data))
                                                    for oid, (kind, data) in batch.items()],
                                 durable=self._durable_packs, shared=self._shared, keep=True)
            if keep is not None:
                self._keeps.append(keep)
            return
        for oid, (kind, data) in batch.items():
            self._write_loose(kind, data, oid)

    def release_packs(self) -> None:
        """A ref moved (or failed to): the packs written before it need their `.keep` no more (see
        `pack_write`). What they hold is named by a ref now, or by nothing and so garbage either way."""
        if self._keeps:
            from git_lanes.store.pack_write import release

            keeps, self._keeps = self._keeps, []
            release(keeps)

    def _write(self, kind: bytes, data: bytes) -> str:
        if self._durable is None:
            self._configure()
        objects = self._writer()  # loads `_sha1` too
        oid: str = objects.object_id(kind, data, self._sha1)
        if self._batch is None:
            return self._write_loose(kind, data, oid)
        self._batch[oid] = (kind, data)
        return oid

    def _configure(self) -> None:
        from git_lanes.store import object_settings  # with the first write, not by readers

        config = self.repo.config
        self._durable, self._durable_packs = object_settings.durable(config)
        self._shared = object_settings.shared(config)
        self._level = object_settings.compression(config)
        self._packing = object_settings.consolidates_packs(config)

    def write_now(self, kind: bytes, data: bytes) -> str:
        """Write one object loose at once, inside a batch or not: one libgit2 failed to write, for the reason
        our writer's OSError carries (loose_write.refused) where libgit2's carries none."""
        if self._durable is None:
            self._configure()
        return self._write_loose(kind, data)

    def _write_loose(self, kind: bytes, data: bytes, oid: str | None = None) -> str:
        written: str = self._writer().write_loose(self.objects_dir, kind, data, durable=bool(self._durable),
                                                  shared=self._shared, level=self._level_for(data), oid=oid)
        return written

    def _writer(self) -> ModuleType:
        if self._objects is None:
            from git_lanes.model.digest import openssl_sha1
            from git_lanes.store import loose_write

            self._sha1 = openssl_sha1()
            self._objects = loose_write
        return self._objects

    def _level_for(self, data: bytes) -> int:
        if self._level is not None:
            return self._level
        # Stored, not deflated, where the config does not ask: a ledger op writes about eight small objects,
        # deflating them was a seventh of its CPU, and a file this small fills the same file-system blocks
        # either way (`git gc` deflates them at the pack's own level).
        return 0 if len(data) <= STORED_BYTES else 1

    def write_blob(self, data: bytes) -> str:
        oid = self._write(b"blob", data)
        if len(data) <= MAX_BLOB_BYTES:
            _keep(self._blobs, oid, data, MAX_BLOBS)
        return oid

    def write_tree(self, entries: TreeEntries, path: str | None = None) -> str:
        """Write a tree of `entries`; `path` as for `tree`."""
        ordered = sorted(entries.values(), key=itemgetter(2))
        data = b"".join(map(itemgetter(3), ordered))
        oid = self._write(b"tree", data)
        _keep(self._trees, oid, entries, MAX_TREES)
        if path is not None:
            self._remember(path, oid, (data, entries, ordered))
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
        return self.write_tree(self._edited(base, edits, ""), "")

    def _edited(self, base: str | None, edits: dict[str, tuple[int, str] | None], where: str) -> TreeEntries:
        entries: TreeEntries = dict(self.tree(base, where)) if base else {}
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
            sub_path = f"{where}/{name}" if where else name
            sub_entries = self._edited(sub_base, sub_edits, sub_path)
            if sub_entries:
                entries[name] = item(name, TREE_MODE, self.write_tree(sub_entries, sub_path))
            else:
                entries.pop(name, None)
        return entries


def _signed(signature: pygit2.Signature) -> str:
    offset = signature.offset
    sign = "-" if offset < 0 else "+"
    return f"{signature.name} <{signature.email}> {signature.time} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


def _keep(cache: dict[str, Any], key: str, value: object, limit: int) -> None:
    if len(cache) >= limit:
        for old in list(islice(cache, limit // 2)):
            del cache[old]
    cache[key] = value


_KIND_NUMBERS = {b"commit": pygit2.GIT_OBJECT_COMMIT, b"tree": pygit2.GIT_OBJECT_TREE, b"blob": pygit2.GIT_OBJECT_BLOB,
                 b"tag": pygit2.GIT_OBJECT_TAG}
