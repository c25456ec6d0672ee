"""The store's compare-and-swap contract, tested directly rather than through the commands built on it: every
ref move names the value it expects; a ref not at it (`stale_ref`) or locked by someone else (`ref_locked`)
fails the whole batch with nothing moved. Both ref writers (libgit2's, and the hook path's own) keep it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git

from git_lanes.errors import Conflict
from git_lanes.store import RefUpdate, open_store, ref_files


@pytest.fixture
def store(repo: Path):
    return open_store(repo)


def _commit(repo: Path, message: str) -> str:
    return git("commit-tree", git("write-tree", cwd=repo).strip(), "-m", message, cwd=repo).strip()


def _refs(repo: Path) -> str:
    return git("for-each-ref", "refs/lanes/test", "refs/heads/side", cwd=repo)


def test_a_batch_with_one_stale_expectation_moves_nothing(store, repo):
    one, two = _commit(repo, "one"), _commit(repo, "two")
    store.update_refs([RefUpdate("refs/lanes/test/a", one, None, "a"), RefUpdate("refs/lanes/test/b", one, None, "b")])
    before = _refs(repo)
    with pytest.raises(Conflict) as raised:
        store.update_refs([RefUpdate("refs/lanes/test/a", two, one, "a moves"),
                           RefUpdate("refs/lanes/test/b", two, two, "b was never at two")])
    assert raised.value.code == "stale_ref" and "refs/lanes/test/b" in raised.value.message
    assert _refs(repo) == before


@pytest.mark.parametrize("expected", ["exists", "gone"])
def test_creating_a_ref_that_exists_or_deleting_one_that_moved_is_stale(store, repo, expected):
    one, two = _commit(repo, "one"), _commit(repo, "two")
    store.update_refs([RefUpdate("refs/lanes/test/a", one, None, "a")])
    update = RefUpdate("refs/lanes/test/a", two, None, "create again") if expected == "exists" \
        else RefUpdate("refs/lanes/test/a", None, two, "delete from two")
    with pytest.raises(Conflict) as raised:
        store.update_refs([update])
    assert raised.value.code == "stale_ref"
    assert store.read_ref("refs/lanes/test/a") == one


def test_a_ref_locked_by_another_git_command_is_ref_locked_and_left_alone(store, repo):
    one, two = _commit(repo, "one"), _commit(repo, "two")
    store.update_refs([RefUpdate("refs/heads/side", one, None, "side")])
    # git's own lock on a ref git-lanes does not own: never cleared as stale, whoever left it
    lock = repo / ".git" / "refs" / "heads" / "side.lock"
    lock.write_text("")
    with pytest.raises(Conflict) as raised:
        store.update_refs([RefUpdate("refs/heads/side", two, one, "side moves")])
    assert raised.value.code == "ref_locked" and str(lock) in (raised.value.hint or "")
    assert lock.exists() and store.read_ref("refs/heads/side") == one


def test_the_hook_paths_writer_keeps_the_same_contract(store, repo):
    one, two = _commit(repo, "one"), _commit(repo, "two")
    common = repo / ".git"
    ref_files.update_ref(common, "refs/lanes/test/run", one, None, "start", "t <t@x>", 0.0)
    with pytest.raises(Conflict) as raised:
        ref_files.update_ref(common, "refs/lanes/test/run", two, None, "again", "t <t@x>", 0.0)
    assert raised.value.code == "stale_ref"
    assert not (common / "refs/lanes/test/run.lock").exists()
    ref_files.update_ref(common, "refs/lanes/test/run", two, one, "moves", "t <t@x>", 0.0)
    assert store.read_ref("refs/lanes/test/run") == two
