"""Objects written together as one pack: a version-2 pack and its version-2 index, as `git index-pack` leaves
them, so git, libgit2 and dulwich read them like any pack a fetch brought.

A ledger checkpoint writes every record that changed since the last one (a blob each) and the folders on
their paths: some fifty objects every 32 ops. Loose, each costs a file made, linked and unlinked; on ext4,
making files is most of an op's time. As one pack they cost two files. The pack is whole before anyone can
see it: both files are written under temporary names (`tmp_pack_…`, `tmp_idx_…`, which `git prune` clears
when a killed writer leaves one), then the pack is renamed into place and the index last, since readers
find a pack by its index.

Until a ref names its objects, a new pack is guarded by a `.keep` file, made before the pack is visible, as
git guards the pack a fetch or push brings until its refs move (`index-pack --keep`): `git repack -a -d`
drops a pack's unreachable objects at once (loose ones it leaves alone), so run in that window it would take
a checkpoint's commit with it. The writer removes the `.keep` once its ref moved (`release`); one a killed
writer left only stops git from repacking that one small pack (the ledger's upkeep removes it: `stale_keeps`).

Each object is stored whole (no deltas) at the level the caller picks; `git gc` repacks them with deltas."""

from __future__ import annotations

import os
import struct
import time
import zlib

from git_lanes.model.digest import openssl_sha1
from git_lanes.store import spare_objects
from git_lanes.store.loose_write import deflated, fill, refused, sync_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

PACK_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
ROLL_UP_AT = 16  # packs past which upkeep rolls them up: it runs about every 500 ops, 16 checkpoints later
ROLL_UP_STALE_SECONDS = 3600
MAX_OFFSET = 0x7FFFFFFF  # beyond it an index needs its table of large offsets, which no batch here reaches
_serial = iter(range(1 << 62))
# A `.keep` file's text names why the pack is kept, as git's own do ("receive-pack 123 on host").
KEEP_NOTE = b"git-lanes: until a ref names these objects (pid "


def write_pack(objects_dir: str, objects: Iterable[tuple[str, bytes, bytes, int]], *, durable: bool,
               shared: int, keep: bool = False) -> tuple[str, str | None]:
    """Write `objects` (id, kind, content, zlib level; each id once) as one pack in `objects_dir/pack` and
    return its name (`pack-<checksum>`) and, with `keep`, the path of the `.keep` file that guards it until
    `release` (None where one was already there: not ours to remove). `durable`: both files and the folder
    are synced before the pack is visible. `shared`: the modes `core.sharedRepository` asks for (see
    `loose_write.shared_permissions`)."""
    entries: list[tuple[bytes, int, int]] = []  # (raw id, crc32 of the packed entry, offset)
    chunks = [b""]  # the header, once the count is known
    offset = 12
    for oid, kind, content, level in objects:
        packed = _entry_header(PACK_TYPES[kind], len(content)) + deflated(content, level)
        entries.append((bytes.fromhex(oid), zlib.crc32(packed), offset))
        chunks.append(packed)
        offset += len(packed)
    if offset > MAX_OFFSET:
        raise ValueError("too large for one small pack")
    chunks[0] = b"PACK" + struct.pack(">II", 2, len(entries))
    pack = b"".join(chunks)
    checksum = openssl_sha1()(pack).digest()
    pack += checksum
    entries.sort()
    index = _index(entries, checksum)
    name = f"pack-{checksum.hex()}"
    try:
        kept = _placed(objects_dir, name, pack, index, durable, shared, keep)
    except OSError as exc:
        raise refused(exc, objects_dir) from exc
    return name, kept


def _placed(objects_dir: str, name: str, pack: bytes, index: bytes, durable: bool, shared: int,
            keep: bool) -> str | None:
    """The pack and its index in place (and its `.keep` with `keep`: its path, as `write_pack` returns it)."""
    folder = os.path.join(objects_dir, "pack")
    os.makedirs(folder, exist_ok=True)
    placed = _placed_ahead(objects_dir, folder, name, pack, index, durable, shared, keep)
    if placed is not None:
        return placed[0]
    serial = f"{os.getpid()}_{next(_serial)}"
    pack_temporary = _written(os.path.join(folder, f"tmp_pack_{serial}"), pack, durable, shared)
    try:
        index_temporary = _written(os.path.join(folder, f"tmp_idx_{serial}"), index, durable, shared)
    except BaseException:
        os.unlink(pack_temporary)
        raise
    kept = None
    if keep:
        try:
            kept = _written(os.path.join(folder, f"{name}.keep"), _keep_note(), False, shared)
        except FileExistsError:
            pass
        except BaseException:
            os.unlink(pack_temporary)
            os.unlink(index_temporary)
            raise
    # The same objects in the same order make the same bytes: a pack already there is replaced by its twin
    os.replace(pack_temporary, os.path.join(folder, f"{name}.pack"))
    os.replace(index_temporary, os.path.join(folder, f"{name}.idx"))
    if durable:
        sync_folder(folder)
    return kept


