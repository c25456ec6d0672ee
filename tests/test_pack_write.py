"""Ledger checkpoints written as one small pack (issue 15: two files instead of fifty-odd loose objects on a
file system where making files is most of an op's cost). The packs are standard: git verifies and reads
them, dulwich (a second, independent reader) reads every object, our own reader follows packs written or
removed after it listed them, and the ledger's upkeep has git roll small packs up before `git gc --auto`
would repack everything."""

from __future__ import annotations

import os
import sys
import subprocess
from pathlib import Path

import pytest
from conftest import fsck_clean, git

from git_lanes.api import Lanes
from git_lanes.errors import UnsupportedFormat
from git_lanes.model.ledger_delta import CHECKPOINT_EVERY
from git_lanes.store import open_store
from git_lanes.store.loose_write import object_id
from git_lanes.store.objects import ObjectStore, parse_commit
from git_lanes.store.pack_write import ROLL_UP_AT, upkeep_due, write_pack


def _packs(repo: Path) -> list[Path]:
    return sorted((repo / ".git" / "objects" / "pack").glob("pack-*.pack"))


def _objects(count: int, tag: str) -> list[tuple[str, bytes, bytes, int]]:
    """Blobs of every size class an entry header spells differently, a tree and a commit naming them."""
    contents = [b"", b"x", b"fifteen bytes!!", b"sixteen bytes!!!", os.urandom(300) + tag.encode(),
                (b"a long record %d\n" * 2000) % tuple(range(2000))]
    blobs = [(object_id(b"blob", data), b"blob", data) for data in contents[:count]]
    tree = b"".join(b"100644 f%d\0" % n + bytes.fromhex(oid) for n, (oid, _, _) in enumerate(blobs))
    tree_id = object_id(b"tree", tree)
    commit = (f"tree {tree_id}\nauthor a <a@x> 1800000000 +0000\ncommitter a <a@x> 1800000000 +0000\n\n{tag}\n"
              .encode())
    made = [*blobs, (tree_id, b"tree", tree), (object_id(b"commit", commit), b"commit", commit)]
    return [(oid, kind, data, 0 if n % 2 else 1) for n, (oid, kind, data) in enumerate(made)]


def test_a_written_pack_is_one_git_and_dulwich_read_object_for_object(repo):
    from dulwich.repo import Repo

    objects = _objects(6, "first")
    name, _ = write_pack(str(repo / ".git" / "objects"), objects, durable=False, shared=0)
    pack = repo / ".git" / "objects" / "pack" / f"{name}.pack"
    assert git("verify-pack", str(pack.with_suffix(".idx")), cwd=repo) == ""
    assert not list(pack.parent.glob("tmp_*"))
    ours = ObjectStore(repo / ".git" / "objects")
    with Repo(str(repo)) as theirs:
        for oid, kind, data, _ in objects:
            assert git("cat-file", "-t", oid, cwd=repo).strip() == kind.decode()
            assert subprocess.run(["git", "cat-file", kind.decode(), oid], cwd=repo, capture_output=True,
                                  check=True).stdout == data
            assert theirs.object_store[oid.encode()].as_raw_string() == data
            assert ours.read(oid) == (kind, data)
    commit = objects[-1][0]
    git("update-ref", "refs/heads/packed", commit, cwd=repo)
    fsck_clean(repo)


