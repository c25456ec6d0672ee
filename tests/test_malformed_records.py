"""A peer's notes ref and ledger fast-forward as they are, so one record may hold anything. Such a record is
set aside: listings show the rest and say what they left out, reading it by id says why, and `doctor` names
it. Never a traceback, never a transition that vanishes without a word (probe 2026-11-30, D7)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import fsck_clean, git, run_cli, workspace
from ledger_helpers import ledger_op, ledger_record

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.api.doctor import Where
from git_lanes.errors import MalformedRecord, UnsupportedFormat


def _lane_with_two_states(api, repo: Path) -> list[str]:
    api.lane_create("l1")
    states = []
    for name in ("one", "two"):
        (workspace(repo, "l1") / f"{name}.txt").write_text(name)
        states.append(api.commit(name, "ag1", lane="l1", auto_accept=True)["to"])
    return states


def _rewrite_note(repo: Path, state: str, change) -> None:
    """What a fast-forwarded notes ref from a peer can carry, written here with plain git."""
    record = json.loads(git("notes", "--ref", "lanes", "show", state, cwd=repo))
    text = change(record)
    git("notes", "--ref", "lanes", "add", "-f", "-m", text if isinstance(text, str) else json.dumps(text), state,
        cwd=repo)


def _doctor(api, tmp_path: Path, check: str) -> list[dict]:
    return [c for c in api.doctor(Where(home=tmp_path), (check,))["checks"] if c["check"] == check]


# The probe's malformed notes (report 3.11, 3.12): valid JSON of the wrong shape and notes that are no record
# at all. (A record of a newer format fails clearly instead, as DESIGN §1 says: test_journeys_foundation.py.)
BAD_RECORDS = {
    "lane an int": lambda r: r | {"lane": 5},
    "cost a string": lambda r: r | {"cost": "x"},
    "intent null": lambda r: r | {"intent": None},
    "evaluations a string": lambda r: r | {"evaluations": "x"},
    "tags ints": lambda r: r | {"intent": r["intent"] | {"tags": [1, 2]}},
    "no lane": lambda r: {k: v for k, v in r.items() if k != "lane"},
    "negative tokens": lambda r: r | {"cost": {"tokens_in": -1}},
    "NaN": lambda r: json.dumps(r | {"cost": {"wall_time": float("nan")}}),
    "unknown status": lambda r: r | {"status": "maybe"},
    "format a string": lambda r: r | {"format": "one"},
    "id an int": lambda r: r | {"id": 5},
    "not JSON": lambda r: "reviewed: looks fine",
    "a JSON list": lambda r: "[1, 2]",
}


@pytest.mark.parametrize("shape", BAD_RECORDS)
def test_one_malformed_note_is_set_aside_and_the_other_transitions_still_show(api, repo, tmp_path, shape):
    good, bad = _lane_with_two_states(api, repo)
    bad_id = api.history(lane="l1").transitions[0].id
    _rewrite_note(repo, bad, BAD_RECORDS[shape])

    history = api.history()
    assert [t.state for t in history.transitions if t.lane == "l1"] == [good]
    assert [(u.key, u.transition, u.lane) for u in history.unreadable] == [(bad, bad_id, "l1")]
    assert history.totals.count == len(history.transitions)
    found = [c for c in _doctor(api, tmp_path, "notes") if c["status"] == "fail"]
    assert len(found) == 1 and bad[:8] in found[0]["message"]
    # asked for by id, it says why it cannot be read (the id comes from its state's commit message)
    with pytest.raises(MalformedRecord) as raised:
        api.show(bad_id[:8])
    assert raised.value.code == "malformed_record"
    assert "cannot be read" in raised.value.message
    assert api.show(api.history(lane="l1").transitions[0].id).state == good
    # every other reader of notes: lane show, the cost overview (REST, dashboard), trace
    shown = api.lane_show("l1")
    assert [t.state for t in shown.recent] == [good] and [u.key for u in shown.unreadable] == [bad]
    assert [u["key"] for u in api.cost()["unreadable"]] == [bad]
    traced = api.trace("l1")
    assert [u["key"] for u in traced["unreadable"]] == [bad] and traced["totals"]["transitions"] >= 1
    assert api.history(lane="main").unreadable == ()  # its state names lane l1


@pytest.mark.parametrize("shape", ["lane an int", "cost a string", "not JSON"])
def test_a_malformed_note_on_a_pending_proposal_is_set_aside_and_writes_go_on(api, repo, shape):
    """Proposal refs sync like the notes: a peer's malformed note on one failed `status` and `lane show`, and
    every write of the repository, whose start finishes half-made decisions by reading each proposal."""
    api.lane_create("l1")
    (workspace(repo, "l1") / "one.txt").write_text("one")
    bad = api.commit("one", "ag1", lane="l1")
    (workspace(repo, "l1") / "two.txt").write_text("two")
    good = api.commit("two", "ag1", lane="l1")
    _rewrite_note(repo, bad["to"], BAD_RECORDS[shape])

    status = api.status()
    assert [t.id for t in status.proposals] == [good["id"]]
    assert [(u.key, u.transition, u.lane) for u in status.unreadable] == [(bad["to"], bad["id"], "l1")]
    shown = api.lane_show("l1")
    assert [t.id for t in shown.proposals] == [good["id"]] and [u.key for u in shown.unreadable] == [bad["to"]]
    api.lane_create("l2")  # a write: recovery leaves the unreadable proposal as it is
    assert api.accept(good["id"])["status"] == "accepted"
    with pytest.raises(MalformedRecord):
        api.reject(bad["id"])
    assert git("rev-parse", f"refs/lanes/proposals/{bad['id']}", cwd=repo).strip() == bad["to"]
    for args in (("status",), ("lane", "show", "l1")):
        listed = run_cli(*args, cwd=repo)
        assert listed.code == 0 and "Traceback" not in listed.err, listed.err
        assert [line for line in listed.err.splitlines() if line.startswith("warning: unreadable transition")]
        as_json = run_cli(*args, "--json", cwd=repo)
        assert [u["transition"] for u in as_json.json["unreadable"]] == [bad["id"]]


def test_history_through_the_cli_reports_the_note_it_left_out_without_a_traceback(api, repo):
    _, bad = _lane_with_two_states(api, repo)
    _rewrite_note(repo, bad, lambda r: r | {"lane": 5})
    shown = run_cli("history", cwd=repo)
    assert shown.code == 0 and "Traceback" not in shown.err
    warning = [line for line in shown.err.splitlines() if line.startswith("warning: unreadable transition")]
    assert len(warning) == 1 and "left out" in warning[0] and "Transition.lane" in warning[0], shown.err
    assert run_cli("lane", "show", "l1", cwd=repo).code == 0
    as_json = run_cli("history", "--json", cwd=repo).json
    bad_id = git("log", "-1", "--format=%(trailers:key=Lanes-Transition,valueonly)", bad, cwd=repo).strip()
    assert as_json["unreadable"] == [{"ref": "refs/notes/lanes", "key": bad, "transition": bad_id, "lane": "l1",
                                      "reason": as_json["unreadable"][0]["reason"]}]
    fsck_clean(repo)


def test_a_note_that_is_an_object_but_no_record_is_not_called_not_a_json_object(api, repo):
    """A note on a lanes state that holds a JSON object lacking the record's id was reported as "not a JSON
    object", sending the person to look for a syntax error that is not there."""
    _, bad = _lane_with_two_states(api, repo)
    _rewrite_note(repo, bad, lambda r: {"format": 1, "lane": 5})
    reason = run_cli("history", "--json", cwd=repo).json["unreadable"][0]["reason"]
    assert "not a JSON object" not in reason and "format and an id" in reason, reason
    _rewrite_note(repo, bad, lambda r: "[1, 2]")
    assert "format and an id" in run_cli("history", "--json", cwd=repo).json["unreadable"][0]["reason"]