def _placed_ahead(objects_dir: str, folder: str, name: str, pack: bytes, index: bytes, durable: bool, shared: int,
                  keep: bool) -> tuple[str | None] | None:
    """As `_placed`, into files made ahead (spare_objects), so a pack written while the ledger's lock is
    held creates no file: `_placed`'s answer, in a tuple; None where there were not enough files or one
    could not be named (nothing of ours is left in place then: the caller writes the pack the ordinary
    way). A failed write (a full disk) is raised, as the ordinary way would fail the same. In git's order:
    the `.keep` first, the pack, then its index, which is what readers look for."""
    wanted = 3 if keep else 2
    handles: list[int] = []
    try:
        while len(handles) < wanted:
            handle = spare_objects.take(objects_dir, shared)
            if handle < 0:
                break
            handles.append(handle)
        if len(handles) < wanted:
            for handle in handles:
                spare_objects.give_back(objects_dir, handle)
            handles = []
            return None
        fill(handles[0], pack, shared=shared, durable=durable)
        fill(handles[1], index, shared=shared, durable=durable)
        if keep:
            fill(handles[2], _keep_note(), shared=shared, durable=False)
        kept = None
        try:
            if keep:
                try:
                    spare_objects.link(handles[2], os.path.join(folder, f"{name}.keep"), objects_dir)
                    kept = os.path.join(folder, f"{name}.keep")
                except FileExistsError:
                    pass  # someone else's: not ours to remove
            for handle, suffix in ((handles[0], "pack"), (handles[1], "idx")):
                try:
                    spare_objects.link(handle, os.path.join(folder, f"{name}.{suffix}"), objects_dir)
                except FileExistsError:
                    pass  # its twin: the same objects in the same order make the same bytes
        except OSError:
            if kept is not None:
                os.unlink(kept)
            return None
    finally:
        for handle in handles:
            os.close(handle)
    if durable:
        sync_folder(folder)
    return (kept,)


def release(keeps: Iterable[str]) -> None:
    """Remove the `.keep` files `write_pack` made, once a ref names what their packs hold (or nothing will)."""
    for path in keeps:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _host() -> bytes:
    return os.uname().nodename.encode() if hasattr(os, "uname") else b""


def _keep_note() -> bytes:
    return b"%s%d on %s)\n" % (KEEP_NOTE, os.getpid(), _host())


def stale_keeps(pack_dir: str, names: Iterable[str]) -> list[str]:
    """The `.keep` files among `names` that a writer of ours on this machine, dead now, left: the ref move
    they waited for is done or will never come."""
    stale = []
    for name in names:
        if not name.endswith(".keep"):
            continue
        path = os.path.join(pack_dir, name)
        try:
            with open(path, "rb") as handle:
                note = handle.read(512)
        except OSError:
            continue
        if not note.startswith(KEEP_NOTE):
            continue  # git's own, or the user's
        pid, _, host = note[len(KEEP_NOTE):].rstrip(b")\n").partition(b" on ")
        if not pid.isdigit() or host != _host():
            continue  # another machine's writer: whether it lives cannot be told from here
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            stale.append(path)
        except (PermissionError, OverflowError):
            pass  # alive (another user's process), or no pid at all
    return stale


def _entry_header(kind: int, size: int) -> bytes:
    """An entry's type and inflated size: four bits of size in the first byte, seven in each after."""
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    header = bytearray()
    while size:
        header.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    header.append(byte)
    return bytes(header)


def _index(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """A version-2 index of `entries` (sorted by id): fan-out table, ids, CRCs, offsets, both checksums."""
    fanout = [0] * 256
    for raw, _, _ in entries:
        fanout[raw[0]] += 1
    total = 0
    for first in range(256):
        total += fanout[first]
        fanout[first] = total
    count = len(entries)
    index = b"".join((b"\377tOc", struct.pack(">I", 2), struct.pack(">256I", *fanout),
                      b"".join(raw for raw, _, _ in entries),
                      struct.pack(f">{count}I", *(crc for _, crc, _ in entries)),
                      struct.pack(f">{count}I", *(offset for _, _, offset in entries)), pack_checksum))
    return index + openssl_sha1()(index).digest()


def _written(path: str, data: bytes, durable: bool, shared: int) -> str:
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o444)
    try:
        fill(handle, data, shared=shared, durable=durable)
    except BaseException:
        os.close(handle)
        os.unlink(path)
        raise
    os.close(handle)
    return path