def test_a_ledger_checkpoint_is_one_pack_and_the_ops_between_stay_loose(api, repo, monkeypatch):
    from git_lanes.ledger import log

    monkeypatch.setattr(log, "BURST", float("inf"))  # a burst, however slowly the machine runs it
    api.task_create("warm up", actor="lead")
    before = _packs(repo)
    ops_before = int(git("rev-list", "--count", "refs/lanes/ledger", cwd=repo))
    for n in range(CHECKPOINT_EVERY):
        api.task_create(f"task {n}", actor="lead")
    new = [pack for pack in _packs(repo) if pack not in before]
    assert len(new) == 1
    listed = git("verify-pack", "-v", str(new[0].with_suffix(".idx")), cwd=repo)
    kinds = [line.split()[1] for line in listed.splitlines() if len(line.split()) > 2 and len(line.split()[0]) == 40]
    assert kinds.count("commit") == 1 and kinds.count("blob") >= CHECKPOINT_EVERY // 2 and "tree" in kinds
    # the checkpoint commit in the pack is the ledger's own, and git walks the whole ledger
    packed_commit = next(line.split()[0] for line in listed.splitlines() if " commit " in line)
    assert int(git("rev-list", "--count", "refs/lanes/ledger", cwd=repo)) == ops_before + CHECKPOINT_EVERY
    assert git("merge-base", "--is-ancestor", packed_commit, "refs/lanes/ledger", cwd=repo, check=False) == ""
    fsck_clean(repo)
    # a second reader, and a fresh process, read the state back from the pack
    from dulwich.repo import Repo

    with Repo(str(repo)) as theirs:
        tree = theirs[theirs[packed_commit.encode()].tree]
        assert {name for name, _, _ in tree.items()} >= {b"tasks"}
    assert len(Lanes(repo).task_list()) == CHECKPOINT_EVERY + 1


def test_where_git_upkeep_is_off_checkpoints_stay_loose_objects(api, repo):
    """`gc.auto=0`: nothing would ever consolidate our packs, and loose objects cost readers nothing however
    many there are, so a checkpoint writes them loose as before."""
    git("config", "gc.auto", "0", cwd=repo)
    api = Lanes(repo)
    before = _packs(repo)
    for n in range(CHECKPOINT_EVERY + 1):
        api.task_create(f"task {n}", actor="lead")
    assert _packs(repo) == before


def test_upkeep_rolls_small_packs_up_and_every_object_stays_readable(repo):
    objects_dir = str(repo / ".git" / "objects")
    store = open_store(repo)
    written = []
    for n in range(ROLL_UP_AT):
        objects = _objects(5, f"pack {n}")
        write_pack(objects_dir, objects, durable=False, shared=0)
        written += objects
    store.upkeep(gc=False, background=False)
    assert len(_packs(repo)) == ROLL_UP_AT  # not yet past the limit
    reader = ObjectStore(objects_dir)
    assert reader.read(written[0][0])[1] == written[0][2]  # it has listed (and opened) the packs
    objects = _objects(5, "one more")
    write_pack(objects_dir, objects, durable=False, shared=0)
    written += objects
    store.upkeep(gc=False, background=False)
    assert len(_packs(repo)) <= 2
    for oid, kind, data, _ in written:  # the reader's packs went away under it: it finds their new home
        assert reader.read(oid) == (kind, data)
        assert ObjectStore(objects_dir).read(oid) == (kind, data)
    fsck_clean(repo)


def _loose_in_17(repo: Path, count: int) -> None:
    """Commit `count` files whose blob ids start with 17 (loose, reachable): the folder git samples to estimate
    loose objects, and what `git gc --auto` packs."""
    made, n = 0, 0
    while made < count:
        data = f"sampled {n}\n"
        n += 1
        if object_id(b"blob", data.encode()).startswith("17"):
            (repo / f"sampled-{n}.txt").write_text(data)
            made += 1
    git("add", "-A", cwd=repo)
    git("-c", "gc.auto=0", "commit", "-q", "-m", "sampled", cwd=repo)  # git's own commit collects otherwise


@pytest.mark.parametrize("auto, due", [(None, False), ("512", True), ("0", False)])
def test_upkeep_starts_git_gc_exactly_when_git_would_collect(repo, auto, due):
    """`git gc --auto` is started only when git's own test says it has work: more loose objects in objects/17
    than gc.auto / 256 (3 here, against 27 for the default 6700 and 2 for gc.auto=512), or more packs than
    gc.autoPackLimit; never where gc.auto is 0."""
    git("config", "gc.autoDetach", "false", cwd=repo)  # git collects before it returns
    if auto is not None:
        git("config", "gc.auto", auto, cwd=repo)
    _loose_in_17(repo, 3)
    sample = repo / ".git" / "objects" / "17"
    sampled = sorted(sample.iterdir())  # the 3 blobs, and the commit or its tree when their ids start so too
    assert len(sampled) >= 3
    open_store(repo).upkeep()
    assert (not sample.exists() or not any(sample.iterdir())) is due
    if not due:  # and git, asked itself, agrees there was nothing to do
        git("gc", "--auto", cwd=repo)
        assert sorted(sample.iterdir()) == sampled


