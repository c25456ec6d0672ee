"""The Python SDK: each path of `AgentSession.work()` (accepted, left proposed, an exception rejected and
re-raised, a failing gate), the agent-bound coordination calls, and the package's lazy, typed exports."""

from __future__ import annotations

import json
import pickle
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from test_gates import declare, gate

import git_lanes
from git_lanes import AgentSession, Conflict, GateFailed, LanesError, NotFound, UserError
from git_lanes.api import Lanes


@pytest.fixture
def session(repo):
    return AgentSession(repo, agent_id="coder-1", agent_type="feature_dev", lane="feature/auth")


def test_a_block_that_ends_well_is_snapshotted_and_accepted(session, repo):
    with session.work("Add the login form", tags=["auth"], auto_accept=True) as w:
        (w.path / "login.py").write_text("def login(): ...\n")
        w.record_tokens(tokens_in=2000, tokens_out=1200, cost_usd=0.03)
        w.record_tokens(tokens_in=10, api_calls=2)
        w.add_metadata("model", "sonnet")
        w.add_metadata("temperature", 0.2)
    assert w.path == repo / ".lanes" / "workspaces" / "feature" / "auth"
    record = w.result
    assert record["status"] == "accepted" and record["lane"] == "feature/auth"
    assert record["intent"] == {"prompt": "Add the login form", "agent_id": "coder-1", "agent_type": "feature_dev",
                                "model": "sonnet", "tags": ["auth"], "metadata": {"temperature": 0.2}}
    cost = record["cost"]
    assert (cost["tokens_in"], cost["tokens_out"], cost["api_calls"], cost["cost_usd"]) == (2010, 1200, 2, 0.03)
    shown = run_cli("show", record["id"], "--json", cwd=repo).json
    assert shown["intent"]["metadata"] == {"temperature": 0.2} and shown["status"] == "accepted"
    assert run_cli("lane", "show", "feature/auth", "--json", cwd=repo).json["head"] == record["to"]


def test_without_auto_accept_the_state_is_left_proposed(session, repo):
    with session.work("Draft the schema") as w:
        (w.path / "schema.sql").write_text("create table users ();\n")
    assert w.result["status"] == "proposed"
    assert [t["id"] for t in run_cli("status", "--json", cwd=repo).json["proposals"]] == [w.result["id"]]


def test_an_exception_in_the_block_rejects_the_attempt_and_is_re_raised(session, repo):
    with session.work("Keep this", auto_accept=True) as kept:
        (kept.path / "a.txt").write_text("good\n")
    with pytest.raises(ValueError, match="model gave up"), session.work("Try something", auto_accept=True) as w:
        (w.path / "a.txt").write_text("half done\n")
        raise ValueError("model gave up")
    assert w.result["status"] == "rejected" and w.result["reason"] == "ValueError: model gave up"
    assert run_cli("lane", "show", "feature/auth", "--json", cwd=repo).json["head"] == kept.result["to"]
    assert (w.path / "a.txt").read_text() == "good\n"  # the next block starts from the lane head
    rejected = run_cli("history", "--status", "rejected", "--json", cwd=repo).json["transitions"]
    assert [t["id"] for t in rejected] == [w.result["id"]]  # the attempt is kept as signal


@pytest.mark.parametrize("message", ["\x1b[31mFAILED\x1b[0m tests/test_x.py", "x" * 20_000, "bad byte \udcff"],
                         ids=["terminal-colours", "long", "lone-surrogate"])
def test_an_exception_whose_text_is_no_valid_reason_still_rejects_the_attempt(session, repo, message):
    """An exception's text is anything a tool printed: colour codes, a whole traceback, bytes that are not
    UTF-8. The reason refused it, so the attempt was left proposed and the workspace was not put back."""
    with pytest.raises(RuntimeError) as raised, session.work("Try something") as w:
        (w.path / "half.txt").write_text("half done\n")
        raise RuntimeError(message)
    assert not getattr(raised.value, "__notes__", None)  # nothing to say about a failure to record it
    assert w.result["status"] == "rejected" and w.result["reason"].startswith("RuntimeError: ")
    shown = run_cli("show", w.result["id"], "--json", cwd=repo).json
    assert shown["status"] == "rejected" and shown["reason"] == w.result["reason"]
    assert run_cli("status", "--json", cwd=repo).json["proposals"] == []
    assert not (w.path / "half.txt").exists()  # the next block starts from the lane head


