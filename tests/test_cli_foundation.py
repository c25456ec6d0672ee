"""The foundation's command-line face, run as real `git lanes` processes: the exact `--json` shapes, exit
codes, and bad input answered with one error line, no traceback, and nothing written."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_cli, workspace

HEX40 = re.compile(r"^[0-9a-f]{40}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")
TRANSITION_KEYS = {"format", "id", "kind", "lane", "from", "to", "tree", "status", "intent", "cost", "evaluations",
                   "created_at", "decided_at", "reason"}
INTENT_KEYS = {"prompt", "agent_id", "agent_type", "model", "tags"}
COST_KEYS = {"tokens_in", "tokens_out", "api_calls", "wall_time", "cost_usd"}
LANE_KEYS = {"name", "ref", "head", "trunk", "workspace"}


def ok(*args: str, cwd: Path, env: dict | None = None):
    result = run_cli(*args, "--json", cwd=cwd, env=env)
    assert result.code == 0, result.err
    assert result.err == ""
    return result.json


def assert_error(result, code: str, exit_code: int = 1, as_json: bool = True) -> None:
    assert result.code == exit_code, (result.code, result.err)
    assert "Traceback" not in result.err
    first, *rest = result.err.rstrip("\n").split("\n")
    assert first.startswith("git-lanes: error: ") and len(first) > len("git-lanes: error: ")
    assert all(line.startswith("hint: ") for line in rest), result.err
    if as_json:
        assert result.json["error"] == code and result.json["message"] == first[len("git-lanes: error: "):]


def fails(*args: str, cwd: Path, code: str, exit_code: int = 1, env: dict | None = None) -> dict:
    result = run_cli(*args, "--json", cwd=cwd, env=env)
    assert_error(result, code, exit_code)
    return result.json


def repository_state(repo: Path) -> tuple:
    """Everything a refused command must leave as it was: refs, worktrees, workspaces, loose objects."""
    lanes_dir = repo / ".lanes"
    files = sorted(str(p.relative_to(repo)) for p in lanes_dir.rglob("*")) if lanes_dir.exists() else []
    return (git("for-each-ref", cwd=repo), git("worktree", "list", "--porcelain", cwd=repo), files,
            git("count-objects", cwd=repo), git("status", "--porcelain", cwd=repo))


def assert_transition(record: dict, *, status: str, lane: str, prompt: str, agent: str) -> None:
    assert set(record) == TRANSITION_KEYS
    assert set(record["intent"]) == INTENT_KEYS and set(record["cost"]) == COST_KEYS
    assert record["format"] == 1 and record["kind"] == "commit" and HEX16.match(record["id"])
    assert HEX40.match(record["from"]) and HEX40.match(record["to"]) and HEX40.match(record["tree"])
    assert (record["status"], record["lane"]) == (status, lane)
    assert (record["intent"]["prompt"], record["intent"]["agent_id"]) == (prompt, agent)
    assert isinstance(record["created_at"], float) and record["evaluations"] == []
    assert (record["decided_at"] is None) == (status == "proposed")


# -- shapes ------------------------------------------------------------------------------------------------

def test_init_shape_and_idempotence(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    first = ok("init", "--trunk", "trunk", cwd=plain)
    assert set(first) == {"root", "trunk", "changed", "initial_state", "already_initialized", "created_repository",
                          "checked_out"}
    assert first["root"] == str(plain.resolve()) and first["trunk"] == "trunk"
    assert first["created_repository"] is True and first["already_initialized"] is False
    assert first["changed"] == ["lanes.trunk", "core.logAllRefUpdates", "notes.displayRef", "info/exclude",
                                "initial state", "refs/lanes/meta/trunk"]
    assert git("rev-parse", "refs/heads/trunk", cwd=plain).strip() == first["initial_state"]
    again = ok("init", cwd=plain)
    assert again == {**first, "changed": [], "initial_state": None, "already_initialized": True,
                     "created_repository": False}
    assert git("config", "lanes.trunk", cwd=plain).strip() == "trunk"
    fails("init", "--trunk", "other", cwd=plain, code="trunk_set")


def test_init_refuses_a_trunk_branch_that_does_not_exist(tmp_path):
    """A mistyped --trunk used to become a new branch at HEAD's commit, silently: every promotion then went to
    `mian` while the team looked at `main`. As `git switch mian` does, it is refused, with git's typo hint."""
    project = tmp_path / "project"
    git("init", "-q", "-b", "main", str(project), cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "one", cwd=project)
    git("branch", "dev", cwd=project)
    before = repository_state(project), git("config", "--list", "--local", cwd=project)
    refused = fails("init", "--trunk", "mian", cwd=project, code="unknown_branch")
    assert refused == {"error": "unknown_branch", "did_you_mean": ["main"],
                       "message": "no branch 'mian' to be the trunk (branches here: dev, main)",
                       "hint": "did you mean 'main'? to start a new trunk branch, create it first: `git branch mian`"}
    text = run_cli("init", "--trunk", "mian", cwd=project)
    assert text.code == 1 and text.out == ""
    assert text.err == ("git-lanes: error: no branch 'mian' to be the trunk (branches here: dev, main)\n"
                        "hint: did you mean 'main'? to start a new trunk branch, create it first: "
                        "`git branch mian`\n")
    assert (repository_state(project), git("config", "--list", "--local", cwd=project)) == before
    # with HEAD detached the default trunk `main` must exist too; an existing branch is set up as before
    git("switch", "-q", "--detach", cwd=project)
    git("branch", "-q", "-m", "main", "master", cwd=project)
    assert fails("init", cwd=project, code="unknown_branch")["hint"].startswith("name one of them as the trunk;")
    assert ok("init", "--trunk", "dev", cwd=project)["trunk"] == "dev"
    assert git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=project).split() == ["dev", "master"]