def test_no_roll_up_where_git_maintenance_keeps_a_multi_pack_index(repo):
    """`git maintenance` (incremental-repack) packs through a multi-pack-index: the ledger leaves the packs
    to it rather than remove packs the index names from under a held-open libgit2."""
    objects_dir = str(repo / ".git" / "objects")
    for n in range(ROLL_UP_AT + 1):
        write_pack(objects_dir, _objects(2, f"pack {n}"), durable=False, shared=0)
    assert upkeep_due(objects_dir, 6700, 50) == (True, False)  # the precondition: a roll-up is due
    git("multi-pack-index", "write", cwd=repo)
    assert upkeep_due(objects_dir, 6700, 50) == (False, False)
    packs = _packs(repo)
    open_store(repo).upkeep(gc=False, background=False)
    assert _packs(repo) == packs


def test_packs_past_git_limit_make_gc_due_whatever_the_loose_objects(repo):
    objects_dir = str(repo / ".git" / "objects")
    for n in range(3):
        write_pack(objects_dir, _objects(2, f"pack {n}"), durable=False, shared=0)
    assert upkeep_due(objects_dir, 6700, 50) == (False, False)
    assert upkeep_due(objects_dir, 6700, 2) == (False, True)
    assert upkeep_due(objects_dir, 6700, 0) == (False, False)  # gc.autoPackLimit=0: git never counts packs
    (repo / ".git" / "objects" / "pack" / (_packs(repo)[0].stem + ".keep")).write_text("")
    assert upkeep_due(objects_dir, 6700, 2) == (False, False)  # a kept pack does not count, as in git


def test_our_reader_finds_objects_in_a_pack_written_after_it_listed_the_packs(repo):
    objects_dir = str(repo / ".git" / "objects")
    first = _objects(3, "first")
    write_pack(objects_dir, first, durable=False, shared=0)
    reader = ObjectStore(objects_dir)
    assert reader.read(first[-1][0])[0] == b"commit"
    later = _objects(4, "later")
    write_pack(objects_dir, later, durable=False, shared=0)
    headers, message = parse_commit(reader.read(later[-1][0])[1])
    assert message == "later\n" and headers["tree"] == [later[-2][0]]
    for pack in _packs(repo):  # a pack removed before the reader ever opened it
        for file in pack.parent.glob(pack.stem + ".*"):
            file.unlink()
    with pytest.raises(Exception, match="missing"):
        ObjectStore(objects_dir).read(first[0][0])


def test_a_batch_that_fails_writes_nothing(api, repo):
    store = api.ctx.store
    loose_before = {path for path in (repo / ".git" / "objects").rglob("*") if path.is_file()}
    with pytest.raises(RuntimeError):
        with store._records.batched():
            for n in range(20):
                store._records.write_blob(b"never written %d" % n)
            raise RuntimeError("the op was refused")
    assert {path for path in (repo / ".git" / "objects").rglob("*") if path.is_file()} == loose_before


