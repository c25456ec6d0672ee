"""gc prunes the logs of ended runs (and only those), leaving tombstones so a sync does not bring them back."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import git, run_cli
from hook_helpers import set_policy
from spawn_helpers import PATIENCE

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


def test_gc_removes_a_pruned_runs_agent_output_with_its_log(repo: Path):
    """A spawned run keeps its agent's output under .git/lanes-runs/<run>/; gc pruned the run's log and left
    that folder behind for good (nothing named it any more, and no later gc looked at it)."""
    command = json.dumps([sys.executable, "-c", "print('agent output')"])
    set_policy(repo, f"[agent.custom]\ncommand = {command}\n")
    spawned = run_cli("spawn", "--prompt", "Say something", "--cli", "custom", "--wait", "--json", cwd=repo,
                      timeout=PATIENCE)
    assert spawned.code == 0, spawned.err
    run = spawned.json["run"]
    files = repo / ".git" / "lanes-runs" / run
    assert "agent output" in (files / "agent.log").read_text()
    kept = Lanes(repo).run_start("coder-2", goal="still going")["id"]
    (repo / ".git" / "lanes-runs" / kept).mkdir(parents=True)
    (repo / ".git" / "lanes-runs" / kept / "note.txt").write_text("mine\n")
    dry = run_cli("gc", "--older-than", "0", "--dry-run", "--json", cwd=repo).json
    assert [r["run"] for r in dry["removed"]["runs"]] == [run] and files.is_dir()
    report = run_cli("gc", "--older-than", "0", "--json", cwd=repo).json
    assert [r["run"] for r in report["removed"]["runs"]] == [run]
    assert not files.exists()
    assert (repo / ".git" / "lanes-runs" / kept / "note.txt").read_text() == "mine\n"


def test_gc_prunes_a_stopped_spawned_run_with_its_output(repo: Path, tmp_path: Path):
    """A spawned run that `git lanes stop` stopped never ends by itself (no supervisor is left to end it), so
    gc, which pruned only ended runs, kept its log and its agent's output for good. Stopped, it is as done
    as an ended run, and goes on the same terms: once its stop is older than the cutoff."""
    from spawn_helpers import journal, use_fake_agent, wait_for

    path = use_fake_agent(repo, tmp_path, {"default": [{"hang": {}}]})
    runs = []
    for name in ("stopped", "ended"):
        result = run_cli("spawn", "--prompt", f"Hang ({name})", "--json", cwd=repo)
        assert result.code == 0, result.err
        runs.append(result.json["run"])
        wait_for(lambda: journal(path, runs[-1], "hanging"), "the agent to hang")
        assert run_cli("stop", runs[-1], "--json", cwd=repo).json["stopped"] is True
    assert run_cli("run", "end", runs[1], cwd=repo).code == 0
    kept = Lanes(repo).run_start("coder-2", goal="still going")["id"]
    files = [repo / ".git" / "lanes-runs" / run for run in runs]
    assert all((folder / "agent.log").is_file() for folder in files)
    shown = {run: run_cli("run", "show", run, "--json", cwd=repo).json for run in runs}
    assert [(shown[r]["state"], shown[r]["status"]) for r in runs] == [("stopped", "active"), ("ended", "ended")]

    assert run_cli("gc", "--json", cwd=repo).json["removed"]["runs"] == []  # younger than 30 days: kept
    report = run_cli("gc", "--older-than", "0", "--json", cwd=repo)
    assert report.code == 0, report.err
    assert sorted(r["run"] for r in report.json["removed"]["runs"]) == sorted(runs)
    assert not any(folder.exists() for folder in files)
    assert git("for-each-ref", "--format=%(refname)", "refs/lanes/runs/", cwd=repo).split() == \
        [f"refs/lanes/runs/{kept}"]


def test_gc_prunes_a_spawned_run_whose_agent_exited_or_died_and_never_a_live_one(repo: Path, tmp_path: Path):
    """A spawned run whose agent exited with an error (non-zero) never ends (only an agent that finished ends
    its run), and one whose agent and supervisor were killed outright records no exit at all: gc, which
    pruned only ended and stopped runs, kept both logs and their agents' output for good. Nothing of them
    runs, so they go on the same terms as a stopped run; a run whose agent still runs stays."""
    import os
    import signal

    from spawn_helpers import finished, journal, show, use_fake_agent, wait_for

    from git_lanes.store import processes

    path = use_fake_agent(repo, tmp_path, {"default": [{"exit": 3}], "hang": [{"hang": {}}]})

    def spawn(stage: str) -> str:
        result = run_cli("spawn", "--prompt", f"Stage: {stage}", "--json", cwd=repo)
        assert result.code == 0, result.err
        return result.json["run"]

    failed = spawn("default")
    wait_for(lambda: finished(repo, failed), "the failed agent's supervisor to end")
    assert (show(repo, failed)["state"], show(repo, failed)["exit"]["code"]) == ("exited", 3)
    killed, live = spawn("hang"), spawn("hang")
    for run in (killed, live):
        wait_for(lambda: journal(path, run, "hanging"), "the agent to hang")
    state = show(repo, killed)
    os.kill(state["supervisor"]["pid"], signal.SIGKILL)
    os.killpg(state["process"]["pgid"], signal.SIGKILL)
    wait_for(lambda: not processes.running(state["supervisor"]["pid"])
             and not processes.group_members(state["process"]["pgid"]), "the killed run's processes to go")
    shown = show(repo, killed)
    assert shown["process"] and not shown["exit"] and shown["status"] == "active", shown  # died, said nothing
    files = {run: repo / ".git" / "lanes-runs" / run for run in (failed, killed, live)}
    assert all((folder / "agent.log").is_file() for folder in files.values())

    assert run_cli("gc", "--json", cwd=repo).json["removed"]["runs"] == []  # younger than 30 days: kept
    report = run_cli("gc", "--older-than", "0", "--json", cwd=repo)
    assert report.code == 0, report.err
    assert sorted(r["run"] for r in report.json["removed"]["runs"]) == sorted([failed, killed])
    assert not files[failed].exists() and not files[killed].exists()
    assert (files[live] / "agent.log").is_file() and show(repo, live)["state"] == "running"
    assert git("for-each-ref", "--format=%(refname)", "refs/lanes/runs/", cwd=repo).split() == \
        [f"refs/lanes/runs/{live}"]
    assert run_cli("stop", live, "--json", cwd=repo).json["stopped"] is True
