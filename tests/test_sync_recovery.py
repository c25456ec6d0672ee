"""Run logs travel as append-only chains, and the steps a killed sync leaves undone are finished by the next."""

from __future__ import annotations

import pytest
from conftest import git, run_cli, workspace
from gitserver import clone, make_origin, server  # noqa: F401  (server is a fixture)
from test_sync import edit_and_accept, synced_refs

from git_lanes.api import Lanes


def append_run_event(repo, run: str, text: str) -> str:
    """One event on a run log chain, written with plain git as any writer of refs/lanes/runs/* would."""
    ref = f"refs/lanes/runs/{run}"
    parent = git("rev-parse", "--verify", "--quiet", ref, cwd=repo, check=False).strip()
    tree = git("rev-parse", f"{parent}^{{tree}}", cwd=repo) if parent else git("mktree", cwd=repo)
    tree = tree.strip()
    args = ["commit-tree", tree, "-m", text] + (["-p", parent] if parent else [])
    commit = git(*args, cwd=repo).strip()
    git("update-ref", ref, commit, parent or "0" * 40, cwd=repo)
    return commit


@pytest.fixture
def pair(tmp_path, server):  # noqa: F811
    url = server.bare("project")
    origin = make_origin(tmp_path, url)
    edit_and_accept(origin, "feat", "feat.txt", "v1\n")
    Lanes(origin).sync()
    other = clone(tmp_path, url, "machine-b")
    Lanes.open_for_sync(other)[0].pull()
    return origin, other, server.path("project")


def test_run_logs_fast_forward_and_a_diverged_run_is_reported(pair):
    origin, other, remote = pair
    append_run_event(origin, "r1", "tool attempted")
    append_run_event(origin, "r2", "phase change")
    Lanes(origin).sync()
    Lanes(other).sync()
    assert synced_refs(other) == synced_refs(origin)
    assert "refs/lanes/oplog" in git("for-each-ref", "refs/lanes/", cwd=origin)  # each machine keeps its own
    assert "refs/lanes/oplog" not in git("for-each-ref", cwd=remote)  # and sync never pushes it
    head = append_run_event(other, "r1", "tool completed")
    Lanes(other).sync()
    Lanes(origin).sync()
    assert git("rev-parse", "refs/lanes/runs/r1", cwd=origin).strip() == head
    mine = append_run_event(origin, "r2", "origin's event")
    theirs = append_run_event(other, "r2", "other's event")
    Lanes(origin).sync()
    report = Lanes(other).sync()
    assert [(d["kind"], d["name"]) for d in report["diverged"]] == [("run", "r2")]
    assert git("rev-parse", "refs/lanes/runs/r2", cwd=remote).strip() == mine
    assert git("rev-parse", "refs/lanes/runs/r2", cwd=other).strip() == theirs


def test_a_workspace_left_behind_by_a_killed_sync_catches_up_on_the_next(pair):
    origin, other, _ = pair
    mine = Lanes(other)
    mine.lane_create("feat")
    before = git("rev-parse", "refs/lanes/heads/feat", cwd=other).strip()
    edit_and_accept(origin, "feat", "feat.txt", "v2\n")
    Lanes(origin).sync()
    # the state a sync killed between its ref transaction and moving the workspace leaves behind
    git("fetch", "--quiet", "origin", "refs/lanes/heads/feat", cwd=other)
    after = git("rev-parse", "FETCH_HEAD", cwd=other).strip()
    git("update-ref", "refs/lanes/heads/feat", after, before, cwd=other)
    assert git("rev-parse", "HEAD", cwd=workspace(other, "feat")).strip() == before

    report = mine.sync()
    assert {"lane": "feat", "status": "updated"}.items() <= report["workspaces"][0].items()
    assert git("rev-parse", "HEAD", cwd=workspace(other, "feat")).strip() == after
    assert (workspace(other, "feat") / "feat.txt").read_text() == "v2\n"
    assert git("status", "--porcelain", cwd=workspace(other, "feat")) == ""


def test_trunk_files_written_but_branch_not_moved_is_finished_by_the_next_sync(pair):
    origin, other, _ = pair
    edit_and_accept(origin, "main", "README.md", "# v2\n")
    Lanes(origin).sync()
    # a sync killed after writing the main worktree's files, before its ref transaction
    git("fetch", "--quiet", "origin", "refs/heads/main", cwd=other)
    new = git("rev-parse", "FETCH_HEAD", cwd=other).strip()
    git("read-tree", "-u", "-m", "HEAD", new, cwd=other)
    assert (other / "README.md").read_text() == "# v2\n"

    report = Lanes(other).sync()
    assert ("lane", "main") in {(m["kind"], m["name"]) for m in report["came_in"]}
    assert git("rev-parse", "main", cwd=other).strip() == new
    assert git("status", "--porcelain", "--untracked-files=no", cwd=other) == ""


def test_pushing_to_a_checked_out_branch_of_a_non_bare_remote_fails_clearly(pair, tmp_path):
    origin, other, _ = pair
    git("remote", "add", "peer", f"file://{other}", cwd=origin)  # a non-bare remote: main is checked out
    edit_and_accept(origin, "main", "README.md", "# v2\n")
    result = run_cli("sync", "peer", "--json", cwd=origin)
    assert result.code == 5 and result.json["error"] == "remote_failed"
    assert "refused refs/heads/main" in result.json["message"]
    assert git("status", "--porcelain", "--untracked-files=no", cwd=other) == ""