def test_a_batch_written_loose_hashes_each_object_once_with_openssls_sha1(repo, monkeypatch):
    """A batch keys its objects by id, so writing one loose (too few for a pack, as a ledger delta's commit)
    takes that id rather than hashing the object again; and the store hashes with OpenSSL's SHA-1 (hashlib),
    not the builtin one the agent hook loads: ten times the speed on a CPU with SHA extensions. Hashing was
    a fiftieth of a held-open append's CPU."""
    import hashlib

    from git_lanes.store import loose_write

    hashed: list[tuple[str, bytes]] = []

    def spy(name: str, real):  # a spy on the hash, not a stand-in: the ids are git's own
        return lambda data: hashed.append((name, data)) or real(data)

    monkeypatch.setattr(loose_write, "sha1", spy("builtin", loose_write.sha1))
    monkeypatch.setattr(hashlib, "sha1", spy("openssl", hashlib.sha1))
    store = open_store(repo)
    with store._records.batched():
        oid = store._records.write_blob(b"hashed once\n")
    assert [name for name, _ in hashed] == ["openssl"]
    assert git("cat-file", "blob", oid, cwd=repo) == "hashed once\n"
    assert (repo / ".git" / "objects" / oid[:2] / oid[2:]).is_file()  # the precondition: written loose


def test_a_checkpoint_pack_survives_a_git_repack_ad_run_before_the_ledger_moves_to_it(api, repo):
    """`git repack -a -d` drops a pack's unreachable objects at once (loose ones it leaves alone): run between
    a checkpoint's pack and the ledger's move to its commit, it took the commit with it, as it would a fetch's
    pack, which git guards with a `.keep` until its refs move. A checkpoint's pack is guarded the same way."""
    store = api.ctx.store
    api.task_create("warm up", actor="lead")
    ran: list[int] = []

    def repack_now(updates) -> None:
        if len(_packs(repo)) > packs_before:  # the checkpoint's pack is written and nothing names it yet
            ran.append(subprocess.run(["git", "repack", "-a", "-d", "-q"], cwd=repo).returncode)

    packs_before = len(_packs(repo))
    with store.observing(lambda updates: None, before=repack_now):
        for n in range(CHECKPOINT_EVERY):
            api.task_create(f"task {n}", actor="lead")
    assert ran and ran[0] == 0  # the precondition: git repacked inside the window
    assert not list((repo / ".git" / "objects" / "pack").glob("*.keep"))  # released once the ledger moved
    fsck_clean(repo)
    assert len(Lanes(repo).task_list()) == CHECKPOINT_EVERY + 1


def test_a_keep_a_killed_writer_left_is_cleared_by_the_upkeep_and_no_other(repo):
    """A writer killed between its checkpoint's pack and its ref move leaves the `.keep`: the upkeep removes
    it once that process is gone, and leaves git's, the user's and a live writer's alone."""
    objects_dir = str(repo / ".git" / "objects")
    pack_dir = repo / ".git" / "objects" / "pack"
    script = ("import sys; from git_lanes.store.pack_write import write_pack; from test_pack_write import _objects;"
              "print(write_pack(sys.argv[1], _objects(5, 'killed'), durable=False, shared=0, keep=True)[1])")
    left = subprocess.run([sys.executable, "-c", script, objects_dir], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)}).stdout.strip()
    assert Path(left).read_bytes().startswith(b"git-lanes")  # the precondition: its writer is gone, the keep not
    _, alive = write_pack(objects_dir, _objects(5, "alive"), durable=False, shared=0, keep=True)
    users = pack_dir / f"{write_pack(objects_dir, _objects(5, 'users'), durable=False, shared=0)[0]}.keep"
    users.write_text("kept by hand\n")
    for n in range(ROLL_UP_AT):
        write_pack(objects_dir, _objects(4, f"filler {n}"), durable=False, shared=0)
    open_store(repo).upkeep(gc=False, background=False)
    assert not Path(left).exists() and Path(alive).exists() and users.exists()
    fsck_clean(repo)


def test_our_reader_follows_packs_written_in_an_alternate_after_it_listed_them(repo, tmp_path):
    """A repository borrowing objects (`git clone --shared`, `--reference`): a reader held open finds an
    object its alternate packed after the reader first listed that alternate's packs."""
    borrower = tmp_path / "borrower"
    git("clone", "-q", "--shared", str(repo), str(borrower), cwd=tmp_path)
    git("repack", "-a", "-d", "-q", cwd=repo)
    reader = ObjectStore(borrower / ".git" / "objects")
    head = git("rev-parse", "HEAD", cwd=repo).strip()
    assert reader.read(head)[0] == b"commit"  # it has listed the alternate's packs
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input="packed in the alternate later\n").strip()
    git("tag", "later", blob, cwd=repo)
    git("repack", "-d", "-q", cwd=repo)
    assert not (repo / ".git" / "objects" / blob[:2] / blob[2:]).exists()  # the precondition: only packed
    assert reader.read(blob) == (b"blob", b"packed in the alternate later\n")