def test_an_exception_with_nothing_changed_is_re_raised_untouched(session):
    with pytest.raises(KeyError), session.work("Nothing yet") as w:
        raise KeyError("x")
    assert w.result["status"] == "unchanged"


def test_a_failing_gate_records_the_rejection_and_raises_gate_failed(repo):
    from git_lanes import Lanes

    declare(Lanes(repo), repo, gate("tests", "import sys; print('1 failed'); sys.exit(1)"))
    session = AgentSession(repo, agent_id="coder-2", lane="feature/gated")
    with pytest.raises(GateFailed) as failure, session.work("Break the tests", auto_accept=True) as w:
        (w.path / "broken.py").write_text("raise SystemExit\n")
    assert failure.value.code == "gate_failed" and failure.value.exit_code == 4
    assert w.result["status"] == "rejected" and w.result["evaluations"][0]["passed"] is False
    assert run_cli("show", w.result["id"], "--json", cwd=repo).json["status"] == "rejected"


def _inotify_instances() -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if _link(fd).startswith("anon_inode:inotify"))


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # the listing's own descriptor, closed by now
        return ""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def test_a_session_used_with_with_gives_its_workspace_watcher_back(repo):
    """A session that snapshots its workspace twice watches it (an inotify instance, 128 per user by default);
    an orchestrator opening sessions one after another had no way to give that back but the garbage collector."""
    import gc

    # Sessions earlier tests in this worker left to the garbage collector must not close their watchers
    # while this one counts: collect them now, and let no collection run until it has counted.
    gc.collect()
    gc.disable()
    try:
        before = _inotify_instances()
        with AgentSession(repo, agent_id="coder-1", lane="feature/auth") as session:
            for step in ("one", "two"):
                with session.work(f"step {step}", auto_accept=True) as w:
                    (w.path / f"{step}.txt").write_text(f"{step}\n")
            assert _inotify_instances() == before + 1  # the second snapshot watches the workspace
        assert _inotify_instances() == before
    finally:
        gc.enable()
    with session.work("after closing", auto_accept=True) as w:  # still usable: it watches again when it must
        (w.path / "three.txt").write_text("three\n")
    assert w.result["status"] == "accepted"
    session.close()
    with Lanes(repo) as api:
        assert api.status().trunk == "main"


def test_agent_bound_coordination_calls(repo):
    one = AgentSession(repo, agent_id="one")
    two = AgentSession(repo, agent_id="two")
    assert one.register(kind="claude")["kind"] == "claude"
    first = run_cli("task", "create", "first", "--json", cwd=repo).json["task"]
    second = run_cli("task", "create", "second", "--depends", first, "--json", cwd=repo).json["task"]
    assert one.claim_task(first, version=1)["owner"] == "one"
    with pytest.raises(Conflict) as lost:
        two.claim_task(first)
    assert lost.value.code == "task_claimed"
    two.claim_task(second, ahead=True)
    assert one.claim_files("src/**")["claims"] == ["src/**"]
    assert one.claim_files(["docs/**", "README.md"])["claims"] == ["src/**", "docs/**", "README.md"]  # a list too
    assert one.post("take a look", to="two")["post"] == 1
    assert two.wait(timeout=5)["reason"] == "post"
    one.done(first)
    woke = two.wait(timeout=5)
    assert woke["reason"] == "task_ready" and woke["wakes"][0]["task"] == second
    assert two.heartbeat()["agent"] == "two"
    assert [p["text"] for p in two.read_board()["posts"]] == ["take a look"]
    assert one.lane == "agent/one" and (repo / ".lanes" / "workspaces" / "agent" / "one").is_dir()


