"""Bad input through every face is refused by the model layer, with one clear error and nothing written
(issue 9: D8 bounded numbers, D9 control characters, D12 long lane names, D13 text that is not UTF-8).

Each class has the probe's reproduction plus variants the probe did not show."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from conftest import git, run_cli, workspace

from git_lanes.errors import InternalError, LanesError, UserError
from git_lanes.model.records import MAX_SECONDS, MAX_TOKENS, MAX_USD, Cost, CostTotals

NOT_UTF8 = "\udcff"  # what Python makes of the byte 0xff in argv; subprocess passes it back as that byte


def refused(*args: str, cwd: Path, code: str) -> dict:
    result = run_cli(*args, "--json", cwd=cwd)
    assert result.code == 1, (result.code, result.err)
    assert "Traceback" not in result.err and result.err.startswith("git-lanes: error: ")
    assert result.json["error"] == code, result.json
    return result.json


def refs_of(repo: Path) -> str:
    return git("for-each-ref", "--format=%(refname) %(objectname)", cwd=repo)


# -- D8: numbers are bounded, totals stay finite --------------------------------------------------------

def test_huge_wall_time_is_refused_and_history_keeps_working(repo: Path):
    """The probe's script: two `--wall-time 1e308` overflowed the totals to inf and broke history for good."""
    lane = run_cli("lane", "create", "l1", cwd=repo)
    assert lane.code == 0, lane.err
    ws = workspace(repo, "l1")
    (ws / "x").write_text("1\n")
    before = refs_of(repo)
    refused("commit", "-m", "one", "--agent", "ag1", "--wall-time", "1e308", "--auto-accept", cwd=ws,
            code="invalid_cost")
    assert refs_of(repo) == before
    history = run_cli("history", "--json", cwd=repo)
    assert history.code == 0, history.err


@pytest.mark.parametrize("option,value", [("--cost-usd", "1e308"), ("--tokens-in", str(MAX_TOKENS + 1)),
                                          ("--tokens-out", "1" + "0" * 30), ("--api-calls", "10000000000")])
def test_every_cost_figure_is_bounded(repo: Path, option: str, value: str):
    run_cli("lane", "create", "l1", cwd=repo)
    ws = workspace(repo, "l1")
    (ws / "x").write_text("1\n")
    refused("commit", "-m", "one", "--agent", "ag1", option, value, cwd=ws, code="invalid_cost")


def test_totals_of_figures_at_the_bound_stay_finite(api, repo: Path):
    api.lane_create("l1")
    ws = workspace(repo, "l1")
    top = Cost(tokens_in=MAX_TOKENS, wall_time=MAX_SECONDS, cost_usd=1e9)
    for n in range(3):
        (ws / "x").write_text(f"{n}\n")
        api.commit(f"step {n}", "ag1", lane="l1", cost=top, auto_accept=True)
    totals = api.history(lane="l1")["totals"]
    assert totals["count"] == 3 and totals["tokens_in"] == 3 * MAX_TOKENS
    assert math.isfinite(totals["wall_time"]) and totals["wall_time"] == 3 * MAX_SECONDS
    show = run_cli("lane", "show", "l1", cwd=repo)
    assert show.code == 0, show.err


def test_trace_sums_costs_at_the_bound_without_refusing_its_own_total(api, repo: Path):
    """A trace's total is a sum over transitions, not one transition's cost: two figures at the bound once
    made it exceed the bound and fail."""
    api.lane_create("l1")
    ws = workspace(repo, "l1")
    for n in range(2):
        (ws / "x").write_text(f"{n}\n")
        api.commit(f"step {n}", "ag1", lane="l1", cost=Cost(wall_time=MAX_SECONDS, cost_usd=MAX_USD),
                   auto_accept=True)
    totals = api.trace("l1")["totals"]
    assert totals["transitions"] == 3 and totals["wall_time"] == 2 * MAX_SECONDS  # with `init`'s state
    shown = run_cli("trace", "l1", cwd=repo)
    assert shown.code == 0, shown.err


