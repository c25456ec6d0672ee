"""Tasks and tickets through the API: CAS claims with versions, leases judged against op time, the
dependency DAG (cycles refused and named), wakes on readiness, ticket_ready, block/resume, handoff."""

from __future__ import annotations

import pytest
from conftest import workspace
from ledger_helpers import Clock, ledger_head

from git_lanes.api import Lanes
from git_lanes.domain.agents import LEASE_SECONDS
from git_lanes.errors import Ambiguous, Conflict, NotFound, Refused, StaleState, UserError


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


def test_claim_with_a_stale_version_is_a_conflict_and_changes_nothing(lanes, repo):
    task = lanes.task_create("t", actor="lead")["task"]
    assert lanes.task_show(task[:4])["version"] == 1
    lanes.task_dep_add(task, lanes.task_create("u", actor="lead")["task"])
    head = ledger_head(repo)
    with pytest.raises(Conflict) as info:
        lanes.task_claim(task, "coder-1", version=7)
    assert info.value.code == "version_conflict" and info.value.details["version"] == 2
    assert ledger_head(repo) == head
    claimed = lanes.task_claim(task, "coder-1", version=2, ahead=True)  # u is not done
    assert claimed["version"] == 3 and claimed["owner"] == "coder-1"
    assert lanes.task_claim(task, "coder-1")["already"] is True


def test_a_task_whose_owner_lease_lapsed_is_open_again(lanes):
    task = lanes.task_create("t", actor="lead")["task"]
    lanes.task_claim(task, "slow")
    with pytest.raises(Conflict) as raised:
        lanes.task_claim(task, "fast")
    assert raised.value.code == "task_claimed"
    lanes.ctx.clock.advance(LEASE_SECONDS + 1)
    assert lanes.task_show(task)["status"] == "open" and lanes.task_show(task)["lapsed"]
    assert [t["id"] for t in lanes.task_list(ready=True)] == [task]
    taken = lanes.task_claim(task, "fast")
    assert taken["owner"] == "fast" and taken["previous_owner"] == "slow"


def test_heartbeat_keeps_the_lease_and_blocked_tasks_stay_put(lanes):
    first = lanes.task_create("one", actor="lead")["task"]
    second = lanes.task_create("two", actor="lead")["task"]
    lanes.task_claim(first, "a")
    lanes.task_claim(second, "a")
    lanes.task_block(second, "waiting for the schema", actor="a")
    for _ in range(3):
        lanes.ctx.clock.advance(LEASE_SECONDS - 60)
        lanes.agent_heartbeat("a")
    assert lanes.task_show(first)["status"] == "claimed"
    lanes.ctx.clock.advance(LEASE_SECONDS * 2)
    assert lanes.task_show(first)["status"] == "open"
    assert lanes.task_show(second)["status"] == "blocked"
    with pytest.raises(Conflict) as raised:
        lanes.task_claim(second, "b")
    assert raised.value.code == "task_claimed"
    assert lanes.task_resume(second, actor="a")["status"] == "claimed"
    with pytest.raises(Conflict) as raised:
        lanes.task_resume(second)
    assert raised.value.code == "not_blocked"


def test_a_block_reason_that_is_blank_or_not_text_is_refused_as_a_reason_not_a_title(lanes, repo):
    """`block_task` with reason "" answered `empty_title` (and a control character `invalid_title`): the
    codes an agent keys on named a title the call never had."""
    task = lanes.task_create("one", actor="lead")["task"]
    lanes.task_claim(task, "a")
    head = ledger_head(repo)
    for reason, code in (("", "empty_reason"), ("   ", "empty_reason"), ("bad\x01", "invalid_reason"),
                         ("x" * 3000, "invalid_reason")):
        with pytest.raises(UserError) as raised:
            lanes.task_block(task, reason, actor="a")
        assert raised.value.code == code, (reason, raised.value.code)
    assert ledger_head(repo) == head


