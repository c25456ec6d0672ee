"""The merge gate with real processes, a target moving while the gates run, and SIGKILL at random instants
of a promotion: the target is before or after, never between, and `git fsck` stays clean."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from conftest import git, run_cli
from kill_helpers import children_ended
from promotion_fixtures import head, land

from git_lanes.model.records import Transition

pytestmark = pytest.mark.slow


def _start(repo, *args):
    # A session of its own, so that what it started (git children, which a SIGKILL of it leaves running) can be
    # waited for as a group.
    return subprocess.Popen([sys.executable, "-m", "git_lanes", *args], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "GIT_LANES_AGENT": "lead"},
                            start_new_session=True)


def fsck_problems(repo) -> str:
    """What `git fsck --strict` reports (empty when the repository is clean)."""
    proc = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling", "--strict"], cwd=repo,
                          capture_output=True, text=True)
    clean = proc.returncode == 0 and not proc.stdout.strip() and "error" not in proc.stderr
    return "" if clean else f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"


def _first_parent_merges(repo, since):
    lines = git("log", "--first-parent", "--format=%H %P", f"{since}..main", cwd=repo).splitlines()
    return [line.split() for line in lines]


def test_n_processes_promoting_at_once_each_land_once_or_report_a_collision(api, repo):
    # A gate that takes a moment widens the window in which the promotions overlap.
    edit_gate = '[[gate]]\nname = "pause"\ncommand = ["%s", "-c", "import time; time.sleep(0.2)"]\n' % sys.executable
    (repo / ".lanes.toml").write_text(edit_gate)
    api.accept(api.commit("declare a gate", "lead", cwd=repo, auto_accept=True)["id"])
    start = head(repo, "main")
    lanes = [f"agent-{i}" for i in range(6)]
    for lane in lanes:
        api.lane_create(lane)
    for i, lane in enumerate(lanes):
        changes = {f"{lane}.txt": f"{i}\n"}
        if i >= 4:
            changes["shared.txt"] = f"from {lane}\n"  # the last two collide: only one can land
        land(api, repo, lane, changes)
    heads = {lane: head(repo, f"refs/lanes/heads/{lane}") for lane in lanes}

    procs = {lane: _start(repo, "promote", lane, "--auto-accept", "--json") for lane in lanes}
    outcomes = {}
    for lane, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 3), (lane, proc.returncode, err)
        outcomes[lane] = proc.returncode
        if proc.returncode == 3:
            assert json.loads(out)["collisions"][0]["path"] == "shared.txt"

    landed = {lane for lane, code in outcomes.items() if code == 0}
    assert landed >= set(lanes[:4]) and len(landed & set(lanes[4:])) == 1
    merges = _first_parent_merges(repo, start)
    assert len(merges) == len(landed)  # each one merge commit, none twice, nothing else on the trunk
    assert sorted(second for _, _, second in merges) == sorted(heads[lane] for lane in landed)
    for lane in landed:
        assert git("show", f"main:{lane}.txt", cwd=repo)
    assert not fsck_problems(repo)


def test_a_target_that_moves_while_the_gates_run_is_recomputed(api, repo, tmp_path):
    marker = tmp_path / "moved"
    mover = (f"import os, subprocess, sys\n"
             f"if not os.path.exists({str(marker)!r}) and os.environ['GIT_LANES_LANE'] == 'main':\n"
             f"    open({str(marker)!r}, 'w').close()\n"
             f"    open(os.path.join({str(repo)!r}, 'hotfix.txt'), 'w').write('fix\\n')\n"
             f"    sys.exit(subprocess.run([sys.executable, '-m', 'git_lanes', 'commit', '-m', 'hotfix', "
             f"'--agent-id', 'human', '--auto-accept'], cwd={str(repo)!r}).returncode)\n")
    (repo / ".lanes.toml").write_text(f'[[gate]]\nname = "mover"\ncommand = ["{sys.executable}", "-c", '
                                      f'{json.dumps(mover)}]\n')
    api.accept(api.commit("declare a gate", "lead", cwd=repo, auto_accept=True)["id"])
    land(api, repo, "a", {"a.txt": "a\n"})
    result = api.promote("a", auto_accept=True)
    assert result["status"] == "accepted" and result["attempts"] == 2
    assert git("show", "main:hotfix.txt", cwd=repo) == "fix\n" and git("show", "main:a.txt", cwd=repo) == "a\n"
    superseded = [t for t in api.history(status="rejected")["transitions"] if t["kind"] == "promote"]
    assert len(superseded) == 1 and superseded[0]["reason"].startswith("superseded: main moved")


def test_sigkill_at_any_instant_of_a_promotion_leaves_the_target_before_or_after(api, repo):
    rng = random.Random(3)
    # One promotion run to the end tells how long one takes here, so the kills spread over all of it.
    land(api, repo, "warmup", {"warmup.txt": "w\n"})
    started = time.monotonic()
    _start(repo, "promote", "warmup", "--auto-accept").communicate()
    duration = time.monotonic() - started
    trials = 16
    outcomes = []
    for trial in range(trials):
        lane = f"k{trial}"
        if trial == trials // 2:
            # From here on a gate runs too, so kills also land in the scratch checkout and the gate itself.
            (repo / ".lanes.toml").write_text(f'[[gate]]\nname = "ok"\ncommand = ["{sys.executable}", "-c", "pass"]\n')
            api.accept(api.commit("declare a gate", "lead", cwd=repo, auto_accept=True)["id"])
            started = time.monotonic()
            land(api, repo, "warmup-gated", {"warmup-gated.txt": "w\n"})
            _start(repo, "promote", "warmup-gated", "--auto-accept").communicate()
            duration = time.monotonic() - started
        land(api, repo, lane, {f"{lane}.txt": f"{trial}\n"})
        before, lane_head = head(repo, "main"), head(repo, f"refs/lanes/heads/{lane}")
        proc = _start(repo, "promote", lane, "--auto-accept")
        time.sleep(rng.uniform(0.0, duration * 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        children_ended(proc.pid)
        after = head(repo, "main")
        outcomes.append(after != before)
        if after != before:
            assert git("rev-parse", f"{after}^1", f"{after}^2", cwd=repo).split() == [before, lane_head]
            assert git("show", f"{after}:{lane}.txt", cwd=repo) == f"{trial}\n"
        assert not fsck_problems(repo)
        # the next writer finishes whatever the killed one decided
        with api._writing():
            pass
        if after != before:
            note = Transition.from_json(git("notes", "--ref=lanes", "show", after, cwd=repo))
            assert note.status == "accepted" and note.kind == "promote"
    print(f"{sum(outcomes)} of {trials} killed promotions had landed")
    # Wherever the kills hit, a commit from the trunk's worktree never reverts a promotion that landed.
    (repo / "final.txt").write_text("final\n")
    result = run_cli("commit", "-m", "final", "--auto-accept", "--json", cwd=repo, env={"GIT_LANES_AGENT": "h"})
    assert result.code == 0, result.err
    assert "git-lanes-gate-" not in git("worktree", "list", "--porcelain", cwd=repo)
    for trial in range(trials):
        landed = subprocess.run(["git", "merge-base", "--is-ancestor", f"refs/lanes/heads/k{trial}", "main"],
                                cwd=repo).returncode == 0
        assert git("show", f"main:k{trial}.txt", cwd=repo, check=False) == (f"{trial}\n" if landed else "")
        assert (repo / f"k{trial}.txt").exists() == landed
