"""The ledger's cached tree writer writes exactly the trees git would: the same ids as libgit2's
TreeBuilder path (`trees.edit_tree`) and as `git mktree`, for edits that add, replace and delete files,
empty folders, and names whose order depends on git's folder rule (`a.b` sorts before the folder `a`)."""

from __future__ import annotations

from conftest import git

from git_lanes.model.entries import Entry
from git_lanes.store import open_store, trees

EDITS = [
    {"a/x.json": b"1", "a.b": b"2", "a-c/y.json": b"3", "b/c/d/e.json": b"4"},
    {"a/x.json": b"5", "a/z.json": b"6", "b/c/d/e.json": None},  # deleting the last file drops b/c/d, b/c, b
    {"a": b"a file replaces the folder", "top.json": b"7"},
    {"a": None, "a/again/deep.json": b"8"},
    {"a.b": None, "a-c/y.json": None, "a/again/deep.json": None, "top.json": None},  # back to empty
]


def test_cached_edits_write_the_trees_libgit2_and_git_write(repo):
    store = open_store(repo)
    cached, plain = None, None
    for edits in EDITS:
        blobs = {path: None if data is None else store.write_blob(data) for path, data in edits.items()}
        plain = trees.edit_tree(store.repo, plain, {p: None if b is None else Entry(b, 0o100644)
                                                    for p, b in blobs.items()})
        cached = store._records.edit(cached, {p: None if b is None else (0o100644, b) for p, b in blobs.items()})
        assert cached == plain
        listing = git("ls-tree", cached, cwd=repo)
        assert git("mktree", cwd=repo, input=listing).strip() == cached
    assert cached == store.empty_tree()


def test_records_read_through_the_cache_match_git(repo):
    store = open_store(repo)
    commit = store.write_records(None, {"tasks/ab/abc.json": b'{"format": 1}\n', "board/readers/x.json": b"{}\n"},
                                 [], "test\n")
    tree = store.record_tree(commit)
    assert tree == git("rev-parse", f"{commit}^{{tree}}", cwd=repo).strip()
    assert store.read_record(tree, "tasks/ab/abc.json") == b'{"format": 1}\n'
    assert store.read_record(tree, "tasks/ab") is None and store.read_record(tree, "nothing/here.json") is None
    assert store.record_names(tree) == {"board": True, "tasks": True}
    assert store.record_names(tree, "tasks/ab") == {"abc.json": False}
    assert store.record_names(tree, "missing") == {}
    # a second Store (another process) reads the same from disk, not from the first one's memory
    fresh = open_store(repo)
    assert fresh.read_record(tree, "board/readers/x.json") == b"{}\n"
    git("fsck", "--strict", cwd=repo)


def test_commits_and_objects_are_written_as_libgit2_writes_them(repo):
    import pygit2

    store = open_store(repo)
    tree = store._records.edit(None, {"a.json": (0o100644, store._records.write_blob(b"{}\n"))})
    parent = store.write_commit(tree, [], "first\n")
    for offset in (0, 90, -330):
        when = pygit2.Signature("Ada Lovelace", "ada@example.com", 1_800_000_000, offset)
        agent = pygit2.Signature("coder-1", "agent@lanes", 1_800_000_001, offset)
        ours = store._records.write_commit(tree, [parent], agent, when, "coder-1: op\n\n{\"x\": \"é\"}\n")
        theirs = store.repo.create_commit(None, agent, when, "coder-1: op\n\n{\"x\": \"é\"}\n",
                                          pygit2.Oid(hex=tree), [pygit2.Oid(hex=parent)])
        assert ours == str(theirs)
    # writing an object that is already there leaves it whole (and git still reads it)
    again = store._records.write_blob(b"{}\n")
    assert git("cat-file", "-p", again, cwd=repo) == "{}\n"
    assert not list((repo / ".git" / "objects").glob("*/tmp_obj_*"))
    git("fsck", "--strict", cwd=repo)


