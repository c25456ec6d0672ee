"""The ledger's ref file reused as its next lock (store/spare_refs.py): a move takes the file the previous
move displaced, so it neither creates nor frees one, and never rewrites a file anyone may still read: one
still open anywhere, one with another name (the ref itself, a hard-linked copy of .git), one whose lock is
taken. What is written stays plain git, read alike by git and dulwich."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fsck_clean, git, run_cli
from dulwich.repo import Repo as DulwichRepo

from test_store_loose_ref import WRITER as PLAIN_WRITER

from git_lanes.errors import Conflict
from git_lanes.store import RefUpdate, open_store, spare_refs

REF = "refs/lanes/ledger"


@pytest.fixture
def store(repo: Path, monkeypatch):
    """A store whose ledger moves reuse files wherever the test's folder is (tmpfs would not by default)."""
    opened = open_store(repo)
    monkeypatch.setitem(spare_refs._RECYCLES, str(opened.common_dir), True)
    return opened


def _commits(repo: Path, count: int) -> list[str]:
    tree = git("write-tree", cwd=repo).strip()
    return [git("commit-tree", tree, "-m", f"c{i}", cwd=repo).strip() for i in range(count)]


def _move(store, new: str) -> None:
    store.update_refs([RefUpdate(REF, new, store.read_ref(REF), "test")])


def _paths(repo: Path) -> tuple[Path, Path]:
    return repo / ".git" / REF, Path(spare_refs.spare_path(str(repo / ".git"), REF))


@pytest.fixture
def displaced(store, repo):
    """The ledger's ref moved to `one` then `two`: `one`'s file waits at the spare's place. Returns three
    commits to move to and the ref's and the spare's paths."""
    one, two, three = _commits(repo, 3)
    _move(store, one)
    _move(store, two)
    return (one, two, three, *_paths(repo))


def test_a_move_reuses_the_file_the_move_before_displaced(store, repo):
    one, two, three, four = _commits(repo, 4)
    ref, spare = _paths(repo)
    _move(store, one)
    first = ref.stat().st_ino
    _move(store, two)
    assert spare.stat().st_ino == first and ref.stat().st_ino != first  # kept, not freed
    second = ref.stat().st_ino
    _move(store, three)
    assert ref.stat().st_ino == first and spare.stat().st_ino == second
    assert ref.read_text() == f"{three}\n" and ref.stat().st_nlink == 1
    _move(store, four)
    assert ref.stat().st_ino == second and ref.read_text() == f"{four}\n"
    assert git("rev-parse", REF, cwd=repo).strip() == four
    assert DulwichRepo(str(repo)).refs[REF.encode()] == four.encode()
    log = git("reflog", "show", "--format=%H", REF, cwd=repo).split()
    assert log[:4] == [four, three, two, one]
    assert not (repo / ".git" / f"{REF}.lock").exists()
    fsck_clean(repo)


def test_a_displaced_file_still_open_is_never_rewritten(store, repo):
    """A reader that opened the ref before a move displaced it reads what it opened, however late: the kernel
    refuses the lease while it is open, and the move takes a new lock instead."""
    one, two, three = _commits(repo, 3)
    ref, spare = _paths(repo)
    _move(store, one)
    reader = os.open(ref, os.O_RDONLY)  # a `git rev-parse` that opened the ref and has not read it yet
    try:
        _move(store, two)
        _move(store, three)
        assert os.read(reader, 100) == f"{one}\n".encode()
        assert os.fstat(reader).st_ino not in (ref.stat().st_ino, spare.stat().st_ino)
    finally:
        os.close(reader)
    assert ref.read_text() == f"{three}\n"


def test_a_spare_with_another_name_is_never_rewritten(store, repo, displaced):
    """A hard-linked copy of .git (`cp -al`) names the same file: it keeps what it holds."""
    one, two, three, ref, spare = displaced
    copy = repo.parent / "copy-of-a-ref"
    os.link(spare, copy)
    _move(store, three)
    assert copy.read_text() == f"{one}\n" and copy.stat().st_ino != ref.stat().st_ino
    assert ref.read_text() == f"{three}\n"


def test_a_spare_that_is_the_ref_itself_is_let_go(store, repo):
    """A move killed between keeping the ref's file and renaming its lock leaves the spare naming the ref:
    the next move must not write into the ref in place."""
    one, two = _commits(repo, 2)
    ref, spare = _paths(repo)
    _move(store, one)
    spare.parent.mkdir(exist_ok=True)
    spare.unlink(missing_ok=True)
    os.link(ref, spare)
    held = ref.stat().st_ino
    _move(store, two)
    assert ref.read_text() == f"{two}\n" and ref.stat().st_ino != held
    assert spare.stat().st_ino == held and spare.read_text() == f"{one}\n"  # now truly displaced: kept