def test_dependencies_refuse_cycles_and_self_and_unknown_ids(lanes, repo):
    a = lanes.task_create("a", actor="lead")["task"]
    b = lanes.task_create("b", actor="lead", depends=(a,))["task"]
    c = lanes.task_create("c", actor="lead", depends=(b,))["task"]
    head = ledger_head(repo)
    with pytest.raises(Refused) as info:
        lanes.task_dep_add(a, c)
    assert info.value.code == "cycle"
    assert info.value.message.endswith(f"{a[:8]} -> {c[:8]} -> {b[:8]} -> {a[:8]}")
    with pytest.raises(UserError) as info:
        lanes.task_dep_add(a, a)
    assert info.value.code == "dependency_on_self"
    with pytest.raises(NotFound) as raised:
        lanes.task_create("d", actor="lead", depends=("0000",))
    assert raised.value.code == "unknown_task"
    with pytest.raises(UserError) as raised:
        lanes.task_create("   ", actor="lead")
    assert raised.value.code == "empty_title"
    with pytest.raises(UserError) as raised:
        lanes.task_create("x" * 500, actor="lead")
    assert raised.value.code == "invalid_title"
    assert ledger_head(repo) == head
    assert lanes.task_dep_add(c, b)["added"] is False


def test_ids_accept_unique_prefixes(lanes):
    ids = [lanes.task_create(f"t{i}", actor="lead")["task"] for i in range(40)]
    clash = next((x, y) for x in ids for y in ids if x != y and x[0] == y[0])
    with pytest.raises(Ambiguous) as raised:
        lanes.task_show(clash[0][0])
    assert raised.value.code == "ambiguous"
    assert lanes.task_show(clash[0][:10])["id"] == clash[0]


def test_finishing_a_task_wakes_the_owners_of_tasks_it_makes_ready(lanes):
    schema = lanes.task_create("schema", actor="lead")["task"]
    docs = lanes.task_create("docs", actor="lead")["task"]
    api = lanes.task_create("api", actor="lead", depends=(schema, docs))["task"]
    lanes.task_claim(api, "coder-2", ahead=True)  # claimed ahead of its dependencies, to be woken
    assert lanes.task_show(api)["ready"] is False
    assert lanes.task_done(schema, actor="coder-1")["woken"] == []
    assert [t["id"] for t in lanes.task_list(ready=True)] == [docs]
    finished = lanes.task_done(docs, actor="coder-1")
    assert finished["now_ready"] == [api] and finished["woken"] == [{"agent": "coder-2", "task": api}]
    woke = lanes.wait("coder-2", timeout=0)
    assert woke["reason"] == "task_ready" and woke["wakes"][0]["task"] == api
    assert lanes.wait("coder-2", timeout=0)["reason"] == "timeout"
    with pytest.raises(Conflict) as raised:
        lanes.task_done(docs)
    assert raised.value.code == "task_done"


def test_a_ticket_whose_tasks_are_all_done_posts_ticket_ready(lanes):
    ticket = lanes.ticket_open("Login flow", actor="lead")["ticket"]
    one = lanes.task_create("one", actor="lead", ticket=ticket[:5])["task"]
    two = lanes.task_create("two", actor="lead")["task"]
    lanes.ticket_link(ticket, two)
    lanes.agent_register("watcher")
    lanes.task_done(one)
    assert lanes.ticket_show(ticket)["status"] == "open"
    assert lanes.task_done(two)["ticket_ready"] == ticket
    shown = lanes.ticket_show(ticket[:6])
    assert (shown["status"], shown["done"], shown["total"]) == ("ready", 2, 2)
    posts = lanes.board_read()["posts"]
    assert [(p["kind"], p["from"]) for p in posts] == [("ticket_ready", "git-lanes")]
    # a record, never an unread post or a wake
    assert lanes.agent_heartbeat("watcher")["unread"] == 0
    three = lanes.task_create("three", actor="lead", ticket=ticket)["task"]
    assert lanes.ticket_show(ticket)["status"] == "open"
    assert lanes.ticket_list()[0]["tasks"] == [one, two, three]


