"""Objects made in memory and written as one small pack, and small packs merged before they pile up.

A loose object is a file created and renamed into place: about 0.1–0.3 ms each on an ext4 VM, and a ledger
append used to make six or seven of them (a blob or two, the trees on their paths, the commit). A pack
holding all of them is two files (`.pack`, then `.idx`, each written aside and renamed into place, so a
reader never sees an index without its pack and a killed writer leaves only a temporary file). Once
MERGE_AT packs exist, the next writer merges the smaller ones geometrically; `git gc --auto` (gc.autoPackLimit)
repacks the merged ones in time, as it would any packs. The packs are plain version-2 packs without deltas,
which git, libgit2 and dulwich read."""

from __future__ import annotations

import os
import struct
import time
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterable
from hashlib import sha1
from pathlib import Path

from git_lanes.model.entries import split_edits
from git_lanes.store.objects import ObjectStore, encode_commit, parse_tree
from git_lanes.store.packs import Pack

KIND_CODES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
TREE_MODE = 0o040000
# Merge packs once there are this many: libgit2 and git look an absent object up in every pack.
MERGE_AT = 24
# Bigger packs are git's to repack (`git gc --auto` once there are gc.autoPackLimit packs).
MERGE_LIMIT = 20_000
# A version-2 index: header and fan-out, two checksums; per object its id, CRC and offset.
INDEX_OVERHEAD = 8 + 256 * 4 + 40
INDEX_BYTES_PER_OBJECT = 28
LEFTOVER_SECONDS = 60.0


def object_id(kind: bytes, content: bytes) -> str:
    return sha1(kind + b" " + str(len(content)).encode() + b"\0" + content).hexdigest()


def write_pack(pack_dir: Path, objects: Iterable[tuple[str, bytes, bytes]],
               packed: dict[str, bytes] | None = None) -> str | None:
    """Write (oid, kind, content) objects, and objects already in packed form (oid -> a pack entry's bytes,
    copied as they are), as one pack and its index; the pack's name, None when there are none."""
    entries = dict(packed or {})
    for oid, kind, content in objects:
        if oid not in entries:
            entries[oid] = _entry_header(KIND_CODES[kind], len(content)) + zlib.compress(content, 1)
    if not entries:
        return None
    body = bytearray(b"PACK" + struct.pack(">II", 2, len(entries)))
    where: dict[str, tuple[int, int]] = {}
    for oid, entry in entries.items():
        where[oid] = (len(body), zlib.crc32(entry))
        body += entry
    checksum = sha1(body).digest()
    body += checksum
    names = sorted(where)
    fanout = [0] * 256
    for oid in names:
        fanout[int(oid[:2], 16)] += 1
    running = 0
    for i in range(256):
        running += fanout[i]
        fanout[i] = running
    index = bytearray(b"\377tOc" + struct.pack(">I", 2) + struct.pack(">256I", *fanout))
    index += b"".join(bytes.fromhex(oid) for oid in names)
    index += struct.pack(f">{len(names)}I", *(where[oid][1] for oid in names))
    index += struct.pack(f">{len(names)}I", *(where[oid][0] for oid in names))
    index += checksum
    index += sha1(index).digest()
    name = f"pack-{checksum.hex()}"
    pack_dir.mkdir(parents=True, exist_ok=True)
    _write_pack_file(pack_dir / f"{name}.pack", bytes(body))
    _write_aside(pack_dir / f"{name}.idx", bytes(index))
    return name


