"""Journeys through the coordination ledger and sync as their users take them, through real `git lanes`
processes: the ways out that errors and reports print, remotes that are odd (a HEAD that names no branch, a
working repository, one that does not exist), and the rough edges found by using the commands by hand."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_cli
from gitserver import make_origin
from ledger_helpers import Clock, ledger_head

from git_lanes.api import Lanes
from git_lanes.domain.agents import LEASE_SECONDS
from git_lanes.errors import Conflict


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
def test_a_clone_of_a_remote_whose_head_names_no_branch_finds_the_trunk(tmp_path, origin):
    machine, bare = origin
    git("symbolic-ref", "HEAD", "refs/heads/master", cwd=bare)  # e.g. pushed to a server defaulting to master
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)  # warns: nothing checked out
    # refs/lanes/meta/trunk, pushed by the first machine, names the trunk; no --trunk needed
    pulled = run_cli("pull", cwd=clone)
    assert pulled.code == 0, pulled.err
    assert "set up this clone for lanes (trunk main)" in pulled.out  # the trunk chosen is named
    assert git("symbolic-ref", "HEAD", cwd=clone).strip() == "refs/heads/main"
    assert (clone / "src" / "app.py").read_text() == "print('hello')\n"
    assert git("status", "--porcelain", cwd=clone) == ""
    assert run_cli("sync", cwd=clone).code == 0


def test_a_clone_of_a_remote_whose_head_is_another_branch_still_takes_the_recorded_trunk(tmp_path, origin):
    machine, bare = origin
    git("branch", "develop", "main", cwd=bare)
    git("symbolic-ref", "HEAD", "refs/heads/develop", cwd=bare)
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    pulled = run_cli("pull", "--json", cwd=clone)
    assert pulled.code == 0, pulled.err
    assert pulled.json["trunk"] == "main"
    assert git("config", "lanes.trunk", cwd=clone).strip() == "main"


def test_pushing_to_a_working_repository_says_why_in_one_line_and_the_way_on(tmp_path, origin):
    machine, bare = origin
    working = tmp_path / "working"
    git("clone", "--quiet", bare.as_uri(), str(working), cwd=tmp_path)
    git("remote", "add", "desk", working.as_uri(), cwd=machine)
    (machine / "b.txt").write_text("b\n")
    assert run_cli("commit", "-m", "add b", "--auto-accept", "--agent-id", "me", cwd=machine).code == 0
    before = refs_of(working)
    result = run_cli("sync", "desk", cwd=machine)
    assert result.code == 5  # the remote refused
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
        assert result.code == 5 and says in result.err.splitlines()[0], result.err
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


# -- every Example: of the coordination and sync commands runs as typed ------------------------------------
COORDINATION = ("agent", "task", "ticket", "claim", "dirty", "board", "wait", "push", "pull", "sync")
# Ids in the examples are placeholders; each stands for a record this journey made.
PLACEHOLDERS = ("3fa2", "7c1e", "91c0", "12")
# Each example once, in an order a team would type them; `as` names the record a line prints.
JOURNEY: list[tuple[str, dict]] = [
    ("git lanes agent register coder-1 --kind claude --lane feature/auth", {}),
    ("git lanes agent heartbeat coder-1", {}),
    ("git lanes agent heartbeat coder-1 --json", {}),
    ("git lanes agent list", {}),
    ("git lanes ticket open \"Login flow\"", {"as": "91c0"}),
    ("git lanes task create \"Add login\" --files 'src/auth/**'", {"as": "3fa2"}),
    ("git lanes task list --ready", {}),
    ("git lanes task claim 3fa2 --agent coder-1 --expect-version 1", {}),
    ("git lanes task claim 3fa2 --agent coder-1", {}),
    ("git lanes ticket link 91c0 3fa2", {}),
    ("git lanes task create \"Add login form\" --depends 3fa2 --ticket 91c0 --files 'src/auth/**'", {"as": "7c1e"}),
    ("git lanes task dep add 7c1e 3fa2", {}),
    ("git lanes task show 3fa2 --json", {}),
    ("git lanes ticket list", {}),
    ("git lanes ticket show 91c0", {}),
    ("git lanes claim add 'src/auth/**' docs/auth.md --agent coder-1", {}),
    ("git lanes claim add 'src/auth/**' --agent coder-1", {}),
    ("git lanes claim list", {}),
    ("git lanes claim list --json", {}),
    ("git lanes dirty publish --agent coder-1", {}),
    ("git lanes dirty list", {}),
    ("git lanes board post \"Who owns the session cache?\" --kind question --agent coder-1", {}),
    ("git lanes board read --agent coder-2 --unread", {}),
    ("git lanes board read --unanswered", {}),
    ("git lanes board answer 12 \"By size: the cache evicts the largest first\" --agent lead", {}),
    ("git lanes board post \"Schema is in docs/api.md\" --agent coder-1 --to coder-2", {}),
    ("git lanes board resolve 12 --agent coder-2", {}),
    ("git lanes wait --agent coder-2 --timeout 300 --json", {}),
    ("git lanes task block 3fa2 --reason \"waiting for the API schema\"", {}),
    ("git lanes task resume 3fa2", {}),
    ("git lanes claim release 'src/auth/**' --agent coder-1", {}),
    ("git lanes task done 3fa2 --agent coder-1", {}),
    ("git lanes task handoff 3fa2 --to coder-2 --note \"tests are green, docs left\"", {"3fa2": "7c1e"}),
    ("git lanes task done 3fa2 --no-integrate", {"3fa2": "7c1e"}),
    ("git lanes push origin", {}),
    ("git lanes sync origin", {}),
    ("git lanes sync --json", {}),
    ("git lanes pull", {"in": "clone"}),
]


def coordination_examples() -> set[str]:
    from git_lanes.cli import cli
    from git_lanes.cli.manpage import root_context, walk

    found = set()
    for command, ctx in walk(cli, root_context()):
        if ctx.command_path.split()[2] not in COORDINATION:
            continue
        block = next(b for b in (command.help or "").split("\n\n") if "Example:" in b)
        found |= {line.strip() for line in block.splitlines() if line.strip().startswith("git lanes ")}
    return found


def test_every_example_of_the_coordination_commands_runs_as_typed(tmp_path, repo):
    assert {line for line, _ in JOURNEY} == coordination_examples(), "a help example is not in the journey"
    (repo / "src" / "auth").mkdir()
    (repo / "src" / "auth" / "login.py").write_text("login\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "auth", cwd=repo)
    bare = tmp_path / "remote.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", bare.as_uri(), cwd=repo)
    workspace = Path(run_cli("lane", "create", "feature/auth", cwd=repo).out.strip())
    (workspace / "src" / "auth" / "login.py").write_text("changed\n")
    assert run_cli("agent", "register", "coder-2", cwd=repo).code == 0
    ids: dict[str, str] = {}
    for line, how in JOURNEY:
        where = repo
        if how.get("in") == "clone":
            where = tmp_path / "clone"
            git("clone", "--quiet", bare.as_uri(), str(where), cwd=tmp_path)
        if "board answer" in line or "board resolve" in line:  # the question is answered, a note resolved
            posts = run_cli("board", "read", "--agent", "coder-1", "--all", "--json", cwd=repo).json["posts"]
            kind = "question" if "board answer" in line else "note"
            ids["12"] = str(next(p["seq"] for p in posts if p["kind"] == kind and not p["resolved"]))
        args = [how.get(word, ids.get(word, word)) for word in shlex.split(line)[2:]]
        args = [ids.get(word, word) for word in args]
        result = run_cli(*args, cwd=where, timeout=60)
        assert result.code == 0, (line, args, result.err)
        if "as" in how:
            ids[how["as"]] = result.out.strip()[:4]
    assert set(PLACEHOLDERS) <= set(ids)
    assert run_cli("task", "show", ids["7c1e"], "--json", cwd=repo).json["owner"] == "coder-2"
    assert (tmp_path / "clone" / "src" / "auth" / "login.py").read_text() == "login\n"


def test_git_init_then_lanes_init_then_pull_takes_the_remote_trunk(tmp_path, origin):
    machine, bare = origin
    fresh = tmp_path / "fresh"
    git("init", "--quiet", str(fresh), cwd=tmp_path)
    git("remote", "add", "origin", bare.as_uri(), cwd=fresh)
    assert run_cli("init", cwd=fresh).code == 0  # an empty repository: init makes an empty first state
    pulled = run_cli("pull", cwd=fresh)
    assert pulled.code == 0, pulled.out + pulled.err
    assert "replaced the empty initial state" in pulled.out
    trunk = git("rev-parse", "refs/heads/main", cwd=fresh).strip()
    assert trunk == git("rev-parse", "refs/heads/main", cwd=bare).strip()
    assert (fresh / "src" / "app.py").read_text() == "print('hello')\n"
    assert git("status", "--porcelain", cwd=fresh) == ""
    assert run_cli("sync", cwd=fresh).code == 0
    assert git("rev-parse", "refs/heads/main", cwd=bare).strip() == trunk  # no empty root pushed into it


def test_a_trunk_with_content_of_its_own_still_diverges(tmp_path, origin):
    machine, bare = origin
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "mine.txt").write_text("mine\n")
    git("init", "--quiet", str(fresh), cwd=tmp_path)
    git("remote", "add", "origin", bare.as_uri(), cwd=fresh)
    assert run_cli("init", cwd=fresh).code == 0
    head = git("rev-parse", "refs/heads/main", cwd=fresh).strip()
    result = run_cli("pull", "--json", cwd=fresh)
    assert result.code == 3 and [d["name"] for d in result.json["diverged"]] == ["main"]
    assert git("rev-parse", "refs/heads/main", cwd=fresh).strip() == head


def test_resolving_a_post_someone_resolved_first_is_a_lost_race(repo):
    assert run_cli("board", "post", "Who owns the cache?", "--kind", "question", "--agent", "a", cwd=repo).code == 0
    assert run_cli("board", "resolve", "1", "--agent", "b", cwd=repo).code == 0
    late = run_cli("board", "resolve", "1", "--agent", "c", "--json", cwd=repo)
    assert late.code == 3 and late.json["error"] == "already_resolved" and "by b" in late.json["message"]
    missing = run_cli("board", "resolve", "9", "--agent", "c", "--json", cwd=repo)
    assert missing.code == 1 and missing.json["error"] == "unknown_post"


def test_a_workspace_left_behind_by_sync_prints_a_way_on_that_keeps_the_edits(tmp_path, origin):
    machine, bare = origin
    api = Lanes(machine)
    ours = Path(api.lane_create("feat")["workspace"])
    (ours / "shared.txt").write_text("base\n")
    api.commit("base", "coder-1", lane="feat", auto_accept=True)
    api.sync()
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    assert run_cli("pull", cwd=clone).code == 0
    theirs = Path(Lanes(clone).lane_create("feat")["workspace"])
    (theirs / "shared.txt").write_text("their edit\n")  # unsaved, and in the way of what comes next
    (ours / "shared.txt").write_text("our edit\n")
    api.commit("ours", "coder-1", lane="feat", auto_accept=True)
    api.sync()
    report = run_cli("sync", cwd=clone)
    assert report.code == 0 and "workspace of feat stale" in report.out
    way = report.out.split("workspace of feat stale")[1].splitlines()[1]
    stash_route = re.search(r"`(git stash --include-untracked && .*?)`", way).group(1)
    assert "--force" in way and "backup ref" in way
    subprocess.run(stash_route, shell=True, cwd=theirs, capture_output=True)  # the pop stops on the conflict
    marked = (theirs / "shared.txt").read_text()
    assert "our edit" in marked and "their edit" in marked
    (theirs / "shared.txt").write_text("both edits\n")
    git("add", "shared.txt", cwd=theirs)
    committed = run_cli("commit", "-m", "merge by hand", "--agent-id", "coder-2", "--auto-accept", cwd=theirs)
    assert committed.code == 0, committed.err
    head = git("rev-parse", "refs/lanes/heads/feat", cwd=clone).strip()
    assert git("show", f"{head}:shared.txt", cwd=clone) == "both edits\n"
    assert run_cli("sync", cwd=clone).code == 0


def test_the_blocked_trunk_hint_moves_an_untracked_file_out_of_the_way_too(tmp_path, origin):
    machine, bare = origin
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    assert run_cli("pull", cwd=clone).code == 0
    (machine / "n.txt").write_text("new on the trunk\n")
    Lanes(machine).commit("add n.txt", "coder-1", cwd=machine, auto_accept=True)
    Lanes(machine).sync()
    (clone / "n.txt").write_text("mine, untracked\n")  # a plain `git stash` would leave it in the way

    report = run_cli("sync", "--json", cwd=clone)
    blocked = [w for w in report.json["workspaces"] if w["status"] == "blocked"]
    assert report.code == 0 and blocked and blocked[0]["paths"] == {"untracked file in the way": ["n.txt"]}
    route = re.search(r"`(.*?)`", blocked[0]["hint"]).group(1)
    assert route.startswith("git stash --include-untracked && ")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(route, shell=True, cwd=clone, env=env, capture_output=True)  # the pop stops: n.txt exists
    assert git("rev-parse", "main", cwd=clone) == git("rev-parse", "main", cwd=machine)
    assert (clone / "n.txt").read_text() == "new on the trunk\n"
    assert git("show", "stash@{0}^3:n.txt", cwd=clone) == "mine, untracked\n"  # kept, as git keeps it
    # ... and the hint says where to find it
    shown = re.findall(r"`(.*?)`", blocked[0]["hint"])[1]
    assert "n.txt" in blocked[0]["hint"] and git(*shlex.split(shown)[1:], cwd=clone) == "mine, untracked\n"


def test_a_former_owner_cannot_pause_the_new_owners_task(repo):
    lanes = Lanes(repo, clock=Clock())
    task = lanes.task_create("t", actor="lead")["task"]
    lanes.task_claim(task, "slow")
    lanes.ctx.clock.advance(LEASE_SECONDS + 1)
    lanes.task_claim(task, "fast")
    with pytest.raises(Conflict):
        lanes.task_block(task, "I am stuck", actor="slow")
    assert lanes.task_show(task)["status"] == "claimed"
    assert lanes.task_block(task, "waiting for the schema", actor="fast")["status"] == "blocked"


def test_a_waiting_agent_wakes_with_refused_when_sync_finds_its_claim_lost(tmp_path, origin):
    machine, bare = origin
    task = Lanes(machine).task_create("shared", actor="lead")["task"]
    Lanes(machine).sync()
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    assert run_cli("pull", cwd=clone).code == 0
    assert run_cli("task", "claim", task[:6], "--agent", "bob", cwd=clone).code == 0
    Lanes(machine).task_claim(task, "alice")
    Lanes(machine).sync()
    waiter = subprocess.Popen([sys.executable, "-m", "git_lanes", "wait", "--agent", "bob", "--timeout", "60",
                               "--json"], cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        synced = run_cli("sync", "--json", cwd=clone)
        assert synced.code == 0 and list(synced.json["refused"]) == ["bob"]
        out, err = waiter.communicate(timeout=60)
    finally:
        waiter.kill()
    assert waiter.returncode == 0, err
    woke = json.loads(out)
    assert woke["reason"] == "refused" and woke["wakes"][0]["kind"] == "refused"
    assert run_cli("task", "show", task[:6], "--json", cwd=clone).json["owner"] == "alice"


def test_pull_from_a_mistyped_remote_leaves_a_fresh_clone_as_it_was(tmp_path, origin):
    machine, bare = origin
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    config = git("config", "--local", "--list", cwd=clone)
    result = run_cli("pull", "orign", cwd=clone)
    assert result.code == 1 and "no remote named 'orign'" in result.err
    assert git("config", "--local", "--list", cwd=clone) == config
    assert run_cli("status", cwd=clone).code != 0  # still not set up for lanes


def test_a_lane_kept_by_its_workspace_is_not_pushed_back_after_a_remote_deletion(tmp_path, origin):
    machine, bare = origin
    api = Lanes(machine)
    api.lane_create("gone")
    api.sync()
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    assert run_cli("pull", cwd=clone).code == 0
    theirs = Path(Lanes(clone).lane_create("gone")["workspace"])
    (theirs / "unsaved.txt").write_text("work in progress\n")
    api.lane_delete("gone")
    api.sync()
    for _ in range(2):  # the second sync used to push the lane back as if created after the deletion
        report = run_cli("sync", "--json", cwd=clone)
        assert report.code == 0, report.err
        assert [k["lane"] for k in report.json["kept"]] == ["gone"]
        assert not any(m["name"] == "gone" for m in report.json["went_out"])
    assert not git("for-each-ref", "refs/lanes/heads/gone", cwd=bare).strip()
    assert (theirs / "unsaved.txt").exists()
    text = run_cli("sync", cwd=clone).out
    assert "git lanes lane delete gone" in text
    # committing to it brings it back, as for a lane someone advanced
    assert run_cli("commit", "-m", "keep going", "--agent-id", "b", "--auto-accept", cwd=theirs).code == 0
    assert run_cli("sync", cwd=clone).code == 0
    assert git("for-each-ref", "refs/lanes/heads/gone", cwd=bare).strip()
    api.sync()
    assert git("for-each-ref", "refs/lanes/heads/gone", cwd=machine).strip()


# -- lane names where one is a folder of the other ----------------------------------------------------------
def test_a_lane_named_like_the_folder_of_a_deleted_lane_can_be_created(repo):
    assert run_cli("lane", "create", "p/q", cwd=repo).code == 0
    assert run_cli("lane", "delete", "p/q", cwd=repo).code == 0
    created = run_cli("lane", "create", "p", cwd=repo)  # p/q's reflog, left behind, used to block it
    assert created.code == 0, created.err
    assert not (repo / ".git" / "logs" / "refs" / "lanes" / "heads" / "p").is_dir()


def test_sync_reports_a_lane_name_clash_between_machines_and_everything_else_travels(tmp_path, origin):
    machine, bare = origin
    api = Lanes(machine)
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    assert run_cli("pull", cwd=clone).code == 0
    api.lane_create("df")
    api.board_post("hello from origin", "a")
    api.sync()
    assert run_cli("lane", "create", "df/sub", cwd=clone).code == 0
    assert run_cli("board", "post", "hello from the clone", "--agent", "b", cwd=clone).code == 0
    result = run_cli("sync", "--json", cwd=clone)
    assert result.code == 3, result.err
    assert sorted((d["name"], d["clash"]) for d in result.json["diverged"]) == [("df", "local"),
                                                                             ("df/sub", "remote")]
    api.sync()
    texts = [p["text"] for p in api.board_read()["posts"]]
    assert "hello from the clone" in texts and "hello from origin" in texts
    text = run_cli("sync", cwd=clone).out
    assert "lane df not created here" in text and "git lanes lane create NEW --from OLD" in text
    # the way on: rename the clone's lane; then both sides hold df and df-sub
    assert run_cli("lane", "create", "df-sub", "--from", "df/sub", cwd=clone).code == 0
    assert run_cli("lane", "delete", "df/sub", cwd=clone).code == 0
    assert run_cli("sync", cwd=clone).code == 0
    api.sync()
    names = {lane["name"] for lane in api.lane_list()}
    assert {"df", "df-sub"} <= names and "df/sub" not in names


def test_a_post_to_an_agent_that_never_started_says_so(repo):
    assert run_cli("agent", "register", "coder-2", cwd=repo).code == 0
    typo = run_cli("board", "post", "schema is in docs/api.md", "--agent", "coder-1", "--to", "cdoer-2", cwd=repo)
    assert typo.code == 0 and "no agent named cdoer-2 has started yet" in typo.out
    assert run_cli("board", "post", "again", "--agent", "coder-1", "--to", "cdoer-2", "--json",
                   cwd=repo).json["to_known"] is False
    known = run_cli("board", "post", "schema is in docs/api.md", "--agent", "coder-1", "--to", "coder-2", cwd=repo)
    assert known.code == 0 and "has started" not in known.out
    # it still arrives when that agent starts: a handoff to an agent not yet launched relies on it
    posts = run_cli("board", "read", "--agent", "cdoer-2", "--unread", "--json", cwd=repo).json["posts"]
    assert [p["text"] for p in posts] == ["schema is in docs/api.md", "again"]


def test_pull_in_a_clone_of_an_empty_remote_points_to_init_and_push(tmp_path):
    bare = tmp_path / "empty.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    clone = tmp_path / "clone"
    git("clone", "--quiet", bare.as_uri(), str(clone), cwd=tmp_path)
    result = run_cli("pull", "--json", cwd=clone)
    assert result.code == 1 and result.json["error"] == "no_trunk"
    assert "git lanes init" in result.json["hint"] and "git lanes push" in result.json["hint"]


@pytest.mark.parametrize("args, code, hint", [
    (("task", "show", "e0"), "unknown_task", "git lanes task list"),
    (("task", "claim", "0123456789abcdef0123", "--agent", "a"), "unknown_task", "git lanes task list"),
    (("ticket", "show", "00"), "unknown_ticket", "git lanes ticket list"),
    (("ticket", "link", "00", "e0"), "unknown_ticket", "git lanes ticket list"),
])
def test_an_unknown_hex_id_points_to_its_own_list(repo, args, code, hint):
    result = run_cli(*args, "--json", cwd=repo)
    assert result.code == 1 and result.json["error"] == code and hint in result.json["hint"]
