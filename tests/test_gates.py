"""Evaluation gates: declared at the trunk's committed head, run on the candidate tree in a scratch
checkout, recorded in the transition's note; a failing required gate rejects and exits 4."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, run_cli, workspace
from kill_helpers import Killed, killed_once_head_went
from promotion_fixtures import edit, head, land

from git_lanes.domain.gates import Gate, parse
from git_lanes.errors import GateFailed, UserError

PY = json.dumps(sys.executable)
AGENT = {"GIT_LANES_AGENT": "coder"}


def declare(api, repo, toml: str) -> None:
    """Commit `.lanes.toml` on the trunk from the main worktree."""
    edit(repo, {".lanes.toml": toml})
    held = api.commit("declare gates", "lead", cwd=repo, auto_accept=True)
    assert held["status"] == "proposed" and held["extra"]["held"]["paths"] == [".lanes.toml"]
    api.accept(held["id"])  # .lanes.toml is protected: a person accepts it


def gate(name: str, code: str, **options) -> str:
    lines = ["[[gate]]", f"name = {json.dumps(name)}", f"command = [{PY}, \"-c\", {json.dumps(code)}]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def test_parse_reads_argv_lists_shell_strings_and_defaults():
    gates = parse('[[gate]]\nname = "unit"\ncommand = ["pytest", "-q"]\n'
                  '[[gate]]\nname = "lint"\ncommand = "make lint"\nrequired = false\ntimeout = 5\nworkdir = "src/"\n'
                  '[policy]\nanything = 1\n')
    assert gates == (Gate("unit", ("pytest", "-q"), True, 600.0, ""), Gate("lint", "make lint", False, 5.0, "src"))


@pytest.mark.parametrize("text, problem", [
    ('[[gate]]\ncommand = "x"\n', "needs a name"),
    ('[[gate]]\nname = "a"\n', "needs a command"),
    ('[[gate]]\nname = "a"\ncommand = []\n', "needs a command"),
    ('[[gate]]\nname = "a"\ncommand = "x"\nrequired = "yes"\n', "required must be"),
    ('[[gate]]\nname = "a"\ncommand = "x"\ntimeout = 0\n', "timeout must be"),
    ('[[gate]]\nname = "a"\ncommand = "x"\nworkdir = "../up"\n', "outside the repository"),
    ('[[gate]]\nname = "a"\ncommand = "x"\ncomand = "typo"\n', "unknown key(s) comand"),
    ('[[gate]]\nname = "a"\ncommand = "x"\n[[gate]]\nname = "a"\ncommand = "y"\n', "two gates are named"),
    ('gate = 3\n', "array of tables"),
    ('[[gate]\n', "not valid TOML"),
])
def test_parse_rejects_bad_declarations_with_one_clear_line(text, problem):
    with pytest.raises(UserError) as info:
        parse(text)
    assert problem in info.value.message and info.value.code == "invalid_gates"


def test_a_failing_required_gate_rejects_the_promotion_with_exit_4(api, repo):
    declare(api, repo, gate("tests", "import os, sys; print('3 failed'); sys.exit(2 * (os.environ['GIT_LANES_LANE'] == 'main'))"))
    land(api, repo, "a", {"a.txt": "a\n"})
    before = head(repo, "main")
    result = run_cli("promote", "a", "--auto-accept", "--json", cwd=repo, env=AGENT)
    assert result.code == 4
    record = result.json
    assert record["error"] == "gate_failed" and record["transition"]["status"] == "rejected"
    [evaluation] = record["transition"]["evaluations"]
    assert evaluation["gate"] == "tests" and evaluation["exit_code"] == 2 and not evaluation["passed"]
    assert "3 failed" in evaluation["output_tail"]
    assert record["lane_only"] == [{"path": "a.txt", "kind": "added"}]
    assert head(repo, "main") == before
    assert head(repo, f"refs/lanes/rejected/{record['transition']['id']}") == record["transition"]["to"]
    text = run_cli("promote", "a", "--auto-accept", cwd=repo, env=AGENT)
    assert text.code == 4 and "gate tests failed (exit 2)" in text.err


def test_a_failing_required_gate_rejects_a_plain_commit_with_auto_accept(api, repo):
    declare(api, repo, gate("tests", "import sys; sys.exit(1)"))
    api.lane_create("a")
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    result = run_cli("commit", "-m", "a", "--auto-accept", "--json", cwd=workspace(repo, "a"), env=AGENT)
    assert result.code == 4 and result.json["transition"]["status"] == "rejected"
    with pytest.raises(GateFailed):
        edit(workspace(repo, "a"), {"b.txt": "b\n"})
        api.commit("b", "coder", lane="a", auto_accept=True)


def test_gates_run_on_the_merged_tree_not_the_lane_files(api, repo):
    # Lane commits are gated too; only the promotion into the trunk must see both lanes' files.
    check = ("import os, sys; ok = os.environ['GIT_LANES_LANE'] != 'main' or os.path.exists('a.txt') "
             "and os.path.exists('b.txt') "
             "and not os.path.exists('loose.txt'); print(sorted(os.listdir('.'))); sys.exit(0 if ok else 1)")
    api.lane_create("a")
    land(api, repo, "b", {"b.txt": "b\n"})
    api.promote("b", auto_accept=True)
    declare(api, repo, gate("merged", check))
    land(api, repo, "a", {"a.txt": "a\n"})
    edit(workspace(repo, "a"), {"loose.txt": "not snapshotted\n"})
    result = api.promote("a", auto_accept=True)
    assert result["status"] == "accepted"
    [evaluation] = result["transition"]["evaluations"]
    assert evaluation["passed"] and evaluation["tree"] == result["transition"]["tree"]


def test_a_lane_cannot_change_its_own_gates(api, repo):
    declare(api, repo, gate("strict", "import sys; sys.exit(1)"))
    api.lane_create("a")
    edit(workspace(repo, "a"), {".lanes.toml": "# no gates here\n", "a.txt": "a\n"})
    proposed = api.commit("loosen the gates", "coder", lane="a")
    with pytest.raises(GateFailed):
        api.accept(proposed["id"])
    # nor does an uncommitted edit in the trunk's own worktree count
    edit(repo, {".lanes.toml": "# nothing\n"})
    edit(workspace(repo, "a"), {"c.txt": "c\n"})
    with pytest.raises(GateFailed):
        api.commit("again", "coder", lane="a", auto_accept=True)


def test_an_optional_gate_failure_is_recorded_but_does_not_reject(api, repo):
    declare(api, repo, gate("style", "import sys; sys.exit(1)", required=False) + gate("ok", "pass"))
    record = land(api, repo, "a", {"a.txt": "a\n"})
    assert record["status"] == "accepted"
    assert [(e["gate"], e["passed"], e["required"]) for e in record["evaluations"]] == [
        ("style", False, False), ("ok", True, True)]


def test_each_gate_sees_the_candidate_as_committed(api, repo):
    first = gate("dirty", "open('junk.txt', 'w').write('x'); open('README.md', 'w').write('changed')")
    second = gate("clean", "import os, sys; sys.exit(os.path.exists('junk.txt') or "
                           "open('README.md').read() != '# project\\n')")
    declare(api, repo, first + second)
    record = land(api, repo, "a", {"a.txt": "a\n"})
    assert record["status"] == "accepted", record


def test_a_gate_past_its_timeout_is_killed_and_fails(api, repo):
    declare(api, repo, gate("slow", "import time; time.sleep(60)", timeout=0.5))
    with pytest.raises(GateFailed) as info:
        land(api, repo, "a", {"a.txt": "a\n"})
    [evaluation] = info.value.details["transition"]["evaluations"]
    assert evaluation["exit_code"] is None and "timed out after 0.5s" in evaluation["output_tail"]


@pytest.mark.parametrize("signal_number, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                                      (signal.SIGHUP, 129)])
def test_an_interrupted_or_terminated_commit_ends_its_gate_too(api, repo, tmp_path, signal_number, exit_code):
    """A gate runs in its own session (so its timeout can kill all it started); a git-lanes interrupted (Ctrl-C),
    terminated or hung up on must take it along instead of leaving it running with no timeout."""
    pid_file = tmp_path / "gate.pid"
    declare(api, repo, gate("slow", f"import os, time; open({json.dumps(str(pid_file))}, 'w').write(str(os.getpid())); "
                                    "time.sleep(60)"))
    api.lane_create("a")
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    # A suite run as a background job (or under nohup) hands its children SIGINT/SIGHUP ignored, which git-lanes
    # rightly keeps ignoring; the commit here starts as from a terminal, with every signal at its default.
    interrupted = subprocess.Popen([sys.executable, "-m", "git_lanes", "commit", "-w", "a", "-m", "work",
                                    "--agent", "coder", "--auto-accept"], cwd=repo, preexec_fn=_default_signals)
    while not pid_file.exists() or not pid_file.read_text():
        assert interrupted.poll() is None, "the commit ended before its gate ran"
        time.sleep(0.05)
    interrupted.send_signal(signal_number)
    assert interrupted.wait(timeout=60) == exit_code
    gate_pid = int(pid_file.read_text())
    try:
        os.kill(gate_pid, 0)
    except ProcessLookupError:
        return
    os.kill(gate_pid, signal.SIGKILL)
    raise AssertionError("the gate outlived the interrupted commit")


def _default_signals() -> None:
    for number in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)


def test_gates_run_without_the_writers_lock(api, repo):
    """A gate that itself writes (here: creates a lane) would wait forever if the lock were held."""
    create = (f"import subprocess, sys; sys.exit(subprocess.run([{PY}, '-m', 'git_lanes', 'lane', 'create', "
              f"'from-gate'], cwd={json.dumps(str(repo))}).returncode)")
    declare(api, repo, gate("writer", create, timeout=60))
    record = land(api, repo, "a", {"a.txt": "a\n"})
    assert record["status"] == "accepted" and record["evaluations"][0]["passed"]
    assert head(repo, "refs/lanes/heads/from-gate")


def test_workdir_runs_the_gate_in_a_directory_of_the_tree(api, repo):
    declare(api, repo, gate("in-src", "import os, sys; sys.exit(not os.path.exists('app.py'))", workdir="src"))
    assert land(api, repo, "a", {"a.txt": "a\n"})["status"] == "accepted"


def test_evaluate_reruns_the_gates_of_a_proposal_and_records_them(api, repo):
    declare(api, repo, gate("ok", "print('fine')"))
    land(api, repo, "a", {"a.txt": "a\n"})
    proposed = api.promote("a")
    transition_id = proposed["transition"]["id"]
    assert proposed["status"] == "proposed" and proposed["transition"]["evaluations"][0]["passed"]
    result = run_cli("evaluate", transition_id[:8], "--json", cwd=repo)
    assert result.code == 0, result.err
    assert result.json["status"] == "proposed" and result.json["evaluations"][0]["output_tail"] == "fine\n"
    note = json.loads(git("notes", "--ref=lanes", "show", proposed["transition"]["to"], cwd=repo))
    assert note["evaluations"][0]["gate"] == "ok"
    text = run_cli("evaluate", transition_id[:8], cwd=repo)
    assert text.code == 0 and "gate ok: passed" in text.out
    api.accept(transition_id)
    decided = run_cli("evaluate", transition_id[:8], cwd=repo)
    assert decided.code == 3 and "already accepted" in decided.err


def test_evaluate_exits_4_when_a_required_gate_fails_and_leaves_the_proposal_pending(api, repo):
    api.lane_create("a")
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    proposed = api.commit("a", "coder", lane="a")
    declare(api, repo, gate("no", "import sys; sys.exit(3)"))
    result = run_cli("evaluate", proposed["id"], "--json", cwd=repo)
    assert result.code == 4 and result.json["transition"]["status"] == "proposed"
    assert git("for-each-ref", "--format=%(refname)", "refs/lanes/proposals/", cwd=repo).strip()


def test_broken_gate_declarations_accept_nothing(api, repo):
    declare(api, repo, "[[gate]]\nname = 'x'\n")
    api.lane_create("a")
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    result = run_cli("commit", "-m", "a", "--auto-accept", cwd=workspace(repo, "a"), env=AGENT)
    assert result.code == 1 and "needs a command" in result.err
    assert git("ls-tree", "--name-only", "refs/lanes/heads/a", cwd=repo).split().count("a.txt") == 0


def test_a_scratch_checkout_left_by_a_killed_gate_is_swept(api, repo, tmp_path):
    holder = tmp_path / "git-lanes-gate-999999999-left"  # no such process
    holder.mkdir()
    git("worktree", "add", "--detach", "--quiet", str(holder / holder.name), "main", cwd=repo)
    declare(api, repo, gate("ok", "pass"))
    assert land(api, repo, "a", {"a.txt": "a\n"})["status"] == "accepted"
    listed = git("worktree", "list", "--porcelain", cwd=repo)
    assert "git-lanes-gate-" not in listed and not holder.exists()


def test_a_scratch_checkout_leaves_the_worktrees_in_one_rename_so_a_kill_never_half_removes_it(repo, tmp_path,
                                                                                               monkeypatch):
    """Removed by `git worktree remove`, a gate's checkout outlived a kill of its process: git went on deleting
    the private dir file by file, and a `git fsck` meanwhile (or after a kill of the whole process group)
    found a worktree with no HEAD. The process removes it itself now, its private dir leaving `worktrees/`
    in one rename before anything in it is deleted."""
    import shutil

    from git_lanes.store import scratch

    calls = tmp_path / "git-calls"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    deleting = shutil.rmtree

    with pytest.raises(Killed):
        with scratch.checkout(repo, repo / ".git", git("rev-parse", "HEAD", cwd=repo).strip()) as path:
            assert (path / "README.md").exists()
            monkeypatch.setattr(shutil, "rmtree", killed_once_head_went(deleting))
    monkeypatch.setattr(shutil, "rmtree", deleting)
    assert "worktree remove" not in calls.read_text()  # no git process left to go on deleting after a kill
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert not path.parent.exists() and scratch.PREFIX not in git("worktree", "list", cwd=repo)

def test_a_gate_checkout_killed_midway_is_swept_and_leaves_fsck_clean(repo):
    """A scratch checkout whose creator died (even before its files were written) is removed by the next
    gate run, including the admin entry git marks `initializing`, which `git worktree prune` skips."""
    import subprocess
    import sys

    from git_lanes.store import scratch
    from git_lanes.store.gitfiles import INITIALIZING

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    holder = repo.parent / f"{scratch.PREFIX}{dead.pid}-x"
    holder.mkdir()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(holder / holder.name), head], cwd=repo,
                   check=True)
    admin = repo / ".git" / "worktrees" / holder.name
    (admin / "locked").write_text(INITIALIZING)
    with scratch.checkout(repo, repo / ".git", head) as path:
        assert (path / "README.md").exists()
    assert not holder.exists() and not admin.exists()
    listing = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True).stdout
    assert scratch.PREFIX not in listing
    assert subprocess.run(["git", "fsck", "--strict"], cwd=repo, capture_output=True).returncode == 0


def test_a_gate_that_repoints_its_checkout_s_git_file_cannot_have_another_worktree_s_git_dir_deleted(api, repo):
    """The scratch checkout's private git dir is the one made for it: its `.git` file, which the gate may
    rewrite, names nothing the removal then deletes (a lane's workspace would lose its private dir)."""
    api.lane_create("victim")
    victim = workspace(repo, "victim")
    victim_admin = git("rev-parse", "--absolute-git-dir", cwd=victim).strip()
    repoint = f"open('.git', 'w').write('gitdir: {victim_admin}\\n')"
    declare(api, repo, gate("repoint", repoint))
    land(api, repo, "a", {"a.txt": "a\n"})
    assert os.path.isdir(victim_admin)
    assert git("status", "--porcelain", cwd=victim) == ""
    assert "git-lanes-gate-" not in git("worktree", "list", "--porcelain", cwd=repo)


def test_a_trunk_whose_gates_cannot_be_read_refuses_before_anything_is_proposed(api, repo):
    """`commit --auto-accept` and `promote` proposed first and read the gates after: each retry of an agent
    (an MCP client looping on the error) left one more pending proposal of the same content behind."""
    git("checkout", "-q", "-b", "side", cwd=repo)
    edit(repo, {"side.txt": "side\n"})
    git("add", "side.txt", cwd=repo)
    git("commit", "-qm", "side work", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    edit(repo, {".lanes.toml": "[[gate]\n"})  # broken, committed with plain git (lanes would hold it)
    git("add", ".lanes.toml", cwd=repo)
    git("commit", "-qm", "break the gates", cwd=repo)
    api.lane_create("a", setup=False)
    api.lane_create("b", "side", setup=False)
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    for _ in range(2):
        with pytest.raises(UserError) as committing:
            api.commit("Try it", "coder", lane="a", auto_accept=True)
        with pytest.raises(UserError) as promoting:
            api.promote("b", agent_id="coder")
        assert committing.value.code == promoting.value.code == "invalid_gates"
    assert api.history(status="proposed")["transitions"] == []
    assert api.commit("Propose it for a person", "coder", lane="a")["status"] == "proposed"  # no gate asked