def _entry_header(code: int, size: int) -> bytes:
    out = bytearray()
    byte = (code << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _write_pack_file(path: Path, data: bytes) -> None:
    """The pack under its own name at once, saving a rename: git and libgit2 read a pack only through its
    index, written after it, so a pack cut short by a kill is never read (and the same pack written again
    replaces it)."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    except FileExistsError:
        if os.path.exists(f"{path.with_suffix('')}.idx"):
            return  # the very same objects, already stored
        _write_aside(path, data)
        return
    try:
        os.write(handle, data)
    finally:
        os.close(handle)


def _write_aside(path: Path, data: bytes) -> None:
    temporary = path.with_name(f"tmp_lanes_{os.getpid()}_{path.name}")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
    try:
        os.write(handle, data)
    finally:
        os.close(handle)
    os.replace(temporary, path)


def packs_to_merge(pack_dir: Path) -> list[Path]:
    """The packs (as paths without suffix) to merge now: none while there are fewer than MERGE_AT (one
    listing, no stat); then the smallest, each taken while it holds at most twice the objects of those taken
    before it, so a pack is rewritten about log2(its size) times (git's `repack --geometric=2`). Packs of
    MERGE_LIMIT objects or more are left to `git gc`."""
    try:
        indexes = [name for name in os.listdir(pack_dir) if name.endswith(".idx")]
    except FileNotFoundError:
        return []
    if len(indexes) < MERGE_AT:
        return []
    sized = []
    for name in indexes:
        try:
            count = (os.stat(pack_dir / name).st_size - INDEX_OVERHEAD) // INDEX_BYTES_PER_OBJECT
        except FileNotFoundError:
            continue
        if count < MERGE_LIMIT:
            sized.append((count, pack_dir / name[:-4]))
    sized.sort()
    chosen: list[Path] = []
    total = 0
    for count, base in sized:
        if chosen and count > 2 * total:
            break
        chosen.append(base)
        total += count
    return chosen if len(chosen) > 1 else []


def clear_leftovers(pack_dir: Path, now: float | None = None) -> list[str]:
    """Delete what a writer killed mid-pack left: a pack without its index, or a temporary file, once it is
    LEFTOVER_SECONDS old (a live writer finishes either within milliseconds). Returns the names deleted."""
    now = time.time() if now is None else now
    names = set(os.listdir(pack_dir))
    gone = []
    for name in names:
        orphan = name.endswith(".pack") and f"{name[:-5]}.idx" not in names
        if not (orphan or name.startswith("tmp_lanes_")):
            continue
        try:
            if now - os.stat(pack_dir / name).st_mtime >= LEFTOVER_SECONDS:
                os.unlink(pack_dir / name)
                gone.append(name)
        except FileNotFoundError:
            continue
    return gone


def merge_packs(objects_dir: Path) -> bool:
    """Merge packs as `packs_to_merge` chooses (call under the writers' lock). The merged pack is in place
    before any merged one goes, so every object stays readable throughout."""
    pack_dir = objects_dir / "pack"
    chosen = packs_to_merge(pack_dir)
    if not chosen:
        return False
    clear_leftovers(pack_dir)
    store = ObjectStore(objects_dir)
    packed: dict[str, bytes] = {}  # whole objects, copied without inflating them
    resolved: list[tuple[str, bytes, bytes]] = []  # deltas, stored whole
    for base in chosen:
        pack = Pack(base)
        try:
            listed = pack.entries()
            ends = [offset for _, offset in listed[1:]] + [pack.data_end]
            for (oid, offset), end in zip(listed, ends):
                if oid in packed:
                    continue
                entry = pack.raw_entry(offset, end)
                if entry is None:
                    kind, content = pack.read_at(offset, store.read)
                    resolved.append((oid, kind, content))
                else:
                    packed[oid] = entry
        except FileNotFoundError:  # a `git gc` took it meanwhile: its objects are in gc's pack
            continue
    name = write_pack(pack_dir, resolved, packed)
    for base in chosen:
        if base.name == name:
            continue
        for suffix in (".idx", ".pack"):  # git's order: an index never outlives its pack
            try:
                os.unlink(f"{base}{suffix}")
            except FileNotFoundError:
                pass
    return True


# What a held-open writer made lately, by id (objects never change): the entries of trees, small blobs, the
# trees of commits. Its next op edits the same few directories and reads the records it just wrote; serving
# them from here spares parsing a directory of a few hundred entries again, and spares libgit2 the lookup
# of an object in a pack it has not seen yet, which makes it rescan the pack directory.
_TREES: dict[str, dict[str, tuple[int, str]]] = {}
_BLOBS: dict[str, bytes] = {}
_COMMIT_TREES: dict[str, str] = {}
_ENCODED: dict[str, tuple[list[str], list[bytes]]] = {}
KEPT = 256
SMALL_BLOB = 1 << 16


def _remember(oid: str, entries: dict[str, tuple[int, str]]) -> dict[str, tuple[int, str]]:
    return _keep(_TREES, oid, entries)


def _keep(cache: dict, oid: str, value):  # type: ignore[no-untyped-def]
    cache[oid] = value
    if len(cache) > KEPT:
        del cache[next(iter(cache))]
    return value


class Unknown:
    """Not answerable from what this process made lately: read the object database."""


UNKNOWN = Unknown()


def known_listing(tree: str, path: str) -> dict[str, tuple[int, str]] | None | Unknown:
    """The entries of directory `path` in `tree` (None: no such directory), or UNKNOWN."""
    entries = _TREES.get(tree)
    if entries is None:
        return UNKNOWN
    for part in (p for p in path.split("/") if p):
        entry = entries.get(part)
        if entry is None or entry[0] != TREE_MODE:
            return None
        entries = _TREES.get(entry[1])
        if entries is None:
            return UNKNOWN
    return entries


def known_entry(tree: str, path: str) -> tuple[int, str] | None | Unknown:
    """The (mode, oid) at `path` in `tree` (None: nothing there), or UNKNOWN."""
    directory, _, name = path.rpartition("/")
    entries = known_listing(tree, directory)
    if entries is None or isinstance(entries, Unknown):
        return entries
    return entries.get(name)


def known_blob(oid: str) -> bytes | None:
    return _BLOBS.get(oid)


def known_commit_tree(oid: str) -> str | None:
    return _COMMIT_TREES.get(oid)


def _sort_key(name: str, mode: int) -> str:
    """git orders a tree's entries by name, a directory's as if it ended with '/'; text order is UTF-8's."""
    return name + "/" if mode == TREE_MODE else name


def _line(name: str, mode: int, oid: str) -> bytes:
    return b"%o %s\0" % (mode, name.encode("utf-8", "surrogateescape")) + bytes.fromhex(oid)


def _encode_tree(entries: dict[str, tuple[int, str]], base: str | None, touched: set[str],
                 original: dict[str, tuple[int, str]]) -> tuple[bytes, tuple[list[str], list[bytes]]]:
    """A tree object's content and its (sort keys, entry lines): when `base` was encoded here lately, its
    lines with the `touched` names spliced in or out (an op changes one entry of a directory of hundreds);
    otherwise encoded whole."""
    known = _ENCODED.get(base) if base else None
    if known is None:
        keys = sorted(_sort_key(name, mode) for name, (mode, _) in entries.items())
        lines = [_line(key.rstrip("/"), *entries[key.rstrip("/")]) for key in keys]
    else:
        keys, lines = list(known[0]), list(known[1])
        for name in touched:
            old, new = original.get(name), entries.get(name)
            if old == new:
                continue
            if old is not None:
                at = bisect_left(keys, _sort_key(name, old[0]))
                del keys[at], lines[at]
            if new is not None:
                key = _sort_key(name, new[0])
                at = bisect_left(keys, key)
                keys.insert(at, key)
                lines.insert(at, _line(name, *new))
    return b"".join(lines), (keys, lines)


class ObjectBatch:
    """Objects built in memory (blobs, trees edited from existing ones, commits) and written as one pack.

    `read_raw(oid) -> (kind, content)` reads objects already stored. An object that exists already is written
    again rather than looked up: a lookup of an absent object makes libgit2 rescan the pack directory, which
    costs more than the copy (merging drops duplicates)."""

    def __init__(self, read_raw: Callable[[str], tuple[bytes, bytes]]) -> None:
        self._read_raw = read_raw
        self.objects: dict[str, tuple[bytes, bytes]] = {}

    def add(self, kind: bytes, content: bytes) -> str:
        oid = object_id(kind, content)
        if oid not in self.objects:
            self.objects[oid] = (kind, content)
            if kind == b"blob" and len(content) <= SMALL_BLOB:
                _keep(_BLOBS, oid, content)
        return oid

    def entries(self, tree: str) -> dict[str, tuple[int, str]]:
        known = _TREES.get(tree)
        if known is None:
            found = self.objects.get(tree)
            kind, content = found if found is not None else self._read_raw(tree)
            known = _remember(tree, parse_tree(content))
        return known

    def edit_tree(self, base: str | None, edits: dict[str, tuple[int, str] | None]) -> str:
        """`base` with each path set to (mode, oid) or deleted (None), rewriting only the touched subtrees;
        directories left empty disappear, as in git."""
        return self._edit(base, edits) or self.add(b"tree", b"")

    def _edit(self, base: str | None, edits: dict[str, tuple[int, str] | None]) -> str | None:
        leaves, grouped = split_edits(edits)
        original = self.entries(base) if base else {}
        entries = dict(original)
        for name, entry in leaves.items():
            if entry is None:
                entries.pop(name, None)
            else:
                entries[name] = entry
        for name, sub_edits in grouped.items():
            if leaves.get(name) is not None:
                continue  # a file replaced the directory; nothing beneath it survives
            existing = original.get(name)
            sub_base = existing[1] if existing is not None and existing[0] == TREE_MODE else None
            sub_tree = self._edit(sub_base, sub_edits)
            if sub_tree is None:
                entries.pop(name, None)
            else:
                entries[name] = (TREE_MODE, sub_tree)
        if not entries:
            return None
        content, encoded = _encode_tree(entries, base, set(leaves) | set(grouped), original)
        oid = self.add(b"tree", content)
        _remember(oid, entries)
        _keep(_ENCODED, oid, encoded)
        return oid

    def commit(self, tree: str, parents: list[str], message: str, author: str, committer: str) -> str:
        """A commit; `author` and `committer` as git writes them (`Name <email> 1700000000 +0100`)."""
        oid = self.add(b"commit", encode_commit(tree, parents, author, committer, message))
        _keep(_COMMIT_TREES, oid, tree)
        return oid

    def write(self, objects_dir: Path) -> None:
        """Store every object made here (one pack), then merge the small packs if they piled up."""
        if not self.objects:
            return
        write_pack(objects_dir / "pack", ((oid, kind, content) for oid, (kind, content) in self.objects.items()))
        self.objects = {}
        merge_packs(objects_dir)