def test_each_coordination_call_returns_the_record_its_annotation_names(repo):
    """The calls were annotated `-> dict` and returned records (mapping-like, but no dict): a script that
    type-checks `isinstance(r, dict)` or passes one to `json.dumps` went wrong where mypy said all was well."""
    import typing

    one = AgentSession(repo, agent_id="one")
    task = run_cli("task", "create", "first", "--json", cwd=repo).json["task"]
    calls = {"register": lambda: one.register(kind="claude"), "heartbeat": one.heartbeat,
             "claim_task": lambda: one.claim_task(task), "claim_files": lambda: one.claim_files("src/**"),
             "post": lambda: one.post("hello"), "read_board": one.read_board,
             "wait": lambda: one.wait(timeout=0), "done": lambda: one.done(task)}
    for name, call in calls.items():
        promised = typing.get_type_hints(getattr(AgentSession, name))["return"]
        result = call()
        assert isinstance(result, promised), (name, type(result), promised)
        assert json.loads(json.dumps(result.to_dict())) == result.to_dict()


def test_a_named_lane_is_made_on_first_use_by_a_claim_too(repo):
    """`lane=` names a lane "created on first use": a session whose first call claims a task (or registers)
    works in it, rather than failing on a lane no one has made yet."""
    task = run_cli("task", "create", "first", "--json", cwd=repo).json["task"]
    claimed = AgentSession(repo, agent_id="coder-2", lane="feature/login").claim_task(task[:6])
    assert claimed["owner"] == "coder-2"
    assert run_cli("task", "show", task, "--json", cwd=repo).json["lane"] == "feature/login"
    assert AgentSession(repo, agent_id="coder-3", lane="feature/cache").register()["lane"] == "feature/cache"


def test_errors_are_typed_and_share_one_base(repo):
    with pytest.raises(NotFound):
        AgentSession(repo, agent_id="x").claim_task("feedbeef")
    with pytest.raises(UserError) as invalid:
        AgentSession(repo, agent_id="not valid")
    assert invalid.value.code == "invalid_agent"
    assert all(issubclass(kind, LanesError) for kind in (Conflict, GateFailed, NotFound, UserError))


def test_an_empty_agent_id_is_refused_not_taken_from_the_environment(repo, monkeypatch):
    # `agent_id=""` acted as $GIT_LANES_AGENT without a word, where the CLI refuses `--agent ""`.
    monkeypatch.setenv("GIT_LANES_AGENT", "coder-1")
    with pytest.raises(UserError) as refused:
        AgentSession(repo, agent_id="")
    cli = run_cli("board", "post", "hello", "--agent", "", "--json", cwd=repo)
    assert (refused.value.code, refused.value.message) == (cli.json["error"], cli.json["message"])
    assert AgentSession(repo).agent_id == "coder-1"  # none given: the environment's


def test_every_error_from_bad_input_is_a_user_error(repo, tmp_path, monkeypatch):
    session = AgentSession(repo, agent_id="coder-1")
    made = [session.api.task_create(f"task {n}")["task"] for n in range(40)]  # 40 ids: two share a first digit
    first = next(task for task in made if sum(other[0] == task[0] for other in made) > 1)
    with pytest.raises(UserError) as ambiguous:  # a prefix of two tasks: give more characters
        session.claim_task(first[0])
    assert ambiguous.value.code == "ambiguous"
    with pytest.raises(UserError) as elsewhere:
        AgentSession(tmp_path, agent_id="coder-1")
    assert elsewhere.value.code == "not_a_repository"
    monkeypatch.delenv("GIT_LANES_AGENT", raising=False)
    with pytest.raises(UserError) as nobody:
        AgentSession(repo)
    assert nobody.value.code == "no_agent" and "agent_id" in nobody.value.hint
    with pytest.raises(UserError) as bad_lane:  # refused when the session is made, not at its first use
        AgentSession(repo, agent_id="coder-1", lane="no spaces")
    assert bad_lane.value.code == "invalid_lane_name"


def test_an_intent_the_model_refuses_is_refused_when_the_block_is_asked_for(session, repo):
    # A string of tags was split into its letters ("auth" -> a, u, t, h) and recorded as four tags; a prompt
    # that is no text was refused only when the block ended, after the work was done.
    before = run_cli("history", "--json", cwd=repo).json
    for prompt, tags, code in (("Add login", "auth", "invalid_intent"), (None, (), "invalid_intent"),
                               ("Add login", ["ok", 5], "invalid_intent")):
        with pytest.raises(UserError) as refused:
            session.work(prompt, tags=tags)
        assert refused.value.code == code, refused.value
    assert run_cli("history", "--json", cwd=repo).json == before


