"""A workspace's index file as bytes, kept by a process that follows a watcher, so that a snapshot which
changed a few entries rewrites the file by splicing those entries in. libgit2's `Index.write` serializes
every entry again and hashes the file with its collision-detecting SHA-1: at 50,000 files ~21 ms, half of it
that SHA-1, against ~2 ms for hashlib's. git's format has no partial write, so the whole file is still
written (lock, write, rename, as git does); only the serializing and the slow hash are saved.

Only what libgit2 itself writes is edited here: an index of version 2 (no entry with extended flags, no path
of 4,095 bytes or more), no conflicts, and no extension but the cached tree (TREE). The new entries are
libgit2's own, read from its index in memory and laid out as it lays them out, and the cached tree is
invalidated along each changed path as libgit2 invalidates it, so the file is byte for byte what `Index.write`
would write (a test compares the two). Anything else is left to libgit2.

What libgit2's write does besides, and this one does not: smudging "racily clean" entries (a file changed in
the same clock tick as the index's last write, after it was hashed) not re-read since. A process following a
watcher re-reads every file the kernel reported since the last write, which libgit2 counts as up to date and
does not check either; a scan, which trusts no watcher, writes with libgit2."""

from __future__ import annotations

import hashlib
import os
import struct
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pygit2

try:  # libgit2's own entries, stat data and all, which pygit2's IndexEntry leaves out
    from pygit2.ffi import C, ffi
except ImportError:  # a pygit2 without its cffi module: libgit2 writes every index
    C = ffi = None

_SIGNATURE = b"DIRC"
_HEADER = struct.Struct(">4sII")
_STAT = struct.Struct(">10I")
_PATH_AT = 62  # an entry's path follows 40 bytes of stat data, a 20-byte id and 2 bytes of flags
_NAME_MASK = 0x0FFF
_STAGE = 0x3000  # an entry's merge stage: not 0 only in a conflict
_HAS_EXTENDED = 0x4000  # a version 3 entry: extended flags follow the flags
_STAGE_OR_EXTENDED = _STAGE | _HAS_EXTENDED
_EXTENDED_FLAGS = (1 << 13) | (1 << 14)  # libgit2's INTENT_TO_ADD and SKIP_WORKTREE: a version 3 entry
_TREE = b"TREE"
_ID_SIZE = 20


class Unsupported(Exception):
    """The index holds something only libgit2 writes (see the module's docstring)."""


def _size(name_length: int) -> int:
    return (_PATH_AT + name_length + 8) & ~7  # NUL-padded to a multiple of 8, at least one NUL


class IndexImage:
    """The bytes of one index file as last written, with where each entry starts."""

    def __init__(self, path: Path, data: bytearray, offsets: list[int], tree: _CachedTree | None,
                 stamp: tuple[int, int, int, int] | None) -> None:
        self.path = path
        self._data = data  # header and entries; the extension and checksum are made on writing
        self._offsets = offsets
        self._tree = tree
        self.stamp = stamp  # the file's, as `_stamp` says: git and libgit2 replace it, never rewrite it

    @classmethod
    def load(cls, path: Path) -> IndexImage:
        """Read the index at `path`; Unsupported when it holds anything this module does not write."""
        with open(path, "rb") as file:
            data = bytearray(file.read())
            stamp = _stamp(file.fileno())
        if len(data) < _HEADER.size + _ID_SIZE:
            raise Unsupported("a truncated index")
        signature, version, count = _HEADER.unpack_from(data)
        if signature != _SIGNATURE or version != 2:
            raise Unsupported(f"an index of version {version}")
        with memoryview(data) as whole, whole[:-_ID_SIZE] as hashed:  # released: `data` is resized below
            if hashlib.sha1(hashed).digest() != data[-_ID_SIZE:]:
                raise Unsupported("an index whose checksum does not match")
        offsets, seen, position = _walk(data, _HEADER.size, count, len(data) - _ID_SIZE)
        if seen & _STAGE_OR_EXTENDED:
            raise Unsupported("conflicts or extended flags")
        tree = None
        extensions = bytes(data[position:-_ID_SIZE])
        if extensions:
            if bytes(extensions[:4]) != _TREE or int.from_bytes(extensions[4:8], "big") != len(extensions) - 8:
                raise Unsupported("an extension other than the cached tree")
            tree = _CachedTree(extensions[8:])
        del data[position:]
        return cls(path, data, offsets, tree, stamp)

    def apply(self, index: pygit2.Index, paths: Iterable[str]) -> None:
        """Make each of `paths` what libgit2's `index` in memory holds for it (absent: removed)."""
        pointer = getattr(index, "_index", None)
        if C is None or pointer is None:
            raise Unsupported("this pygit2 does not give libgit2's entries")
        offsets, data = self._offsets, self._data
        # From the last path down, so that the entries still to be found keep their offsets: `high` is the
        # lowest entry edited so far and `edge` where it starts; the offsets from there on are made again.
        high, edge, count, resized = len(offsets), len(data), len(offsets), False
        for encoded in sorted((os.fsencode(path) for path in paths), reverse=True):
            number = bisect_left(offsets, encoded, hi=high, key=self._path_at)
            present = number < high and self._path_at(offsets[number]) == encoded
            start = offsets[number] if number < high else edge
            end = start + _size(len(encoded)) if present else start
            entry = C.git_index_get_bypath(pointer, encoded, 0)
            new = _entry_bytes(entry, encoded) if entry != ffi.NULL else b""
            data[start:end] = new
            resized |= len(new) != end - start
            count += bool(new) - present
            high, edge = number, start
            if self._tree is not None:
                self._tree.invalidate(encoded)
        if resized:  # an entry came or went: the ones after it moved
            tail, _, position = _walk(data, edge, count - high, len(data))
            if position != len(data):
                raise Unsupported("the entries do not fill the index")  # never expected: libgit2 writes then
            self._offsets = offsets[:high] + tail
        if len(self._offsets) != len(index):
            raise Unsupported("the entries do not add up to libgit2's")  # never expected, as above
        _HEADER.pack_into(data, 0, _SIGNATURE, 2, len(self._offsets))

    def write(self) -> None:
        """Write the file as git does: into `index.lock`, made only if absent (FileExistsError when another
        process holds it), then renamed over the index."""
        parts: list[bytes | bytearray] = [self._data]
        if self._tree is not None:
            cached = self._tree.serialized()
            parts.append(_TREE + len(cached).to_bytes(4, "big") + cached)
        digest = hashlib.sha1()
        for part in parts:
            digest.update(part)
        parts.append(digest.digest())
        lock = self.path.with_name(self.path.name + ".lock")
        descriptor = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            try:
                total = sum(len(part) for part in parts)
                written = os.writev(descriptor, parts)
                if written != total:  # a short write (a signal, a full disk): finish it plainly
                    rest = memoryview(b"".join(parts))[written:]
                    while rest:
                        rest = rest[os.write(descriptor, rest):]
            finally:
                os.close(descriptor)
            os.replace(lock, self.path)
        except BaseException:
            lock.unlink(missing_ok=True)
            raise
        self.stamp = _stamp(self.path)

    def _path_at(self, offset: int) -> bytes:
        length = ((self._data[offset + 60] << 8) | self._data[offset + 61]) & _NAME_MASK
        return bytes(self._data[offset + _PATH_AT:offset + _PATH_AT + length])