def _borrowing(tmp_path: Path, names: list[str]) -> list[Path]:
    """Bare repositories `names`, each holding one blob of its own, each borrowing from the next (the last
    borrows from none): their object folders."""
    folders = []
    for name in names:
        git("init", "-q", "--bare", name, cwd=tmp_path)
        folders.append(tmp_path / name / "objects")
    for lender, borrower in zip(folders[1:], folders):
        (borrower / "info" / "alternates").write_text(f"{lender}\n")
    return folders


def test_our_reader_ends_a_cycle_of_alternates_as_git_does(tmp_path):
    """A names B as its alternate and B names A (`git clone --shared` made both ways): git lists each folder
    once and never its own; our reader went round the cycle until Python's recursion limit."""
    a, b = _borrowing(tmp_path, ["a.git", "b.git"])
    (b / "info" / "alternates").write_text(f"{a}\n")
    lent = git("hash-object", "-w", "--stdin", cwd=b.parent, input="in b\n").strip()
    missing = "0123456789abcdef0123456789abcdef01234567"
    assert subprocess.run(["git", "cat-file", "-e", missing], cwd=a.parent).returncode == 1  # git: just missing
    reader = ObjectStore(a)
    assert reader.read(lent) == (b"blob", b"in b\n")
    with pytest.raises(UnsupportedFormat, match="missing"):
        reader.read(missing)


def test_our_reader_follows_alternates_as_deep_as_git_does(tmp_path):
    """A chain of alternates naming alternates: git reads six lists deep ("ignoring alternate object stores,
    nesting too deep" past that) and so does our reader, object for object."""
    folders = _borrowing(tmp_path, [f"r{n}.git" for n in range(9)])
    blobs = [git("hash-object", "-w", "--stdin", cwd=folder.parent, input=f"only in {folder.parent.name}\n").strip()
             for folder in folders]
    gits = [subprocess.run(["git", "cat-file", "-e", blob], cwd=folders[0].parent, capture_output=True).returncode == 0
            for blob in blobs]
    assert gits == [True] * 7 + [False] * 2  # the precondition: the chain is deeper than git reads
    reader = ObjectStore(folders[0])

    def found(blob: str) -> bool:
        try:
            reader.read(blob)
        except UnsupportedFormat:
            return False
        return True

    assert [found(blob) for blob in blobs] == gits


def test_listing_the_packs_again_costs_what_the_first_listing_did(tmp_path, monkeypatch):
    """A reader lists the packs again on every miss and keeps those it knew: with many packs (a repository
    whose upkeep is off, fetched into often) that must stay one pass, not a pass per known pack. Counted in
    the sets the listing builds (a pass per pack built one per pack), not timed: tests do not time."""
    from git_lanes.store import objects

    pack_dir = tmp_path / "objects" / "pack"
    pack_dir.mkdir(parents=True)
    for n in range(300):
        for suffix in (".idx", ".pack"):
            (pack_dir / f"pack-{n:040x}{suffix}").touch()
    reader = ObjectStore(tmp_path / "objects")
    first = reader._pack_list()
    built: list[int] = []

    class CountedSet(set):  # type: ignore[type-arg]
        def __init__(self, *args: object) -> None:
            built.append(1)
            super().__init__(*args)

    monkeypatch.setattr(objects, "set", CountedSet, raising=False)
    reader._relist()
    again = reader._pack_list()
    assert [pack.base for pack in again] == [pack.base for pack in first]
    assert all(a is b for a, b in zip(again, first))  # the packs it knew, not new ones
    assert len(built) <= 2