def upkeep_due(objects_dir: str, auto: int, pack_limit: int) -> tuple[bool, bool]:
    """(roll up, gc): whether `roll_up` and `git gc --auto` would do anything, by git's own tests (gc.c's
    `need_to_gc`), so upkeep starts no git process (~10-60 ms) when neither would. `auto`: gc.auto (≤ 0:
    git's upkeep is off, and so is ours); `pack_limit`: gc.autoPackLimit. git counts local packs not kept
    by a `.keep` file against the limit, and estimates loose objects from `objects/17` alone. A `.keep` a
    killed writer of ours left goes first (`stale_keeps`). No roll-up where a multi-pack-index is."""
    if auto <= 0:
        return False, False
    pack_dir = os.path.join(objects_dir, "pack")
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        names = set()
    stale = stale_keeps(pack_dir, names)
    release(stale)
    names.difference_update(os.path.basename(path) for path in stale)
    packs = sum(1 for name in names if name.endswith(".pack") and f"{name[:-5]}.keep" not in names)
    # A multi-pack-index means git's own maintenance packs here (`git maintenance`'s incremental-repack):
    # leave the packs to it. Rolling up under it would remove packs the index names, which a held-open
    # libgit2 (that keeps the index it loaded) then fails to read until it restarts.
    roll = pack_limit > 0 and packs > ROLL_UP_AT and "multi-pack-index" not in names
    if pack_limit > 0 and packs > pack_limit:
        return roll, True
    threshold = -(-auto // 256)
    try:
        sample = os.listdir(os.path.join(objects_dir, "17"))
    except FileNotFoundError:
        return roll, False
    loose = sum(1 for name in sample if len(name) == 38 and not name.strip("0123456789abcdef"))
    return roll, loose > threshold


def roll_up(root: str, lock: str, *, background: bool = True) -> None:
    """Have git merge the small packs (`git repack -d -l --geometric=2`, git 2.32): each merge costs what the
    small packs hold, not what the repository holds, and a large pack is left as it is. Without it `git gc
    --auto` would repack everything into one pack once there are more than `gc.autoPackLimit` (50).

    One at a time: `lock` is made exclusively and removed when git is done. As git's `gc.pid`, it names the
    process that holds it and its host: one whose process is gone on this host was left by a killed roll-up
    (or a writer killed before it started git) and is taken over at once; one from elsewhere, or from an
    older git-lanes that named no one, after an hour. In the background by default, as `git gc --auto`
    detaches: the appender that found it due waits for a shell to start git (~3 ms), not for the repack
    (50-200 ms)."""
    host = _host().decode("utf-8", "replace")
    if not _take(lock, host):
        return
    command = ["git", "-C", root, "repack", "-d", "-l", "--geometric=2", "--quiet"]
    import subprocess  # only here: most appends never roll up, and subprocess costs ~3 ms to load

    if not background:
        try:
            subprocess.run(command, capture_output=True, timeout=600)
        finally:
            _let_go(lock)
        return
    # The inner shell outlives the shell that starts it, so it is nobody's child to wait for; it names itself
    # in the lock before it runs git, so the lock is stale exactly when that shell is gone.
    detached = '"$@" </dev/null >/dev/null 2>&1 &'
    owned = 'echo "$$ $1" >"$0"; shift; "$@"; rm -f "$0"'
    try:
        subprocess.run(["sh", "-c", detached, "sh", "sh", "-c", owned, lock, host, *command],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       start_new_session=True, timeout=60)
    except BaseException:
        _let_go(lock)
        raise


def _take(lock: str, host: str) -> bool:
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        except FileExistsError:
            try:
                if not _abandoned(lock, host):
                    return False  # a roll-up is running
                os.unlink(lock)
            except FileNotFoundError:
                pass  # it just finished: try again
            continue
        except OSError:  # a repository we may not write to: nothing to roll up with
            return False
        try:
            os.write(fd, f"{os.getpid()} {host}\n".encode())
        finally:
            os.close(fd)
        return True
    return False


def _abandoned(lock: str, host: str) -> bool:
    """Whether the roll-up that made `lock` is gone: its process, named in it, no longer runs on this host
    (git's test for `gc.pid`), or, where that cannot be told, it was made over an hour ago."""
    with open(lock, "rb") as handle:
        owner = handle.read(512).split(None, 1)
    if len(owner) == 2 and owner[0].isdigit() and owner[1].strip().decode("utf-8", "replace") == host:
        try:
            os.kill(int(owner[0]), 0)
        except ProcessLookupError:
            return True
        except (PermissionError, OverflowError):
            pass  # another user's process runs under that number
        else:
            return False
    return time.time() - os.stat(lock).st_mtime >= ROLL_UP_STALE_SECONDS


def _let_go(lock: str) -> None:
    try:
        os.unlink(lock)
    except FileNotFoundError:
        pass
