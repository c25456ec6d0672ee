"""Reading git's packs (version-2 indexes, OFS/REF deltas): `git gc` packs whatever the hook path wrote, so
its object reader must follow. Loaded by `objects.ObjectStore` only once a repository has a pack, so a hook
call in a repository of loose objects pays for none of this."""

from __future__ import annotations

import mmap
import struct
import zlib

from git_lanes.errors import UnsupportedFormat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

TYPE_NAMES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
OFS_DELTA, REF_DELTA = 6, 7
MAX_DELTA_CHAIN = 10_000


class Pack:
    """One pack and its version-2 index, memory-mapped on first use."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._idx: mmap.mmap | None = None
        self._pack: mmap.mmap | None = None
        self._count = 0

    def _open(self) -> None:
        if self._idx is not None:
            return
        # Both files mapped before either is kept: once mapped, a `git repack -d` removing them cannot take
        # them away, and one found missing leaves this pack unopened (the caller lists the packs again).
        with open(str(self.base) + ".idx", "rb") as handle:
            idx = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if idx[:8] != b"\377tOc\0\0\0\2":
            raise UnsupportedFormat(f"{self.base}.idx is not a version-2 pack index")
        with open(str(self.base) + ".pack", "rb") as handle:
            self._pack = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self._count = struct.unpack_from(">I", idx, 8 + 255 * 4)[0]
        self._idx = idx

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
        return int(offset)

    def read_at(self, offset: int, read: Callable[[str], tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
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
                base_kind, base_content = read(base)  # a base in another pack, or loose
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