def test_totals_saturate_instead_of_overflowing():
    """Whatever reaches a sum (a record from an older git-lanes, a bug), totals stay finite."""
    huge = CostTotals(wall_time=sys.float_info.max, cost_usd=sys.float_info.max)
    total = sum((huge, huge, Cost(wall_time=1.0)), CostTotals())
    assert total.wall_time == sys.float_info.max and math.isfinite(total.cost_usd)
    assert json.loads(json.dumps(total.to_dict(), allow_nan=False)) == total.to_dict()


def test_notes_an_older_version_wrote_above_the_bound_still_read_as_the_bound(api, repo: Path):
    """Before the bound, `--wall-time 1e308` was accepted and stored: a repository holding such notes must read
    fine (probe D8), so each figure reads as its bound, in every reader, and the proposal can be decided."""
    api.lane_create("l1")
    ws = workspace(repo, "l1")
    stored = {"wall_time": 1e308, "cost_usd": 1e300, "tokens_in": 10**30, "api_calls": 10**12}
    for n in range(3):
        (ws / "x").write_text(f"{n}\n")
        state = api.commit(f"step {n}", "ag1", lane="l1", auto_accept=n < 2)["to"]
        record = json.loads(git("notes", "--ref", "lanes", "show", state, cwd=repo))
        record["cost"] |= stored
        git("notes", "--ref", "lanes", "add", "-f", "-m", json.dumps(record), state, cwd=repo)
    history = api.history(lane="l1")
    assert history.unreadable == () and len(history.transitions) == 3
    assert {t.cost for t in history.transitions} == {Cost(tokens_in=MAX_TOKENS, api_calls=10**9,
                                                          wall_time=MAX_SECONDS, cost_usd=MAX_USD)}
    assert history.totals.wall_time == 3 * MAX_SECONDS and history.totals.tokens_in == 3 * MAX_TOKENS
    for args in (("history",), ("lane", "show", "l1"), ("trace", "l1"), ("show", history.transitions[0].id)):
        shown = run_cli(*args, "--json", cwd=repo)
        assert shown.code == 0 and "warning" not in shown.err, (args, shown.err)
    assert api.accept(history.transitions[0].id)["status"] == "accepted"
    assert api.history(lane="l1").totals.count == 3


def test_the_api_refuses_an_unbounded_cost(api):
    with pytest.raises(UserError) as caught:
        Cost(cost_usd=float("1e308"))
    assert caught.value.code == "invalid_cost"
    with pytest.raises(UserError) as caught:
        Cost(tokens_in=True)  # a bool is no count
    assert caught.value.code == "invalid_cost"


# -- D12: lane names a file system cannot hold -------------------------------------------------------------

@pytest.mark.parametrize("name", ["a" * 300, "u" + "é" * 128, "ab/" * 70 + "c"])
def test_a_lane_name_too_long_for_a_file_name_is_a_user_error(repo: Path, name: str):
    before = refs_of(repo)
    error = refused("lane", "create", name, cwd=repo, code="invalid_lane_name")
    assert "too long" in error["message"]
    assert refs_of(repo) == before and not (repo / ".lanes" / "workspaces" / name).exists()


def test_a_lane_name_too_long_as_a_deletion_marker_says_what_counted(repo: Path):
    """A deletion marker spells '%' as %25 as it spells '/' as %2F: 100 bytes of '%' are 300 there."""
    error = refused("lane", "create", "p" + "%" * 100, cwd=repo, code="invalid_lane_name")
    assert "too long: 301 bytes" in error["message"] and "'%' counts 3" in error["message"]


def test_the_longest_allowed_lane_name_lives_and_dies(repo: Path):
    """At the limit a lane is created, and deleted: its deletion marker flattens '/' to %2F."""
    name = "n/" * 40 + "x" * 90  # 170 bytes, 250 as one flattened file name
    created = run_cli("lane", "create", name, "--json", cwd=repo)
    assert created.code == 0, created.err
    deleted = run_cli("lane", "delete", name, "--json", cwd=repo)
    assert deleted.code == 0, deleted.err
    assert deleted.json["kept_at"].endswith("x" * 90)