def test_init_names_the_trunk_of_a_repository_with_nothing_committed(tmp_path):
    """No branch exists before the first commit: the trunk named is what HEAD becomes, as `git init -b`."""
    empty = tmp_path / "empty"
    git("init", "-q", "-b", "main", str(empty), cwd=tmp_path)
    (empty / "a.txt").write_text("a\n")
    report = ok("init", "--trunk", "trunk", cwd=empty)
    assert report["trunk"] == "trunk" and report["checked_out"] == "trunk" and report["initial_state"]
    assert git("symbolic-ref", "HEAD", cwd=empty).strip() == "refs/heads/trunk"
    assert git("show", "trunk:a.txt", cwd=empty) == "a\n"
    # an orphan branch checked out beside others is named by HEAD as well
    git("switch", "-q", "--orphan", "fresh", cwd=empty)
    other = tmp_path / "other"
    git("init", "-q", "-b", "main", str(other), cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "one", cwd=other)
    git("switch", "-q", "--orphan", "fresh", cwd=other)
    assert ok("init", "--trunk", "fresh", cwd=other)["trunk"] == "fresh"


def test_init_makes_a_trunk_only_the_remote_has_local_as_git_switch_does(tmp_path):
    origin = tmp_path / "origin"
    git("init", "-q", "-b", "main", str(origin), cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "one", cwd=origin)
    git("switch", "-q", "-c", "develop", cwd=origin)
    git("commit", "-q", "--allow-empty", "-m", "two", cwd=origin)
    git("switch", "-q", "main", cwd=origin)
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    named = fails("init", "--trunk", "origin/develop", cwd=clone, code="unknown_branch")
    assert named["message"] == "'origin/develop' is a remote-tracking branch of origin, not a branch to be the trunk"
    assert named["hint"] == "name the branch: 'develop' (made from origin/develop if it is not here yet)"
    assert fails("init", "--trunk", "devlop", cwd=clone, code="unknown_branch")["did_you_mean"] == ["develop"]
    assert ok("init", "--trunk", "develop", cwd=clone)["trunk"] == "develop"
    assert git("rev-parse", "develop", cwd=clone) == git("rev-parse", "develop", cwd=origin)
    assert git("rev-parse", "--abbrev-ref", "develop@{upstream}", cwd=clone).strip() == "origin/develop"
    # two remotes with the branch: no guess, as git makes none
    second = tmp_path / "second"
    git("clone", "-q", str(origin), str(second), cwd=tmp_path)
    git("remote", "add", "mirror", str(origin), cwd=second)
    git("fetch", "-q", "mirror", cwd=second)
    refused = fails("init", "--trunk", "develop", cwd=second, code="ambiguous_branch")
    assert refused["message"] == "no branch 'develop' here, and 2 remotes have one: mirror, origin"
    assert git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=second).split() == ["main"]


