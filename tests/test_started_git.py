"""A git command started ahead of its answer (store/gitcli.StartedGit: the light sync's fetch runs while the
domain loads) answers exactly as `run_git` does, and is never left running or unreaped."""

from __future__ import annotations

import signal
import subprocess

import pytest
from conftest import git

from git_lanes.store import remote as transport
from git_lanes.store.gitcli import StartedGit, run_git
from git_lanes.store.light import open_light
from test_sync_light import behind  # noqa: F401  (a fixture: a clone the remote moved on from)


@pytest.mark.parametrize("args", [["rev-parse", "HEAD"], ["rev-parse", "--verify", "no-such-ref"]])
def test_a_started_git_answers_as_run_git_does(repo, args):
    mine, theirs = StartedGit(args, repo).result(timeout=60), run_git(args, repo, check=False, timeout=60)
    assert (mine.returncode, mine.stdout, mine.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert mine.args == ["git", *args]


def test_a_started_git_past_its_timeout_is_killed_and_reaped(repo):
    started = StartedGit(["-c", "alias.linger=!sleep 2", "linger"], repo)
    with pytest.raises(subprocess.TimeoutExpired):
        started.result(timeout=0.05)
    assert started._proc.returncode == -signal.SIGKILL  # killed, not finished, and waited for


def test_a_fetch_started_and_never_taken_is_waited_for(repo, tmp_path):
    from git_lanes.api import Lanes

    Lanes(repo).board_post("hello", "agent-a")  # the ledger exists: every exact ref the fetch names is there
    remote = tmp_path / "remote.git"
    git("init", "--quiet", "--bare", str(remote), cwd=tmp_path)
    git("push", "--quiet", str(remote), "refs/*:refs/*", cwd=repo)  # the ledger and notes too
    git("remote", "add", "origin", f"file://{remote}", cwd=repo)
    store = open_light(repo)
    transport.start_fetch(store, "origin", "main")
    assert len(store.started_git) == 1
    transport.settle_started(store)
    assert store.started_git == {}
    assert store.read_ref("refs/lanes-remote/origin/heads/main") == git("rev-parse", "HEAD", cwd=repo).strip()


def test_an_interrupted_light_sync_stops_the_fetch_it_started(behind, monkeypatch):
    """Ctrl-C (KeyboardInterrupt) before the sync took its started fetch's answer, while the domain loads: the
    fetch is killed and reaped, as an interrupted `run_git`'s git is, not waited for until a slow remote
    answers (up to NETWORK_TIMEOUT)."""
    import os
    import time

    from git_lanes.api import sync_light

    clone, where = behind
    marker = where / "upload-pack.pid"
    wrapper = where / "slow-upload-pack"
    wrapper.write_text(f"#!/bin/sh\necho $$ > {marker}.new && mv {marker}.new {marker}\nexec sleep 120\n")
    wrapper.chmod(0o755)
    git("config", "remote.origin.uploadpack", str(wrapper), cwd=clone)
    started: list = []

    def interrupted_while_loading(store, trunk):
        started.extend(store.started_git.values())
        while not marker.exists():  # the precondition: the fetch reached the remote and waits on it
            assert started[0]._proc.poll() is None
            time.sleep(0.01)
        raise KeyboardInterrupt

    monkeypatch.setattr(sync_light, "_context", interrupted_while_loading)
    try:
        with pytest.raises(KeyboardInterrupt):
            sync_light.LightSync(clone).run()
        assert len(started) == 1 and started[0]._proc.returncode == -signal.SIGKILL
    finally:
        if marker.exists():
            os.kill(int(marker.read_text()), signal.SIGKILL)


def test_a_started_git_read_as_it_prints_is_reaped_when_stopped_or_interrupted(repo):
    for _ in range(3):
        git("commit", "--quiet", "--allow-empty", "-m", "one more", cwd=repo)
    whole = StartedGit(["log", "--format=%H"], repo, output=True)
    printed: list[bytes] = []
    assert whole.pour(lambda chunk: printed.append(chunk) or True) == 0
    assert b"".join(printed).decode().split() == git("log", "--format=%H", cwd=repo).split()
    stopped = StartedGit(["-c", "alias.linger=!echo started && sleep 2", "linger"], repo, output=True)
    assert stopped.pour(lambda chunk: False) is None
    assert stopped._proc.returncode == -signal.SIGKILL  # stopped at its first output, and waited for

    def interrupted(chunk: bytes) -> bool:
        raise KeyboardInterrupt

    lingering = StartedGit(["-c", "alias.linger=!echo started && sleep 2", "linger"], repo, output=True)
    with pytest.raises(KeyboardInterrupt):
        lingering.pour(interrupted)
    assert lingering._proc.returncode == -signal.SIGKILL
