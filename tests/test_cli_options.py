"""One spelling for each option (issue 8): `--agent` (or GIT_LANES_AGENT) on every command that acts as an
agent, with the old spellings kept as hidden aliases; one rule for an agent id on every command."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, run_cli, workspace
from gitserver import clone, make_origin
from http_helpers import Server

from git_lanes.api import Lanes

from git_lanes.errors import UserError


def ok(*args: str, cwd: Path, env: dict | None = None) -> dict:
    result = run_cli(*args, "--json", cwd=cwd, env=env)
    assert result.code == 0, result.err
    return result.json


def test_commit_takes_agent_and_the_old_agent_id(repo: Path):
    ok("lane", "create", "l1", cwd=repo)
    ws = workspace(repo, "l1")
    (ws / "a").write_text("a\n")
    assert ok("commit", "-m", "a", "--agent", "new-spelling", cwd=ws)["intent"]["agent_id"] == "new-spelling"
    (ws / "b").write_text("b\n")
    env = {"GIT_LANES_AGENT": "from-env"}
    # an explicit old spelling still beats the environment, as the option it replaces did
    assert ok("commit", "-m", "b", "--agent-id", "old-spelling", cwd=ws, env=env)["intent"]["agent_id"] \
        == "old-spelling"
    help_text = run_cli("commit", "--help", cwd=repo).out
    assert "--agent ID" in help_text and "--agent-id" not in help_text


@pytest.mark.parametrize("agent", ["Jane Doe", "a<b>", "x" * 65])
def test_one_agent_id_rule_for_every_command(repo: Path, agent: str):
    """The same GIT_LANES_AGENT used to work for `commit` and fail for `task claim`."""
    ok("lane", "create", "l1", cwd=repo)
    ws = workspace(repo, "l1")
    (ws / "a").write_text("a\n")
    task = ok("task", "create", "t", cwd=repo)["task"]
    env = {"GIT_LANES_AGENT": agent}
    for args, cwd in ((["commit", "-m", "a"], ws), (["task", "claim", task], repo),
                      (["board", "post", "hi"], repo), (["lane", "reset", "l1"], repo), (["pull"], repo),
                      (["sync"], repo), (["gc", "--dry-run"], repo)):
        result = run_cli(*args, "--json", cwd=cwd, env=env)
        assert (result.code, result.json["error"]) == (1, "invalid_agent"), (args, result.err)


def test_task_claim_version_is_spelled_expect_version(repo: Path):
    task = ok("task", "create", "t", cwd=repo)["task"]
    stale = run_cli("task", "claim", task, "--agent", "a1", "--expect-version", "7", "--json", cwd=repo)
    assert (stale.code, stale.json["error"]) == (3, "version_conflict")
    old = run_cli("task", "claim", task, "--agent", "a1", "--version", "7", "--json", cwd=repo)
    assert (old.code, old.json["error"]) == (3, "version_conflict")
    assert ok("task", "claim", task, "--agent", "a1", "--version", "1", cwd=repo)["owner"] == "a1"


def test_limit_is_spelled_alike_in_history_and_board(repo: Path):
    ok("lane", "create", "l1", cwd=repo)
    ws = workspace(repo, "l1")
    for n in range(3):
        (ws / "a").write_text(f"{n}\n")
        ok("commit", "-m", f"c{n}", "--agent", "a1", "--auto-accept", cwd=ws)
        ok("board", "post", f"p{n}", "--agent", "a1", cwd=repo)
    assert len(ok("history", "--limit", "2", cwd=repo)["transitions"]) == 2
    assert len(ok("history", "-n", "1", cwd=repo)["transitions"]) == 1
    assert len(ok("board", "read", "-n", "2", cwd=repo)["posts"]) == 2
    assert len(ok("board", "read", "--limit", "1", cwd=repo)["posts"]) == 1


def test_lane_reset_records_the_agent(repo: Path):
    ok("lane", "create", "l1", cwd=repo)
    ws = workspace(repo, "l1")
    (ws / "a").write_text("a\n")
    ok("commit", "-m", "a", "--agent", "a1", "--auto-accept", cwd=ws)
    reset = ok("lane", "reset", "l1", "--agent", "resetter", cwd=repo)
    assert reset["transition"]["intent"]["agent_id"] == "resetter"
    (ws / "b").write_text("b\n")
    ok("commit", "-m", "b", "--agent", "a1", "--auto-accept", cwd=ws)
    by_env = ok("lane", "reset", "l1", cwd=repo, env={"GIT_LANES_AGENT": "env-resetter"})
    assert by_env["transition"]["intent"]["agent_id"] == "env-resetter"


def test_agent_commands_take_the_agent_from_the_environment(repo: Path):
    env = {"GIT_LANES_AGENT": "coder-9"}
    assert ok("agent", "register", cwd=repo, env=env)["agent"] == "coder-9"
    assert ok("agent", "heartbeat", cwd=repo, env=env)["agent"] == "coder-9"
    assert ok("agent", "heartbeat", "other", cwd=repo, env=env)["agent"] == "other"
    missing = run_cli("agent", "heartbeat", cwd=repo, env={"GIT_LANES_AGENT": ""})
    assert missing.code == 2


@pytest.mark.parametrize("command", ["register", "heartbeat"])
def test_an_empty_agent_id_given_is_refused_not_taken_from_the_environment(repo: Path, command: str):
    """`agent heartbeat ""` (a variable that was never set) renewed the lease of whichever agent
    GIT_LANES_AGENT named, where `--agent ""` is refused: an id given is judged as given."""
    ok("agent", "register", "coder-9", cwd=repo)
    result = run_cli("agent", command, "", "--json", cwd=repo, env={"GIT_LANES_AGENT": "coder-9"})
    assert result.code == 1 and result.json["error"] == "invalid_agent", result.err


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
@pytest.mark.parametrize("args", [("budget", "set", "--lane", "main", "--usd"),
                                  ("commit", "-m", "m", "--agent", "a1", "--cost-usd"),
                                  ("commit", "-m", "m", "--agent", "a1", "--wall-time"),
                                  ("wait", "--agent", "a1", "--timeout"),
                                  ("stop", "feedbeef", "--grace")])
def test_a_number_option_refuses_what_is_not_a_finite_number_as_a_usage_error(repo: Path, args, value):
    """NaN passed every range check (no comparison with it is true) and reached the model, which refused it
    with exit 1 while -1 on the same option was a usage error (exit 2); an infinity passed `x>=0`."""
    result = run_cli(*args, value, "--json", cwd=repo)
    assert (result.code, result.json["error"]) == (2, "usage"), result.err
    assert f"Invalid value for '{args[-1]}'" in result.err and "Traceback" not in result.err


def test_every_count_takes_zero_and_refuses_a_negative_one(repo: Path, api):
    """One rule for -n/--limit, git log's: 0 shows none and succeeds, a negative count is a usage error, a
    big one shows all there is. `board read -n 0` and `op log -n 0` were refused while `history -n 0` was
    taken; `op log -n -1` was refused with exit 1, `history -n -1` with exit 2."""
    ok("board", "read", "--agent", "a2", cwd=repo)  # a2's cursor: what is posted next is unread for it
    ok("board", "post", "hello", "--agent", "a1", cwd=repo)
    counted = [("history",), ("trace", "main"), ("board", "read"), ("op", "log")]
    for args in counted:
        negative = run_cli(*args, "-n", "-1", "--json", cwd=repo)
        assert (negative.code, negative.json["error"]) == (2, "usage"), (args, negative.err)
        assert run_cli(*args, "-n", "1000000", cwd=repo).code == 0, args
    assert ok("history", "-n", "0", cwd=repo)["transitions"] == []
    assert ok("trace", "main", "-n", "0", cwd=repo)["steps"] == []
    assert ok("board", "read", "-n", "0", cwd=repo)["posts"] == [] and ok("op", "log", "-n", "0", cwd=repo) == []
    unread = ok("board", "read", "--agent", "a2", "-n", "0", cwd=repo)["posts"]
    assert [p["text"] for p in unread] == ["hello"]  # the unread posts, and none besides
    plain = run_cli("op", "log", "-n", "0", cwd=repo)
    assert (plain.code, plain.out) == (0, "")  # as `git log -n 0` prints nothing
    for read in (lambda: api.board_read(limit=-1), lambda: api.op_log(-1), lambda: api.ledger_log(-1),
                 lambda: api.history(limit=-1), lambda: api.trace("main", -1)):
        with pytest.raises(UserError) as refused:
            read()
        assert refused.value.code == "invalid_limit"


def test_pull_sync_and_gc_record_the_agent_acting(tmp_path: Path):
    """They took no --agent and ignored GIT_LANES_AGENT: what an agent's pull brought in and what its gc
    pruned were recorded as git's user, in the operation log and on the tombstones."""
    remote = tmp_path / "remote.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote), cwd=tmp_path)
    origin = make_origin(tmp_path, f"file://{remote}")
    api = Lanes(origin)
    api.lane_create("feat")
    (workspace(origin, "feat") / "a.txt").write_text("a\n")
    api.reject(api.commit("a", "coder-1", lane="feat")["id"], "no")
    api.sync()
    other = clone(tmp_path, f"file://{remote}", "other")

    ok("pull", "--agent", "puller", cwd=other)
    newest = ok("op", "log", "-n", "1", cwd=other)[0]
    assert (newest["description"], newest["actor"]) == ("pull", "puller")
    api.lane_create("feat2")
    api.sync()
    ok("sync", cwd=other, env={"GIT_LANES_AGENT": "syncer"})  # a lane came in: the ordinary sync
    newest = ok("op", "log", "-n", "1", cwd=other)[0]
    assert (newest["description"], newest["actor"]) == ("sync", "syncer")

    api.lane_create("feat3")
    api.sync()
    with Server(other) as server:  # REST's sync, as the CLI's
        synced = server.post("/api/v1/sync", {"agent_id": "rest-syncer"})
        refused = server.post("/api/v1/pull", {"agent_id": "Jane Doe"})
    assert synced.status == 200 and synced.json["came_in"], synced.body
    assert (refused.status, refused.json["error"]) == (400, "invalid_agent"), refused.body
    newest = ok("op", "log", "-n", "1", cwd=other)[0]
    assert (newest["description"], newest["actor"]) == ("sync", "rest-syncer")

    swept = ok("gc", "--older-than", "0", "--agent", "sweeper", cwd=other)
    assert swept["tombstones"] == 1 and len(swept["removed"]["rejected"]) == 1
    assert ok("op", "log", "-n", "1", cwd=other)[0]["actor"] == "sweeper"
    tombstones = [e for e in Lanes(other).ledger_log(5) if e.type == "gc.prune"]
    assert [e.actor for e in tombstones] == ["sweeper"]
