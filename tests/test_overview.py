"""The radar (ahead/behind, overlapping lanes), spending over time, answering a question, and the change
feed every live face shares."""

from __future__ import annotations

import pytest
from conftest import git, workspace

from git_lanes.errors import Conflict, NotFound
from git_lanes.model.records import Cost
from git_lanes.store.refwatch import RefWatch


def edit(api, repo, lane, files, prompt="edit", agent="coder-1", cost=None):
    for name, text in files.items():
        path = workspace(repo, lane) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return api.commit(prompt, agent, lane=lane, auto_accept=True, cost=cost)


def trunk_edit(repo, files, message="trunk edit"):
    for name, text in files.items():
        (repo / name).write_text(text)
    git("commit", "-qam", message, cwd=repo)


def test_radar_counts_ahead_and_behind_the_trunk(api, repo):
    api.lane_create("a")
    edit(api, repo, "a", {"x.txt": "1\n"})
    edit(api, repo, "a", {"y.txt": "1\n"})
    trunk_edit(repo, {"README.md": "# changed\n"})
    rows = {r["lane"]: r for r in api.radar()["lanes"]}
    assert (rows["a"]["ahead"], rows["a"]["behind"]) == (2, 1)
    assert (rows["main"]["ahead"], rows["main"]["behind"], rows["main"]["trunk"]) == (0, 0, True)


def test_radar_finds_lanes_that_changed_the_same_path_and_no_others(api, repo):
    for lane in ("a", "b", "c"):
        api.lane_create(lane)
    edit(api, repo, "a", {"src/app.py": "a\n", "only-a.txt": "a\n"})
    edit(api, repo, "b", {"src/app.py": "b\n"})
    edit(api, repo, "c", {"README.md": "c\n"})
    trunk_edit(repo, {"README.md": "trunk\n"})
    found = {(o["a"], o["b"]): o for o in api.radar()["overlaps"]}
    assert set(found) == {("main", "c"), ("a", "b")}
    assert found[("main", "c")]["with_trunk"] and found[("main", "c")]["paths"][0]["path"] == "README.md"
    assert [p["path"] for p in found[("a", "b")]["paths"]] == ["src/app.py"]
    # the radar agrees with promotion itself
    with pytest.raises(Conflict):
        api.promote("c")
    assert api.promote("a", into="b", dry_run=True)["status"] == "collision"


def test_same_change_on_both_lanes_is_no_overlap(api, repo):
    for lane in ("a", "b"):
        api.lane_create(lane)
    edit(api, repo, "a", {"same.txt": "s\n"})
    edit(api, repo, "b", {"same.txt": "s\n"})
    assert api.radar()["overlaps"] == []


def test_cost_accumulates_per_agent_and_lane_including_rejected(api, repo):
    api.lane_create("a")
    edit(api, repo, "a", {"x.txt": "1\n"}, agent="coder-1", cost=Cost(tokens_in=10, tokens_out=5, cost_usd=0.5))
    (workspace(repo, "a") / "y.txt").write_text("y\n")
    rejected = api.commit("try", "coder-2", lane="a", cost=Cost(tokens_in=100, cost_usd=2.0))
    api.reject(rejected["id"])
    edit(api, repo, "a", {"z.txt": "1\n"}, agent="coder-1", cost=Cost(tokens_in=1, cost_usd=0.25))
    series = api.cost()
    agents = {row["key"]: row for row in series["by_agent"]}
    assert agents["coder-2"]["cost_usd"] == 2.0 and agents["coder-1"]["cost_usd"] == 0.75
    assert [p["tokens"] for p in agents["coder-1"]["points"]] == [15, 16]
    lanes = {row["key"]: row for row in series["by_lane"]}
    assert lanes["a"]["cost_usd"] == 2.75 and series["total"]["cost_usd"] == 2.75
    assert series["by_agent"][0]["key"] == "coder-2"  # biggest spender first