def test_a_taken_lock_leaves_the_spare_and_the_ref_alone(store, repo, monkeypatch, displaced):
    one, two, three, ref, spare = displaced
    kept = spare.stat().st_ino
    lock = repo / ".git" / f"{REF}.lock"
    lock.write_text("held by someone\n")
    monkeypatch.setattr("git_lanes.store.stale.clear_if_stale", lambda *args, **kwargs: False)
    with pytest.raises(Conflict):
        _move(store, three)
    assert lock.read_text() == "held by someone\n" and spare.stat().st_ino == kept
    assert ref.read_text() == f"{two}\n"


def test_files_in_memory_are_not_reused_by_default(repo):
    if spare_refs.file_system("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    assert not spare_refs.recycles("/dev/shm")
    assert spare_refs.file_system(str(repo)) not in ("", "tmpfs") or not spare_refs.recycles(str(repo))
    assert spare_refs.file_system("/no/such/folder") == ""


# The plain writer of test_store_loose_ref, its moves reusing files wherever the test runs and counted.
WRITER = """
import atexit
from git_lanes.store import loose_ref

reused = 0
original = loose_ref.reuse

def counting(common_dir, spare, lock):
    global reused
    fd, size = original(common_dir, spare, lock)
    reused += fd >= 0
    return fd, size

loose_ref.reuse = counting
loose_ref.recycles = lambda common_dir: True
atexit.register(lambda: print(reused))
""" + PLAIN_WRITER


READER = """
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
seen = set()
n = 0
while not os.path.exists(stop):
    fd = os.open(path, os.O_RDONLY)
    if n % 7 == 0:
        time.sleep(0.002)  # opened before a move, read after it
    seen.add(os.read(fd, 100))
    os.close(fd)
    n += 1
sys.stdout.write("\\n".join(sorted(value.decode().strip() for value in seen)))
"""


def test_readers_racing_reused_moves_only_ever_read_values_the_ref_had(store, repo):
    """Three writer processes move the ledger's ref (reusing its files), while a reader opens and reads it
    as git does, sometimes pausing between the two: every value it reads is one the ref held, whole."""
    one, = _commits(repo, 1)
    _move(store, one)
    stop = repo.parent / "stop-reading"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    reader = subprocess.Popen([sys.executable, "-c", READER, str(repo / ".git" / REF), str(stop)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(repo), REF, f"w{n}", "150"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(3)]
    reused = 0
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        done, count = map(int, out.split())  # the plain writer's count, then the reuses
        assert done == 150
        reused += count
    stop.touch()
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    history = set(git("rev-list", "--first-parent", REF, cwd=repo).split())
    seen = set(out.split())
    assert seen and seen <= history, seen - history
    assert len(history) == 451 and reused > 0
    fsck_clean(repo)


def test_a_file_system_without_leases_stops_trying(store, repo, monkeypatch, displaced):
    """NFS and FUSE refuse leases (EINVAL): the move takes git's lock, and later moves there no longer try."""
    import errno
    import fcntl

    one, two, three, ref, spare = displaced
    tries = []
    real = fcntl.fcntl

    def no_leases(fd, command, *args):
        if command == fcntl.F_SETLEASE:
            tries.append(fd)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, command, *args)

    monkeypatch.setattr(spare_refs.fcntl, "fcntl", no_leases)
    _move(store, three)
    assert ref.read_text() == f"{three}\n" and len(tries) == 1
    assert not spare_refs.recycles(str(store.common_dir))
    _move(store, one)
    assert len(tries) == 1 and ref.read_text() == f"{one}\n"


@pytest.mark.parametrize("target", ["a file elsewhere", "the ref itself"])
def test_a_symlink_at_the_spares_place_is_never_written_through(store, repo, target, displaced):
    """A symlink where the spare goes (made by hand, or left by a tool that copies .git with symlinks) names
    any file: the move takes its lock the ordinary way and writes neither that file nor the ref in place."""
    one, two, three, ref, spare = displaced
    victim = repo.parent / "someone-elses-file"
    victim.write_text("not a ref, and longer than one\n" * 3)
    spare.unlink()
    spare.symlink_to(victim if target == "a file elsewhere" else ref)
    _move(store, three)
    assert victim.read_text() == "not a ref, and longer than one\n" * 3
    assert not ref.is_symlink() and ref.read_text() == f"{three}\n"
    assert git("rev-parse", REF, cwd=repo).strip() == three
    assert not spare.is_symlink()  # let go: the next move keeps a file there again
    fsck_clean(repo)


def test_a_move_that_fails_before_its_rename_leaves_the_reused_file_as_it_was(store, repo):
    """A reader that found the ref's file by its name before a move displaced it may open it late (here: an
    O_PATH handle reopened). A later move that reuses the file but fails before its rename (its reflog cannot
    be written) must not have written its value there: that reader would read a value the ref never held."""
    one, two, three = _commits(repo, 3)
    ref, spare = _paths(repo)
    _move(store, one)
    found = os.open(ref, os.O_PATH)  # the name resolved, the file opened later; no open file to refuse a lease
    try:
        _move(store, two)
        assert spare.stat().st_ino == os.fstat(found).st_ino  # the file the next move reuses
        log = repo / ".git" / "logs" / REF
        log.rename(log.with_name("ledger.saved"))
        log.symlink_to(repo.parent / "no-such-folder" / "ledger")  # appending to it fails
        with pytest.raises(Conflict):
            _move(store, three)
        late = os.open(f"/proc/self/fd/{found}", os.O_RDONLY)
        try:
            assert os.read(late, 100) == f"{one}\n".encode()
        finally:
            os.close(late)
    finally:
        os.close(found)
    assert ref.read_text() == f"{two}\n"
    log.unlink()
    log.with_name("ledger.saved").rename(log)
    _move(store, three)
    assert ref.read_text() == f"{three}\n"
    fsck_clean(repo)


def test_an_interrupted_reuse_leaves_no_lock_behind(store, repo, monkeypatch, displaced):
    """Ctrl-C while a move takes the spare, in a session that lives on: the lock goes, the next move works."""
    one, two, three, ref, spare = displaced

    def interrupted(*args: object) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(spare_refs, "_unopened", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _move(store, three)
    monkeypatch.undo()
    assert not (repo / ".git" / f"{REF}.lock").exists()
    _move(store, three)
    assert ref.read_text() == f"{three}\n"


NO_LEASES = """
import fcntl, sys
del fcntl.F_SETLEASE, fcntl.F_SETSIG  # as on macOS and the BSDs
from git_lanes.store import RefUpdate, open_store

store = open_store(sys.argv[1])
for commit in sys.argv[2:]:
    store.update_refs([RefUpdate("refs/lanes/ledger", commit, store.read_ref("refs/lanes/ledger"), "test")])
"""


def test_where_the_system_has_no_leases_nothing_is_reused(repo):
    """Leases are Linux's: elsewhere the ledger's moves take their locks the ordinary way."""
    if spare_refs.file_system(str(repo)) in ("tmpfs", "ramfs"):
        pytest.skip("nothing is reused in memory anyway")
    commits = _commits(repo, 4)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", NO_LEASES, str(repo), *commits], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    ref, spare = _paths(repo)
    assert ref.read_text() == f"{commits[-1]}\n" and not spare.parent.exists()
    assert not (repo / ".git" / f"{REF}.lock").exists()


def _doctor_spares(repo: Path) -> dict:
    result = run_cli("doctor", "--check", "spares", "--json", cwd=repo)
    assert result.code == 0, result.err
    [check] = result.json["checks"]
    return check


@pytest.mark.parametrize("blocker", ["a file", "a symlink to nothing", "a folder at the spare's place"])
def test_doctor_names_what_stops_the_ledger_reusing_its_files_and_leaves_it(repo, tmp_path, blocker):
    """Where the spares cannot go, every append silently takes the slower way: doctor says so, and what is in
    the way is someone's to move (as the append queue's folder)."""
    if not spare_refs.recycles(str(repo / ".git")):
        pytest.skip("nothing is reused on this file system")
    for text in ("first", "second"):  # the first creates the ledger's ref, the second moves it
        assert run_cli("board", "post", text, "--agent", "a", cwd=repo).code == 0
    assert _doctor_spares(repo) == {"check": "spares", "status": "ok",
                                    "message": "the ledger's ref files are reused on this disk"}
    folder = repo / ".git" / spare_refs.SPARES
    for leftover in folder.iterdir():
        leftover.unlink()
    if blocker == "a folder at the spare's place":
        Path(spare_refs.spare_path(str(repo / ".git"), REF)).mkdir()
        named = "lanes-spares/refs%lanes%ledger is a folder"
    else:
        folder.rmdir()
        folder.write_text("someone's file\n") if blocker == "a file" else folder.symlink_to(tmp_path / "nowhere")
        named = "lanes-spares in the git directory is not a folder"
    for text in ("third", "fourth"):
        assert run_cli("board", "post", text, "--agent", "a", cwd=repo).code == 0
    check = _doctor_spares(repo)
    assert check["status"] == "warn" and named in check["message"] and not check.get("fixable")
    assert "move that away" in check["hint"]
    run_cli("doctor", "--check", "spares", "--fix", cwd=repo)
    assert folder.is_symlink() or (folder.read_text() == "someone's file\n" if folder.is_file() else folder.is_dir())
