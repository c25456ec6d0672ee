"""The coordination commands as an agent runs them: exact --json records, stable exit codes (3 for a lost
race, 1 for bad input, 2 for usage), `wait` in its own process woken by another process's post."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conftest import git, run_cli


def ok(*args, cwd, env=None) -> dict:
    result = run_cli(*args, "--json", cwd=cwd, env=env)
    assert result.code == 0, result.err
    return result.json


def test_a_coordinated_session_through_the_cli(repo):
    ok("agent", "register", "coder-1", "--kind", "claude", cwd=repo)
    ticket = ok("ticket", "open", "Login flow", cwd=repo)["ticket"]
    schema = ok("task", "create", "Write schema", "--ticket", ticket[:6], "--files", "db/**", cwd=repo)["task"]
    api = ok("task", "create", "Write API", "--depends", schema[:6], "--ticket", ticket[:6], cwd=repo)["task"]
    ready = ok("task", "list", "--ready", cwd=repo)
    assert [t["id"] for t in ready] == [schema]
    claimed = ok("task", "claim", schema[:6], "--agent", "coder-1", "--version", "1", cwd=repo)
    assert (claimed["owner"], claimed["version"], claimed["already"]) == ("coder-1", 2, False)
    lost = run_cli("task", "claim", schema[:6], "--agent", "coder-2", "--json", cwd=repo)
    assert lost.code == 3 and lost.json["error"] == "task_claimed" and lost.json["owner"] == "coder-1"
    assert "task_claimed" not in lost.err and "claimed by coder-1" in lost.err
    stale = run_cli("task", "claim", api[:6], "--agent", "coder-2", "--version", "9", cwd=repo)
    assert stale.code == 3 and "version" in stale.err
    ok("task", "claim", api[:6], "--agent", "coder-2", "--ahead", cwd=repo, env={"GIT_LANES_AGENT": "ignored"})
    done = ok("task", "done", schema[:6], "--agent", "coder-1", cwd=repo)
    assert done["woken"] == [{"agent": "coder-2", "task": api}]
    woke = ok("wait", "--agent", "coder-2", "--timeout", "5", cwd=repo)
    assert woke["reason"] == "task_ready" and woke["wakes"][0]["task"] == api
    ok("task", "done", api[:6], cwd=repo)
    shown = ok("ticket", "show", ticket[:6], cwd=repo)
    assert (shown["status"], shown["done"], shown["total"]) == ("ready", 2, 2)
    log = git("log", "--oneline", "refs/lanes/ledger", cwd=repo).splitlines()
    assert [line.split(" ", 1)[1] for line in log] == [
        f"Test: done task {api[:8]}", "coder-2: take 1 wakes", f"coder-1: done task {schema[:8]}",
        f"coder-2: claim task {api[:8]} for coder-2 (v2)", f"coder-1: claim task {schema[:8]} for coder-1 (v2)",
        f"Test: create task {api[:8]} \"Write API\"", f"Test: create task {schema[:8]} \"Write schema\"",
        f"Test: open ticket {ticket[:8]} \"Login flow\"", "coder-1: register coder-1 (kind claude, lane -)"]


def test_bad_input_is_one_line_and_exit_1_and_changes_nothing(repo):
    ok("agent", "register", "a", cwd=repo)
    head = git("rev-parse", "refs/lanes/ledger", cwd=repo)
    for args in [("task", "create", ""), ("task", "show", "ffff"), ("task", "claim", "zz", "--agent", "a"),
                 ("claim", "add", "../x", "--agent", "a"), ("board", "post", "x" * 17000, "--agent", "a"),
                 ("agent", "register", "no/slash"), ("ticket", "link", "abc", "def"),
                 ("board", "resolve", "5")]:
        result = run_cli(*args, cwd=repo)
        assert result.code == 1, (args, result.err)
        assert result.err.startswith("git-lanes: error: ") and "Traceback" not in result.err
    assert run_cli("board", "post", "hi", cwd=repo).code == 2  # --agent is required
    assert git("rev-parse", "refs/lanes/ledger", cwd=repo) == head


def test_a_dependency_cycle_is_refused_and_named(repo):
    a = ok("task", "create", "a", cwd=repo)["task"]
    b = ok("task", "create", "b", "--depends", a, cwd=repo)["task"]
    result = run_cli("task", "dep", "add", a[:6], b[:6], "--json", cwd=repo)
    assert result.code == 1 and result.json["error"] == "cycle" and result.json["cycle"] == [b, a]
    assert f"{a[:8]} -> {b[:8]} -> {a[:8]}" in result.err


def test_wait_in_its_own_process_wakes_on_another_process_post(repo):
    ok("agent", "register", "listener", cwd=repo)
    waiter = subprocess.Popen([sys.executable, "-m", "git_lanes", "wait", "--agent", "listener", "--timeout", "60",
                               "--json"], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=os.environ.copy())
    time.sleep(1.0)  # let it start and find nothing yet
    assert waiter.poll() is None
    posted = ok("board", "post", "are you there?", "--agent", "speaker", "--kind", "question", cwd=repo)
    out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0, err
    record = json.loads(out)
    assert record["reason"] == "post" and [p["seq"] for p in record["posts"]] == [posted["post"]]
    again = ok("board", "read", "--agent", "listener", "--unread", cwd=repo)
    assert again["posts"] == []


def test_claims_dirty_and_board_render_for_people(repo):
    ok("lane", "create", "feat", cwd=repo)
    ok("agent", "register", "a", "--lane", "feat", cwd=repo)
    ok("claim", "add", "src/**", "--agent", "b", cwd=repo)
    (repo / ".lanes" / "workspaces" / "feat" / "src" / "app.py").write_text("changed\n")
    result = run_cli("dirty", "publish", "--agent", "a", cwd=repo)
    assert result.code == 0
    assert result.out.splitlines() == ["a: 1 changed files in lane feat",
                                       "warning: src/app.py overlaps b's claim src/**",
                                       "unclaimed: src/app.py (claim it with `git lanes claim add`)"]
    listing = run_cli("agent", "list", cwd=repo).out
    assert listing.split()[:3] == ["a", "agent", "alive"]
    posted = run_cli("board", "post", "hello", "--agent", "a", cwd=repo).out.strip()
    assert posted == "posted #1 (note to everyone)"
    board = run_cli("board", "read", "--agent", "b", cwd=repo).out
    assert "#1" in board and "note a" in board


def test_registering_again_to_set_a_lane_keeps_the_agents_kind(repo):
    ok("agent", "register", "coder-1", "--kind", "claude", cwd=repo)
    ok("lane", "create", "feature/auth", cwd=repo)
    again = ok("agent", "register", "coder-1", "--lane", "feature/auth", cwd=repo)
    assert (again["kind"], again["lane"], again["registered"]) == ("claude", "feature/auth", False)
    assert ok("agent", "register", "coder-2", cwd=repo)["kind"] == "agent"  # the default, for a new one


def test_plain_git_shows_any_record_at_the_ledgers_head_and_at_every_commit(repo):
    """Issue 4: `git show refs/lanes/ledger:<path>` shows any record, whatever commit of its 32-op window the
    ledger stands at (a delta's op carries its records in its message; its tree holds the whole state too)."""
    ok("agent", "register", "coder-1", "--kind", "claude", cwd=repo)
    tasks = [ok("task", "create", f"Task {n}", cwd=repo)["task"] for n in range(3)]
    for task in tasks:
        path = f"refs/lanes/ledger:tasks/{task[:2]}/{task}.json"
        shown = json.loads(git("show", path, cwd=repo))
        assert shown["title"].startswith("Task") and shown["status"] == "open"
    ok("task", "claim", tasks[0][:6], "--agent", "coder-1", cwd=repo)
    claimed = json.loads(git("show", f"refs/lanes/ledger:tasks/{tasks[0][:2]}/{tasks[0]}.json", cwd=repo))
    assert (claimed["owner"], claimed["version"]) == ("coder-1", 2)
    posted = ok("board", "post", "hello", "--agent", "coder-1", cwd=repo)
    listing = git("ls-tree", "-r", "--name-only", "refs/lanes/ledger", cwd=repo).split()
    assert any(name.startswith("board/") and name.endswith(".json") and "readers" not in name for name in listing)
    assert "agents/coder-1.json" in listing and posted
    # every commit's tree is its whole state: the record as the op left it, read by plain git alone
    commits = git("rev-list", "refs/lanes/ledger", cwd=repo).split()
    for commit in commits:
        names = git("ls-tree", "-r", "--name-only", commit, cwd=repo).split()
        created = [task for task in tasks if f"tasks/{task[:2]}/{task}.json" in names]
        assert created == tasks[:len(created)]  # created in order, never missing once made
    assert len(commits) > 2


def test_board_resolve_takes_a_post_as_the_board_shows_it_or_by_a_prefix_of_its_id(repo):
    """`board read` shows a post as `#N` and `--json` gives its id; resolve took only the bare number, so both
    of those were usage errors, against the rule that ids accept unique prefixes."""
    for n in range(3):
        ok("board", "post", f"question {n}", "--kind", "question", "--agent", "a", cwd=repo)
    ids = [p["id"] for p in ok("board", "read", cwd=repo)["posts"]]
    assert ok("board", "resolve", "#1", "--agent", "b", cwd=repo)["post"] == 1
    assert ok("board", "resolve", ids[1][:10].upper(), "--agent", "b", cwd=repo)["post"] == 2
    assert ok("board", "resolve", "3", "--agent", "b", cwd=repo)["post"] == 3
    shown = run_cli("board", "resolve", f"#{1}", "--agent", "c", cwd=repo)
    assert shown.code == 3 and "post #1 was already resolved by b" in shown.err


def test_an_unknown_or_ambiguous_post_is_one_line_and_exit_1(repo, monkeypatch):
    from git_lanes.api import Lanes

    # two posts whose ids share a prefix, as two random ids may
    given = iter(["abc0000000000001", "abc0000000000002"])
    monkeypatch.setattr("git_lanes.ledger.op.random_hex", lambda nbytes: next(given))
    api = Lanes(repo)
    api.board_post("first", "a")
    api.board_post("second", "a")
    head = git("rev-parse", "refs/lanes/ledger", cwd=repo)
    for post, message in [("abc", "post id 'abc' is ambiguous: abc0000000000001 (#1), abc0000000000002 (#2)"),
                          ("abd", "no post matches 'abd'"), ("#9", "no post #9"), ("#x", "no post matches '#x'"),
                          ("", "no post matches ''"), ("0", "no post #0")]:
        result = run_cli("board", "resolve", post, "--agent", "b", cwd=repo)
        assert result.code == 1, (post, result.err)
        assert result.err.splitlines()[0] == f"git-lanes: error: {message}", post
        assert "Traceback" not in result.err
    assert ok("board", "resolve", "abc0000000000002", "--agent", "b", cwd=repo)["post"] == 2
    assert git("rev-parse", "refs/lanes/ledger", cwd=repo) != head


def test_a_heartbeat_says_when_it_registered_the_agent_so_a_mistyped_name_shows(repo):
    """A heartbeat of an agent never registered registers it (agents may start with any call), but said
    nothing of it: a mistyped name made a ghost agent, silently, while the real one's lease lapsed. The
    heartbeat now says it registered the agent (`registered: true`), and only on that first call."""
    ok("agent", "register", "coder-1", cwd=repo)
    assert "registered" not in ok("agent", "heartbeat", "coder-1", cwd=repo)
    ghost = ok("agent", "heartbeat", "coder-l", cwd=repo)
    assert ghost["agent"] == "coder-l" and ghost["registered"] is True, ghost
    assert "registered" not in ok("agent", "heartbeat", "coder-l", cwd=repo)
    text = run_cli("agent", "heartbeat", "coder-2", cwd=repo)
    assert text.code == 0, text.err
    assert text.out.splitlines()[0] == "registered coder-2 (first call): no agent had that name", text.out
    again = run_cli("agent", "heartbeat", "coder-2", cwd=repo)
    assert "registered" not in again.out, again.out
    log = git("log", "--format=%s", "refs/lanes/ledger", cwd=repo).splitlines()
    assert [line for line in log if "heartbeat coder-l" in line] == ["coder-l: heartbeat coder-l",
                                                                     "coder-l: heartbeat coder-l (registering it)"]
    from git_lanes.api import Lanes

    api = Lanes(repo)
    assert api.agent_heartbeat("coder-3").registered and not api.agent_heartbeat("coder-3").registered
