"""One rule for a request whose thing is already in, or past, the state it asks for (man page, EXIT STATUS):
it is stale state, exit 3, whatever the command: a decided proposal accepted, rejected or evaluated again, a
done task finished, claimed, paused or handed over, a task handed to its owner, a resolved post resolved,
a deleted lane deleted, an ended run moved or told, an undone operation undone. Requests idempotent by
design (ending an ended run, an owner claiming its own task again) answer 0."""

from __future__ import annotations

from conftest import run_cli, workspace


def stale(*args: str, cwd, code: str) -> None:
    result = run_cli(*args, "--json", cwd=cwd)
    assert (result.code, result.json["error"]) == (3, code), (args, result.code, result.out, result.err)
    assert result.err.startswith("git-lanes: error: ") and "Traceback" not in result.err


def decided_pair(api, repo):
    api.lane_create("feat")
    (workspace(repo, "feat") / "a.txt").write_text("a\n")
    accepted = api.commit("first", "coder-1", lane="feat").id
    api.accept(accepted)
    (workspace(repo, "feat") / "b.txt").write_text("b\n")
    rejected = api.commit("second", "coder-1", lane="feat").id
    api.reject(rejected, "no")
    return accepted, rejected


def test_a_decided_proposal_decided_again_is_stale_state(api, repo):
    accepted, rejected = decided_pair(api, repo)
    for verb in ("accept", "reject", "evaluate"):
        stale(verb, accepted[:8], cwd=repo, code="already_decided")
        stale(verb, rejected[:8], cwd=repo, code="already_decided")


def test_a_done_task_and_a_handoff_to_its_owner_are_stale_state(api, repo):
    api.agent_register("coder-1")
    api.agent_register("coder-2")
    task = api.task_create("one").task
    api.task_claim(task, "coder-1")
    stale("task", "handoff", task[:8], "--to", "coder-1", cwd=repo, code="handoff_to_owner")
    stale("task", "resume", task[:8], cwd=repo, code="not_blocked")
    api.task_block(task, "waiting", actor="coder-1")
    stale("task", "block", task[:8], "--reason", "again", cwd=repo, code="task_blocked")
    api.task_resume(task, actor="coder-1")
    api.task_done(task, actor="coder-1")
    stale("task", "done", task[:8], cwd=repo, code="task_done")
    stale("task", "claim", task[:8], "--agent", "coder-2", cwd=repo, code="task_done")
    stale("task", "block", task[:8], "--reason", "late", cwd=repo, code="task_done")
    stale("task", "handoff", task[:8], "--to", "coder-2", cwd=repo, code="task_done")
    again = run_cli("task", "claim", api.task_create("two").task[:8], "--agent", "coder-1", cwd=repo)
    assert again.code == 0, again.err
    assert run_cli("task", "claim", api.task_list()[-1].id[:8], "--agent", "coder-1", cwd=repo).code == 0


def test_a_resolved_post_resolved_again_is_stale_state(api, repo):
    post = api.board_post("which schema?", "coder-1", kind="question")
    api.board_resolve(post.post, actor="coder-2")
    stale("board", "resolve", str(post.post), cwd=repo, code="already_resolved")


def test_a_deleted_lane_deleted_again_is_stale_state(api, repo):
    api.lane_create("gone")
    api.lane_delete("gone", force=True)
    stale("lane", "delete", "gone", cwd=repo, code="lane_deleted")
    stale("lane", "delete", "gone", "--force", cwd=repo, code="lane_deleted")
    never = run_cli("lane", "delete", "never-made", "--json", cwd=repo)
    assert (never.code, never.json["error"]) == (1, "unknown_lane")


def test_an_ended_run_is_stale_state_but_ending_it_again_answers(api, repo):
    run = run_cli("run", "start", "--agent", "coder-1", "--goal", "g", "--json", cwd=repo).json["id"]
    assert run_cli("run", "end", run[:8], cwd=repo).code == 0
    assert run_cli("run", "end", run[:8], cwd=repo).code == 0  # idempotent by design: "changes nothing"
    stale("run", "phase", run[:8], "execute", cwd=repo, code="run_ended")
    stale("tell", run[:8], "hello", cwd=repo, code="run_ended")


def test_an_undone_operation_undone_again_is_stale_state(api, repo):
    api.task_create("to undo")
    first = run_cli("undo", "--json", cwd=repo)
    assert first.code == 0, first.err
    undone = next(e["id"] for e in run_cli("op", "log", "--json", cwd=repo).json if e["undone_by"])
    stale("undo", undone[:8], cwd=repo, code="already_undone")