def _loose_objects(repo) -> dict[str, int]:
    """Every loose object's id, and every pack's and index's name -> its file's inode."""
    objects = repo / ".git" / "objects"
    packs = objects / "pack"
    return {**{folder.name + path.name: path.stat().st_ino for folder in objects.iterdir()
               if len(folder.name) == 2 for path in folder.iterdir() if not path.name.startswith("tmp_obj_")},
            **{path.name: path.stat().st_ino for path in (packs.iterdir() if packs.is_dir() else ())
               if not path.name.startswith("tmp_")},
            "pack folder": packs.stat().st_ino if packs.is_dir() else 0}


def _synced_inodes(monkeypatch) -> set[int]:
    """The inodes of every file or folder synced from now on: `os.fsync` spied on, and still syncing."""
    import os

    synced: set[int] = set()
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.add(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return synced


def test_a_repository_that_asks_for_durable_objects_gets_each_ledger_object_synced(repo, monkeypatch):
    """`core.fsyncObjectFiles` (which libgit2 honoured when it wrote the ledger) and git's `core.fsync`: each
    object is on disk before the ref that names it moves, so a power cut cannot leave the ledger pointing at
    an empty file. The spy only records which files were synced, then syncs them."""
    import os

    from git_lanes.model.ledger_delta import CHECKPOINT_EVERY

    from git_lanes.api import Lanes
    from git_lanes.ledger import log

    # Appends more than BURST apart (a loaded machine) write their whole tree, eight objects or more, and a
    # batch that large is a pack too: kept a burst, only the checkpoint's batch is.
    monkeypatch.setattr(log, "BURST", float("inf"))
    synced = _synced_inodes(monkeypatch)
    for setting in (("core.fsyncObjectFiles", "true"), ("core.fsync", "loose-object")):
        git("config", "--unset-all", "core.fsyncObjectFiles", cwd=repo, check=False)
        git("config", "--unset-all", "core.fsync", cwd=repo, check=False)
        git("config", *setting, cwd=repo)
        api = Lanes(repo)
        api.task_create("warm the cache up", actor="lead")
        before = _loose_objects(repo)
        synced.clear()
        for n in range(CHECKPOINT_EVERY):  # deltas (a commit each) and a checkpoint among them
            api.task_create(f"durable with {setting[0]} {n}", actor="lead")
        written = {oid: inode for oid, inode in _loose_objects(repo).items() if oid not in before}
        assert len(written) >= CHECKPOINT_EVERY - 1, written  # the commits (deltas loose, a checkpoint's packed)
        new_packs = {name for name in written if name.endswith((".pack", ".idx"))}
        assert len(new_packs) == 2, written  # the checkpoint's blobs, trees and commit: one pack and its index
        assert set(written.values()) | {_loose_objects(repo)["pack folder"]} <= synced, setting


def test_a_repository_that_asks_git_to_sync_packs_gets_each_checkpoint_pack_synced(repo, monkeypatch):
    """`core.fsync=pack` (or its index's `pack-metadata`): git syncs the packs it writes there, so a
    checkpoint's pack is synced too, though the loose commits between checkpoints are not (not asked for)."""
    import os

    from git_lanes.model.ledger_delta import CHECKPOINT_EVERY

    from git_lanes.api import Lanes
    from git_lanes.ledger import log

    # Appends more than BURST apart (a loaded machine) write their whole tree, eight objects or more, and a
    # batch that large is a pack too: kept a burst, only the checkpoint's batch is.
    monkeypatch.setattr(log, "BURST", float("inf"))
    synced = _synced_inodes(monkeypatch)
    for value in ("pack", "pack-metadata", "derived-metadata,-loose-object"):
        git("config", "core.fsync", value, cwd=repo)
        api = Lanes(repo)
        api.task_create("warm the cache up", actor="lead")
        before = _loose_objects(repo)
        synced.clear()
        for n in range(CHECKPOINT_EVERY):
            api.task_create(f"durable packs with {value} {n}", actor="lead")
        written = {name: inode for name, inode in _loose_objects(repo).items() if name not in before}
        packed = {inode for name, inode in written.items() if name.endswith((".pack", ".idx"))}
        assert len(packed) == 2, written  # the precondition: a checkpoint was written as a pack
        assert packed | {_loose_objects(repo)["pack folder"]} <= synced, value
        assert not set(written.values()) - packed & synced, value  # loose objects: as git, not synced


def test_a_shared_repository_gets_ledger_objects_with_the_modes_git_gives_its_own(repo):
    """`core.sharedRepository=group`: a fan-out folder the ledger's writer makes must let the group write
    into it (git makes it g+ws), and its objects must be group-readable, whatever the writer's umask; else
    the next group member's `git commit` or append fails with "insufficient permission"."""
    import os
    import stat

    from git_lanes.api import Lanes

    git("config", "core.sharedRepository", "group", cwd=repo)
    objects = repo / ".git" / "objects"

    def mode(path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    previous = os.umask(0o077)
    try:
        for n in range(1000):  # git's own object in a folder git makes, for the modes to expect
            oid = git("hash-object", "-w", "--stdin", cwd=repo, input=f"probe {n}\n").strip()
            if not any(path.name != oid[2:] for path in (objects / oid[:2]).iterdir()):
                break
        git_folder, git_file = mode(objects / oid[:2]), mode(objects / oid[:2] / oid[2:])
        before = {folder.name for folder in objects.iterdir()}
        api = Lanes(repo)
        for n in range(5):
            api.task_create(f"shared {n}", actor="lead")
    finally:
        os.umask(previous)
    made = [folder for folder in objects.iterdir() if folder.name not in before]
    assert made  # the appends made fan-out folders of their own
    assert git_folder & stat.S_IWGRP and git_file & stat.S_IRGRP  # what git does with this umask
    for folder in made:
        assert mode(folder) == git_folder, folder.name
        for path in folder.iterdir():
            assert mode(path) == git_file, path


def test_new_objects_are_deflated_at_the_level_git_would_use(repo):
    """`core.looseCompression`, else `core.compression`: the ledger's writer and the hook path's own one
    deflate at the level git's `hash-object -w` uses under the same config (the zlib header's FLEVEL bits say
    which), and git reads them all. Where the config sets no level, the hook path deflates at best speed, as
    git does, and the ledger stores its small records (a zlib stream of stored blocks, which git, libgit2 and
    dulwich read as any other). The object ids never depend on the level."""
    import zlib

    from dulwich.repo import Repo as DulwichRepo

    from git_lanes.api import Lanes
    from git_lanes.store.objects import ObjectStore

    objects = repo / ".git" / "objects"

    def loose() -> set:
        return {path for path in objects.glob("??/*")}

    def flevels(paths) -> set:
        return {path.read_bytes()[1] >> 6 for path in paths}

    settings = [[], ["core.compression", "9"], ["core.looseCompression", "-1"], ["core.looseCompression", "bad"]]
    levels = []
    for n, setting in enumerate(settings):
        if setting:
            git("config", *setting, cwd=repo)
        before = loose()
        if setting[1:] != ["bad"]:  # git refuses to run with that one
            git("hash-object", "-w", "--stdin", cwd=repo, input=f"git's own {n}\n")
        gits = loose() - before
        Lanes(repo).task_create(f"level {n}", actor="lead")
        hook = ObjectStore(objects).write(b"blob", f"hook {n}\n".encode())
        ours = loose() - before - gits
        # the first op's checkpoint (a blob, folders, a commit), then a delta (a commit); the hook's blob
        assert objects / hook[:2] / hook[2:] in ours and len(ours) >= (4 if n == 0 else 2)
        assert flevels(ours) == (flevels(gits) if gits else {0}), setting  # "bad": best speed
        levels.append(flevels(ours))
        ledger = ours - {objects / hook[:2] / hook[2:]}
        if setting:
            # zlib's own stream at the configured level, byte for byte: which, for a small object of random ids
            # (a tree), is now and then a stored block, as shorter
            level = {"9": 9, "-1": -1, "bad": 1}[setting[1]]
            assert all(path.read_bytes() == zlib.compress(zlib.decompress(path.read_bytes()), level)
                       for path in ours), setting
        else:
            stored = {path for path in ours if path.read_bytes()[2] & 0b110 == 0}  # the first block's BTYPE
            assert stored == ledger
        for path in ours if setting[1:] != ["bad"] else ():  # dulwich, like git, refuses to read that config
            oid = path.parent.name + path.name
            raw = zlib.decompress(path.read_bytes())
            assert DulwichRepo(str(repo))[oid.encode()].as_raw_string() == raw.partition(b"\0")[2]
    assert levels == [{0}, {3}, {2}, {0}]  # best speed, best compression, zlib's default
    git("config", "--unset", "core.looseCompression", cwd=repo)
    git("config", "--unset", "core.compression", cwd=repo)
    git("fsck", "--strict", cwd=repo)


def test_trees_are_parsed_as_git_spells_them_and_malformed_ones_refused_as_before():
    """The regular-expression parser reads every well-formed tree as the byte-by-byte one does (zero-padded
    modes, names with spaces, newlines, non-ASCII and none at all, 32-byte ids) and hands anything else to it,
    so a malformed tree gets the same answer or the same error."""
    from git_lanes.store.tree_bytes import encode_tree, item, parse_tree, parse_tree_slowly

    entries = {f"{n:02x}": item(f"{n:02x}", 0o040000, f"{n:040x}") for n in range(40)}
    for n, mode in enumerate((0o100644, 0o100755, 0o120000, 0o160000)):
        entries[f"name {n} é\n.json"] = item(f"name {n} é\n.json", mode, f"{n + 99:040x}")
    entries[""] = item("", 0o100644, "00" * 20)
    tree = encode_tree(entries)
    padded = tree.replace(b"40000 ", b"040000 ", 3).replace(b"100644 ", b"0100644 ", 1)
    wide = b"100644 a\0" + b"\0" * 32 + b"40000 b\0" + b"\n" * 32
    for data, width in ((tree, 20), (padded, 20), (wide, 32)):
        assert parse_tree(data, width) == parse_tree_slowly(data, width)
    assert parse_tree(padded)["00"][3] == b"40000 00\0" + bytes(20)  # written back as git writes it
    for bad in (tree[:-3], tree + b"x", b"", b"1x0 a\0" + b"a" * 20, b"100644 a" + b"b" * 20, b"8 a\0" + b"c" * 20):
        def outcome(parse) -> object:
            try:
                return parse(bad, 20)
            except ValueError as exc:
                return repr(exc)

        assert outcome(parse_tree) == outcome(parse_tree_slowly), bad


def test_a_compression_level_is_parsed_as_git_parses_it(repo):
    """git reads core.looseCompression with strtoimax in base 0 (octal `011` is 9, `0x9` is 9, leading white
    space skipped, a unit allowed) and refuses to run on anything else: our writers deflate at git's level,
    and at best speed where git refuses (the zlib header's FLEVEL bits say which level wrote an object)."""
    import subprocess
    import zlib

    from git_lanes.store.loose_write import loose_compression

    objects = repo / ".git" / "objects"
    refused = 0
    for n, value in enumerate(["011", "0x9", "0X2", " 6", "+9", "-1", "00", "9 ", "1_0", "08", "0x", "--1", "9k", "٣"]):
        before = set(objects.glob("??/*"))
        proc = subprocess.run(["git", "-c", f"core.looseCompression={value}", "hash-object", "-w", "--stdin"],
                              cwd=repo, input=f"level {n}\n", capture_output=True, text=True)
        ours = zlib.compress(b"x", loose_compression(value, None))[1] >> 6
        if proc.returncode:
            refused += 1
            assert ours == 0, value  # best speed
        else:
            (written,) = set(objects.glob("??/*")) - before
            assert ours == written.read_bytes()[1] >> 6, value
    assert 0 < refused < 14  # the precondition: git takes some of these and refuses others


def test_a_tree_parsed_against_the_last_version_at_its_path_is_parsed_as_a_whole_tree_is():
    """Another writer's version of a folder is parsed from the bytes it does not share with the version last
    seen there: the entries (and their order, for the version after it) are those of a whole parse, through
    chains of insertions, deletions, replacements and byte-level damage."""
    import random

    from git_lanes.store.tree_bytes import TREE_MODE, encode_tree, item, parse_near, parse_tree, scan

    rng = random.Random(15)
    names = [f"{n:02x}" for n in range(256)] + ["a", "a.b", "a-c", "a b", "é", "z" * 40]
    entries = {name: item(name, rng.choice((TREE_MODE, 0o100644)), f"{rng.getrandbits(160):040x}")
               for name in rng.sample(names, 40)}
    layout = (encode_tree(entries), parse_tree(encode_tree(entries)), None)  # None: the bytes' order
    parsed_near = 0
    for step in range(600):
        for _ in range(rng.choice((1, 1, 1, 2, 5))):
            name = rng.choice(names)
            if name in entries and rng.random() < 0.3:
                del entries[name]
            else:
                entries[name] = item(name, rng.choice((TREE_MODE, 0o100644, 0o100755)), f"{rng.getrandbits(160):040x}")
        data = encode_tree(entries)
        if step % 50 == 49:  # damaged bytes: whatever the middle holds, the answer is a whole parse's or none
            spot = rng.randrange(len(data))
            data = data[:spot] + bytes([data[spot] ^ rng.choice((0x01, 0x20, 0x40))]) + data[spot + 1:]
        got = parse_near(data, layout, 20)
        try:
            whole = parse_tree(data)
        except ValueError:
            assert got is None
            continue
        if got is None:
            scanned = scan(data, 20)
            assert scanned is None or not scanned[1] or step % 50 == 49, step  # only damage defeats it
            layout = (data, whole, None)
            entries = dict(whole)
            continue
        parsed_near += 1
        near_entries, ordered = got
        assert near_entries == whole, step
        assert b"".join(entry[3] for entry in ordered) == data  # the order the next version is parsed against
        layout = (data, near_entries, ordered)
        entries = dict(whole)
    assert parsed_near > 500  # the precondition: most versions were parsed against the last one


def test_another_process_reads_each_new_version_of_a_big_folder_as_git_lists_it(repo, monkeypatch):
    """Two stores (two processes) on one repository: each version of a 256-folder tree the first one writes,
    the second reads against the version it read before, and lists what git lists."""
    import random

    from git_lanes.store import object_cache

    near_parses = []
    plain = object_cache.parse_near
    monkeypatch.setattr(object_cache, "parse_near", lambda *args: near_parses.append(plain(*args)) or near_parses[-1])
    writer, reader = open_store(repo), open_store(repo)
    rng = random.Random(7)
    commit = writer.write_records(None, {f"tasks/{n:02x}/{n:016x}.json": b"{}\n" for n in range(256)}, [], "all\n")
    for step in range(12):
        records = {f"tasks/{rng.randrange(256):02x}/{rng.getrandbits(64):016x}.json": f"{step}\n".encode()
                   for _ in range(rng.choice((1, 3, 8)))}
        commit = writer.write_records(writer.record_tree(commit), records, [commit], f"step {step}\n")
        tree = reader.record_tree(commit)
        listed = git("ls-tree", f"{tree}:tasks", cwd=repo).splitlines()
        assert reader.record_names(tree, "tasks") == {line.split("\t")[1]: True for line in listed}
        path = next(iter(records))
        assert reader.read_record(tree, path) == records[path]
    assert sum(parsed is not None for parsed in near_parses) >= 11  # the precondition: all but the first version