@pytest.mark.parametrize("call", [
    lambda s: s.claim_task(None), lambda s: s.claim_task(5), lambda s: s.done(None), lambda s: s.done(b"ab"),
    lambda s: s.wait("60"), lambda s: s.wait(None), lambda s: s.claim_files(5), lambda s: s.claim_files(None),
    lambda s: AgentSession(3, agent_id="coder-1"), lambda s: AgentSession(b"repo", agent_id="coder-1"),
    lambda s: s.api.task_show(None), lambda s: s.api.show(5), lambda s: s.api.ticket_show(["ab"]),
    lambda s: s.api.accept(None), lambda s: s.api.reject(5),
], ids=["claim None", "claim int", "done None", "done bytes", "wait str", "wait None", "files int",
        "files None", "repo int", "repo bytes", "task_show None", "show int", "ticket_show list", "accept None",
        "reject int"])
def test_an_argument_of_the_wrong_type_is_a_user_error_not_a_type_error(session, call):
    # These raised AttributeError ('NoneType' object has no attribute 'strip') or TypeError from deep inside.
    with pytest.raises(UserError) as refused:
        call(session)
    assert "object has no attribute" not in refused.value.message, refused.value


def test_importing_the_package_stays_light_and_every_public_name_is_documented():
    probe = ("import sys, git_lanes; print(sorted(m for m in sys.modules if m.startswith(('pygit2', 'mcp', "
             "'git_lanes.'))))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert json.loads(loaded.replace("'", '"')) == []
    for name in git_lanes.__all__:
        value = getattr(git_lanes, name)
        assert isinstance(value, str) or (value.__doc__ or "").strip(), name
    for owner in (git_lanes.AgentSession, git_lanes.Work):
        for name, member in vars(owner).items():
            if not name.startswith("_") and callable(member) or isinstance(member, property):
                assert (member.__doc__ or "").strip(), f"{owner.__name__}.{name}"
    with pytest.raises(AttributeError):
        git_lanes.NoSuchThing  # noqa: B018


def test_a_repository_removed_under_a_session_is_a_repository_gone_error(repo, tmp_path):
    """The session's calls raised FileNotFoundError (a lock file's directory gone) from deep inside."""
    from git_lanes import RepositoryGone

    with AgentSession(repo, agent_id="coder-1") as session:
        session.register()
        repo.rename(tmp_path / "moved")
        calls = {"post": lambda: session.post("hi"), "read_board": session.read_board,
                 "wait": lambda: session.wait(timeout=30), "status": session.api.status,
                 "lane_list": session.api.lane_list, "task_list": session.api.task_list}
        for name, call in calls.items():
            with pytest.raises(RepositoryGone) as gone:
                call()
            assert gone.value.code == "repository_gone", name
            assert gone.value.message == f"the repository {repo} is gone: it was removed or moved after it was opened"
        with pytest.raises(RepositoryGone):
            with session.work("Add a"):
                pass
    assert issubclass(RepositoryGone, UserError)


def test_every_call_of_a_session_extends_its_agent_s_lease(repo):
    """The MCP server extends an agent's lease on any call it makes, as Lockage does; a session did so only on
    register, heartbeat and claims. An agent that worked, posted, read and waited for a quarter of an hour
    lapsed: its lane could be taken by another agent and its tasks showed as lapsed."""
    from test_worktrees import Clock

    from git_lanes.domain.agents import LEASE_SECONDS

    clock = Clock()
    session = AgentSession(repo, agent_id="coder-1", lane="feature/auth")
    session.api = Lanes(repo, clock=clock)  # the same session, on a clock the test moves
    session.register()
    task = run_cli("task", "create", "first", "--json", cwd=repo).json["task"]
    session.claim_task(task)

    def work() -> None:
        with session.work("Keep going", auto_accept=True) as w:
            (w.path / "more.txt").write_text(f"{clock.now}\n")

    for call in (lambda: session.post("still at it"), lambda: session.read_board(), lambda: session.wait(0),
                 work, lambda: session.done(task)):
        clock.now += LEASE_SECONDS - 60  # each call comes just before the lease the last one left would end
        call()
        [row] = [a for a in session.api.agent_list() if a["id"] == "coder-1"]
        assert row["alive"] and row["lease_until"] > clock.now + LEASE_SECONDS - 60
    with pytest.raises(Conflict):  # so its lane is still its own
        Lanes(repo, clock=clock).assign_worktree("coder-2", "feature/auth")


def test_a_post_of_no_known_kind_or_no_text_is_refused_saying_which(repo):
    # post(kind="") and post(kind="Question") were posted as notes; post(5) said the text "must not be empty".
    session = AgentSession(repo, agent_id="coder-1")
    for kind in ("", "Question", 3):
        with pytest.raises(UserError) as info:
            session.post("stuck", kind=kind)
        assert info.value.code == "invalid_kind", kind
    with pytest.raises(UserError) as info:
        session.post(5)
    assert (info.value.code, info.value.message) == ("invalid_text", "the post's text must be text, not int")
    assert session.post("ok", kind=None)["kind"] == "note"
    texts = [p["text"] for p in run_cli("board", "read", "--all", "--json", cwd=repo).json["posts"]]
    assert texts == ["ok"]  # nothing refused was posted


@pytest.mark.parametrize("version", ["1", "x", True, 1.0, -1])
def test_a_version_that_is_no_whole_number_is_refused_not_a_lost_race(repo, version):
    """A claim's version given as text (`"1"`, read from a file, say) was compared with the task's number
    and failed as version_conflict, telling the agent another claimer won and to take another task."""
    session = AgentSession(repo, agent_id="coder-1")
    task = session.api.task_create("Login form")["task"]
    with pytest.raises(UserError) as refused:
        session.claim_task(task, version=version)
    assert refused.value.code == "invalid_version" and not isinstance(refused.value, Conflict), refused.value
    assert session.api.task_show(task)["status"] == "open"


def test_an_error_prints_its_hint_and_keeps_it_apart(session, repo):
    """Printing an SDK error showed its message alone: a script's user never saw what to do next."""
    with pytest.raises(NotFound) as unknown:
        session.done("feedbeef")
    error = unknown.value
    assert str(error) == "no task matches 'feedbeef'\nhint: see `session.api.task_list()`"
    assert (error.message, error.hint, error.code) == ("no task matches 'feedbeef'",
                                                       "see `session.api.task_list()`", "unknown_task")
    assert repr(error) == "NotFound(\"no task matches 'feedbeef'\")"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.message, copy.hint, copy.code) == \
        (NotFound, str(error), error.message, error.hint, error.code)
    # The API's own errors, raised to the other faces, keep their text as it was.
    with pytest.raises(NotFound) as direct:
        Lanes(repo).task_show("feedbeef")
    assert str(direct.value) == "no task matches 'feedbeef'"