def test_lane_commands_shapes(repo):
    trunk = git("rev-parse", "main", cwd=repo).strip()
    created = ok("lane", "create", "feat/x", cwd=repo)
    ws = workspace(repo, "feat/x")
    assert created == {"name": "feat/x", "ref": "refs/lanes/heads/feat/x", "head": trunk, "trunk": False,
                       "workspace": str(ws), "created": True}
    assert run_cli("lane", "create", "other", cwd=repo).out == f"{workspace(repo, 'other')}\n"
    listed = ok("lane", "list", cwd=repo)
    assert [lane["name"] for lane in listed] == ["main", "feat/x", "other"]
    assert all(set(lane) == LANE_KEYS for lane in listed)
    assert listed[0] == {"name": "main", "ref": "refs/heads/main", "head": trunk, "trunk": True,
                         "workspace": str(repo)}
    assert ok("lane", "path", "feat/x", cwd=repo) == {"lane": "feat/x", "workspace": str(ws)}
    assert run_cli("lane", "path", "feat/x", cwd=repo).out == f"{ws}\n"
    (ws / "new.txt").write_text("new\n")
    shown = ok("lane", "show", "feat/x", cwd=repo)
    assert set(shown) == LANE_KEYS | {"dirty", "attention", "proposals", "recent", "totals", "unpromoted"}
    assert shown["dirty"] == {"new.txt": "added"} and shown["proposals"] == [] and shown["recent"] == []
    assert shown["unpromoted"] is False
    assert shown["totals"] == {"tokens_in": 0, "tokens_out": 0, "api_calls": 0, "wall_time": 0.0,
                               "cost_usd": 0.0, "count": 0}
    fails("lane", "delete", "feat/x", cwd=repo, code="dirty_workspace")
    deleted = ok("lane", "delete", "other", cwd=repo)
    assert deleted == {"lane": "other", "head": trunk, "kept_at": "refs/lanes/deleted/other", "backup": None,
                       "rejected_proposals": []}
    forced = ok("lane", "delete", "feat/x", "--force", cwd=repo)
    assert forced["backup"].startswith("refs/lanes/backups/feat/x/")
    assert git("show", f"{forced['backup']}:new.txt", cwd=repo) == "new\n"
    assert not ws.exists()
    assert [lane["name"] for lane in ok("lane", "list", cwd=repo)] == ["main"]


