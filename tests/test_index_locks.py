"""A worktree whose index another git command holds (a plain `git commit` running its hooks, which keeps
`index.lock` closed but taken): nothing is moved that could not be recorded. A promotion into it is refused
before anything is proposed (exit 3); a lock nobody holds any more is cleared; and when the lock is taken
after the ref moved, the promotion stands and says what the next command there finishes."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import fsck_clean, git, run_cli
from journey_helpers import auto_commit, make_lane

from git_lanes.api import Lanes
from git_lanes.domain import attention

AGENT = {"GIT_LANES_AGENT": "coder-1"}
WAIT_SECONDS = 60


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def lanes_with_a_promotion_waiting(repo: Path) -> tuple[Path, Path]:
    l1, l2 = make_lane(repo, "l1"), make_lane(repo, "l2")
    (l2 / "b.txt").write_text("from l2\n")
    assert auto_commit(l2, "l2 b").code == 0
    return l1, l2


@contextmanager
def git_commit_running(repo: Path, worktree: Path, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A plain `git commit` in `worktree`, held in its pre-commit hook (so holding the index lock) until
    the block ends; it must then succeed."""
    started, release = tmp_path / "hook-started", tmp_path / "hook-may-finish"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {started}\nwhile [ ! -e {release} ]; do sleep 0.01; done\n")
    hook.chmod(0o755)
    (worktree / "README.md").write_text("edited with plain git\n")
    committing = subprocess.Popen(["git", "commit", "-qam", "plain git commit"], cwd=worktree)
    try:
        wait_for(started)  # the commit holds the index lock now, and runs its hook
        admin = repo / ".git" if worktree == repo else repo / ".git" / "worktrees" / worktree.name
        assert (admin / "index.lock").exists()
        yield committing
        assert committing.poll() is None  # the commit was still running when the command answered
    finally:
        release.touch()
        assert committing.wait(timeout=WAIT_SECONDS) == 0


def test_a_promotion_into_a_lane_whose_git_commit_is_running_is_refused_before_anything(repo, tmp_path):
    l1, _ = lanes_with_a_promotion_waiting(repo)
    with git_commit_running(repo, l1, tmp_path):
        before = git("for-each-ref", cwd=repo)
        refused = run_cli("promote", "l2", "--into", "l1", "--auto-accept", "--json", cwd=repo, env=AGENT)
        assert refused.code == 3 and refused.json["error"] == "index_locked", refused.err
        assert git("for-each-ref", cwd=repo) == before  # no proposal, no move
    assert run_cli("promote", "l2", "--into", "l1", "--auto-accept", cwd=repo, env=AGENT).code == 0
    fsck_clean(repo)


def test_reset_restore_and_delete_of_a_lane_whose_git_commit_is_running_are_refused_before_anything(repo, tmp_path):
    """Each would move the lane (or its workspace's files) under the running commit: the commit would then
    fail, or its workspace vanish. Refused (exit 3) with nothing moved, even with --force."""
    l1, _ = lanes_with_a_promotion_waiting(repo)
    with git_commit_running(repo, l1, tmp_path):
        before = git("for-each-ref", cwd=repo)
        for command in (("lane", "reset", "l1", "--onto", "l2", "--force"), ("restore", "l2", "-w", "l1", "--force"),
                        ("lane", "delete", "l1", "--force")):
            refused = run_cli(*command, "--json", cwd=repo, env=AGENT)
            assert refused.code == 3 and refused.json["error"] == "index_locked", (command, refused.err)
            assert git("for-each-ref", cwd=repo) == before, command
            assert (l1 / "README.md").read_text() == "edited with plain git\n"
    assert git("log", "-1", "--format=%s", cwd=l1).strip() == "plain git commit"
    fsck_clean(repo)