def test_the_api_a_session_holds_answers_in_the_sdks_words_too(session):
    """Hints name `session.api` calls, whose own errors still named the CLI's commands (`git lanes history`)."""
    with pytest.raises(NotFound) as unknown:
        session.api.show("feedbeef")
    assert str(unknown.value) == "no transition matches 'feedbeef'\nhint: list them with `session.api.history()`"
    assert session.api.task_list() == Lanes(session.api.lanes.root).task_list() == []


def test_the_readme_s_python_example_runs_as_written(repo):
    """The README's SDK example is what a user pastes first: it ran until its last line, which claimed a
    task id made up for the page (`3fa2`) and ended in a NotFound traceback."""
    text = (Path(__file__).parent.parent / "README.md").read_text()
    blocks = [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]
    assert blocks, "the README has no Python example"
    for block in blocks:
        ran = subprocess.run([sys.executable, "-c", block], cwd=repo.parent, capture_output=True, text=True,
                             timeout=300)
        assert ran.returncode == 0 and "Traceback" not in ran.stderr, (block, ran.stdout, ran.stderr)


def test_the_sdk_is_type_checked_as_strictly_as_the_api_it_wraps():
    """The SDK was not among mypy's files: its calls returned Any to a script's checker, and `work` passed a
    list of tags where the record's annotation promises a tuple, unseen."""
    import tomli

    mypy = tomli.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "git_lanes/sdk" in mypy["files"]
    strict = next(o for o in mypy["overrides"] if o.get("disallow_untyped_defs"))
    assert {"git_lanes.sdk", "git_lanes.sdk.*"} <= set(strict["module"])
