"""Loose objects written into files made ahead (store/spare_objects.py): a process that writes many objects
gets their files made by a thread as anonymous files, so a write waits on no create. What is written stays
plain git (git and dulwich read it, fsck finds nothing), nothing is ever left behind (not by kill -9), a
forked child never writes into its parent's files, and where a file cannot be made or named ahead the
object is written the ordinary way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import fsck_clean, git
from dulwich.repo import Repo as DulwichRepo

from git_lanes.store import loose_write, spare_objects

pytestmark = pytest.mark.skipif(not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"),
                                reason="anonymous files are Linux's")


@pytest.fixture(autouse=True)
def spares(monkeypatch):
    """A fresh pool for each test, making files ahead wherever the test's folder is (a folder in memory
    would not by default)."""
    fresh = spare_objects._Spares()
    monkeypatch.setattr(spare_objects, "_spares", fresh)
    monkeypatch.setattr(spare_objects, "_worth_it", lambda objects_dir: True)
    return fresh


def _objects(repo: Path) -> str:
    return str(repo / ".git" / "objects")


def _write(repo: Path, text: str) -> str:
    return loose_write.write_loose(_objects(repo), b"blob", text.encode())


def _ready(spares, count: int = spare_objects.AHEAD) -> None:
    """Wait until the thread has made `count` files (it runs beside the test; nothing here is timed)."""
    deadline = time.monotonic() + 60
    while len(spares.ready) < count:
        assert time.monotonic() < deadline, "no files were made ahead"
        time.sleep(0.01)


def _settled(spares) -> None:
    """Wait until the thread has made its files and the fan-out folders, and sleeps."""
    _ready(spares)
    deadline = time.monotonic() + 60
    while spares.folders is None or spares.folders:
        assert time.monotonic() < deadline, "the fan-out folders were not made"
        time.sleep(0.01)
    time.sleep(0.05)  # from its last folder back to waiting: nothing asserted depends on this being enough


def _started(repo: Path, spares) -> list[str]:
    """Enough objects written for files to be made ahead for `repo`, and the thread done making them."""
    written = [_write(repo, f"warm-up {i}\n") for i in range(spare_objects.AHEAD_AFTER)]
    _ready(spares)
    return written


def _anonymous_files() -> int:
    """Open descriptors of this process on files that have no name."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").endswith("(deleted)"):
                count += 1
        except OSError:
            pass
    return count


def _stray_files(repo: Path) -> list[str]:
    """Anything in the objects folder but git's own: fan-out folders of objects, `pack`, `info`."""
    stray = []
    for entry in os.scandir(_objects(repo)):
        if entry.name in ("pack", "info"):
            continue
        if len(entry.name) != 2 or not entry.is_dir():
            stray.append(entry.name)
            continue
        stray.extend(f"{entry.name}/{name}" for name in os.listdir(entry.path) if len(name) != 38)
    return stray


def test_objects_written_into_files_made_ahead_are_plain_git(repo, spares):
    _started(repo, spares)
    before = spares.used
    count = spare_objects.AHEAD  # as many as were made ahead: the test does not wait on the thread
    written = {_write(repo, f"object {i}\n"): f"object {i}\n" for i in range(count)}
    assert spares.used - before == count  # every one of them went into a file made ahead
    dulwich = DulwichRepo(str(repo))
    for oid, text in written.items():
        assert git("cat-file", "-p", oid, cwd=repo) == text
        assert dulwich[oid.encode()].data == text.encode()
        path = Path(_objects(repo)) / oid[:2] / oid[2:]
        assert path.stat().st_mode & 0o777 == 0o444 & ~_umask()
        assert path.stat().st_nlink == 1
    assert _stray_files(repo) == []
    assert "garbage: 0" in git("count-objects", "-v", cwd=repo)
    fsck_clean(repo)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_an_object_already_stored_is_freshened_and_its_file_made_ahead_let_go(repo, spares):
    _started(repo, spares)
    _settled(spares)
    oid = _write(repo, "twice\n")  # takes one of the files: too few gone for the thread to make more
    path = Path(_objects(repo)) / oid[:2] / oid[2:]
    os.utime(path, (1_000_000, 1_000_000))
    held = _anonymous_files()
    used = spares.used
    assert _write(repo, "twice\n") == oid
    assert spares.used == used + 1
    assert path.stat().st_mtime > 1_000_000  # as git freshens it, so a gc running now keeps it
    assert _anonymous_files() <= held  # the file made ahead was closed, not kept
    assert _stray_files(repo) == []


