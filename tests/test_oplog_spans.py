"""A sync's operation-log entry records the ledger's moves (spans), not each op they bring: the ops are read
from the ledger when `op log` or `undo` asks, with the same answers. A sync that replays local ops covers the
ops new to this machine, not the ledger's whole history (before, its walk went to the first op)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git, run_cli
from gitserver import clone, make_origin

from git_lanes.api import Lanes


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Lanes, Path, Path]:
    """Machine A (its API), synced through a bare remote with machine B (a clone that pulled), both with
    five shared posts."""
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", "--initial-branch=main", str(remote), cwd=tmp_path)
    origin = make_origin(tmp_path, remote.as_uri())
    there = Lanes(origin)
    for number in range(5):
        there.board_post(f"shared {number}", "agent-a")
    there.sync()
    here = clone(tmp_path, remote.as_uri(), "machine-b")
    assert run_cli("pull", cwd=here).code == 0
    return there, origin, here


def last_entry(path: Path) -> dict:
    message = git("log", "-1", "--format=%B", "refs/lanes/oplog", cwd=path)
    return json.loads(message.split("\n", 2)[2])


def newest_row(path: Path) -> dict:
    logged = run_cli("op", "log", "-n", "1", "--json", cwd=path)
    assert logged.code == 0, logged.err
    return logged.json[0]


def post_ids(path: Path, since: str) -> list[str]:
    """The op ids of the ledger commits after `since`, oldest first."""
    out = git("log", "--reverse", "--format=%B%x00", f"{since}..refs/lanes/ledger", cwd=path)
    return [json.loads(message.strip().split("\n\n", 1)[1].split("\n", 1)[0])["id"]
            for message in out.split("\0") if message.strip()]


@pytest.mark.parametrize("light", [True, False])
def test_a_fast_forward_records_its_span_and_op_log_lists_its_ops(pair, light):
    there, _, here = pair
    before = git("rev-parse", "refs/lanes/ledger", cwd=here).strip()
    for number in range(20):
        there.board_post(f"remote {number}", "agent-a")
    there.sync()
    # GIT_CONFIG_COUNT=0 hands the sync to the ordinary path (config the light store does not read)
    synced = run_cli("sync", "--json", cwd=here, env={} if light else {"GIT_CONFIG_COUNT": "0"})
    assert synced.code == 0 and synced.json["ledger"]["came_in"] == 20, synced.err
    after = git("rev-parse", "refs/lanes/ledger", cwd=here).strip()
    entry = last_entry(here)
    assert entry["ledger"] == [] and entry["ledger_spans"] == [{"old": before, "new": after}]
    assert newest_row(here)["ledger"] == post_ids(here, before)
    shown = run_cli("op", "show", entry["id"][:8], "--json", cwd=here)
    assert shown.code == 0, shown.err
    assert [step["id"] for step in shown.json["ledger"]] == post_ids(here, before)
    assert {step["type"] for step in shown.json["ledger"]} == {"board.post"}


def test_a_replaying_sync_covers_the_ops_new_here_not_the_whole_ledger(pair):
    there, _, here = pair
    base = git("rev-parse", "refs/lanes/ledger", cwd=here).strip()
    assert run_cli("board", "post", "local", "--agent", "agent-b", cwd=here).code == 0
    there.board_post("remote", "agent-a")
    there.sync()
    synced = run_cli("sync", "--json", cwd=here)
    assert synced.code == 0 and synced.json["ledger"]["replayed"] == 1, synced.err
    covered = newest_row(here)["ledger"]
    remote_post, local_post = post_ids(here, base)  # the replay puts the local op back on top of the remote's
    assert covered == [remote_post]  # the replayed local op was here already: its own row, not the sync's


def test_undo_of_a_replaying_sync_keeps_the_local_ops_it_replayed(pair):
    """The local post a sync replays was here before the sync: undoing the sync retracts only what it brought
    in, and the local post stays an operation of its own in `op log` (before, the sync covered it too, and
    undoing the sync retracted the user's own post)."""
    there, _, here = pair
    assert run_cli("board", "post", "mine", "--agent", "agent-b", cwd=here).code == 0
    there.board_post("theirs", "agent-a")
    there.sync()
    synced = run_cli("sync", "--json", cwd=here)
    assert synced.code == 0 and synced.json["ledger"]["replayed"] == 1, synced.err
    rows = run_cli("op", "log", "--json", cwd=here).json
    assert [row["kind"] for row in rows[:2]] == ["lanes", "ledger"]  # the sync, then the post made here
    assert rows[1]["actor"] == "agent-b", rows[1]
    undone = run_cli("undo", "--json", cwd=here)
    assert undone.code == 0 and undone.json["description"] == "sync", undone.out + undone.err
    assert len(undone.json["ledger"]) == 1
    posts = run_cli("board", "read", "--agent", "reader", "--all", "--json", cwd=here).json["posts"]
    retracted = {post["text"] for post in posts if post.get("retracted")}
    shown = {post["text"] for post in posts} - retracted
    assert "mine" in shown and "theirs" not in shown, posts
    redone = run_cli("undo", "--json", cwd=here)  # undoing the undo brings the peer's post back
    assert redone.code == 0, redone.err
    posts = run_cli("board", "read", "--agent", "reader2", "--all", "--json", cwd=here).json["posts"]
    assert {"mine", "theirs"} <= {post["text"] for post in posts if not post.get("retracted")}, posts


def test_undo_of_a_sync_reverses_the_ops_its_span_brought(pair):
    """As before spans: undoing a sync undoes the posts it brought in (inverse ops), read from its span."""
    there, _, here = pair
    there.board_post("brought in", "agent-a")
    there.sync()
    assert run_cli("sync", cwd=here).code == 0
    read = run_cli("board", "read", "--agent", "reader", "--json", cwd=here)
    assert "brought in" in read.out
    undone = run_cli("undo", "--json", cwd=here)
    assert undone.code == 0 and undone.json["description"] == "sync", undone.out + undone.err
    assert len(undone.json["ledger"]) == 1
    again = run_cli("board", "read", "--agent", "reader2", "--all", "--json", cwd=here)
    assert "brought in" not in again.out, again.out