def test_an_index_lock_no_process_holds_is_cleared(repo):
    l1, _ = lanes_with_a_promotion_waiting(repo)
    (repo / ".git" / "worktrees" / "l1" / "index.lock").write_text("left by a killed process\n")
    promoted = run_cli("promote", "l2", "--into", "l1", "--auto-accept", "--json", cwd=repo, env=AGENT)
    assert promoted.code == 0, promoted.err
    assert promoted.json["worktree"]["updated"] == ["b.txt"]
    assert (l1 / "b.txt").read_text() == "from l2\n"


def test_a_lock_taken_after_the_move_leaves_the_rest_to_the_next_command(repo):
    l1, _ = lanes_with_a_promotion_waiting(repo)
    api = Lanes(repo)
    old = git("rev-parse", "refs/lanes/heads/l1", cwd=repo).strip()
    new = git("rev-parse", "refs/lanes/heads/l2", cwd=repo).strip()
    ctx = api.ctx
    with ctx.store.locked():
        worktree = attention.prepare_move(ctx, "l1", old, new)
        git("update-ref", "refs/lanes/heads/l1", new, old, cwd=repo)
        git("update-ref", "--no-deref", "HEAD", new, cwd=l1)
        lock = repo / ".git" / "worktrees" / "l1" / "index.lock"
        lock.write_text("")
        holder = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=l1, stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL)  # a git command at work in that worktree
        try:
            report = attention.finish(ctx, "l1", worktree)
        finally:
            holder.communicate(b"")
            lock.unlink()
    assert report["left"]["paths"] == ["b.txt"] and "index" in report["left"]["reason"]
    assert report["updated"] == []
    # the next command there finishes it: the file is recorded, and nothing is left
    (l1 / "c.txt").write_text("c\n")
    assert auto_commit(l1, "more").code == 0
    assert git("ls-files", "b.txt", cwd=l1).strip() == "b.txt"
    assert git("status", "--porcelain", cwd=l1) == ""
    fsck_clean(repo)


def test_a_sync_catch_up_leaves_a_workspace_whose_git_commit_is_running_alone(repo, tmp_path):
    """The lane moved (as a sync moves it); its workspace, where a `git commit` is running, is reported
    stale with the way on, and not a file, index entry or HEAD of it moves under the commit."""
    from git_lanes.domain import sync

    l1, _ = lanes_with_a_promotion_waiting(repo)
    old = git("rev-parse", "refs/lanes/heads/l1", cwd=repo).strip()
    new = git("rev-parse", "refs/lanes/heads/l2", cwd=repo).strip()
    git("update-ref", "refs/lanes/heads/l1", new, old, cwd=repo)
    api = Lanes(repo)
    with git_commit_running(repo, l1, tmp_path):
        with api.ctx.store.locked():
            found = sync.catch_up_workspaces(api.ctx, {"l1"})
        assert [(w["lane"], w["status"]) for w in found] == [("l1", "stale")]
        assert "index is locked" in found[0]["reason"] and "finish" in found[0]["hint"]
        assert git("rev-parse", "HEAD", cwd=l1).strip() == old
        assert not (l1 / "b.txt").exists()
    assert git("log", "-1", "--format=%s", cwd=l1).strip() == "plain git commit"
    fsck_clean(repo)


def test_a_sync_leaves_the_trunk_alone_while_a_git_commit_runs_in_the_main_worktree(repo, tmp_path):
    """The trunk's files must move before its branch does; the index they need is held, so neither moves
    (the sync reports the trunk blocked and the next one brings it)."""
    from git_lanes.store.follow import fast_forward_files

    _, l2 = lanes_with_a_promotion_waiting(repo)
    api = Lanes(repo)
    incoming = api.ctx.store.tree_of(git("rev-parse", "refs/lanes/heads/l2", cwd=repo).strip())
    with git_commit_running(repo, repo, tmp_path):
        with api.ctx.store.locked():
            blocked = fast_forward_files(api.ctx.store, repo, incoming)
        assert list(blocked or {}) == ["the index is locked by another git command"]
        assert not (repo / "b.txt").exists()
    assert git("log", "-1", "--format=%s", cwd=repo).strip() == "plain git commit"