def test_answer_posts_to_the_asker_and_resolves_the_question(api):
    asked = api.board_post("Which schema?", "coder-1", kind="question")
    answered = api.board_answer(asked["post"], "Use v2", "human")
    assert answered["to"] == "coder-1" and answered["answers"] == asked["post"]
    posts = {p["seq"]: p for p in api.board_read()["posts"]}
    assert posts[asked["post"]]["resolved"]["answer"] == answered["post"]
    assert posts[answered["post"]]["reply_to"] == asked["post"] and posts[answered["post"]]["text"] == "Use v2"
    assert [p["text"] for p in api.board_read("coder-1", unread_only=True)["posts"]] == ["Use v2"]
    with pytest.raises(Conflict):
        api.board_answer(asked["post"], "again", "human")
    with pytest.raises(NotFound):
        api.board_answer(999, "nobody asked", "human")


def test_feed_reports_lane_moves_proposals_notes_and_ledger_ops(api, repo):
    feed = api.watch()
    assert feed.poll() == []
    api.lane_create("a")
    (workspace(repo, "a") / "x.txt").write_text("x\n")
    proposed = api.commit("add x", "coder-1", lane="a")
    kinds = {(e["kind"], e.get("lane") or e.get("id")) for e in feed.poll()}
    assert {("lane", "a"), ("proposal", proposed["id"]), ("notes", None)} <= kinds
    api.accept(proposed["id"])
    events = feed.poll()
    moved = next(e for e in events if e["kind"] == "lane")
    assert (moved["lane"], moved["old"], moved["new"]) == ("a", proposed["from"], proposed["to"])
    assert any(e["kind"] == "proposal" and e["new"] is None for e in events)
    api.task_create("first")
    api.board_post("hello", "coder-1")
    ledger = [e for e in feed.wait(5) if e["kind"] == "ledger"]
    assert [op["type"] for op in ledger[0]["ops"]] == ["task.create", "board.post"]


def test_a_ledger_move_to_a_commit_not_here_is_still_reported(api, repo):
    """A watcher must hear every move, even one whose ops it cannot read (a commit not fetched yet, damage)."""
    api.board_post("hello", "coder-1")
    feed = api.watch()
    (repo / ".git" / "refs" / "lanes" / "ledger").write_text("1" * 40 + "\n")
    events = feed.poll()
    assert [(e["kind"], e["new"], e["ops"]) for e in events] == [("ledger", "1" * 40, [])]


def test_the_event_stream_outlives_a_failing_look(api):
    """One look at the repository that fails must not end every open page's live updates."""
    import asyncio

    from git_lanes.http.events import Broadcaster

    looks = iter([[], RuntimeError("a damaged index"), [{"kind": "lane", "lane": "a"}]])

    def poll() -> list[dict]:
        look = next(looks, [])
        if isinstance(look, Exception):
            raise look
        return look

    async def listen() -> list[bytes]:
        broadcaster = Broadcaster(poll, lambda: None)
        broadcaster.start()
        stream = broadcaster.stream()
        heard = [await stream.__anext__() for _ in range(3)]
        await broadcaster.stop()
        return heard

    hello, failed, moved = asyncio.run(asyncio.wait_for(listen(), 30))
    assert b'"kind": "ref"' in failed and b'"lane": "a"' in moved


def test_feed_wait_times_out_with_nothing(api):
    assert api.watch().wait(0.05) == []


def test_ref_watch_sees_moves_through_pack_refs_and_deletion(repo):
    watch = RefWatch(repo / ".git")
    head = git("rev-parse", "HEAD", cwd=repo).strip()
    git("update-ref", "refs/lanes/heads/p/q", head, cwd=repo)
    assert [m.to_dict() for m in watch.moves()] == [{"ref": "refs/lanes/heads/p/q", "old": None, "new": head}]
    git("pack-refs", "--all", cwd=repo)
    assert watch.moves() == []  # packing moves nothing
    trunk_edit(repo, {"README.md": "2\n"})
    new = git("rev-parse", "HEAD", cwd=repo).strip()
    git("update-ref", "refs/lanes/heads/p/q", new, head, cwd=repo)
    assert {(m.ref, m.new) for m in watch.moves()} == {("refs/heads/main", new), ("refs/lanes/heads/p/q", new)}
    git("update-ref", "-d", "refs/lanes/heads/p/q", cwd=repo)
    assert [(m.ref, m.old, m.new) for m in watch.moves()] == [("refs/lanes/heads/p/q", new, None)]