def test_a_push_that_loses_the_race_is_retried_after_a_fresh_merge_and_loses_nothing(pair):
    from contextlib import contextmanager

    from git_lanes.domain import sync

    origin, other, remote = pair
    Lanes(origin).board_post("origin 1", "agent-o")
    api = Lanes(other)
    api.board_post("other 1", "agent-x")
    rivals = []

    @contextmanager
    def merge_lock_while_a_rival_pushes():
        if not rivals:  # after our fetch, before our merge: another machine pushes
            rivals.append(Lanes(origin).sync())
        with api.ctx.store.locked():
            yield

    report = sync.run(api.ctx, "origin", "sync", lock=merge_lock_while_a_rival_pushes, sleep=lambda _: None)
    assert report["attempts"] == 2
    Lanes(origin).sync()
    texts = [p["text"] for p in Lanes(origin).board_read(None, everything=True)["posts"]]
    assert sorted(texts) == ["origin 1", "other 1"]
    assert [p["text"] for p in Lanes(other).board_read(None, everything=True)["posts"]] == texts
    assert synced_refs(origin) == synced_refs(other) == synced_refs(remote)


def test_a_push_refused_by_a_server_hook_says_why_and_pushes_nothing(pair):
    origin, _, remote = pair
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nif grep -q refs/lanes/heads/secret; then echo 'no secret lanes' >&2; exit 1; fi\n")
    hook.chmod(0o755)
    before = synced_refs(remote)
    edit_and_accept(origin, "secret", "s.txt", "s\n")
    edit_and_accept(origin, "feat", "feat.txt", "v2\n")
    result = run_cli("sync", "--json", cwd=origin)
    assert result.code == 5 and result.json["error"] == "remote_failed"
    assert "pre-receive hook declined" in result.json["message"]
    assert "no secret lanes" in result.json["message"]
    assert synced_refs(remote) == before  # atomic: the allowed refs did not go either


def test_a_tracking_ref_lock_left_by_a_killed_fetch_is_cleared(pair):
    origin, other, _ = pair
    Lanes(origin).board_post("news", "agent-o")
    Lanes(origin).sync()
    tracking = other / ".git" / "refs" / "lanes-remote" / "origin" / "lanes"
    tracking.mkdir(parents=True, exist_ok=True)
    (tracking / "ledger.lock").write_text("")  # what a fetch killed mid-update leaves
    report = Lanes(other).sync()
    assert report["ledger"]["came_in"] == 1
    assert not (tracking / "ledger.lock").exists()


def test_a_push_the_server_took_before_the_connection_broke_is_reported_as_pushed(pair):
    origin, _, remote = pair
    hook = remote / "hooks" / "post-receive"
    hook.write_text("#!/bin/sh\nkill -9 $PPID\n")  # the server dies once it has taken the push and said so
    hook.chmod(0o755)
    Lanes(origin).board_post("news", "agent-o")
    result = run_cli("sync", "--json", cwd=origin)
    assert result.code == 0, result.err
    assert [move["ref"] for move in result.json["went_out"]] == ["refs/lanes/ledger"]
    assert synced_refs(remote) == synced_refs(origin)
    hook.unlink()
    assert run_cli("sync", "--json", cwd=origin).json["went_out"] == []  # the tracking copy knew it was there


def test_a_connection_broken_before_the_server_took_the_push_says_so_and_the_next_sync_pushes(pair):
    origin, _, remote = pair
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nkill -9 $PPID\n")
    hook.chmod(0o755)
    before = synced_refs(remote)
    Lanes(origin).board_post("news", "agent-o")
    result = run_cli("sync", "--json", cwd=origin)
    assert result.code == 5 and result.json["error"] == "remote_failed"
    assert result.json["message"].startswith("the connection to 'origin' broke during the push")
    assert "next sync" in result.json["hint"]
    assert synced_refs(remote) == before
    hook.unlink()
    assert run_cli("sync", "--json", cwd=origin).json["ledger"]["went_out"] == 1
    assert synced_refs(remote) == synced_refs(origin)


def test_a_refused_push_still_reports_what_the_sync_merged_here(pair):
    origin, other, remote = pair
    Lanes(origin).board_post("from origin", "agent-o")
    Lanes(origin).sync()
    Lanes(other).board_post("from other", "agent-x")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'read-only today' >&2\nexit 1\n")
    hook.chmod(0o755)
    result = run_cli("sync", "--json", cwd=other)
    assert result.code == 5 and result.json["error"] == "remote_failed"
    # the origin's post came in and the local one was replayed on it here, though nothing went out
    done = result.json["report"]
    assert (done["ledger"]["came_in"], done["ledger"]["replayed"], done["went_out"]) == (1, 1, [])
    assert [move["kind"] for move in done["came_in"]] == ["ledger"]
    assert [p["text"] for p in Lanes(other).board_read(None, everything=True)["posts"]] == ["from origin", "from other"]
