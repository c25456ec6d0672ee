"""Journeys through the coordination ledger and sync as their users take them, through real `git lanes`
processes: the ways out that errors and reports print, remotes that are odd (a HEAD that names no branch, a
working repository, one that does not exist), and the rough edges found by using the commands by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, run_cli
from gitserver import make_origin

from git_lanes.api import Lanes


def refs_of(path: Path) -> str:
    return git("for-each-ref", "--format=%(objectname) %(refname)", cwd=path)


@pytest.fixture
def origin(tmp_path: Path) -> tuple[Path, Path]:
    """A machine set up for lanes whose trunk and lane state are pushed to a bare repository (file://)."""
    bare = tmp_path / "remote.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    machine = make_origin(tmp_path, bare.as_uri())
    Lanes(machine).sync()
    return machine, bare


# -- sync: remotes that are not what the user expects ------------------------------------------------------
def test_a_clone_of_a_remote_whose_head_names_no_branch_is_set_up_with_trunk(tmp_path, origin):
    machine, bare = origin
    git("symbolic-ref", "HEAD", "refs/heads/master", cwd=bare)  # e.g. pushed to a server defaulting to master
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)  # warns: nothing checked out
    plain = run_cli("pull", cwd=clone)
    assert plain.code == 1 and "--trunk main" in plain.err and "Traceback" not in plain.err
    assert not git("for-each-ref", "refs/heads", cwd=clone).strip()
    pulled = run_cli("pull", "--trunk", "main", cwd=clone)
    assert pulled.code == 0, pulled.err
    assert git("symbolic-ref", "HEAD", cwd=clone).strip() == "refs/heads/main"
    assert (clone / "src" / "app.py").read_text() == "print('hello')\n"
    assert git("status", "--porcelain", cwd=clone) == ""
    assert run_cli("sync", cwd=clone).code == 0


def test_pushing_to_a_working_repository_says_why_in_one_line_and_the_way_on(tmp_path, origin):
    machine, bare = origin
    working = tmp_path / "working"
    git("clone", "--quiet", bare.as_uri(), str(working), cwd=tmp_path)
    git("remote", "add", "desk", working.as_uri(), cwd=machine)
    (machine / "b.txt").write_text("b\n")
    assert run_cli("commit", "-m", "add b", "--auto-accept", "--agent-id", "me", cwd=machine).code == 0
    before = refs_of(working)
    result = run_cli("sync", "desk", cwd=machine)
    assert result.code == 1
    error, hint = result.err.strip().splitlines()
    assert "checked out" in error and "receive.denyCurrentBranch" not in error
    assert "bare" in hint and "next sync pushes it" not in hint
    assert refs_of(working) == before


@pytest.mark.parametrize("url, says", [("missing.git", "does not appear to be a git repository"),
                                       ("git://127.0.0.1:1/x.git", "unable to connect")])
def test_an_unreachable_remote_is_one_line_naming_gits_reason(tmp_path, origin, url, says):
    machine, _ = origin
    target = (tmp_path / url).as_uri() if "://" not in url else url
    git("remote", "add", "nowhere", target, cwd=machine)
    before = refs_of(machine)
    for command in ("push", "pull", "sync"):
        result = run_cli(command, "nowhere", cwd=machine)
        assert result.code == 1 and says in result.err.splitlines()[0], result.err
        assert "and the repository exists" not in result.err
    assert refs_of(machine) == before


def test_a_url_given_as_remote_is_told_to_name_it_first(origin):
    machine, bare = origin
    result = run_cli("sync", bare.as_uri(), "--json", cwd=machine)
    assert result.code == 1 and result.json["error"] == "invalid_remote"
    assert "git remote add" in result.json["hint"]


def test_the_way_out_of_a_diverged_lane_leaves_no_helper_lane_behind(tmp_path, origin):
    machine, bare = origin
    api = Lanes(machine)
    ours = Path(api.lane_create("feat")["workspace"])
    api.sync()
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    assert run_cli("pull", cwd=clone).code == 0
    mine = Lanes(clone)
    theirs = Path(mine.lane_create("feat")["workspace"])
    for lanes, workspace, name in ((api, ours, "a.txt"), (mine, theirs, "b.txt")):
        (workspace / name).write_text(name)
        lanes.commit(f"write {name}", "coder", lane="feat", auto_accept=True)
    api.sync()
    report = run_cli("sync", cwd=clone)
    assert report.code == 3
    way = next(line for line in report.out.splitlines() if "to merge:" in line).split("to merge: ")[1]
    for command in way.split(" && "):
        step = run_cli(*command.split()[2:], cwd=clone)
        assert step.code == 0, (command, step.err)
    assert run_cli("sync", cwd=clone).code == 0
    api.sync()
    for repo in (machine, clone, bare):
        assert not git("for-each-ref", "refs/lanes/heads/feat-origin", cwd=repo).strip()


# -- tasks: an owner whose lease lapsed comes back ----------------------------------------------------------
def test_a_former_owner_cannot_finish_a_task_someone_took_over(repo):
    from ledger_helpers import Clock, ledger_head

    from git_lanes.domain.agents import LEASE_SECONDS
    from git_lanes.errors import Conflict

    lanes = Lanes(repo, clock=Clock())
    task = lanes.task_create("t", actor="lead")["task"]
    lanes.task_claim(task, "slow")
    lanes.ctx.clock.advance(LEASE_SECONDS + 1)
    lanes.task_claim(task, "fast")
    head = ledger_head(repo)
    with pytest.raises(Conflict) as info:
        lanes.task_done(task, actor="slow")  # back from a long pause, unaware
    assert info.value.exit_code == 3 and info.value.details["owner"] == "fast"
    assert ledger_head(repo) == head and lanes.task_show(task)["status"] == "claimed"
    # a person (not a registered agent) may still close it, and so may the owner
    assert lanes.task_done(task, actor="fast")["task"] == task


def test_after_a_handoff_the_old_owner_done_exits_3_and_a_person_may_close_it(repo):
    def cli(*args):
        return run_cli(*args, "--json", cwd=repo)

    task = cli("task", "create", "Add login").json["task"]
    assert cli("task", "claim", task[:6], "--agent", "coder-1").code == 0
    assert cli("task", "handoff", task[:6], "--to", "coder-2").code == 0
    stale = cli("task", "done", task[:6], "--agent", "coder-1")
    assert stale.code == 3 and stale.json["error"] == "task_claimed" and stale.json["owner"] == "coder-2"
    assert cli("task", "done", task[:6]).code == 0  # the git user, not an agent