# -- D13: text that is not UTF-8 ----------------------------------------------------------------------------

@pytest.mark.parametrize("args,code", [
    (["board", "post", NOT_UTF8 + " bad", "--agent", "ag1"], "invalid_text"),
    (["task", "create", "t" + NOT_UTF8], "invalid_title"),
    (["lane", "create", "l" + NOT_UTF8], "invalid_lane_name"),
    (["claim", "add", "src/" + NOT_UTF8, "--agent", "ag1"], "invalid_path"),
    (["history", "--lane", NOT_UTF8], "invalid_lane_name"),
    (["task", "claim", "abcd", "--agent", NOT_UTF8], "invalid_agent"),
    (["sync", NOT_UTF8], "invalid_remote"),
    (["restore", NOT_UTF8, "-w", "main"], "invalid_state"),
    (["publish", "sync", "--remote", NOT_UTF8], "invalid_remote"),
    # repeated in a not-found or invalid-value message: as the byte it is too
    (["task", "show", NOT_UTF8], "unknown_task"),
    (["show", "a" + NOT_UTF8], "not_found"),
    (["history", "--since", NOT_UTF8], "invalid_date"),
    (["run", "stats", "--since", NOT_UTF8], "invalid_date"),
    (["gc", "--older-than", NOT_UTF8], "invalid_age"),
    (["run", "show", NOT_UTF8], "invalid_run"),
    (["run", "start", "--phase", NOT_UTF8, "--agent", "ag1", "--lane", "main"], "unknown_phase"),
    (["doctor", "--check", NOT_UTF8], "unknown_check"),
    (["agent", "register", "ag1", "--kind", NOT_UTF8], "invalid_kind"),
    (["dispatch", "status", NOT_UTF8], "unknown_plan"),
])
def test_arguments_that_are_not_utf8_are_user_errors(repo: Path, args: list[str], code: str):
    before = refs_of(repo)
    shown = refused(*args, cwd=repo, code=code)["message"]
    assert "\\udc" not in shown  # named as the byte it is (\xff), or not repeated
    assert refs_of(repo) == before


@pytest.mark.parametrize("args,code", [(["--tag", NOT_UTF8], "invalid_tag"), (["--model", NOT_UTF8], "invalid_intent"),
                                       (["--agent-type", "x" + NOT_UTF8], "invalid_intent"),
                                       (["-m", "fix " + NOT_UTF8], "invalid_prompt"),
                                       (["--agent", NOT_UTF8], "invalid_agent")])
def test_commit_text_that_is_not_utf8_is_never_stored(repo: Path, args: list[str], code: str):
    """The probe saw `--tag $'\\xff'` stored as a lone surrogate that strict JSON readers reject."""
    run_cli("lane", "create", "l1", cwd=repo)
    ws = workspace(repo, "l1")
    (ws / "x").write_text("1\n")
    base = ["-m", "work", "--agent", "ag1"]
    before = refs_of(repo)
    refused("commit", *base, *args, cwd=ws, code=code)
    assert refs_of(repo) == before


def test_an_error_repeats_a_huge_id_bounded(api):
    """An agent may send a megabyte as an id; the not-found message (MCP content, REST body, CLI line) stays
    a line."""
    from git_lanes.errors import NotFound

    for lookup in (api.task_show, api.show, api.run_show):
        with pytest.raises(NotFound) as missing:
            lookup("a" * 100_000)
        assert len(missing.value.message) < 200 and "100000 characters" in missing.value.message, lookup


def _proposal(api, repo: Path, **intent) -> str:
    (workspace(repo, "l1") / "x").write_text("1\n")
    return api.commit("work", "ag1", lane="l1", **intent)["id"]