def test_a_note_people_add_to_their_own_commit_is_not_reported(api, repo, tmp_path):
    tree = git("write-tree", cwd=repo).strip()
    theirs = git("commit-tree", tree, "-m", "not a lanes state", cwd=repo).strip()
    git("notes", "--ref", "lanes", "add", "-m", "hi", theirs, cwd=repo)
    assert api.history().unreadable == ()
    assert [c["status"] for c in _doctor(api, tmp_path, "notes")] == ["ok"]


def test_a_note_a_peer_made_a_gitlink_is_set_aside_not_a_crash(api, repo, tmp_path):
    """A notes tree is any tree a remote pushed: an entry that is a submodule commit (no object here) where a
    note's file should be reads as an unreadable note, for history, show and doctor alike."""
    good, bad = _lane_with_two_states(api, repo)
    notes_tree = git("rev-parse", "refs/notes/lanes^{tree}", cwd=repo).strip()
    every = git("ls-tree", "-r", notes_tree, cwd=repo).splitlines()
    listing = [line for line in every if not line.endswith(bad[2:])]
    assert len(listing) == len(every) - 1  # the others' notes, flat or fanned out, stay
    flat = [f"{mode} {kind} {oid}\t{path.replace('/', '')}"
            for mode, kind, rest in (line.split(" ", 2) for line in listing)
            for oid, path in [rest.split("\t")]]
    tree = git("mktree", "--missing", cwd=repo, input="\n".join([*flat, f"160000 commit {bad}\t{bad}"]) + "\n")
    commit = git("commit-tree", tree.strip(), "-p", "refs/notes/lanes", "-m", "a peer's notes", cwd=repo).strip()
    git("update-ref", "refs/notes/lanes", commit, cwd=repo)

    history = api.history()
    assert [t.state for t in history.transitions if t.lane == "l1"] == [good]
    assert [u.key for u in history.unreadable] == [bad]
    assert [c["status"] for c in _doctor(api, tmp_path, "notes")] == ["fail"]
    shown = run_cli("doctor", "--check", "notes", cwd=repo)
    assert shown.code != 0 and "Traceback" not in shown.err and "KeyError" not in shown.err + shown.out