def test_an_append_rolls_packs_up_in_the_background_one_roll_up_at_a_time(repo):
    """The appender only starts git (as `git gc --auto` detaches); a roll-up already running (its lock
    fresh) is not started twice; a lock a killed roll-up left an hour ago is taken over."""
    import time

    objects_dir = str(repo / ".git" / "objects")
    lock = repo / ".git" / "lanes-roll-up.lock"
    for n in range(ROLL_UP_AT + 1):
        write_pack(objects_dir, _objects(3, f"pack {n}"), durable=False, shared=0)
    store = open_store(repo)
    lock.write_text("")  # another process's roll-up is running
    store.upkeep(gc=False)
    time.sleep(0.5)
    assert len(_packs(repo)) == ROLL_UP_AT + 1 and lock.exists()
    os.utime(lock, (time.time() - 7200, time.time() - 7200))  # it was killed two hours ago
    store.upkeep(gc=False)
    deadline = time.monotonic() + 60
    while (lock.exists() or len(_packs(repo)) > 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not lock.exists() and len(_packs(repo)) <= 2
    fsck_clean(repo)


def test_a_roll_up_lock_whose_process_is_gone_is_taken_over_at_once(repo):
    """A writer killed between taking the roll-up's lock and starting git (or a roll-up killed with its
    shell) left a lock that stopped every roll-up for an hour, while small packs piled up toward git's full
    repack. As git's `gc.pid`, the lock names its process and host: gone on this host, it is taken over; a
    live one, or one on another host, is waited for as before."""
    import time

    from git_lanes.store.pack_write import _host

    objects_dir = str(repo / ".git" / "objects")
    lock = repo / ".git" / "lanes-roll-up.lock"
    for n in range(ROLL_UP_AT + 1):
        write_pack(objects_dir, _objects(3, f"pack {n}"), durable=False, shared=0)
    store = open_store(repo)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    host = _host().decode()
    for holder in (f"{os.getpid()} {host}", f"{gone} elsewhere-{host}"):  # alive here; unknowable there
        lock.write_text(holder + "\n")
        store.upkeep(gc=False)
        time.sleep(0.5)
        assert len(_packs(repo)) == ROLL_UP_AT + 1 and lock.read_text() == holder + "\n", holder
    lock.write_text(f"{gone} {host}\n")  # its process is gone: nothing runs git
    store.upkeep(gc=False)
    deadline = time.monotonic() + 60
    while (lock.exists() or len(_packs(repo)) > 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not lock.exists() and len(_packs(repo)) <= 2
    fsck_clean(repo)


def test_a_held_open_process_reads_and_appends_on_across_a_roll_up_under_it(repo):
    """libgit2 in a held-open process had the small packs open when git merged and removed them: what it
    reads next (old records, a new checkpoint's) comes from the merged pack or the new ones."""
    api = Lanes(repo)
    lock = repo / ".git" / "lanes-roll-up.lock"
    lock.write_text("")  # an append's upkeep rolls nothing up in the background meanwhile (it did, at times)
    for n in range(CHECKPOINT_EVERY * (ROLL_UP_AT + 2)):
        api.task_create(f"task {n}", actor="lead")
    lock.unlink()
    packs = _packs(repo)
    assert len(packs) > ROLL_UP_AT
    open_store(repo).upkeep(gc=False, background=False)  # another process's upkeep
    assert not any(pack.exists() for pack in packs[:-2]) and len(_packs(repo)) <= 2
    fresh = Lanes(repo)
    assert len(fresh.task_list()) == len(api.task_list()) == CHECKPOINT_EVERY * (ROLL_UP_AT + 2)
    for n in range(CHECKPOINT_EVERY + 1):
        api.task_create(f"later {n}", actor="lead")
    assert {t.title for t in Lanes(repo).task_list()} >= {f"later {n}" for n in range(CHECKPOINT_EVERY + 1)}
    fsck_clean(repo)


def test_a_reader_held_open_reads_the_ledger_while_git_drops_packs_its_multi_pack_index_named(repo):
    """A multi-pack-index (`git maintenance`'s incremental-repack, `git multi-pack-index write`) that libgit2
    loaded names packs a repack then removes: mid-removal, or when a concurrent `multi-pack-index write`
    listed a pack the upkeep's roll-up removed, libgit2 fails every read from that pack ("invalid
    packfile") until the index is rewritten, though git reads on. The ledger's reads then fall back to our
    own reader, which lists the packs that are there."""
    api = Lanes(repo)
    for n in range(CHECKPOINT_EVERY + 1):
        api.task_create(f"task {n}", actor="lead")
    checkpoint_packs = _packs(repo)
    assert checkpoint_packs  # the precondition: the ledger's checkpoint is in a pack of its own
    listed = git("verify-pack", "-v", str(checkpoint_packs[0].with_suffix(".idx")), cwd=repo)
    checkpoint = next(line.split()[0] for line in listed.splitlines() if " commit " in line)
    git("multi-pack-index", "write", cwd=repo)
    held = Lanes(repo)
    trunk = git("rev-parse", "main", cwd=repo).strip()
    assert held.ctx.store.commit_info(trunk).tree  # libgit2 has loaded the multi-pack-index
    git("repack", "-a", "-q", cwd=repo)  # every object in a new pack; then the old ones go, as -d does
    for pack in checkpoint_packs:
        pack.unlink()
    assert (repo / ".git" / "objects" / "pack" / "multi-pack-index").exists()
    assert held.ctx.store.commit_info(checkpoint).tree == git("rev-parse", f"{checkpoint}^{{tree}}", cwd=repo).strip()
    assert len(held.task_list()) == CHECKPOINT_EVERY + 1
    fresh = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch-check"], cwd=repo, capture_output=True)
    assert fresh.returncode == 0  # git reads on


def test_git_lanes_gc_clears_a_keep_a_killed_writer_left_and_git_packs_what_it_kept(repo):
    """Between a checkpoint's pack and the ledger's move a killed writer leaves the `.keep`; with no append
    to run the ledger's upkeep, `git lanes gc` removes it (and no other) so git repacks that pack too."""
    from conftest import run_cli

    objects_dir = str(repo / ".git" / "objects")
    script = ("import sys; from git_lanes.store.pack_write import write_pack; from test_pack_write import _objects;"
              "print(write_pack(sys.argv[1], _objects(5, 'killed'), durable=False, shared=0, keep=True)[1])")
    left = Path(subprocess.run([sys.executable, "-c", script, objects_dir], capture_output=True, text=True,
                               check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)}).stdout.strip())
    by_hand, _ = write_pack(objects_dir, _objects(4, "by hand"), durable=False, shared=0)
    users = repo / ".git" / "objects" / "pack" / f"{by_hand}.keep"
    users.write_text("kept by hand\n")
    assert left.exists()  # the precondition: its writer is gone, the keep is not
    result = run_cli("gc", "--json", cwd=repo)
    assert result.code == 0, result.err
    assert not left.exists() and users.exists()
    assert not left.with_suffix(".pack").exists()  # git repacked what it kept
    fsck_clean(repo)


