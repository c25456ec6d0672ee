"""Loose objects written as git writes them, with the standard library: deflated into a temporary file beside
the final name, then linked into place, with the modes `core.sharedRepository` asks for and synced where the
config asks for durable objects; and those settings read as git reads them. `pack_write.py` writes its packs
with the same pieces (`deflated`, `fill`, `refused`). The agent-hook path writes through here
(`objects.ObjectStore`), as does the ledger's object cache (`object_cache.py`)."""

from __future__ import annotations

import itertools
import os
import stat
import zlib

from git_lanes.model.digest import sha1
from git_lanes.store import spare_objects
from git_lanes.store.gitfiles import config_int

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What a write into the object database does, in the words of git's own error for it.
ADD_OBJECT = "add an object to the repository database"


def write_loose(objects_dir: str, kind: bytes, content: bytes, *, durable: bool = False, shared: int = 0,
                level: int = 1, oid: str | None = None) -> str:
    """Store an object loose as git does: deflated into a temporary file beside its final name, then linked
    to that name, so a reader sees the whole object or none and an object already there is never written
    over. One already there is touched instead, as git "freshens" it, so a `git gc` running now does not
    prune it as old before the commit that names it again lands. Six system calls; libgit2 makes about
    fourteen (it also rescans the pack folder for every new object). A process that writes many objects
    writes them into files made ahead instead (spare_objects): three calls, and no file to create. `durable` (the repository asked for it,
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
        data = deflated(raw, level)
        handle = spare_objects.take(objects_dir, shared)
        if handle >= 0 and _into_spare(handle, data, objects_dir, directory, path, shared, durable):
            return oid
        handle, temporary = _temporary(directory, shared)
        try:
            fill(handle, data, shared=shared, durable=durable)
        except BaseException:
            os.close(handle)
            os.unlink(temporary)
            raise
        os.close(handle)
        try:
            os.link(temporary, path)
        except FileExistsError:
            _freshen(path)
            os.unlink(temporary)
        except OSError:  # a file system without hard links: rename, as git falls back to
            os.replace(temporary, path)
        else:
            os.unlink(temporary)
        if durable:
            sync_folder(directory)
    except OSError as exc:
        raise refused(exc, objects_dir) from exc
    return oid


def _into_spare(handle: int, data: bytes, objects_dir: str, directory: str, path: str, shared: int,
                durable: bool) -> bool:
    """Write `data` into the anonymous file `handle` made ahead (spare_objects) and name it `path`, closing
    it: whether that was done. A failed write (a full disk) is raised, as the ordinary way would fail the
    same; a failed naming answers False, for the caller to write the object the ordinary way, which
    reports what stops it as git would."""
    try:
        fill(handle, data, shared=shared, durable=durable)
        try:
            try:
                spare_objects.link(handle, path, objects_dir)
            except FileNotFoundError:  # the object's folder is new
                _make_folder(directory, shared)
                spare_objects.link(handle, path, objects_dir)
        except FileExistsError:
            _freshen(path)
        except OSError:
            return False
    finally:
        os.close(handle)
    if durable:
        sync_folder(directory)
    return True


def _freshen(path: str) -> None:
    """An object already stored: touched, as git "freshens" it (see `write_loose`)."""
    try:
        os.utime(path)
    except OSError:
        pass  # someone else's object we may not touch: as git, we still use it


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


def sync_folder(directory: str) -> None:
    """Make the names just linked or renamed into `directory` durable (the files' own data is synced apart)."""
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
            level = config_int(value)
            return level if level is not None and -1 <= level <= 9 else 1
    return 1


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