def test_transition_commands_shapes(repo):
    ok("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    head = git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip()
    (ws / "a.txt").write_text("a\n")
    proposed = ok("propose", "-m", "Add a\n\nbecause", "--agent-id", "coder", "--agent-type", "dev", "--model",
                  "m1", "--tag", "x", "--tag", "y", "--tokens-in", "10", "--tokens-out", "5", "--api-calls", "2",
                  "--wall-time", "1.5", "--cost-usd", "0.25", cwd=ws)
    assert_transition(proposed, status="proposed", lane="feat", prompt="Add a\n\nbecause", agent="coder")
    assert proposed["intent"] == {"prompt": "Add a\n\nbecause", "agent_id": "coder", "agent_type": "dev",
                                  "model": "m1", "tags": ["x", "y"]}
    assert proposed["cost"] == {"tokens_in": 10, "tokens_out": 5, "api_calls": 2, "wall_time": 1.5,
                                "cost_usd": 0.25}
    assert proposed["from"] == head and proposed["reason"] is None
    assert git("rev-parse", f"refs/lanes/proposals/{proposed['id']}", cwd=repo).strip() == proposed["to"]

    accepted = ok("accept", proposed["id"][:6], cwd=repo)
    assert accepted == {**proposed, "status": "accepted", "decided_at": accepted["decided_at"]}
    assert isinstance(accepted["decided_at"], float)
    fails("accept", proposed["id"], cwd=repo, code="already_decided", exit_code=3)

    unchanged = ok("commit", "-m", "again", "--agent-id", "coder", cwd=ws)
    assert unchanged == {"status": "unchanged", "lane": "feat", "head": proposed["to"],
                         "message": "nothing to snapshot: workspace of 'feat' matches its lane head"}

    (ws / "a.txt").write_text("worse\n")
    text = run_cli("commit", "-m", "Make it worse", cwd=ws, env={"GIT_LANES_AGENT": "env-agent"})
    assert text.code == 0 and re.fullmatch(r"proposed [0-9a-f]{8} on feat: Make it worse\n", text.out)
    attempt = ok("history", "--status", "proposed", cwd=repo)["transitions"][0]
    assert attempt["intent"]["agent_id"] == "env-agent"
    rejected = ok("reject", attempt["id"][:8], "--reason", "worse", cwd=repo)
    assert rejected == {**attempt, "status": "rejected", "reason": "worse", "decided_at": rejected["decided_at"]}
    assert git("rev-parse", f"refs/lanes/rejected/{attempt['id']}", cwd=repo).strip() == attempt["to"]
    assert not git("for-each-ref", "refs/lanes/proposals", cwd=repo)

    (ws / "b.txt").write_text("b\n")
    auto = ok("commit", "-m", "Add b", "--agent-id", "other", "--auto-accept", cwd=ws)
    assert_transition(auto, status="accepted", lane="feat", prompt="Add b", agent="other")
    assert auto["from"] == proposed["to"]
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip() == auto["to"]
    assert git("rev-parse", "HEAD", cwd=ws).strip() == auto["to"]


def test_inspection_commands_shapes(repo):
    ok("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    base = git("rev-parse", "main", cwd=repo).strip()
    (ws / "a.txt").write_text("a\n")
    first = ok("commit", "-m", "Add a", "--agent-id", "p", "--tokens-in", "7", "--cost-usd", "0.5",
               "--auto-accept", cwd=ws)
    (ws / "b.txt").write_text("b\n")
    second = ok("propose", "-m", "Add b", "--agent-id", "q", "--tokens-in", "3", cwd=ws)

    history = ok("history", cwd=repo)
    assert set(history) == {"transitions", "totals", "counts"}
    assert [t["id"] for t in history["transitions"]][:2] == [second["id"], first["id"]]
    assert history["counts"] == {"proposed": 1, "accepted": 2, "rejected": 0}  # init's state counts too
    assert history["totals"] == {"tokens_in": 10, "tokens_out": 0, "api_calls": 0, "wall_time": 0.0,
                                 "cost_usd": 0.5, "count": 3}
    filtered = ok("history", "--lane", "feat", "--agent", "p", "-n", "5", cwd=repo)
    assert [t["id"] for t in filtered["transitions"]] == [first["id"]]
    assert ok("history", "-n", "0", cwd=repo)["transitions"] == []

    shown = ok("show", first["id"][:7], cwd=repo)
    assert shown == {**first, "changes": [{"path": "a.txt", "kind": "added"}]}

    changes = [{"kind": "added", "path": "a.txt"}]
    patch = ok("diff", "main", "feat", cwd=repo)
    assert set(patch) == {"from", "to", "changes", "patch"}
    assert (patch["from"], patch["to"], patch["changes"]) == (base, first["to"], changes)
    assert "+a" in patch["patch"] and patch["patch"].startswith("diff --git a/a.txt b/a.txt")
    stat = ok("diff", "main", first["id"][:8], "--stat", cwd=repo)
    assert set(stat) == {"from", "to", "changes", "stat", "files_changed", "insertions", "deletions"}
    assert (stat["files_changed"], stat["insertions"], stat["deletions"]) == (1, 1, 0)
    assert ok("diff", base, "feat", "--name-only", cwd=repo) == {"from": base, "to": first["to"],
                                                                  "changes": changes}
    assert run_cli("diff", "main", "feat", "--name-only", cwd=repo).out == "a.txt\n"

    (ws / "c.txt").write_text("c\n")
    status = ok("status", cwd=repo)
    assert set(status) == {"trunk", "lanes", "proposals", "dirty"}
    assert status["trunk"] == "main"
    row_keys = LANE_KEYS | {"dirty", "attention"}
    assert [(lane["name"], set(lane)) for lane in status["lanes"]] == [("main", row_keys), ("feat", row_keys)]
    assert [p["id"] for p in status["proposals"]] == [second["id"]]
    assert status["dirty"][0]["lane"] == "feat" and status["dirty"][0]["paths"]["c.txt"] == "added"


def test_restore_shape(repo):
    ok("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    (ws / "f.txt").write_text("1\n")
    first = ok("commit", "-m", "one", "--agent-id", "a", "--auto-accept", cwd=ws)
    (ws / "f.txt").write_text("2\n")
    second = ok("commit", "-m", "two", "--agent-id", "a", "--auto-accept", cwd=ws)
    (ws / "f.txt").write_text("typing\n")
    before = repository_state(repo)
    fails("restore", first["id"][:8], cwd=ws, code="dirty_workspace")
    assert repository_state(repo) == before and (ws / "f.txt").read_text() == "typing\n"
    restored = ok("restore", first["id"][:8], "--force", cwd=ws)
    assert set(restored) == {"lane", "workspace", "state", "lane_head", "backup", "changed_from_head",
                             "nested_left", "ignored_removed"}
    assert (restored["lane"], restored["workspace"], restored["state"], restored["lane_head"]) == \
        ("feat", str(ws), first["to"], second["to"])
    assert restored["changed_from_head"] == ["f.txt"] and (ws / "f.txt").read_text() == "1\n"
    assert git("show", f"{restored['backup']}:f.txt", cwd=repo) == "typing\n"


# -- bad input -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a..b", "x.lock", "a b", "HEAD", "", "a/", "x~1", "@"])
def test_bad_lane_names(repo, name):
    before = repository_state(repo)
    fails("lane", "create", name, cwd=repo, code="invalid_lane_name")
    assert repository_state(repo) == before


def test_lane_name_starting_with_a_dash(repo):
    before = repository_state(repo)
    result = run_cli("lane", "create", "--json", "--", "-x", cwd=repo)
    assert_error(result, "invalid_lane_name")
    usage = run_cli("lane", "create", "-x", cwd=repo)
    assert usage.code == 2 and "Traceback" not in usage.err and "No such option" in usage.err
    assert repository_state(repo) == before


@pytest.mark.parametrize("args", [["lane", "show", "nope"], ["lane", "path", "nope"], ["lane", "delete", "nope"],
                                  ["history", "--lane", "nope"]])
def test_unknown_lane(repo, args):
    before = repository_state(repo)
    fails(*args, cwd=repo, code="unknown_lane")
    assert repository_state(repo) == before


@pytest.mark.parametrize("command", ["accept", "reject", "show"])
def test_unknown_transition_id(repo, command):
    before = repository_state(repo)
    fails(command, "deadbeef", cwd=repo, code="not_found")
    fails(command, " ", cwd=repo, code="invalid_id")
    assert repository_state(repo) == before


@pytest.mark.parametrize("command", ["accept", "reject", "show"])
@pytest.mark.parametrize("blank", ["", " "])
def test_a_blank_id_never_picks_the_only_pending_proposal(api, repo, command, blank):
    """An empty id is a prefix of every id: with one proposal pending, `accept ""` (a shell variable that
    was never set) once accepted it."""
    api.lane_create("feat")
    (workspace(repo, "feat") / "n.txt").write_text("n\n")
    api.commit("pending", "a", lane="feat")
    before = repository_state(repo)
    fails(command, blank, cwd=repo, code="invalid_id")
    assert repository_state(repo) == before


def test_a_transition_id_in_capitals_is_the_same_id(api, repo):
    """git takes an abbreviated object name in either case, and so did every other git-lanes id (runs, tasks,
    tickets, operations): a transition id typed or pasted in capitals matched nothing."""
    api.lane_create("feat")
    (workspace(repo, "feat") / "n.txt").write_text("n\n")
    first = api.commit("first", "a", lane="feat", auto_accept=True)["id"]
    (workspace(repo, "feat") / "n.txt").write_text("m\n")
    pending = api.commit("pending", "a", lane="feat")["id"]
    assert ok("show", pending[:8].upper(), cwd=repo)["id"] == pending
    assert ok("diff", first[:8].upper(), pending[:8].upper(), cwd=repo)["changes"] == \
        [{"path": "n.txt", "kind": "modified"}]
    assert ok("accept", pending[:8].upper(), cwd=repo)["status"] == "accepted"


def test_ambiguous_id_lists_candidates(api, repo):
    api.lane_create("feat")
    ws = workspace(repo, "feat")
    ids = []
    for i in range(17):  # 17 ids over 16 leading hex digits: two must share one
        (ws / "n.txt").write_text(str(i))
        ids.append(api.commit(f"n{i}", "a", lane="feat", auto_accept=True)["id"])
    shared = next(c for c in "0123456789abcdef" if sum(i.startswith(c) for i in ids) > 1)
    every = [t["id"] for t in api.history()["transitions"]]  # the initial state's id may share it too
    for command in ("show", "accept", "reject"):
        error = fails(command, shared, cwd=repo, code="ambiguous")
        assert error["candidates"] == sorted(i for i in every if i.startswith(shared))


def test_an_ambiguous_revision_prefix_is_called_ambiguous_not_unknown(repo):
    """A git revision abbreviated to a prefix of two objects is refused as git refuses it ("short object ID
    … is ambiguous"), with the way to see them; "unknown revision" sent the user looking for a typo."""
    import hashlib

    seen: dict[str, str] = {}
    for i in range(100_000):  # two blobs whose ids share 4 hex digits (the birthday bound: a few hundred)
        body = f"blob {i}\n"
        oid = hashlib.sha1(f"blob {len(body)}\0{body}".encode()).hexdigest()
        if oid[:4] in seen:
            break
        seen[oid[:4]] = body
    for body in (seen[oid[:4]], body):
        git("hash-object", "-w", "--stdin", cwd=repo, input=body)
    assert git("rev-parse", "--disambiguate=" + oid[:4], cwd=repo).count("\n") == 2  # the precondition
    for args in (["diff", oid[:4], "main"], ["trace", oid[:4]], ["restore", oid[:4]]):
        error = fails(*args, cwd=repo, code="ambiguous")
        assert "is ambiguous" in error["message"] and "--disambiguate" in error["hint"]
    fails("diff", oid, "main", cwd=repo, code="not_found")  # a blob is no state, as before


def test_a_short_transition_prefix_names_a_state_for_diff_and_restore_as_for_show(api, repo):
    """`show 15d` found the transition; `diff 15d main` and `restore 15d` passed the prefix to libgit2, which
    calls any prefix under 4 digits "ambiguous: an id prefix of several objects". A prefix that names one
    transition names its state in every command."""
    api.lane_create("feat")
    (workspace(repo, "feat") / "n.txt").write_text("one\n")
    record = api.commit("n", "a", lane="feat", auto_accept=True)
    others = [t["id"] for t in api.history()["transitions"] if t["id"] != record["id"]]
    prefix = next(record["id"][:n] for n in (1, 2, 3) if not any(o.startswith(record["id"][:n]) for o in others))
    assert ok("show", prefix, cwd=repo)["id"] == record["id"]  # the precondition: show takes it
    assert ok("diff", prefix, "main", cwd=repo)["from"] == record["to"]
    restored = ok("restore", prefix, "-w", "feat", cwd=repo)
    assert restored["state"] == record["to"], restored


def test_a_state_name_too_long_for_a_ref_is_an_unknown_revision_not_an_internal_error(repo):
    """`diff`, `restore` and every face resolving a state asked libgit2 for refs/lanes/heads/NAME first; a name
    over about a thousand characters made it raise ValueError ("the provided buffer is too short"), an
    internal error in the CLI, MCP and REST alike. A name that cannot be a lane is not looked up as one."""
    for length in (1100, 5000):
        name = "x" * length
        for args in (["diff", name, "main"], ["restore", name]):
            error = fails(*args, cwd=repo, code="not_found")
            assert error["message"] == f"unknown revision '{'x' * 80}'… ({length} characters)", error
        for args in (["lane", "show", name], ["history", "--lane", name]):  # found by the REST sweep
            message = fails(*args, cwd=repo, code="invalid_lane_name")["message"]
            assert message.endswith(f"({length} characters): too long: {length} bytes, at most 250 (each '/' and "
                                    "'%' counts 3)"), message


def test_a_current_directory_that_was_removed_is_one_user_error(repo):
    """A shell left standing in a lane's workspace that `lane delete` removed: every command after met the
    missing directory wherever it first looked (an internal error, or a traceback from `mcp` and `serve`);
    it is one user error, as git's "Unable to read current working directory", and help still shows."""
    import sys

    assert run_cli("lane", "create", "feat", cwd=repo).code == 0
    lanes = f'"{sys.executable}" -m git_lanes'
    script = (f'cd "{workspace(repo, "feat")}" && {lanes} lane delete feat >/dev/null && test ! -d . -o ! -e "$PWD" '
              f'&& for c in "status" "lane list" "sync" "mcp --list-tools"; do {lanes} $c --json; echo "exit $?"; done; '
              f'{lanes} status -h >/dev/null; echo "help $?"')
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr and "internal" not in proc.stdout, proc.stderr
    assert proc.stdout.count('"error": "no_current_directory"') == 4 and proc.stdout.count("exit 1") == 4, proc.stdout
    assert "help 0" in proc.stdout
    assert proc.stderr.count("git-lanes: error: the current directory no longer exists") == 4


def test_outside_a_repository(tmp_path):
    outside = tmp_path / "nowhere"
    outside.mkdir()
    for args in (["status"], ["lane", "list"], ["history"], ["accept", "abc"],
                 ["commit", "-m", "x", "--agent-id", "a"], ["diff", "a", "b"]):
        fails(*args, cwd=outside, code="not_a_repository")
    assert list(outside.iterdir()) == []


def test_a_sha256_repository_is_refused_in_one_line_and_left_as_it_was(tmp_path):
    """The ledger's own object writer speaks SHA-1 only: a SHA-256 repository is refused before anything is
    written, as a user error that says why, not an internal one."""
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(repo)], check=True)
    before = repository_state(repo)
    for args in (["init"], ["task", "create", "t"], ["status"]):
        error = fails(*args, cwd=repo, code="unsupported_object_format")
        assert "sha256" in error["message"]
    assert repository_state(repo) == before


def test_a_repository_whose_folder_is_not_utf8_is_refused_up_front_and_left_as_it_was(tmp_path):
    """git works in a folder whose name is not UTF-8 (a Latin-1 'café'); git-lanes keeps paths as text, and
    `lane create` there used to make the lane's ref and fail on its workspace. Every command now refuses in
    one line before anything is written, whether the repository was set up before it moved there or not."""
    import os

    moved = tmp_path / os.fsdecode(b"caf\xe9")
    set_up = tmp_path / "set-up"
    set_up.mkdir()
    (set_up / "README.md").write_text("x\n")
    assert run_cli("init", cwd=set_up).code == 0
    set_up.rename(moved)
    plain = tmp_path / os.fsdecode(b"plain\xe9")
    subprocess.run(["git", "init", "-q", "-b", "main", str(plain)], check=True)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=plain)
    for repo in (moved, plain):
        before = everything(repo)
        for args in (["init"], ["lane", "create", "a"], ["commit", "-m", "x", "--agent-id", "a"], ["sync"],
                     ["status"], ["doctor"]):
            error = fails(*args, cwd=repo, code="path_not_utf8")
            assert "caf\\xe9" in error["message"] or "plain\\xe9" in error["message"]
        for args in (["mcp"], ["serve", "--port", "0"]):
            assert_error(run_cli(*args, cwd=repo, timeout=30), "path_not_utf8", as_json=False)
        assert everything(repo) == before
    fails("init", os.fsdecode(b"new\xe9"), cwd=tmp_path, code="path_not_utf8")
    assert not (tmp_path / os.fsdecode(b"new\xe9")).exists()