def test_a_name_or_prefix_libgit2_refuses_gets_libgit2_s_error_not_the_fallback_s(repo):
    """The ledger's reads fall back to our reader only for a whole object id: a prefix, a name or a typo keeps
    the error libgit2 gives it (ambiguous, invalid, not found), which callers tell apart."""
    import pygit2

    store = open_store(repo)
    for name in ("abc", "zz", "HEAD", "0" * 40):
        with pytest.raises(Exception) as ours:
            store.commit_info(name)
        with pytest.raises(Exception) as theirs:
            pygit2.Repository(str(repo))[name]
        assert type(ours.value) is type(theirs.value), name


def _two_lanes_packed_apart(repo: Path) -> str:
    """Lanes `feat` and `other`, each with an accepted state; `other`'s state and note in a pack of their own,
    and a multi-pack-index naming both packs. Returns `other`'s transition id."""
    api = Lanes(repo)
    api.lane_create("feat")
    api.lane_create("other")
    (repo / ".lanes" / "workspaces" / "feat" / "feat.txt").write_text("feat\n")
    api.commit("on feat", "coder-1", lane="feat", auto_accept=True)
    git("repack", "-a", "-d", "-q", cwd=repo)
    (repo / ".lanes" / "workspaces" / "other" / "other.txt").write_text("other\n")
    made: str = api.commit("on other", "coder-1", lane="other", auto_accept=True)["id"]
    git("repack", "-d", "-q", cwd=repo)
    git("multi-pack-index", "write", cwd=repo)
    return made