def test_a_process_killed_while_it_holds_files_made_ahead_leaves_none_behind(repo, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(f"""
import os, sys, time
from git_lanes.store import loose_write, spare_objects
spare_objects._worth_it = lambda objects_dir: True
def ready():
    while len(spare_objects._spares.ready) < spare_objects.AHEAD:
        time.sleep(0.01)
for i in range(spare_objects.AHEAD_AFTER):
    loose_write.write_loose({_objects(repo)!r}, b"blob", b"before the kill %d" % i)
ready()
for i in range(4):
    loose_write.write_loose({_objects(repo)!r}, b"blob", b"into a file made ahead %d" % i)
print(spare_objects._spares.used, flush=True)
time.sleep(600)
""")
    writer = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert int(writer.stdout.readline()) > 0  # it wrote into files made ahead, and holds more
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    assert _stray_files(repo) == []
    fsck_clean(repo)


def test_a_forked_child_never_writes_into_its_parents_files(repo, spares):
    _started(repo, spares)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe and its exit code
        try:
            taken = spare_objects.take(_objects(repo))
            oid = _write(repo, "from the child\n")
            os.write(write, f"{taken} {oid}".encode())
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(write)
    answer = os.read(read, 200).decode().split()
    os.close(read)
    assert os.waitpid(child, 0)[1] == 0
    assert answer[0] == "-1"  # no file of the parent's was handed to the child
    written = {_write(repo, f"from the parent {i}\n"): f"from the parent {i}\n" for i in range(12)}
    for oid, text in written.items():
        assert git("cat-file", "-p", oid, cwd=repo) == text
    assert git("cat-file", "-p", answer[1], cwd=repo) == "from the child\n"
    fsck_clean(repo)


def test_files_are_made_ahead_for_one_folder_at_a_time(tmp_path, spares):
    first, second = tmp_path / "first", tmp_path / "second"
    for repo in (first, second):
        git("init", "-q", str(repo), cwd=tmp_path)
    _started(first, spares)
    _settled(spares)
    held = _anonymous_files()
    _started(second, spares)
    _settled(spares)
    assert spares.folder == _objects(second)
    assert _anonymous_files() <= held  # the first folder's files were let go, not kept beside
    oid = _write(second, "in the second\n")
    assert git("cat-file", "-p", oid, cwd=second) == "in the second\n"


def test_where_no_anonymous_file_can_be_made_objects_are_written_as_before(repo, spares, monkeypatch):
    # an old kernel or a file system without O_TMPFILE refuses it (EISDIR); opening the folder for writing
    # is refused the same way
    monkeypatch.setattr(spare_objects, "_OPEN", os.O_WRONLY | os.O_CLOEXEC | os.O_DIRECTORY)
    for i in range(spare_objects.AHEAD_AFTER):
        _write(repo, f"warm-up {i}\n")
    deadline = time.monotonic() + 60
    while _objects(repo) not in spares.refused:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    written = {_write(repo, f"object {i}\n"): f"object {i}\n" for i in range(5)}
    assert spares.used == 0
    for oid, text in written.items():
        assert git("cat-file", "-p", oid, cwd=repo) == text
    assert _stray_files(repo) == []


def _blob_under(prefix: str) -> bytes:
    """A blob whose id starts with `prefix` (two hex digits)."""
    for i in range(100_000):
        content = b"aimed %d\n" % i
        if loose_write.object_id(b"blob", content).startswith(prefix):
            return content
    raise AssertionError("no blob found")


@contextmanager
def _moved_to_another_file_system(folder: Path, tmp_path: Path) -> Iterator[Path]:
    """`folder` (its files moved along) made a symlink to a folder on another file system, for the test's
    span: a file made in the objects folder cannot be linked there. Skips where there is no second one."""
    elsewhere = Path("/dev/shm")
    if not elsewhere.is_dir() or elsewhere.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs a second file system")
    import shutil

    target = Path(os.path.realpath(elsewhere)) / f"lanes-test-{os.getpid()}-{tmp_path.name}-{folder.name}"
    target.mkdir()
    # Copied across, not renamed: the folder holds objects whenever one of the repository's ids (random op ids
    # make them) starts with its name, and a rename to another file system fails
    kept = sorted(os.listdir(folder)) if folder.exists() else []
    try:
        for name in kept:
            shutil.move(folder / name, target / name)
        if folder.exists():
            folder.rmdir()
        folder.symlink_to(target)
        yield target
    finally:
        if folder.is_symlink():
            folder.unlink()
        folder.mkdir(exist_ok=True)
        for name in os.listdir(target):
            if name in kept:
                shutil.move(target / name, folder / name)
            else:
                os.chmod(target / name, 0o644)
                os.unlink(target / name)
        target.rmdir()


def test_an_object_folder_on_another_file_system_gets_its_object_the_ordinary_way(repo, spares, tmp_path):
    _started(repo, spares)
    with _moved_to_another_file_system(Path(_objects(repo)) / "e7", tmp_path) as target:
        content = _blob_under("e7")
        oid = loose_write.write_loose(_objects(repo), b"blob", content)
        assert oid.startswith("e7")
        assert git("cat-file", "-p", oid, cwd=repo).encode() == content
        assert _objects(repo) in spares.refused  # a file made here cannot be named there: none made ahead
        assert [name for name in os.listdir(target) if len(name) != 38] == []


def _pack_objects(tag: str) -> list[tuple[str, bytes, bytes, int]]:
    blobs = [b"%s blob %d\n" % (tag.encode(), n) for n in range(9)]
    return [(loose_write.object_id(b"blob", data), b"blob", data, n % 2) for n, data in enumerate(blobs)]


def test_a_pack_is_written_into_files_made_ahead_with_its_keep_first(repo, spares):
    from git_lanes.store.pack_write import release, write_pack

    _started(repo, spares)
    used = spares.used
    objects = _pack_objects("ahead")
    name, kept = write_pack(_objects(repo), objects, durable=False, shared=0, keep=True)
    assert spares.used - used == 3  # the pack, its index and its .keep: no file created meanwhile
    pack_dir = Path(_objects(repo)) / "pack"
    assert kept == str(pack_dir / f"{name}.keep") and Path(kept).read_bytes().startswith(b"git-lanes")
    assert git("verify-pack", str(pack_dir / f"{name}.idx"), cwd=repo) == ""
    assert {entry.name for entry in pack_dir.iterdir()} == {f"{name}.pack", f"{name}.idx", f"{name}.keep"}
    assert (pack_dir / f"{name}.pack").stat().st_mode & 0o222 == 0
    dulwich = DulwichRepo(str(repo))
    for oid, _, data, _ in objects:
        assert dulwich[oid.encode()].data == data
    release([kept])
    # the same objects again make the same pack, already there: it stays, as its twin would replace it
    assert write_pack(_objects(repo), objects, durable=False, shared=0) == (name, None)
    assert {entry.name for entry in pack_dir.iterdir()} == {f"{name}.pack", f"{name}.idx"}
    fsck_clean(repo)


def test_a_pack_folder_on_another_file_system_gets_its_pack_the_ordinary_way(repo, spares, tmp_path):
    from git_lanes.store.pack_write import write_pack

    _started(repo, spares)
    pack_dir = Path(_objects(repo)) / "pack"
    with _moved_to_another_file_system(pack_dir, tmp_path) as target:
        before = set(os.listdir(target))  # the repository's own packs, if it has any
        name, kept = write_pack(_objects(repo), _pack_objects("elsewhere"), durable=False, shared=0, keep=True)
        assert sorted(set(os.listdir(target)) - before) == [f"{name}.idx", f"{name}.keep", f"{name}.pack"]
        assert kept == str(pack_dir / f"{name}.keep")
        assert git("verify-pack", str(pack_dir / f"{name}.idx"), cwd=repo) == ""
        assert _objects(repo) in spares.refused


def test_a_pack_needing_more_files_than_are_ready_gets_the_rest_made_at_once(repo, spares, monkeypatch):
    from git_lanes.store.pack_write import write_pack

    _started(repo, spares)
    _settled(spares)
    monkeypatch.setattr(spares, "_wake", lambda: None)  # and not woken to make more
    with spares.lock:  # all but two taken away
        extra, spares.ready = spares.ready[2:], spares.ready[:2]
    for handle in extra:
        os.close(handle)
    monkeypatch.setattr(pack_write_module(), "_written", refuse_named_file)
    name, kept = write_pack(_objects(repo), _pack_objects("short"), durable=False, shared=0, keep=True)
    assert kept is not None and git("verify-pack", str(Path(_objects(repo)) / "pack" / f"{name}.idx"),
                                    cwd=repo) == ""
    assert spares.ready == [] and _stray_files(repo) == []
    fsck_clean(repo)


def test_objects_written_faster_than_files_are_made_ahead_get_theirs_made_at_once(repo, spares, monkeypatch):
    # A holder serving a round writes an object per op, faster than the thread makes files: once none was
    # ready, each object got a named temporary (made, linked, removed) on the write path.
    _started(repo, spares)
    _settled(spares)
    monkeypatch.setattr(spares, "_wake", lambda: None)
    monkeypatch.setattr(loose_write, "_temporary", refuse_named_file)
    before, anonymous = spares.used, _anonymous_files()
    written = [_write(repo, f"burst {i}\n") for i in range(spare_objects.AHEAD + 3)]
    assert spares.used - before == len(written) and spares.ready == []
    assert [git("cat-file", "-p", oid, cwd=repo) for oid in written] == [f"burst {i}\n" for i in range(len(written))]
    assert _stray_files(repo) == [] and _anonymous_files() == anonymous - spare_objects.AHEAD  # all closed
    fsck_clean(repo)


def pack_write_module():
    from git_lanes.store import pack_write

    return pack_write


def refuse_named_file(*args, **kwargs):
    raise AssertionError("a named temporary file was made where an anonymous one could be")