# What the MCP, HTTP and SDK faces hand the API: JSON strings may carry "\udcff" or "\u0000" as escapes.
API_TEXT = {
    "reject reason": lambda api, repo, bad: api.reject(_proposal(api, repo), reason=bad),
    "lane reset reason": lambda api, repo, bad: api.lane_reset("l1", onto="main", reason=bad),
    "commit metadata": lambda api, repo, bad: _proposal(api, repo, metadata={"note": [bad]}),
    "run goal": lambda api, repo, bad: api.run_start("ag1", lane="l1", goal=bad),
    "run end reason": lambda api, repo, bad: api.run_end(api.run_start("ag1", lane="l1")["id"], reason=bad),
    "restore state": lambda api, repo, bad: api.restore("main" + bad, lane="l1"),
    "lane create source": lambda api, repo, bad: api.lane_create("l2", source="main" + bad),
    "diff": lambda api, repo, bad: api.diff("main", "l1" + bad),
    # the ledger's: libgit2 ends a commit message at a NUL, and an op cut there has lost its JSON (probe D9)
    "task title": lambda api, repo, bad: api.task_create(bad, actor="ag1"),
    "task description": lambda api, repo, bad: api.task_create("t", actor="ag1", description=bad),
    "task block reason": lambda api, repo, bad: api.task_block(api.task_create("t", actor="ag1").task, bad,
                                                                actor="ag1"),
    "task handoff note": lambda api, repo, bad: api.task_handoff(api.task_create("t", actor="ag1").task, "ag2",
                                                                  actor="ag1", note=bad),
    "ticket title": lambda api, repo, bad: api.ticket_open(bad, actor="ag1"),
    "board post": lambda api, repo, bad: api.board_post(bad, "ag1"),
    "board answer": lambda api, repo, bad: api.board_answer(api.board_post("q", "ag1", kind="question").post, bad,
                                                             "ag2"),
}


@pytest.mark.parametrize("bad", [NOT_UTF8, "\x00"], ids=["not-utf8", "nul"])
@pytest.mark.parametrize("call", sorted(API_TEXT))
def test_text_through_the_api_is_refused_with_a_user_error_and_never_stored(api, repo: Path, call: str, bad: str):
    api.lane_create("l1")
    with pytest.raises(LanesError) as refusal:  # a user error, or a revision not found
        API_TEXT[call](api, repo, "why " + bad)
    assert refusal.value.exit_code == 1 and not isinstance(refusal.value, InternalError), refusal.value
    if call.startswith("task block"):
        assert refusal.value.message.startswith("the reason "), refusal.value  # it said "the title"
    stored = git("log", "--all", "--notes=lanes", "--format=%B%N", cwd=repo)
    assert "\\ud" not in stored and "\\u0000" not in stored and "\x00" not in stored


def test_an_invalid_name_is_repeated_bounded(repo):
    """A 300-character lane name is refused naming the rule, its first 80 characters and its length, not all of
    it (probe 2026-11-30, D12's message)."""
    shown = run_cli("lane", "create", "a" * 300, cwd=repo)
    assert shown.code == 1 and "too long: 300 bytes" in shown.err and "(300 characters)" in shown.err
    assert "a" * 81 not in shown.err and len(shown.err.splitlines()[0]) < 200


def test_agent_ids_and_lane_characters_follow_their_published_patterns_exactly():
    """AgentId checks its JSON schema's pattern, and LaneName git's forbidden characters, with sets rather
    than `re` (which the light sync does not load): every character alone, and random strings, decide as the
    regular expressions do."""
    import random
    import re

    from git_lanes.model.ids import AgentId, LaneName

    agent = re.compile(AgentId.PATTERN)  # matched whole (the schema's ^...$ would let a final newline by)
    forbidden = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")

    def lane_refused_for_its_characters(value: str) -> bool:
        return (LaneName.problem(value) or "").startswith("contains a space")

    for code in range(0x110000):
        char = chr(code)
        assert (AgentId.problem(char) is None) == bool(agent.fullmatch(char)), hex(code)
        if not 0xD800 <= code <= 0xDFFF:  # a lone surrogate is refused as not UTF-8 first
            assert lane_refused_for_its_characters(f"a{char}b") == bool(forbidden.search(char)), hex(code)
    alphabet = [chr(code) for code in range(0x80)] + ["é", "\u00a0", "\u2028", "٣", "Ａ", "ß"]
    chooser = random.Random(15)
    for _ in range(20_000):
        value = "".join(chooser.choice(alphabet) for _ in range(chooser.choice((1, 2, 5, 63, 64, 65))))
        assert (AgentId.problem(value) is None) == (bool(agent.fullmatch(value)) and not value.endswith(".json")), value