def everything(repo: Path) -> tuple:
    """repository_state's refs, worktrees, objects, files and config, read as bytes: a folder that is not
    UTF-8 is in what git prints."""
    commands = (["for-each-ref"], ["worktree", "list", "--porcelain"], ["count-objects"],
                ["status", "--porcelain", "--ignored"], ["config", "--list", "--local"])
    return tuple(subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout
                 for args in commands)


def test_a_user_name_that_is_not_utf8_is_one_clear_line_and_init_works_once_fixed(tmp_path):
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("x\n")
    with open(repo / ".git" / "config", "ab") as config:
        config.write(b"[user]\n\tname = Jos\xe9\n")  # latin-1, as an old editor may have saved it
    error = fails("init", cwd=repo, code="invalid")
    assert "user.name" in error["message"] and "UTF-8" in error["message"]
    git("config", "user.name", "Jos\u00e9", cwd=repo)
    ok("init", cwd=repo)
    ok("task", "create", "t", cwd=repo)


def test_a_repository_not_set_up_for_lanes(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    fails("status", cwd=tmp_path / "r", code="not_initialized")


def test_paths_outside_any_workspace(repo):
    ok("lane", "create", "feat", cwd=repo)
    before = repository_state(repo)
    for cwd in (repo / ".lanes", repo / ".lanes" / "workspaces"):
        fails("commit", "-m", "x", "--agent-id", "a", cwd=cwd, code="not_in_workspace")
        fails("restore", "main", cwd=cwd, code="not_in_workspace")
    fails("commit", "-m", "x", "--agent-id", "a", "-w", "nope", cwd=repo, code="unknown_lane")
    fails("commit", "-m", "x", "--agent-id", "a", "-w", "a..b", cwd=repo, code="invalid_lane_name")
    fails("diff", "main", "no-such-rev", cwd=repo, code="not_found")
    fails("restore", "no-such-rev", "-w", "feat", cwd=repo, code="not_found")
    assert repository_state(repo) == before


def test_a_command_that_needs_a_work_tree_refuses_the_git_directory(repo):
    """`cd .git && git lanes commit` snapshotted the main worktree, where git refuses ("this operation must be
    run in a work tree"): inside a git directory (the main one or a lane's) there is no work tree to act on."""
    ok("lane", "create", "feat", cwd=repo)
    (repo / "edit.txt").write_text("x\n")
    before = repository_state(repo)
    for cwd in (repo / ".git", repo / ".git" / "refs", repo / ".git" / "worktrees" / "feat"):
        for args in (["commit", "-m", "x", "--agent-id", "a"], ["propose", "-m", "x", "--agent-id", "a"],
                     ["restore", "main"]):
            error = fails(*args, cwd=cwd, code="not_in_work_tree")
            assert error["message"] == f"{cwd.resolve()} is inside a git directory, not a work tree", error
        plain = run_cli("commit", "-m", "x", "--agent-id", "a", cwd=cwd)
        assert plain.code == 1 and plain.err.splitlines()[0] == \
            f"git-lanes: error: {cwd.resolve()} is inside a git directory, not a work tree", plain.err
    assert repository_state(repo) == before
    ok("commit", "-m", "x", "--agent-id", "a", "-w", "main", cwd=repo / ".git")  # a named lane needs no cwd


@pytest.mark.parametrize("args", [["commit", "-m", "x", "--agent-id", "a", "--tokens-in", "-1"],
                                  ["commit", "-m", "x", "--agent-id", "a", "--cost-usd", "nan-ish"],
                                  ["commit", "--agent-id", "a"], ["history", "--status", "maybe"],
                                  ["history", "-n", "-3"], ["no-such-command"], ["lane", "create"]])
def test_usage_errors_exit_2(repo, args):
    before = repository_state(repo)
    result = run_cli(*args, cwd=repo)
    assert result.code == 2 and "Traceback" not in result.err and "Error:" in result.err
    assert repository_state(repo) == before


def test_agent_and_prompt_are_validated(repo):
    ok("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    (ws / "a.txt").write_text("a\n")
    before = repository_state(repo)
    fails("commit", "-m", "  ", "--agent-id", "a", cwd=ws, code="empty_prompt")
    fails("commit", "-m", "x", "--agent-id", "a<b>", cwd=ws, code="invalid_agent")
    assert repository_state(repo) == before


def test_accepting_a_proposal_whose_lane_moved_exits_3(repo):
    ok("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    (ws / "a.txt").write_text("a\n")
    proposal = ok("propose", "-m", "a", "--agent-id", "a", cwd=ws)
    other = git("commit-tree", "-p", proposal["from"], "-m", "moved", f"{proposal['from']}^{{tree}}",
                cwd=repo).strip()
    git("update-ref", "refs/lanes/heads/feat", other, proposal["from"], cwd=repo)
    before = repository_state(repo)
    error = fails("accept", proposal["id"], cwd=repo, code="stale_proposal", exit_code=3)
    assert "moved" in error["message"] and error["hint"]
    assert repository_state(repo) == before


def test_status_lists_only_what_no_state_holds(repo):
    ok("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    (ws / "proposed.txt").write_text("p\n")
    ok("propose", "-m", "p", "--agent-id", "a", cwd=ws)
    assert ok("status", cwd=repo)["dirty"] == []
    assert ok("lane", "show", "feat", cwd=repo)["dirty"] == {}
    (ws / "proposed.txt").write_text("edited after proposing\n")
    (ws / "new.txt").write_text("n\n")
    assert ok("lane", "show", "feat", cwd=repo)["dirty"] == {"proposed.txt": "modified", "new.txt": "added"}
    # the trunk's worktree: a `git add` by hand is staged, but in no state
    (repo / "README.md").write_text("# staged by hand\n")
    git("add", "README.md", cwd=repo)
    dirty = {d["lane"]: d["paths"] for d in ok("status", cwd=repo)["dirty"]}
    assert dirty == {"main": {"README.md": "modified"},
                     "feat": {"proposed.txt": "modified", "new.txt": "added"}}


def test_a_lock_in_the_trunks_worktree_is_reported_not_removed(repo):
    """The main worktree is a person's: git's own index.lock there may belong to a `git commit` running
    its hooks, so it is named in the error, as git does, and left alone."""
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    (repo / "README.md").write_text("# edited\n")
    before = git("for-each-ref", cwd=repo)
    error = fails("commit", "-m", "x", "--agent-id", "a", cwd=repo, code="git_failed")
    assert str(lock) in error["message"] and lock.exists()
    assert git("for-each-ref", cwd=repo) == before


def test_a_lane_name_that_is_a_folder_of_another_is_refused(repo):
    ok("lane", "create", "a", cwd=repo)
    ok("lane", "create", "x/y", cwd=repo)
    before = repository_state(repo)
    fails("lane", "create", "a/b", cwd=repo, code="lane_name_clash")
    fails("lane", "create", "x", cwd=repo, code="lane_name_clash")
    assert repository_state(repo) == before
    ok("lane", "create", "ab", cwd=repo)


# Runs `git-lanes ARGS` with a Ctrl-C arriving as MODULE is imported (`-c PROGRAM MODULE ARGS...`): the moment
# a real Ctrl-C most often lands, while the interpreter loads click and pygit2.
INTERRUPTED_AT_IMPORT = """
import builtins, sys
target = sys.argv.pop(1)
real = builtins.__import__
def interrupted(name, *args, **kwargs):
    if name == target:
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = interrupted
sys.argv[0] = "git-lanes"
from git_lanes.__main__ import main
main()
"""


@pytest.mark.parametrize(("module", "args"), [
    ("git_lanes.cli", ["task", "list"]),  # before click: a traceback and death by SIGINT before
    ("git_lanes.cli.output", ["task", "list", "--json"]),  # as click loads the command: "Aborted!", exit 1
    ("git_lanes.api.sync_light", ["sync"]),  # the light sync, before its own handler
])
def test_ctrl_c_while_a_command_loads_exits_130_quietly_as_once_it_runs(repo, module, args):
    import sys

    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_AT_IMPORT, module, *args], cwd=repo,
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (130, "", ""), proc.stderr


def test_a_full_ref_name_means_that_ref_even_where_a_lane_bears_the_same_name(api, repo):
    """git reads `refs/heads/x` as the branch x, never as a branch named `refs/heads/x`. A lane named
    `refs/heads/x` took over that spelling in `diff`, `restore` and `trace`: the branch was unreachable by its
    full name. A full name of a ref that exists means that ref, as in git; the lane keeps its short forms."""
    git("branch", "x", cwd=repo)
    branch = git("rev-parse", "refs/heads/x", cwd=repo).strip()
    api.lane_create("refs/heads/x")
    (workspace(repo, "refs/heads/x") / "lane.txt").write_text("lane\n")
    lane_state = api.commit("on the lane", "a", lane="refs/heads/x", auto_accept=True)["to"]
    assert lane_state != branch
    assert ok("diff", "refs/heads/x", "main", cwd=repo)["from"] == branch
    assert ok("trace", "refs/heads/x", cwd=repo)["state"] == branch
    assert ok("diff", "refs/lanes/heads/refs/heads/x", "main", cwd=repo)["from"] == lane_state