def _repack_leaving_the_index(repo: Path) -> str:
    """What `git repack -a -d` does where git reads no multi-pack-index: the index stays, naming the packs the
    repack removed. Returns `other`'s state."""
    git("-c", "core.multiPackIndex=false", "repack", "-a", "-d", "-q", cwd=repo)
    state = git("rev-parse", "refs/lanes/heads/other", cwd=repo).strip()
    assert (repo / ".git" / "objects" / "pack" / "multi-pack-index").exists()  # the precondition: it stayed
    assert subprocess.run(["git", "cat-file", "-e", state], cwd=repo).returncode == 0  # and git reads on
    return state


def test_a_process_held_open_reads_lane_states_and_notes_after_a_repack_left_a_stale_multi_pack_index(repo):
    """A multi-pack-index left naming packs a repack removed (`git -c core.multiPackIndex=false repack -a -d`,
    or `gc`, or a `multi-pack-index write` racing a repack): libgit2 keeps the index it loaded, and its own
    refresh on a miss keeps it too (the file did not change), so a held-open Lanes (SDK, MCP, serve) found
    neither a lane's state ("refs/lanes/heads/other points at a missing object, not a state") nor its
    transition (KeyError) where git and a new process read them. The store has libgit2 load the folder
    afresh, once per change of it, and reads again."""
    made = _two_lanes_packed_apart(repo)
    held = Lanes(repo)
    trunk = git("rev-parse", "main", cwd=repo).strip()
    assert held.ctx.store.commit_info(trunk).tree  # libgit2 has loaded the multi-pack-index
    state = _repack_leaving_the_index(repo)
    with pytest.raises(KeyError):  # the precondition: libgit2 held open cannot read on by itself
        held.ctx.store.repo[state]
    assert held.lane_show("other").to_dict()["head"] == state
    assert held.show(made).to_dict()["intent"]["prompt"] == "on other"
    assert [t["intent"]["prompt"] for t in held.history(lane="other").to_dict()["transitions"]] == ["on other"]
    assert "other.txt" in held.diff("main", "other")["patch"]
    assert [step["prompt"] for step in held.trace("other")["steps"]][:1] == ["on other"]


def test_the_mcp_server_reads_on_after_a_repack_left_a_stale_multi_pack_index(repo):
    """The MCP server holds a repository open per worker thread, and libgit2 keeps one copy of each pack per
    process, shared by all of them: a thread loading its folder afresh read the removed pack's stale copy
    that the others still held. Every store in the process lets go of it."""
    import anyio
    from mcp_helpers import call, mcp_session

    made = _two_lanes_packed_apart(repo)

    async def scenario() -> list[dict]:
        async with mcp_session(repo, "--agent", "coder-1") as session:
            for _ in range(2):  # several worker threads, each with the multi-pack-index loaded
                async with anyio.create_task_group() as group:
                    for _ in range(6):
                        group.start_soon(call, session, "list_tasks")
            _repack_leaving_the_index(repo)
            return [await call(session, "show", transition_id=made),
                    await call(session, "history", lane="other"),
                    await call(session, "diff", a="main", b="other")]

    shown, listed, diff = anyio.run(scenario)
    assert shown["intent"]["prompt"] == "on other"
    assert [t["intent"]["prompt"] for t in listed["transitions"]] == ["on other"]
    assert "other.txt" in diff["patch"]
