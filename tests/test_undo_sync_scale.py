"""Undoing a sync that brought many posts (issue 15): each inverse op retracts its post, and the board's
retraction list (one record) is written once for the whole undo, by the `board.retractions` op after them,
not once per post (3,000 posts: 44 s, each commit carrying the whole list). The ledger ends exactly as the
one-list-write-per-op undo left it, redo gives back the state before, and both machines agree after syncing,
also when a sync refuses one of the inverse ops."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, run_cli
from gitserver import clone, make_origin
from ledger_helpers import Clock, fsck_clean, ledger_head
from test_board_unread_property import from_the_posts

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain import board, ledger_undo, oplog, oplog_steps
from git_lanes.domain.board_index import current_seq, get_post
from git_lanes.domain.coordination import FOLD

POSTS = 40  # more than a checkpoint's worth of commits (32), so the undo crosses checkpoints
READERS = ("watcher", "helper")


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Lanes, Lanes, int]:
    """Machine A's API and machine B's (clock pinned), B having synced in POSTS posts from A: notes to
    everyone, a question, one directed to a reader. Returns them and the seq of the question."""
    return synced_pair(tmp_path, POSTS)


def synced_pair(tmp_path: Path, posts: int) -> tuple[Lanes, Lanes, int]:
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", "--initial-branch=main", str(remote), cwd=tmp_path)
    there = Lanes(make_origin(tmp_path, remote.as_uri()))
    for reader in READERS:
        there.agent_register(reader)
        there.board_read(reader)  # a cursor: from here on, posts to everyone count as unread for it
    there.sync()
    here_path = clone(tmp_path, remote.as_uri(), "machine-b")
    assert run_cli("pull", cwd=here_path).code == 0
    for number in range(posts - 2):
        there.board_post(f"peer post {number}", f"agent-{number % 3}")
    question = there.board_post("which port?", "agent-1", kind="question").post
    there.board_post("for you", "agent-2", to="helper")
    there.sync()
    synced = run_cli("sync", "--json", cwd=here_path)
    assert synced.code == 0 and synced.json["ledger"]["came_in"] == posts, synced.out + synced.err
    return there, Lanes(here_path, clock=Clock()), question


def records(lanes: Lanes) -> dict[str, object]:
    state = lanes._state()
    return {path: state.get(path) for path in state.files("")}


def retracted_seqs(lanes: Lanes) -> list[int]:
    return [post["seq"] for post in (records(lanes).get(board.RETRACTED) or {"posts": []})["posts"]]  # type: ignore[index]


def peer_posts(lanes: Lanes) -> list[dict]:
    state = lanes._state()
    return [post for post in (get_post(state, seq) for seq in range(1, current_seq(state) + 1))
            if post and post["from"].startswith("agent-")]


def counts_agree(lanes: Lanes) -> None:
    state = lanes._state()
    for reader in READERS:
        assert board.unread_count(state, reader) == len(from_the_posts(lanes, reader)), reader


def test_undo_of_a_large_sync_writes_the_retraction_list_once(pair, monkeypatch):
    _, here, _ = pair
    store = here.ctx.store
    base = ledger_head(here.ctx.store.root)
    reads = []
    listed = board._retracted
    monkeypatch.setattr(board, "_retracted", lambda state: reads.append(1) or listed(state))
    planned = here.undo(dry_run=True)
    assert len(planned["ledger"]) == POSTS and len(reads) <= 1, len(reads)  # a test of nothing if no post undone
    undone: dict = {}
    for listing in (POSTS, 0):  # the undo lists every post (each counted for someone); the redo, none
        reads.clear()
        undone = here.undo(undone["op"] if listing == 0 else None)
        assert len(undone["ledger"]) == POSTS and len(reads) <= 1, len(reads)
        head = ledger_head(here.ctx.store.root)
        commits = git("rev-list", "--first-parent", f"{base}..{head}", cwd=here.ctx.store.root).split()
        assert len(commits) == POSTS + 1  # an inverse op per post, then the one list write
        writes = [c for c in commits if ledger.state_at(store, c).raw(board.RETRACTED)
                  != ledger.state_at(store, store.commit_info(c).parents[0]).raw(board.RETRACTED)]
        assert writes == [head], len(writes)
        assert ledger.read_op(store, head).type == ledger_undo.RELIST
        assert len(retracted_seqs(here)) == listing
        counts_agree(here)
        base = head


def test_the_undo_leaves_the_ledger_as_one_list_write_per_op_did_and_redo_gives_back_the_state_before(pair):
    _, here, _ = pair
    store, ctx = here.ctx.store, here.ctx
    before = records(here)
    entry = next(oplog.entries(ctx, 1))
    assert entry.description == "sync"
    # What undo wrote before the list was batched: each inverse op updates the list itself, one on the other.
    head = ledger_head(store.root)
    for step in reversed(oplog_steps.of_entry(ctx, entry)):
        head, result = ledger.apply_op(store, head, ledger_undo.inverse(store, step.commit, "tester", ctx.now()),
                                       FOLD)
        assert head is not None, result
    one_by_one = ledger.state_at(store, head)
    undone = here.undo(actor="tester")
    state = here._state()
    assert {path: state.get(path) for path in state.files("")} == \
        {path: one_by_one.get(path) for path in one_by_one.files("")}
    assert all(post.get("retracted") for post in peer_posts(here))
    counts_agree(here)
    here.undo(undone["op"], actor="tester")  # the redo
    assert records(here) == before
    counts_agree(here)


def test_both_machines_agree_after_syncing_the_undo_and_its_redo(pair):
    there, here, _ = pair
    undone = here.undo()
    here.sync()
    there.sync()
    assert ledger_head(there.ctx.store.root) == ledger_head(here.ctx.store.root)
    assert records(there) == records(here) and len(retracted_seqs(there)) == POSTS
    assert board.unread(there._state(), "watcher") == []  # every post it had not read is retracted
    counts_agree(there)
    here.undo(undone["op"])
    here.sync()
    there.sync()
    assert records(there) == records(here) and retracted_seqs(there) == []
    counts_agree(there)
    assert len(board.unread(there._state(), "watcher")) == POSTS - 1  # those to everyone, unread again


def test_a_sync_that_refuses_one_inverse_op_leaves_that_post_off_the_list(pair):
    """The list write decides from the posts as they are when it applies: an inverse op the replay refuses
    (its post changed on the other machine since) leaves that post unretracted and unlisted."""
    there, here, question = pair
    here.undo()
    there.board_resolve(question, "agent-1")  # changes the post B's undo expects unchanged
    there.board_post("later", "agent-0")
    there.sync()
    report = here.sync()
    assert report.ledger.refused == 1, report
    there.sync()
    assert ledger_head(there.ctx.store.root) == ledger_head(here.ctx.store.root)
    for lanes in (here, there):
        state = lanes._state()
        assert not get_post(state, question).get("retracted")
        assert retracted_seqs(lanes) == [seq for seq in range(1, current_seq(state) + 1)
                                         if seq != question and get_post(state, seq).get("retracted")]
        assert len(retracted_seqs(lanes)) == POSTS - 1
        counts_agree(lanes)


def test_a_replay_renumbers_the_posts_the_list_write_names_with_the_posts(pair):
    """An undo of one operation that posted twice, all of it local: the peer's post lands first on sync, the
    local posts move up one, and the list write (which names posts by number) names where they landed."""
    there, here, _ = pair
    with here._operation("two posts", "tester"):
        first = here.board_post("mine 1", "agent-b").post
        second = here.board_post("mine 2", "agent-b").post
    undone = here.undo()
    assert undone["description"] == "two posts" and len(undone["ledger"]) == 2
    assert ledger.read_op(here.ctx.store, ledger_head(here.ctx.store.root)).type == ledger_undo.RELIST
    assert retracted_seqs(here) == [first, second]
    there.board_post("theirs", "agent-0")
    there.sync()
    report = here.sync()
    assert report.ledger.replayed >= 5 and report.ledger.refused == 0, report.ledger
    there.sync()
    for lanes in (here, there):
        state = lanes._state()
        mine = [seq for seq in range(1, current_seq(state) + 1) if get_post(state, seq)["from"] == "agent-b"]
        assert mine == [first + 1, second + 1] and all(get_post(state, seq)["retracted"] for seq in mine)
        assert retracted_seqs(lanes) == mine  # before: the numbers they had before the replay
        counts_agree(lanes)


def loose_objects(repo: Path) -> int:
    return sum(1 for folder in (repo / ".git" / "objects").glob("??") for _ in folder.iterdir())


def test_an_undo_killed_while_it_writes_its_commits_moves_nothing_and_runs_again(tmp_path):
    """SIGKILL while the undo of a 600-post sync writes its inverse commits: the ledger ref moves once, after
    all of them, so it is where it was, the repository is sound, and the undo runs whole the next time."""
    there, here, _ = synced_pair(tmp_path, 600)
    root = here.ctx.store.root
    before, sync_entry = ledger_head(root), run_cli("op", "log", "-n", "1", "--json", cwd=root).json[0]
    objects = loose_objects(root)
    doomed = subprocess.Popen([sys.executable, "-m", "git_lanes", "undo", "--json"], cwd=root,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while loose_objects(root) < objects + 100:  # a hundred of its commits written, hundreds to go
        assert doomed.poll() is None, "the undo ended before it was killed"
        time.sleep(0.01)
    doomed.kill()
    assert doomed.wait() == -signal.SIGKILL
    assert ledger_head(root) == before
    fsck_clean(root)
    assert run_cli("op", "log", "-n", "1", "--json", cwd=root).json[0] == sync_entry
    undone = run_cli("undo", "--json", cwd=root)
    assert undone.code == 0 and len(undone.json["ledger"]) == 600, undone.err
    assert len(retracted_seqs(here)) == 600 and all(post.get("retracted") for post in peer_posts(here))
    counts_agree(here)