def _walk(data: bytearray, position: int, count: int, end: int) -> tuple[list[int], int, int]:
    """Where each of `count` entries starting at `position` starts, the union of their flags, and where
    they end; Unsupported when they would run past `end` or a path is too long to find by its length."""
    offsets = [0] * count
    seen = 0
    for number in range(count):  # ~8 ms at 50,000 entries, the cost of reading an index again
        if position + _PATH_AT > end:
            raise Unsupported("a truncated index")
        offsets[number] = position
        flags = (data[position + 60] << 8) | data[position + 61]
        seen |= flags
        length = flags & _NAME_MASK
        if length == _NAME_MASK:
            raise Unsupported("a path of 4,095 bytes or more")
        position += (_PATH_AT + 8 + length) & ~7
    if position > end:
        raise Unsupported("a truncated index")
    return offsets, seen, position


def _entry_bytes(entry: Any, path: bytes) -> bytes:
    """One entry (libgit2's git_index_entry) as libgit2's write_disk_entry lays it out in a version 2 index."""
    if entry.flags_extended & _EXTENDED_FLAGS:
        raise Unsupported("an entry with extended flags (intent to add, skip worktree)")
    if len(path) >= _NAME_MASK:
        raise Unsupported("a path of 4,095 bytes or more")
    if entry.flags & _STAGE:
        raise Unsupported("a conflict")
    head = _STAT.pack(entry.ctime.seconds & 0xFFFFFFFF, entry.ctime.nanoseconds, entry.mtime.seconds & 0xFFFFFFFF,
                      entry.mtime.nanoseconds, entry.dev, entry.ino, entry.mode, entry.uid, entry.gid,
                      entry.file_size & 0xFFFFFFFF)
    flags: int = entry.flags & ~_HAS_EXTENDED  # libgit2 sets it as it writes, from flags_extended
    raw = bytes(ffi.buffer(ffi.addressof(entry, "id"))[:_ID_SIZE])
    body: bytes = head + raw + flags.to_bytes(2, "big") + path
    return body + b"\0" * (_size(len(path)) - len(body))


class _CachedTree:
    """The cached tree extension (git's index-format.txt, "Cache tree"), node by node in its own order."""

    def __init__(self, data: bytes) -> None:
        self._parts: list[bytes] = []  # one per node, in the order written
        self._names: list[bytes] = []
        self._children: list[dict[bytes, int]] = []
        self._subtrees: list[int] = []
        try:
            position = self._read(data, 0)
        except RecursionError:
            raise Unsupported("a cached tree nested deeper than Python recurses") from None
        if position != len(data):
            raise Unsupported("a cached tree with bytes after its root")

    def _read(self, data: bytes, position: int) -> int:
        try:
            name_end = data.index(b"\0", position)
            line_end = data.index(b"\n", name_end)
            count, subtrees = (int(field) for field in data[name_end + 1:line_end].split(b" "))
        except ValueError:
            raise Unsupported("a malformed cached tree") from None
        end = line_end + 1 + (_ID_SIZE if count >= 0 else 0)
        if end > len(data):
            raise Unsupported("a truncated cached tree")
        node = len(self._parts)
        self._parts.append(data[position:end])
        self._names.append(data[position:name_end])
        self._children.append({})
        self._subtrees.append(subtrees)
        position = end
        for _ in range(subtrees):
            child = len(self._parts)
            position = self._read(data, position)
            self._children[node][self._names[child]] = child
        return position

    def invalidate(self, path: bytes) -> None:
        """Mark the root and every cached folder above `path` as out of date (libgit2's
        git_tree_cache_invalidate_path, so that the file stays what libgit2 writes)."""
        node = 0
        self._mark(node)
        for name in path.split(b"/")[:-1]:
            found = self._children[node].get(name)
            if found is None:
                return
            node = found
            self._mark(node)

    def _mark(self, node: int) -> None:
        self._parts[node] = b"%s\0-1 %d\n" % (self._names[node], self._subtrees[node])

    def serialized(self) -> bytes:
        return b"".join(self._parts)


def _stamp(path: Path | int) -> tuple[int, int, int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns
