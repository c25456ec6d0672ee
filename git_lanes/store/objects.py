"""A small git object database of our own: read loose and packed objects, write loose ones.

The agent-hook path runs on every tool call and cannot afford pygit2's import (~110 ms) or dulwich's; it reads
a handful of objects (the trunk's policy blob, a run's state) and writes three (blob, tree, commit). This is
enough git for that: zlib + SHA-1 loose objects written as git writes them (temporary file, then rename), and
pack v2 indexes with OFS/REF deltas, since `git gc` packs whatever we wrote (`packs.py`, loaded only when the
repository has a pack). Imports only the standard library.
"""

from __future__ import annotations

import itertools
import os
import stat
import zlib

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.digest import sha1

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from git_lanes.store.packs import Pack


# How deep git follows alternates that name alternates (link_alt_odb_entries: the repository's own list is at
# depth 0, and a list at a depth past this is ignored); libgit2 stops at the same depth.
ALTERNATES_DEPTH = 5
# What a write into the object database does, in the words of git's own error for it.
ADD_OBJECT = "add an object to the repository database"


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


def write_loose(objects_dir: str, kind: bytes, content: bytes, *, durable: bool = False, shared: int = 0,
                level: int = 1, oid: str | None = None) -> str:
    """Store an object loose as git does: deflated into a temporary file beside its final name, then linked
    to that name, so a reader sees the whole object or none and an object already there is never written
    over. One already there is touched instead, as git "freshens" it, so a `git gc` running now does not
    prune it as old before the commit that names it again lands. Six system calls; libgit2 makes about
    fourteen (it also rescans the pack folder for every new object). `durable` (the repository asked for it,
    see `durable_objects`): the file and its folder are synced before the id is returned, as libgit2 does,
    so a power cut cannot leave a ref naming an empty object. `shared` is `core.sharedRepository` as
    `shared_permissions` reads it: the folder and file get the modes git gives its own. `level` is the zlib
    level (`loose_compression`); an object's id never depends on it. `oid`: the id `object_id` gave these very
    bytes, when the caller has it (a batch keys its objects by id), so they are not hashed twice."""
    raw = b"%s %d\0%s" % (kind, len(content), content)
    if oid is None:
        oid = sha1(raw).hexdigest()
    directory = f"{objects_dir}/{oid[:2]}"  # not os.path.join: its generality is a measurable part of an op
    path = f"{directory}/{oid[2:]}"
    try:
        handle, temporary = _temporary(directory, shared)
        try:
            fill(handle, deflated(raw, level), shared=shared, durable=durable)
        except BaseException:
            os.close(handle)
            os.unlink(temporary)
            raise
        os.close(handle)
        try:
            os.link(temporary, path)
        except FileExistsError:
            try:
                os.utime(path)
            except OSError:
                pass  # someone else's object we may not touch: as git, we still use it
            os.unlink(temporary)
        except OSError:  # a file system without hard links: rename, as git falls back to
            os.replace(temporary, path)
        else:
            os.unlink(temporary)
        if durable:
            _sync_folder(directory)
    except OSError as exc:
        raise refused(exc, objects_dir) from exc
    return oid


def refused(exc: OSError, objects_dir: str) -> Exception:
    """What to raise for `exc`, met adding an object to `objects_dir`: a full disk, a read-only file system
    or no permission as one line naming the folder (git: "insufficient permission for adding an object to
    repository database"), anything else as it is."""
    from git_lanes.errors import write_failed

    return write_failed(exc, ADD_OBJECT, objects_dir) or exc


def fill(handle: int, data: bytes, *, shared: int, durable: bool) -> None:
    """Write all of `data` to the new file `handle`, with the modes `core.sharedRepository` asks for (see
    `shared_permissions`), synced to disk when `durable`."""
    if shared:
        os.fchmod(handle, shared_mode(stat.S_IMODE(os.fstat(handle).st_mode), shared))
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view):]
    if durable:
        os.fsync(handle)


def object_id(kind: bytes, content: bytes, hasher: Any = sha1) -> str:
    """The id git gives an object of `kind` holding `content`; `hasher` a SHA-1 (model/digest.py: the builtin
    one the agent-hook path loads, or OpenSSL's for a process that writes much)."""
    oid: str = hasher(b"%s %d\0%s" % (kind, len(content), content)).hexdigest()
    return oid


def deflated(raw: bytes, level: int) -> bytes:
    """`raw` as a zlib stream at `level`. Level 0 (stored) is framed here: zlib sets up its whole window even to
    store, which costs more than the bytes of a small object; the result is as standard a stream."""
    if level != 0:
        return zlib.compress(raw, level)
    size = len(raw)
    blocks = [b"\x78\x01"]
    for start in range(0, size, 0xFFFF):
        chunk = raw[start:start + 0xFFFF]
        final = start + 0xFFFF >= size
        blocks.append(bytes((final,)) + len(chunk).to_bytes(2, "little") + (len(chunk) ^ 0xFFFF).to_bytes(2, "little"))
        blocks.append(chunk)
    if not size:
        blocks.append(b"\x01\x00\x00\xff\xff")
    blocks.append(zlib.adler32(raw).to_bytes(4, "big"))
    return b"".join(blocks)


def _sync_folder(directory: str) -> None:
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def loose_compression(loose: str | None, core: str | None) -> int:
    """The zlib level git deflates a new loose object at: `core.looseCompression`, else `core.compression`,
    else 1 (best speed; libgit2 always writes loose objects at best speed). -1 is zlib's default level (6).
    The first of the two keys that is set decides, as in git; a value git would refuse to run with (not a
    number, or outside -1..9) is read as the default: it only trades speed for size."""
    for value in (loose, core):
        if value is not None:
            level = _config_int(value)
            return level if level is not None and -1 <= level <= 9 else 1
    return 1


def _config_int(value: str) -> int | None:
    """An integer config value as git parses one (strtoimax, base 0): leading white space, a sign, `0x` hex,
    `0` octal or decimal digits, then an optional unit k, m or g and nothing else (None: git refuses it)."""
    text = value.lstrip(" \t\n\v\f\r")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    number = text[:-1] if scale > 1 else text
    digits = number[1:] if number[:1] in "+-" else number
    if digits[:2] in ("0x", "0X"):
        base, allowed, digits = 16, "0123456789abcdefABCDEF", digits[2:]
    elif digits[:1] == "0":
        base, allowed = 8, "01234567"
    else:
        base, allowed = 10, "0123456789"
    if not digits or digits.strip(allowed):  # int() would take what git does not: "1_0", "9 ", other digits
        return None
    return int(number[:1] + digits if number[:1] in "+-" else digits, base) * scale


# What `core.fsync` may name that includes loose objects (git's default leaves them out).
LOOSE_FSYNC_COMPONENTS = frozenset({"loose-object", "objects", "committed", "added", "all"})


def durable_objects(fsync_object_files: bool, fsync: str | None) -> bool:
    """Whether git syncs a new loose object to disk, from `core.fsyncObjectFiles` (libgit2's switch, and
    git's before 2.36) and `core.fsync` (a list of components; a `-name` removes one, but a component named
    positively wins, as in git)."""
    names = {name.strip() for name in (fsync or "").split(",")}
    return fsync_object_files or bool(names & LOOSE_FSYNC_COMPONENTS)


# What `core.fsync` may name that includes packs or their indexes. git syncs those by default; unnamed, we
# sync a ledger checkpoint's pack as its loose objects would be (`durable_objects`), since it stands in for them.
PACK_FSYNC_COMPONENTS = frozenset({"pack", "pack-metadata", "derived-metadata", "objects", "committed", "added",
                                   "all"})


def durable_packs(fsync_object_files: bool, fsync: str | None) -> bool:
    """Whether a pack of objects written together is synced to disk: where loose ones are, and where
    `core.fsync` names packs (a component named positively wins, as in `durable_objects`)."""
    names = {name.strip() for name in (fsync or "").split(",")}
    return durable_objects(fsync_object_files, fsync) or bool(names & PACK_FSYNC_COMPONENTS)


_temporaries = itertools.count()
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
# Our pid, for the temporaries' names, without a system call per object; a forked child learns its own.
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def _temporary(directory: str, shared: int) -> tuple[int, str]:
    """A new file of our own in `directory` (made when missing), named as git names its temporary objects,
    so `git gc` clears one a killed writer left behind."""
    while True:
        temporary = f"{directory}/tmp_obj_{_pid}_{next(_temporaries)}"
        try:
            return os.open(temporary, _CREATE, 0o444), temporary
        except FileExistsError:
            continue  # left by a killed process that had our pid
        except FileNotFoundError:
            _make_folder(directory, shared)


def _make_folder(directory: str, shared: int) -> None:
    try:
        os.mkdir(directory)
    except FileExistsError:
        return  # another writer made it (and set its modes)
    except FileNotFoundError:  # `objects/` itself is missing: only then is makedirs' walk worth its calls
        os.makedirs(os.path.dirname(directory), exist_ok=True)
        try:
            os.mkdir(directory)
        except FileExistsError:
            return
    if shared:  # as git, only a folder we made ourselves
        os.chmod(directory, shared_mode(stat.S_IMODE(os.stat(directory).st_mode), shared, folder=True))


def shared_permissions(value: str | None) -> int:
    """`core.sharedRepository` as git reads it: 0 for the umask alone, the bits to add (group 0o660,
    everybody 0o664), or minus the exact mode (`0640`)."""
    if value is None:
        return 0
    word = value.strip().lower()
    if word in ("umask", "false", "no", "off", "0", ""):
        return 0
    if word in ("group", "true", "yes", "on", "1"):
        return 0o660
    if word in ("all", "world", "everybody", "2"):
        return 0o664
    try:
        mode = int(word, 8)
    except ValueError:
        return 0o660  # git refuses to run here; the group reading keeps others able to write
    return -(mode & 0o666) if mode & 0o600 == 0o600 else 0o660


def shared_mode(mode: int, shared: int, *, folder: bool = False) -> int:
    """The mode git's adjust_shared_perm gives a file or folder made with `mode` (see `shared_permissions`)."""
    tweak = -shared if shared < 0 else shared
    if not mode & stat.S_IWUSR:
        tweak &= ~0o222  # a read-only object stays read-only
    if mode & stat.S_IXUSR:
        tweak |= (tweak & 0o444) >> 2
    new = (mode & ~0o777) | tweak if shared < 0 else mode | tweak
    if folder:
        new |= (new & 0o444) >> 2
        if new & 0o060:
            new |= stat.S_ISGID  # files made in it belong to its group
    return new


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