def test_an_id_of_a_stricter_class_is_taken_as_it_is_and_every_subclass_is_stricter():
    """Building an id from an instance of its class or of a subclass checks nothing (an op's actor is the
    agent id the face checked, and the fold asks for an agent id again): so every subclass's rule must imply
    its base's, for every character alone and for random strings. A base's instance is still checked by the
    stricter class."""
    import random

    from git_lanes.model import ids
    from git_lanes.model.ids import Actor, AgentId, HexId, LedgerId, TransitionId, ValidatedStr

    agent = AgentId("coder-1")
    checks: list[str] = []
    original = Actor.problem.__func__  # type: ignore[attr-defined]
    try:
        Actor.problem = classmethod(lambda cls, value: checks.append(value) or original(cls, value))  # type: ignore[method-assign]
        assert Actor(agent) is agent and AgentId(agent) is agent and checks == []
    finally:
        Actor.problem = classmethod(original)  # type: ignore[method-assign]
    person = Actor("Jane Doe")
    with pytest.raises(UserError) as caught:
        AgentId(person)
    assert caught.value.code == "invalid_agent"
    assert type(AgentId(Actor("coder-2"))) is AgentId
    with pytest.raises(UserError):
        LedgerId(TransitionId("0123456789abcdef") + "0")  # a str made of one, not one
    assert type(LedgerId(TransitionId("0123456789abcdef"))) is LedgerId  # siblings: checked, not taken

    pairs = [(sub, base) for sub in vars(ids).values() if isinstance(sub, type) and issubclass(sub, ValidatedStr)
             for base in sub.__mro__[1:] if issubclass(base, ValidatedStr) and base is not ValidatedStr]
    assert (AgentId, Actor) in pairs and (LedgerId, HexId) in pairs
    alphabet = [chr(code) for code in range(0x80)] + ["é", "\u00a0", "\u2028", "\udcff", "٣", "Ａ"]
    chooser = random.Random(16)
    samples = [chr(code) for code in range(0x3000)] + [
        "".join(chooser.choice(alphabet) for _ in range(chooser.choice((1, 2, 16, 63, 64, 65, 100, 101))))
        for _ in range(20_000)] + ["0123456789abcdef", "a" * 100, "a" * 64]
    for sub, base in pairs:
        for value in samples:
            assert not sub.valid(value) or base.valid(value), (sub.__name__, base.__name__, value)


def test_a_text_an_id_class_found_valid_is_not_checked_again_and_what_it_keeps_is_bounded():
    """Whether a text is a valid id depends on the text alone: a long-lived process that reads the same agent
    in record after record checks it once per class. A text refused is refused every time, a text valid for
    one class is still checked by another, and what a class keeps is bounded (a peer may name any number)."""
    from git_lanes.model import ids
    from git_lanes.model.ids import Actor, AgentId

    checked: list[object] = []
    original = AgentId.problem.__func__  # type: ignore[attr-defined]
    try:
        AgentId.problem = classmethod(lambda cls, value: checked.append(value) or original(cls, value))  # type: ignore[method-assign]
        first = AgentId("reader-" + "x")  # a text of its own, made at run time, as a parsed record's is
        again = AgentId("reader-x")
        assert again is first and type(again) is AgentId and checked == ["reader-x"]
        for _ in range(2):
            with pytest.raises(UserError):
                AgentId("not an agent")
        assert checked == ["reader-x", "not an agent", "not an agent"]
    finally:
        AgentId.problem = classmethod(original)  # type: ignore[method-assign]
    assert type(Actor("reader-x")) is Actor and "reader-x" in Actor._known
    for number in range(3 * ids._KNOWN_MAX):
        AgentId(f"agent-{number}")
    assert len(AgentId._known) <= ids._KNOWN_MAX and AgentId(f"agent-{3 * ids._KNOWN_MAX - 1}") in AgentId._known.values()
