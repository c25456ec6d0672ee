"""A small git object database of our own: read loose and packed objects, write loose ones.

The agent-hook path runs on every tool call and cannot afford pygit2's import (~110 ms) or dulwich's; it reads
a handful of objects (the trunk's policy blob, a run's state) and writes three (blob, tree, commit). This is
enough git for that: zlib + SHA-1 loose objects written as git writes them (temporary file, then rename), and
pack v2 indexes with OFS/REF deltas, since `git gc` packs whatever we wrote. Imports only the standard library.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from pathlib import Path

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.digest import sha1

TYPE_NAMES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
OFS_DELTA, REF_DELTA = 6, 7
MAX_DELTA_CHAIN = 10_000


class ObjectStore:
    """The objects of one repository (its common dir's `objects/`, plus alternates)."""

    def __init__(self, objects_dir: Path) -> None:
        self.dir = objects_dir
        self._packs: list[_Pack] | None = None
        self._alternates: list[ObjectStore] | None = None

    # -- reading ---------------------------------------------------------------------------------------
    def read(self, oid: str) -> tuple[bytes, bytes]:
        """(type, content) of object `oid`; UnsupportedFormat when it is missing or unreadable."""
        found = self._lookup(oid)
        if found is None:
            self._packs = None  # a `git gc` may have packed it since we listed the packs
            found = self._lookup(oid)
        if found is None:
            raise UnsupportedFormat(f"object {oid} is missing from the repository",
                                    hint="run `git fsck`; the repository may be damaged")
        return found

    def read_typed(self, oid: str, kind: bytes) -> bytes:
        found_kind, data = self.read(oid)
        if found_kind != kind:
            raise UnsupportedFormat(f"object {oid[:12]} is a {found_kind.decode()}, not a {kind.decode()}")
        return data

    def exists(self, oid: str) -> bool:
        return self._loose_path(oid).exists() or any(p.find(oid) is not None for p in self._pack_list())

    def _lookup(self, oid: str) -> tuple[bytes, bytes] | None:
        loose = self._read_loose(oid)
        if loose is not None:
            return loose
        raw = bytes.fromhex(oid)
        for pack in self._pack_list():
            offset = pack.find(raw)
            if offset is not None:
                return pack.read_at(offset, self)
        for alternate in self._alternate_list():
            found = alternate._lookup(oid)
            if found is not None:
                return found
        return None

    def _loose_path(self, oid: str) -> Path:
        return self.dir / oid[:2] / oid[2:]

    def _read_loose(self, oid: str) -> tuple[bytes, bytes] | None:
        try:
            compressed = self._loose_path(oid).read_bytes()
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

    def _pack_list(self) -> list[_Pack]:
        if self._packs is None:
            pack_dir = self.dir / "pack"
            try:
                names = sorted(os.listdir(pack_dir))
            except FileNotFoundError:
                names = []
            self._packs = [_Pack(pack_dir / name[:-4]) for name in names
                           if name.endswith(".idx") and (pack_dir / (name[:-4] + ".pack")).exists()]
        return self._packs

    def _alternate_list(self) -> list[ObjectStore]:
        if self._alternates is None:
            self._alternates = []
            try:
                lines = (self.dir / "info" / "alternates").read_text().splitlines()
            except FileNotFoundError:
                lines = []
            for line in lines:
                line = line.strip()
                if line and not line.startswith("#"):
                    path = Path(line) if os.path.isabs(line) else (self.dir / line)
                    self._alternates.append(ObjectStore(path.resolve()))
        return self._alternates

    # -- writing ---------------------------------------------------------------------------------------
    def write(self, kind: bytes, content: bytes) -> str:
        """Store an object loose (as git does: a temporary file renamed into place) and return its id."""
        raw = kind + b" " + str(len(content)).encode() + b"\0" + content
        oid = sha1(raw).hexdigest()
        directory = os.path.join(self.dir, oid[:2])
        path = os.path.join(directory, oid[2:])
        if os.path.exists(path):
            return oid
        temporary = os.path.join(directory, f"tmp_obj_{os.getpid()}_{oid[2:10]}")
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
        with os.fdopen(handle, "wb") as out:
            out.write(zlib.compress(raw, 1))
        os.replace(temporary, path)
        return oid


class _Pack:
    """One pack and its version-2 index, memory-mapped on first use."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._idx: mmap.mmap | None = None
        self._pack: mmap.mmap | None = None
        self._count = 0

    def _open(self) -> None:
        if self._idx is not None:
            return
        with open(str(self.base) + ".idx", "rb") as handle:
            self._idx = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if self._idx[:8] != b"\377tOc\0\0\0\2":
            raise UnsupportedFormat(f"{self.base}.idx is not a version-2 pack index")
        self._count = struct.unpack_from(">I", self._idx, 8 + 255 * 4)[0]
        with open(str(self.base) + ".pack", "rb") as handle:
            self._pack = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)

    def find(self, raw: bytes) -> int | None:
        self._open()
        idx = self._idx
        assert idx is not None
        first = raw[0]
        low = struct.unpack_from(">I", idx, 8 + (first - 1) * 4)[0] if first else 0
        high = struct.unpack_from(">I", idx, 8 + first * 4)[0]
        names = 8 + 256 * 4
        while low < high:
            middle = (low + high) // 2
            at = names + middle * 20
            probe = idx[at:at + 20]
            if probe < raw:
                low = middle + 1
            elif probe > raw:
                high = middle
            else:
                return self._offset(middle)
        return None

    def _offset(self, position: int) -> int:
        idx = self._idx
        assert idx is not None
        offsets = 8 + 256 * 4 + self._count * 24
        offset = struct.unpack_from(">I", idx, offsets + position * 4)[0]
        if offset & 0x80000000:
            large = offsets + self._count * 4 + (offset & 0x7FFFFFFF) * 8
            offset = struct.unpack_from(">Q", idx, large)[0]
        return offset

    def read_at(self, offset: int, store: ObjectStore) -> tuple[bytes, bytes]:
        deltas: list[bytes] = []
        for _ in range(MAX_DELTA_CHAIN):
            kind, data_at, base = self._entry(offset)
            if kind in TYPE_NAMES:
                content = self._inflate(data_at)
                for delta in reversed(deltas):
                    content = apply_delta(content, delta)
                return TYPE_NAMES[kind], content
            deltas.append(self._inflate(data_at))
            if kind == OFS_DELTA:
                assert isinstance(base, int)
                offset = base
            else:
                assert isinstance(base, str)
                base_kind, base_content = store.read(base)
                for delta in reversed(deltas):
                    base_content = apply_delta(base_content, delta)
                return base_kind, base_content
        raise UnsupportedFormat(f"delta chain too long in {self.base}.pack")

    def _entry(self, offset: int) -> tuple[int, int, int | str | None]:
        """(type, where its zlib data starts, its delta base: an offset or an object id)."""
        pack = self._pack
        assert pack is not None
        start = offset
        byte = pack[offset]
        kind = (byte >> 4) & 7
        offset += 1
        while byte & 0x80:
            byte = pack[offset]
            offset += 1
        if kind == OFS_DELTA:
            byte = pack[offset]
            offset += 1
            distance = byte & 0x7F
            while byte & 0x80:
                byte = pack[offset]
                offset += 1
                distance = ((distance + 1) << 7) | (byte & 0x7F)
            return kind, offset, start - distance
        if kind == REF_DELTA:
            return kind, offset + 20, pack[offset:offset + 20].hex()
        if kind not in TYPE_NAMES:
            raise UnsupportedFormat(f"unknown object type {kind} in {self.base}.pack")
        return kind, offset, None

    def _inflate(self, offset: int) -> bytes:
        pack = self._pack
        assert pack is not None
        inflater = zlib.decompressobj()
        out = []
        chunk = 4096
        while not inflater.eof:
            piece = pack[offset:offset + chunk]
            if not piece:
                raise UnsupportedFormat(f"truncated object in {self.base}.pack")
            out.append(inflater.decompress(piece))
            offset += chunk
            chunk = min(chunk * 4, 1 << 20)
        return b"".join(out)


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format: source and target sizes, then copy (from base) and insert instructions."""
    position = 0

    def varint() -> int:
        nonlocal position
        value = shift = 0
        while True:
            byte = delta[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    if varint() != len(base):
        raise UnsupportedFormat("pack delta does not fit its base object")
    size = varint()
    out = bytearray()
    while position < len(delta):
        command = delta[position]
        position += 1
        if command & 0x80:
            start = length = 0
            for bit in range(4):
                if command & (1 << bit):
                    start |= delta[position] << (8 * bit)
                    position += 1
            for bit in range(3):
                if command & (0x10 << bit):
                    length |= delta[position] << (8 * bit)
                    position += 1
            out += base[start:start + (length or 0x10000)]
        elif command:
            out += delta[position:position + command]
            position += command
        else:
            raise UnsupportedFormat("pack delta has a reserved instruction")
    if len(out) != size:
        raise UnsupportedFormat("pack delta produced the wrong size")
    return bytes(out)


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
