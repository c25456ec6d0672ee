"""A small git object database of our own: read loose and packed objects, write loose ones (as
`loose_write.py` writes them), and git's tree and commit formats.

The agent-hook path runs on every tool call and cannot afford pygit2's import (~110 ms) or dulwich's; it reads
a handful of objects (the trunk's policy blob, a run's state) and writes three (blob, tree, commit). This is
enough git for that: zlib + SHA-1 loose objects written as git writes them (temporary file, then rename), and
pack v2 indexes with OFS/REF deltas, since `git gc` packs whatever we wrote (`packs.py`, loaded only when the
repository has a pack). Imports only the standard library.
"""

from __future__ import annotations

import os
import zlib

from git_lanes.errors import UnsupportedFormat
from git_lanes.store.loose_write import loose_compression, write_loose

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_lanes.store.packs import Pack


# How deep git follows alternates that name alternates (link_alt_odb_entries: the repository's own list is at
# depth 0, and a list at a depth past this is ignored); libgit2 stops at the same depth.
ALTERNATES_DEPTH = 5


class ObjectStore:
    """The objects of one repository (its common dir's `objects/`, plus alternates)."""

    def __init__(self, objects_dir: str | os.PathLike[str]) -> None:
        self.dir = os.fspath(objects_dir)  # a string: the light sync loads no pathlib
        self._packs: list[Pack] | None = None
        self._known_packs: list[Pack] = []  # the last list, kept while `_packs` is dropped to list again
        self._alternates: list[ObjectStore] | None = None
        self._level: int | None = None  # zlib level for new objects: read from the config at the first write

    # -- reading ---------------------------------------------------------------------------------------
    def read(self, oid: str) -> tuple[bytes, bytes]:
        """(type, content) of object `oid`; UnsupportedFormat when it is missing or unreadable."""
        found = self._lookup(oid)
        if found is None:
            self._relist()  # a `git gc` may have packed it since we listed the packs
            found = self._lookup(oid)
        if found is None:
            raise UnsupportedFormat(f"object {oid} is missing from the repository",
                                    hint="run `git fsck`; the repository may be damaged")
        return found

    def _relist(self) -> None:
        """List the packs again at the next lookup, here and in each alternate (which packs on its own)."""
        self._packs = None
        for alternate in self._alternates or ():
            alternate._relist()

    def read_typed(self, oid: str, kind: bytes) -> bytes:
        found_kind, data = self.read(oid)
        if found_kind != kind:
            raise UnsupportedFormat(f"object {oid[:12]} is a {found_kind.decode()}, not a {kind.decode()}")
        return data

    def _lookup(self, oid: str) -> tuple[bytes, bytes] | None:
        loose = self._read_loose(oid)
        if loose is not None:
            return loose
        raw = bytes.fromhex(oid)
        packs = self._pack_list()
        position = 0
        while position < len(packs):
            pack = packs[position]
            try:
                offset = pack.find(raw)
            except FileNotFoundError:  # `git repack -d` removed it since we listed it; `read` lists again
                del packs[position]
                continue
            if offset is not None:
                if position:  # the next object is most likely in the same pack (git keeps this order too)
                    packs.insert(0, packs.pop(position))
                return pack.read_at(offset, self.read)
            position += 1
        for alternate in self._alternate_list():
            found = alternate._lookup(oid)
            if found is not None:
                return found
        return None

    def _loose_path(self, oid: str) -> str:
        return os.path.join(self.dir, oid[:2], oid[2:])

    def _read_loose(self, oid: str) -> tuple[bytes, bytes] | None:
        try:
            with open(self._loose_path(oid), "rb") as handle:
                compressed = handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            raw = zlib.decompress(compressed)
        except zlib.error:
            raise UnsupportedFormat(f"loose object {oid} is corrupt", hint="run `git fsck`") from None
        header, _, content = raw.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not size.isdigit() or int(size) != len(content):
            raise UnsupportedFormat(f"loose object {oid} has a bad header", hint="run `git fsck`")
        return kind, content

    def _pack_list(self) -> list[Pack]:
        if self._packs is None:
            pack_dir = os.path.join(self.dir, "pack")
            try:
                names = sorted(os.listdir(pack_dir))
            except FileNotFoundError:
                names = []
            bases = [os.path.join(pack_dir, name[:-4]) for name in names
                     if name.endswith(".idx") and os.path.exists(os.path.join(pack_dir, name[:-4] + ".pack"))]
            if bases:
                from git_lanes.store.packs import Pack  # only once something wrote a pack

                # Packs already open stay open, in the order lookups left them; new ones go first (a miss
                # is why we list again, and the object missed is most likely in a pack just written).
                known = {pack.base: pack for pack in self._known_packs}
                listed = set(bases)  # once, not per pack: a relist is on every miss
                kept = [pack for pack in self._known_packs if pack.base in listed]
                self._packs = [Pack(base) for base in bases if base not in known] + kept
            else:
                self._packs = []
            self._known_packs = self._packs
        return self._packs

    def _alternate_list(self) -> list[ObjectStore]:
        """The object folders this one borrows from, as git lists them: each alternate followed by the ones
        it borrows from in turn, once each, never this folder itself, and no deeper than git reads. A cycle
        (A names B, B names A: `git clone --shared` made both ways) ends where git ends it, not in a
        recursion without end."""
        if self._alternates is None:
            self._alternates = _linked_alternates(self.dir, 0, {os.path.realpath(self.dir)}, [])
        return self._alternates

    # -- writing ---------------------------------------------------------------------------------------
    def write(self, kind: bytes, content: bytes) -> str:
        """Store an object loose and return its id (see `write_loose`), at the level the repository's
        config asks for (`loose_compression`; its config files as `gitfiles.read_config_levels` reads them)."""
        if self._level is None:
            from git_lanes.store.gitfiles import read_config_levels

            config = read_config_levels(os.path.dirname(self.dir))
            self._level = loose_compression(config.get("core.loosecompression"), config.get("core.compression"))
        return write_loose(self.dir, kind, content, level=self._level)


def _linked_alternates(base: str, depth: int, seen: set[str], found: list[ObjectStore]) -> list[ObjectStore]:
    """`found` with the alternates `base`'s list names, each followed by its own (read at `depth` + 1)."""
    if depth > ALTERNATES_DEPTH:  # git says "ignoring alternate object stores, nesting too deep"
        return found
    try:
        with open(os.path.join(base, "info", "alternates")) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return found
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        place = os.path.realpath(os.path.join(base, line))
        if place in seen or not os.path.isdir(place):  # git skips both (a missing one with an error)
            continue
        seen.add(place)
        alternate = ObjectStore(place)
        alternate._alternates = []  # its own alternates are listed here, after it, as git lists them
        found.append(alternate)
        _linked_alternates(place, depth + 1, seen, found)
    return found


# -- object formats ---------------------------------------------------------------------------------------
def parse_tree(data: bytes) -> dict[str, tuple[int, str]]:
    """name -> (mode, oid) of a tree object's entries."""
    entries = {}
    position = 0
    while position < len(data):
        space = data.index(b" ", position)
        nul = data.index(b"\0", space)
        mode = int(data[position:space], 8)
        name = data[space + 1:nul].decode("utf-8", "surrogateescape")
        entries[name] = (mode, data[nul + 1:nul + 21].hex())
        position = nul + 21
    return entries


def encode_tree(entries: dict[str, tuple[int, str]]) -> bytes:
    """A tree object in git's order (a directory sorts as if its name ended with '/')."""
    def key(name: str) -> bytes:
        return name.encode() + (b"/" if entries[name][0] == 0o040000 else b"")

    return b"".join(f"{mode:o} {name}".encode() + b"\0" + bytes.fromhex(oid)
                    for name, (mode, oid) in sorted(entries.items(), key=lambda item: key(item[0])))


def parse_commit(data: bytes) -> tuple[dict[str, list[str]], str]:
    """(headers, message) of a commit object; headers keep every value of repeated keys (parent)."""
    head, _, message = data.partition(b"\n\n")
    headers: dict[str, list[str]] = {}
    last = None
    for line in head.decode("utf-8", "replace").split("\n"):
        if line.startswith(" ") and last is not None:  # a continuation (gpgsig)
            headers[last][-1] += "\n" + line[1:]
            continue
        key, _, value = line.partition(" ")
        headers.setdefault(key, []).append(value)
        last = key
    return headers, message.decode("utf-8", "replace")


def encode_commit(tree: str, parents: list[str], author: str, committer: str, message: str) -> bytes:
    lines = [f"tree {tree}"] + [f"parent {p}" for p in parents] + [f"author {author}", f"committer {committer}"]
    return ("\n".join(lines) + "\n\n" + message).encode()
