"""gc prunes the logs of ended runs (and only those), leaving tombstones so a sync does not bring them back."""

from __future__ import annotations

from pathlib import Path

from conftest import git

from git_lanes.api import Lanes


def test_gc_prunes_ended_runs_logs_and_keeps_active_ones(tmp_path: Path, repo: Path):
    api = Lanes(repo)
    api.lane_create("work")
    ended = api.run_start("coder-1", lane="work", goal="done soon")["id"]
    active = api.run_start("coder-2", lane="work", goal="still going")["id"]
    api.run_end(ended, "finished")
    bare = tmp_path / "remote.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", bare.as_uri(), cwd=repo)
    api.sync()
    assert git("rev-parse", "--verify", "--quiet", f"refs/lanes/runs/{ended}", cwd=bare).strip()

    report = api.gc(older_than="0s")
    assert [r["run"] for r in report["removed"]["runs"]] == [ended]
    assert git("for-each-ref", "--format=%(refname)", "refs/lanes/runs/", cwd=repo).split() == \
        [f"refs/lanes/runs/{active}"]
    api.sync()  # the tombstone deletes it on the remote instead of bringing it back
    assert git("for-each-ref", "--format=%(refname)", "refs/lanes/runs/", cwd=bare).split() == \
        [f"refs/lanes/runs/{active}"]
    assert git("for-each-ref", "--format=%(refname)", "refs/lanes/runs/", cwd=repo).split() == \
        [f"refs/lanes/runs/{active}"]