def _rewrite_ledger_record(repo: Path, path: str, change) -> None:
    """A ledger commit a peer made by hand on top of ours, holding `path` changed: a checkpoint (its tree the
    whole state, its op without edits)."""
    record = ledger_record(repo, path)
    changed = change(record)
    blob = git("hash-object", "-w", "--stdin", cwd=repo,
               input=changed if isinstance(changed, str) else json.dumps(changed)).strip()
    env = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git" / "peer-index")}
    store = Lanes(repo).ctx.store
    whole = ledger.log.state_tree(store, ledger.head(store))
    subprocess.run(["git", "read-tree", whole], cwd=repo, env=env, check=True)
    subprocess.run(["git", "update-index", "--cacheinfo", f"100644,{blob},{path}"], cwd=repo, env=env, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()
    (repo / ".git" / "peer-index").unlink()
    summary = git("log", "-1", "--format=%s", "refs/lanes/ledger", cwd=repo).strip()
    last_op = {key: value for key, value in ledger_op(repo).items() if key != "edits"}
    op = f"{summary}\n\n{json.dumps(last_op, sort_keys=True)}\n"  # a peer's copy of the last op
    commit = git("commit-tree", tree, "-p", "refs/lanes/ledger", "-m", op, cwd=repo).strip()
    git("update-ref", "refs/lanes/ledger", commit, cwd=repo)


def test_a_malformed_ledger_record_is_set_aside_by_task_ticket_and_agent_listings(api, repo, tmp_path):
    bad = api.task_create("bad one", actor="ag1").task
    good = api.task_create("good one", actor="ag1", depends=(bad,)).task
    api.agent_register("ag1")
    api.agent_register("ag2")
    ticket = api.ticket_open("both", actor="ag1").ticket
    api.ticket_link(ticket, bad, actor="ag1")
    api.ticket_link(ticket, good, actor="ag1")
    bad_path = f"tasks/{bad[:2]}/{bad}.json"
    _rewrite_ledger_record(repo, bad_path, lambda r: r | {"depends": 5})
    _rewrite_ledger_record(repo, "agents/ag2.json", lambda r: r | {"lease_until": "soon"})

    listed = api.task_list()
    assert [t.id for t in listed] == [good] and listed[0].ready is False  # its upstream cannot be shown done
    assert [a.id for a in api.agent_list()] == ["ag1"]
    assert [(t.id, t.total) for t in api.ticket_list()] == [(ticket, 2)]
    with pytest.raises(MalformedRecord) as raised:
        api.task_show(bad)
    assert raised.value.code == "malformed_record" and "Task.depends" in raised.value.message
    [found] = _doctor(api, tmp_path, "ledger")
    assert found["status"] == "fail" and "agents/ag2.json" in found["message"] and bad_path in found["message"]
    shown = run_cli("task", "list", cwd=repo)
    assert shown.code == 0 and "good one" in shown.out and "Traceback" not in shown.err
    assert run_cli("task", "show", bad[:8], cwd=repo).code == 1


@pytest.mark.parametrize("record", ['{"format": 2, "paths": {}}', "not json", '{"format": 1, "paths": 5}'])
def test_a_promotion_record_this_version_cannot_read_stops_a_snapshot_instead_of_reading_as_empty(
        api, repo, record):
    """Read as "nothing left", the paths a promotion still had to write would be dropped, and the next
    snapshot could revert the promotion (issue 8, point 3)."""
    api.lane_create("l1")
    ws = workspace(repo, "l1")
    private = Path(git("rev-parse", "--absolute-git-dir", cwd=ws).strip()) / "lanes-promoted.json"
    private.write_text(record)
    (ws / "x.txt").write_text("x")
    shown = run_cli("commit", "-m", "x", "--agent", "ag1", "--json", cwd=ws)
    assert shown.code == 1 and shown.json["error"] == "unsupported_format", shown.out
    assert "lanes-promoted.json" in shown.json["message"]
    assert private.read_text() == record  # left as it was, for a newer git-lanes to finish
    row = next(lane for lane in run_cli("status", "--json", cwd=repo).json["lanes"] if lane["name"] == "l1")
    assert "lanes-promoted.json" in row["broken"]


# A peer's ledger record of each kind, wrong (report 3.16, 3.17): each listing leaves it out and says so.
def _ledger_world(api) -> dict[str, str]:
    bad = api.task_create("bad one", actor="ag1").task
    good = api.task_create("good one", actor="ag1").task
    ticket = api.ticket_open("both", actor="ag1").ticket
    for agent, glob in (("ag1", "src/*"), ("ag2", "docs/*")):
        api.agent_register(agent)
        api.claim_add([glob], agent)
    api.board_post("first", "ag2")
    api.board_post("second", "ag2")
    api.board_read("ag1")  # ag1 has a read position
    return {"task": f"tasks/{bad[:2]}/{bad}.json", "good": good, "ticket": f"tickets/{ticket}.json"}


BAD_LEDGER = {
    "task depends an int": ("task", lambda r: r | {"depends": 5}),
    "task title an int": ("task", lambda r: r | {"title": 5}),
    "task not JSON": ("task", lambda r: "not json"),
    "task without a format": ("task", lambda r: {k: v for k, v in r.items() if k != "format"}),
    "agent lease a string": ("agents/ag2.json", lambda r: r | {"lease_until": "soon"}),
    "claims an int": ("claims/ag2.json", lambda r: r | {"globs": 5}),
    "a claim an int": ("claims/ag2.json", lambda r: r | {"globs": [5]}),
    "post text an int": ("board/00/00/00/00000001.json", lambda r: r | {"text": 5}),
    "post seq a string": ("board/00/00/00/00000002.json", lambda r: r | {"seq": "x"}),
    "read position cursor a string": ("board/readers/ag1.json", lambda r: r | {"cursor": "x"}),
    "post time beyond any calendar": ("board/00/00/00/00000001.json", lambda r: r | {"time": 1e308}),
    "agent lease before the epoch": ("agents/ag2.json", lambda r: r | {"lease_until": -1e308}),
    "ticket tasks an int": ("ticket", lambda r: r | {"tasks": 5}),
}


def _listings(api) -> dict[str, object]:
    return {"tasks": api.task_list(), "agents": api.agent_list(), "claims": api.claim_list(),
            "tickets": api.ticket_list(), "board": api.board_read(), "ag1's board": api.board_read("ag1")}


@pytest.mark.parametrize("shape", BAD_LEDGER)
def test_a_malformed_ledger_record_of_any_kind_is_set_aside_and_reported_by_every_listing(api, repo, tmp_path,
                                                                                          shape):
    world = _ledger_world(api)
    where, change = BAD_LEDGER[shape]
    path = world.get(where, where)
    _rewrite_ledger_record(repo, path, change)
    [found] = _doctor(api, tmp_path, "ledger")
    assert found["status"] == "fail" and path in found["message"]

    listed = _listings(api)  # none fails
    reported = {u.key for found in listed.values() for u in found.unreadable}
    assert reported == {path}, reported
    assert world["good"] in [t.id for t in listed["tasks"]]
    assert [a.id for a in listed["agents"]] == (["ag1"] if path.startswith("agents/") else ["ag1", "ag2"])
    assert "src/*" in [c.glob for c in listed["claims"]]
    assert len(listed["board"].posts) == (1 if path.startswith("board/0") else 2)
    # ops that only read it in passing (another agent's claims, the board's counts) go on
    api.claim_add(["lib/*"], "ag1")
    api.board_post("third", "ag1")


def test_listings_warn_on_stderr_of_each_ledger_record_they_left_out(api, repo):
    world = _ledger_world(api)
    _rewrite_ledger_record(repo, world["task"], lambda r: r | {"depends": 5})
    _rewrite_ledger_record(repo, "claims/ag2.json", lambda r: r | {"globs": 5})
    for args in (("task", "list"), ("agent", "list"), ("claim", "list")):
        for as_json in ((), ("--json",)):
            shown = run_cli(*args, *as_json, cwd=repo)
            assert shown.code == 0 and "Traceback" not in shown.err, shown.err
            warnings = [line for line in shown.err.splitlines() if line.startswith("warning: left out: ledger record")]
            assert warnings, (args, shown.err)
            if as_json:
                assert isinstance(shown.json, list)  # the listing stays a list; the warning is on stderr
    shown = run_cli("claim", "add", "x/*", "--agent", "ag2", cwd=repo)  # its own record: refused, clearly
    assert shown.code == 1 and shown.err.startswith("git-lanes: error: ledger record claims/ag2.json is malformed")


def test_board_read_shows_the_other_posts_when_one_holds_a_time_no_calendar_shows(api, repo):
    """A post at 1e308 seconds passed the model as a float, then failed the text renderer's clock with a raw
    traceback (OverflowError: timestamp out of range)."""
    _ledger_world(api)
    _rewrite_ledger_record(repo, "board/00/00/00/00000001.json", lambda r: r | {"time": 1e308})
    shown = run_cli("board", "read", "--agent", "ag1", cwd=repo)
    assert shown.code == 0 and "Traceback" not in shown.err, shown.err
    assert "second" in shown.out and "first" not in shown.out
    assert [line for line in shown.err.splitlines() if line.startswith("warning: left out: ledger record board/")]


def test_a_read_position_that_cannot_be_read_is_replaced_by_the_next_read(api, repo):
    _ledger_world(api)
    _rewrite_ledger_record(repo, "board/readers/ag1.json", lambda r: r | {"cursor": "x"})
    first = api.board_read("ag1")
    assert [u.key for u in first.unreadable] == ["board/readers/ag1.json"]
    assert api.board_read("ag1").unreadable == ()


def test_a_task_is_done_though_a_dependent_or_its_ticket_cannot_be_read(api, repo):
    """Finishing a task reads its dependents (to wake their owners) and its ticket (to see it complete): one a
    peer broke is left as it is, not a reason the work cannot be recorded done."""
    first = api.task_create("first", actor="ag1").task
    second = api.task_create("second", actor="ag1").task
    broken = api.task_create("after first", actor="ag1", depends=(first,)).task
    ready = api.task_create("after second", actor="ag1", depends=(second,)).task
    ticket = api.ticket_open("second's", actor="ag1").ticket
    api.ticket_link(ticket, second, actor="ag1")
    _rewrite_ledger_record(repo, f"tasks/{broken[:2]}/{broken}.json", lambda r: r | {"title": 5})
    assert api.task_done(first, actor="ag1").now_ready == ()
    _rewrite_ledger_record(repo, f"tickets/{ticket}.json", lambda r: r | {"tasks": 5})
    assert api.task_done(second, actor="ag1").now_ready == (ready,)
    assert {t.id: t.status for t in api.task_list()} == {first: "done", second: "done", ready: "open"}


def test_rest_and_mcp_report_what_a_listing_left_out(api, repo):
    """Every face gets the domain's result: REST a listing's array with the records left out in a header,
    MCP its structured content with `unreadable` beside `result`; history's record carries its own."""
    from http_helpers import Server

    from git_lanes.mcp.server import result_of

    world = _ledger_world(api)
    _rewrite_ledger_record(repo, world["task"], lambda r: r | {"depends": 5})
    listed = api.task_list()
    assert [u.key for u in listed.unreadable] == [world["task"]]
    structured = result_of(listed).structured_content
    assert structured is not None and [t["id"] for t in structured["result"]] == [t.id for t in listed]
    assert [u["key"] for u in structured["unreadable"]] == [world["task"]]
    with Server(repo) as server:
        reply = server.get("/api/v1/tasks")
        assert reply.status == 200 and world["good"] in [t["id"] for t in reply.json]
        header = {k.lower(): v for k, v in reply.headers.items()}["x-lanes-unreadable"]
        assert [u["key"] for u in json.loads(header)] == [world["task"]]


def test_gc_prunes_a_rejected_state_whose_note_cannot_be_read_and_leaves_the_note(api, repo):
    api.lane_create("l1")
    (workspace(repo, "l1") / "x.txt").write_text("x")
    proposed = api.commit("x", "ag1", lane="l1")
    api.reject(proposed["id"], "no")
    _rewrite_note(repo, proposed["to"], lambda r: r | {"lane": 5})
    removed = api.gc(older_than=0)["removed"]
    assert [e["oid"] for e in removed["rejected"]] == [proposed["to"]]
    assert git("rev-parse", "--verify", "-q", f"refs/lanes/rejected/{proposed['id']}", cwd=repo, check=False) == ""
    assert api.history().unreadable[0].key == proposed["to"]  # its note stays, for a person to see


def test_a_ledger_record_of_a_newer_format_still_fails_the_listing_clearly(api, repo):
    """Not malformed: written by a newer git-lanes, which this one must not guess at (DESIGN §1)."""
    world = _ledger_world(api)
    _rewrite_ledger_record(repo, world["task"], lambda r: r | {"format": 2})
    with pytest.raises(UnsupportedFormat) as raised:
        api.task_list()
    assert raised.value.code == "unsupported_format" and raised.value.hint == "upgrade git-lanes"


# Budgets, lanes' ports and dispatched plans are ledger records too: doctor checks their shape, and every
# command that reads one says in one line which record it cannot read (before: `budget show` blamed options
# nobody gave, `lane create` and `claim list` crashed with TypeError or AttributeError, `dispatch status` with
# StopIteration, and doctor said nothing).
BAD_KEPT = {
    "budget usd a string": ("budgets/lane/l1.json", lambda r: r | {"usd": "x"}),
    "budget a JSON list": ("budgets/lane/l1.json", lambda r: "[1, 2]"),
    "ports a string": ("ports/l1.json", lambda r: r | {"ports": "x"}),
    "ports not an object": ("ports/l1.json", lambda r: "[31000]"),
    "plan tasks an int": ("plan", lambda r: r | {"tasks": 5}),
    "plan foundation no task": ("plan", lambda r: r | {"foundation": "0" * 16}),
    "plan a JSON list": ("plan", lambda r: "[]"),
}


@pytest.mark.parametrize("shape", BAD_KEPT)
def test_a_malformed_budget_ports_or_plan_record_is_named_by_doctor_and_by_each_reader(api, repo, tmp_path, shape):
    from test_dispatch import PLAN
    from test_gates import declare

    declare(api, repo, '[setup]\nports = 1\nport_range = "34000-34010"\n')
    api.lane_create("l1")
    api.budget_set(lane="l1", usd=5.0)
    plan = api.dispatch(PLAN)["plan"]
    where, change = BAD_KEPT[shape]
    path = f"plans/{plan}.json" if where == "plan" else where
    _rewrite_ledger_record(repo, path, change)

    for fix in ((), ("--fix",)):  # --fix leaves it to a person, as every malformed ledger record
        shown = run_cli("doctor", "--check", "ledger", *fix, "--json", cwd=repo)
        [found] = [c for c in json.loads(shown.out)["checks"] if c["check"] == "ledger"]
        assert found["status"] == "fail" and path in found["message"], found
    if path.startswith("ports/"):  # the new lane is made; its setup, which reserves ports, says why it failed
        made = run_cli("lane", "create", "l2", "--json", cwd=repo)
        assert made.code == 0 and made.json["setup"]["status"] == "failed", made.out + made.err
        assert path in made.json["setup"]["message"]
    readers = {"budgets": [("budget", "show", "--lane", "l1")], "ports": [],
               "plans": [("dispatch", "status", "login"), ("dispatch", "status", plan[:8])]}[path.split("/")[0]]
    for args in readers:
        result = run_cli(*args, "--json", cwd=repo)
        assert result.code == 1 and "Traceback" not in result.err, (args, result.err)
        assert result.json["error"] == "malformed_record" and path in result.json["message"], result.out
        assert len(result.err.strip().splitlines()) == 2, result.err  # the error, and its hint
    listed = run_cli("claim", "list", "--json", cwd=repo)  # the plan's exclusive claims still show
    assert listed.code == 0 and "src/session/**" in listed.out, listed.err
    assert run_cli("lane", "delete", "l1", "--json", cwd=repo).code == 0  # its ports, whatever they were, go