def test_handoff_moves_owner_lane_claims_and_dirty_set_in_one_op(lanes, repo):
    lanes.lane_create("feature/auth")
    lanes.agent_register("coder-1", lane="feature/auth")
    task = lanes.task_create("auth", actor="lead", files=("src/auth/**",))["task"]
    lanes.task_claim(task, "coder-1")
    (workspace(repo, "feature/auth") / "src" / "auth").mkdir(parents=True)
    (workspace(repo, "feature/auth") / "src" / "auth" / "login.py").write_text("x\n")
    lanes.dirty_publish("coder-1")
    before = ledger_head(repo)
    moved = lanes.task_handoff(task, "coder-2", actor="coder-1", note="tests pass")
    assert lanes.ctx.store.commit_info(ledger_head(repo)).parents == (before,)
    assert moved["moved"] == {"claims": ["src/auth/**"], "dirty": ["src/auth/login.py"], "lane": "feature/auth"}
    assert lanes.task_show(task)["owner"] == "coder-2" and lanes.task_show(task)["lane"] == "feature/auth"
    assert [c["agent"] for c in lanes.claim_list()] == ["coder-2"]
    assert [d["agent"] for d in lanes.dirty_list()] == ["coder-2"]
    agents = {a["id"]: a for a in lanes.agent_list()}
    assert agents["coder-2"]["lane"] == "feature/auth" and agents["coder-1"]["lane"] is None
    # coder-2 had never called, yet the handoff post reaches it
    woke = lanes.wait("coder-2", timeout=0)
    assert woke["reason"] == "post" and woke["posts"][0]["kind"] == "handoff"
    assert "tests pass" in woke["posts"][0]["text"]
    with pytest.raises(StaleState) as raised:
        lanes.task_handoff(task, "coder-2")
    assert raised.value.code == "handoff_to_owner"


def test_handoff_of_one_of_two_tasks_moves_only_that_tasks_claims_and_lane(lanes, repo):
    lanes.lane_create("feature/auth")
    lanes.agent_register("coder-1", lane="feature/auth")
    auth = lanes.task_create("auth", actor="lead", files=("src/auth/**",))["task"]
    docs = lanes.task_create("docs", actor="lead", files=("docs/**",))["task"]
    lanes.task_claim(auth, "coder-1", lane="feature/auth")
    lanes.task_claim(docs, "coder-1")
    lanes.claim_add(["README.md"], "coder-1")  # claimed for no task: stays with its agent
    moved = lanes.task_handoff(docs, "coder-2", actor="coder-1")
    assert moved["moved"] == {"claims": ["docs/**"], "dirty": [], "lane": None}
    held = sorted((c["agent"], c["glob"]) for c in lanes.claim_list())
    assert held == [("coder-1", "README.md"), ("coder-1", "src/auth/**"), ("coder-2", "docs/**")]
    agents = {a["id"]: a for a in lanes.agent_list()}
    assert agents["coder-1"]["lane"] == "feature/auth" and agents["coder-2"]["lane"] is None
    assert lanes.task_show(auth)["owner"] == "coder-1"
    # the last task handed over takes everything left with it, as before
    moved = lanes.task_handoff(auth, "coder-3", actor="coder-1")
    assert moved["moved"] == {"claims": ["src/auth/**", "README.md"], "dirty": [], "lane": "feature/auth"}
    agents = {a["id"]: a for a in lanes.agent_list()}
    assert agents["coder-1"]["lane"] is None and agents["coder-3"]["lane"] == "feature/auth"


def test_claim_of_a_task_with_files_claims_them_and_warns_of_overlaps(lanes):
    lanes.claim_add(["src/auth/session.py"], "coder-2")
    task = lanes.task_create("auth", actor="lead", files=("src/auth/*.py",))["task"]
    claimed = lanes.task_claim(task, "coder-1")
    assert claimed["overlaps"] == [{"agent": "coder-2", "glob": "src/auth/*.py", "claim": "src/auth/session.py"}]
    assert lanes.wait("coder-2", timeout=0)["reason"] == "overlap"


def test_a_whole_id_no_task_has_is_refused_by_the_op_as_a_prefix_is_before_it(lanes, repo):
    """A whole id is not looked up before the op (the op's fold refuses it), a prefix is: both answer alike."""
    lanes.task_create("real", actor="lead")
    head = ledger_head(repo)
    for missing in ("0123456789abcdef", " 0123456789ABCDEF ", "0123"):
        with pytest.raises(NotFound) as raised:
            lanes.task_claim(missing, "a")
        assert raised.value.code == "unknown_task" and "git lanes task list" in (raised.value.hint or "")
        with pytest.raises(NotFound) as raised:
            lanes.task_done(missing, "a")
        assert raised.value.code == "unknown_task"
    assert ledger_head(repo) == head
    task = lanes.task_create("upper", actor="lead")["task"]
    assert lanes.task_claim(f" {task.upper()} ", "a")["task"] == task
