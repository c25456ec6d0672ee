"""An append stores its objects as one small pack (no loose objects), small packs are merged before they pile
up, and everything stays readable by plain git and by dulwich throughout; a killed writer's leftovers are
ignored by readers and cleared later."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git
from ledger_helpers import Clock, fsck_clean

from git_lanes.api import Lanes
from git_lanes.store import packwrite


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


def loose_objects(repo: Path) -> int:
    return sum(len(os.listdir(d)) for d in (repo / ".git" / "objects").glob("[0-9a-f][0-9a-f]"))


def indexes(repo: Path) -> list[str]:
    return sorted(n for n in os.listdir(repo / ".git" / "objects" / "pack") if n.endswith(".idx"))


def ledger_objects_readable(repo: Path) -> int:
    """Every object the ledger reaches, read by `git cat-file`; how many there are."""
    listed = git("rev-list", "--objects", "refs/lanes/ledger", cwd=repo).split("\n")
    oids = "\n".join(line.split()[0] for line in listed if line.strip()) + "\n"
    checked = subprocess.run(["git", "cat-file", "--batch-check"], cwd=repo, input=oids, capture_output=True,
                             text=True, check=True).stdout
    assert "missing" not in checked
    return len(checked.splitlines())


def test_an_append_writes_one_pack_and_no_loose_object(lanes, repo):
    lanes.agent_register("coder-1")
    loose, before = loose_objects(repo), indexes(repo)
    task = lanes.task_create("Add login", actor="coder-1")["task"]
    assert loose_objects(repo) == loose
    added = sorted(set(indexes(repo)) - set(before))
    assert len(added) == 1
    verified = git("verify-pack", "-v", str(repo / ".git" / "objects" / "pack" / added[0]), cwd=repo)
    kinds = sorted(line.split()[1] for line in verified.splitlines() if len(line.split()) > 2
                   and line.split()[1] in ("commit", "tree", "blob"))
    # the commit, the task's record, and the trees on its path: root, tasks/, tasks/<2>/
    assert kinds == ["blob", "commit", "tree", "tree", "tree"]
    assert git("cat-file", "-t", f"refs/lanes/ledger:tasks/{task[:2]}/{task}.json", cwd=repo).strip() == "blob"
    fsck_clean(repo)


def test_small_packs_are_merged_and_every_object_stays_readable(lanes, repo):
    from dulwich.repo import Repo

    lanes.agent_register("coder-1")
    for i in range(3 * packwrite.MERGE_AT):
        lanes.board_post(f"note {i}", "coder-1")
    assert len(indexes(repo)) < packwrite.MERGE_AT  # merged at least twice, or there would be 3 x MERGE_AT
    assert ledger_objects_readable(repo) > 3 * packwrite.MERGE_AT
    fsck_clean(repo)
    last = 3 * packwrite.MERGE_AT
    assert f"note {last - 1}" in git("show", f"refs/lanes/ledger:board/00/00/00/{last:08d}.json", cwd=repo)
    with Repo(str(repo)) as second:
        head = second.refs[b"refs/lanes/ledger"]
        tree = second[second[head].tree]
        assert b"board" in tree and b"agents" in tree


def test_merging_keeps_packs_of_other_sizes_to_a_geometric_progression(tmp_path):
    pack_dir = tmp_path / "objects" / "pack"
    sizes = [1] * (packwrite.MERGE_AT - 2) + [30, 500]
    for n, size in enumerate(sizes):
        packwrite.write_pack(pack_dir, [pack_object(f"{n}-{i}") for i in range(size)])
    chosen = packwrite.packs_to_merge(pack_dir)
    # the 22 one-object packs sum to 22, and 30 <= 2 x 22 joins them; 500 > 2 x 52 stays as it is
    assert len(chosen) == packwrite.MERGE_AT - 1
    assert packwrite.merge_packs(tmp_path / "objects")
    assert len(indexes_in(pack_dir)) == 2


def test_a_killed_writers_leftovers_are_ignored_then_cleared(lanes, repo):
    lanes.agent_register("coder-1")
    pack_dir = repo / ".git" / "objects" / "pack"
    torn = pack_dir / ("pack-" + "ab" * 20 + ".pack")
    torn.write_bytes(b"PACK\0\0\0\2")  # cut short before its index was written
    aside = pack_dir / "tmp_lanes_1_pack-x.idx"
    aside.write_bytes(b"\377tOc")
    lanes.board_post("still appending", "coder-1")
    fsck_clean(repo)
    assert packwrite.clear_leftovers(pack_dir) == []  # too recent: could be a live writer's
    later = max(torn.stat().st_mtime, aside.stat().st_mtime) + packwrite.LEFTOVER_SECONDS
    assert sorted(packwrite.clear_leftovers(pack_dir, now=later)) == sorted([torn.name, aside.name])
    assert not torn.exists() and not aside.exists()


def pack_object(text: str) -> tuple[str, bytes, bytes]:
    content = text.encode()
    return packwrite.object_id(b"blob", content), b"blob", content


def indexes_in(pack_dir: Path) -> list[str]:
    return [n for n in os.listdir(pack_dir) if n.endswith(".idx")]


def test_trees_built_in_memory_are_the_trees_libgit2_builds(repo):
    """Random edits (files replacing directories and back, deletions emptying directories) give the same
    tree ids through the pack path as through libgit2's tree builder."""
    import random

    from git_lanes.model.entries import Entry
    from git_lanes.store import open_store

    store = open_store(repo)
    rng = random.Random(3)
    through_packs = through_libgit2 = None
    for step in range(150):
        batch = store.object_batch()
        edits: dict[str, tuple[int, str] | None] = {}
        for _ in range(rng.randint(1, 4)):
            path = "/".join(rng.choice(["a", "b", "a.b", "c-d", "e"]) for _ in range(rng.randint(1, 3)))
            edits[path] = None if rng.random() < 0.3 else \
                (0o100644, store.write_blob(b"%d" % rng.randint(0, 50)))
        through_libgit2 = store.edit_tree(through_libgit2, {
            path: None if entry is None else Entry(entry[1], entry[0]) for path, entry in edits.items()})
        through_packs = batch.edit_tree(through_packs, edits)
        store.write_batch(batch)
        assert through_packs == through_libgit2, step
