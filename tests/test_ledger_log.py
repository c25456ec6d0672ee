"""The generic op log: one commit per op whose tree is the state after it, read without replay; the
functions sync builds on (read_op, ops_between, apply_op) and their contracts; format versions."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import git
from ledger_helpers import Clock, ledger_head, ledger_oneline, ledger_op, ledger_record

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain.coordination import FOLD
from git_lanes.errors import Conflict, UnsupportedFormat
from git_lanes.ledger import Op, make_op
from git_lanes.store import RefUpdate


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


def test_each_op_is_one_commit_whose_message_names_actor_and_op(lanes, repo):
    lanes.agent_register("coder-1")
    task = lanes.task_create("Add login", actor="coder-1")["task"]
    lanes.task_claim(task, "coder-1")
    lines = ledger_oneline(repo)
    assert lines == [f"coder-1: claim task {task[:8]} for coder-1 (v2)",
                     f"coder-1: create task {task[:8]} \"Add login\"",
                     "coder-1: register coder-1 (kind agent, lane -)"]
    op = ledger_op(repo)
    assert op["format"] == 1 and op["type"] == "task.claim" and op["actor"] == "coder-1"
    assert op["args"]["task"] == task and op["result"]["version"] == 2
    record = ledger_record(repo, f"tasks/{task[:2]}/{task}.json")
    assert record["format"] == 1 and record["owner"] == "coder-1" and record["version"] == 2
    assert op["edits"][f"tasks/{task[:2]}/{task}.json"] == record  # a delta: the record rides in the message


@pytest.fixture
def apart(monkeypatch):
    """Appends as an agent makes them, each its own (no two close enough to make a burst)."""
    from git_lanes.ledger import log

    monkeypatch.setattr(log, "BURST", 0.0)


@pytest.fixture
def burst(monkeypatch):
    """Appends in a burst, however slowly the machine runs them."""
    from git_lanes.ledger import log

    monkeypatch.setattr(log, "BURST", float("inf"))


def _post_after_a_task(lanes, repo) -> tuple[str, int, dict]:
    """A post appended after a task was created: the ledger's tree and object count before it, and its op."""
    lanes.agent_register("coder-1")
    lanes.task_create("one", actor="coder-1")
    before = git("rev-parse", "refs/lanes/ledger^{tree}", cwd=repo).strip()
    objects = _object_count(repo)
    lanes.ctx.clock.advance(1)
    lanes.board_post("hello", "coder-1")
    op = ledger_op(repo)
    assert sorted(op["edits"]) == ["board/00/00/00/00000001.json", "board/readers/coder-1.json"]
    return before, objects, op


def test_an_append_in_a_burst_writes_its_commit_alone_and_carries_its_records(lanes, repo, burst):
    before, objects, _ = _post_after_a_task(lanes, repo)
    assert _object_count(repo) == objects + 1  # the commit: its tree is its parent's
    assert git("rev-parse", "refs/lanes/ledger^{tree}", cwd=repo).strip() == before


def test_an_append_writes_its_commit_and_what_it_changed_and_carries_its_records(lanes, repo, apart):
    before, objects, op = _post_after_a_task(lanes, repo)
    # its tree is the whole state: its parent's with exactly the records the op wrote
    changed = git("diff-tree", "-r", "--name-only", before, "refs/lanes/ledger^{tree}", cwd=repo).split()
    assert changed == sorted(op["edits"])
    for path, record in op["edits"].items():
        assert ledger_record(repo, path) == record
    # the commit, the two records and the folders on their paths (board/00/00/00 up to the root): no more
    assert _object_count(repo) == objects + 1 + 2 + 6


def test_a_delta_after_a_burst_holds_the_whole_state_again(lanes, repo, monkeypatch):
    from git_lanes.ledger import log

    lanes.agent_register("coder-1")  # a checkpoint
    monkeypatch.setattr(log, "BURST", 0.0)
    lanes.board_post("apart 1", "coder-1")  # the whole state
    monkeypatch.setattr(log, "BURST", float("inf"))
    lanes.board_post("burst 1", "coder-1")
    lanes.board_post("burst 2", "coder-1")  # its checkpoint's tree: plain git lacks this burst's posts
    monkeypatch.setattr(log, "BURST", 0.0)
    lanes.board_post("apart 2", "coder-1")  # the whole state again, the burst's posts included
    texts = {json.loads(git("show", f"refs/lanes/ledger:{path}", cwd=repo))["text"]
             for path in git("ls-tree", "-r", "--name-only", "refs/lanes/ledger", "board/00", cwd=repo).split()}
    assert texts == {"apart 1", "burst 1", "burst 2", "apart 2"}
    reader = json.loads(git("show", "refs/lanes/ledger:board/readers/coder-1.json", cwd=repo))
    assert reader == ledger_op(repo)["edits"]["board/readers/coder-1.json"]


def test_every_checkpoint_rewrites_only_the_subtrees_its_window_touched(lanes, repo, apart):
    from git_lanes.model.ledger_delta import CHECKPOINT_EVERY

    lanes.agent_register("coder-1")  # the first op: a checkpoint
    first = git("rev-parse", "refs/lanes/ledger^{tree}", cwd=repo).strip()
    for i in range(CHECKPOINT_EVERY - 1):
        lanes.board_post(f"post {i}", "coder-1")
    assert "edits" in ledger_op(repo)  # the last delta: its tree already holds the window's records
    changed = git("diff-tree", "-r", "--name-only", first, "refs/lanes/ledger^{tree}", cwd=repo).split()
    assert sorted(changed) == [f"board/00/00/00/{n:08d}.json" for n in range(1, CHECKPOINT_EVERY)] + \
        ["board/readers/coder-1.json"]
    lanes.board_post("the checkpoint", "coder-1")
    assert "edits" not in ledger_op(repo)
    changed = git("diff-tree", "-r", "--name-only", first, "refs/lanes/ledger^{tree}", cwd=repo).split()
    assert sorted(changed) == [f"board/00/00/00/{n:08d}.json" for n in range(1, CHECKPOINT_EVERY + 1)] + \
        ["board/readers/coder-1.json"]
    assert git("rev-parse", "refs/lanes/ledger:agents", cwd=repo).strip() == git("rev-parse", f"{first}:agents",
                                                                                  cwd=repo).strip()
    assert [p["text"] for p in lanes.board_read(agent="coder-1", limit=2)["posts"]][-1] == "the checkpoint"


def _object_count(repo) -> int:
    counted = dict(line.split(": ") for line in git("count-objects", "-v", cwd=repo).splitlines())
    return int(counted["count"]) + int(counted["in-pack"])


def test_read_op_and_ops_between_give_the_ops_oldest_first(lanes, repo):
    store = lanes.ctx.store
    lanes.agent_register("a")
    middle = ledger_head(repo)
    lanes.board_post("one", "a")
    lanes.board_post("two", "a")
    head = ledger_head(repo)
    ops = ledger.ops_between(store, middle, head)
    assert [op.args["text"] for op in ops] == ["one", "two"]
    assert ledger.read_op(store, head) == ops[-1]
    assert [op.type for op in ledger.ops_between(store, None, head)] == ["agent.register", "board.post",
                                                                       "board.post"]
    with pytest.raises(UnsupportedFormat):
        ledger.ops_between(store, head, middle)


def test_apply_op_moves_no_ref_keeps_the_op_and_is_deterministic(lanes, repo):
    store = lanes.ctx.store
    lanes.agent_register("a")
    base = ledger_head(repo)
    op = make_op("board.post", "a", {"text": "replayed", "kind": "note", "to": None}, 1_800_000_100.0)
    first, result = ledger.apply_op(store, base, op, FOLD)
    second, again = ledger.apply_op(store, base, op, FOLD)
    assert ledger_head(repo) == base
    assert result == again == {"post": 1, "kind": "note", "to": None}
    assert store.tree_of(first) == store.tree_of(second)
    assert store.commit_info(first).parents == (base,)
    recorded = ledger.read_op(store, first)
    assert (recorded.id, recorded.actor, recorded.time, recorded.args) == (op.id, op.actor, op.time, op.args)
    assert recorded.result == result


def test_apply_op_returns_a_refusal_with_its_exit_code_and_writes_nothing(lanes, repo):
    store = lanes.ctx.store
    task = lanes.task_create("t", actor="a")["task"]
    lanes.task_claim(task, "winner")
    head = ledger_head(repo)
    lost = make_op("task.claim", "loser", {"task": task, "agent": "loser"}, 1_800_000_001.0)
    new, refusal = ledger.apply_op(store, head, lost, FOLD)
    assert new is None
    assert refusal["error"] == "task_claimed" and refusal["exit_code"] == 3 and refusal["owner"] == "winner"
    bad = make_op("task.claim", "loser", {"task": "ffff", "agent": "loser"}, 1_800_000_001.0)
    assert ledger.apply_op(store, head, bad, FOLD)[1]["exit_code"] == 1
    assert ledger_head(repo) == head


def test_a_refused_append_changes_nothing(lanes, repo):
    task = lanes.task_create("t", actor="a")["task"]
    lanes.task_claim(task, "winner")
    head = ledger_head(repo)
    with pytest.raises(Conflict) as info:
        lanes.task_claim(task, "loser")
    assert info.value.code == "task_claimed" and info.value.exit_code == 3
    assert ledger_head(repo) == head


def test_unknown_major_formats_are_rejected_clearly(lanes, repo):
    store = lanes.ctx.store
    lanes.agent_register("a")
    with pytest.raises(UnsupportedFormat, match="format 2"):
        Op.from_dict({"format": 2, "id": "ab", "type": "x", "actor": "a", "time": 1, "args": {}})
    # A record written by a future git-lanes is refused, not misread.
    head = ledger_head(repo)
    blob = store.write_blob(b'{"format": 2, "id": "a"}\n')
    from git_lanes.model.entries import Entry

    tree = store.edit_tree(store.tree_of(head), {"agents/a.json": Entry(blob, 0o100644)})
    with pytest.raises(UnsupportedFormat, match="agents/a.json has format 2"):
        ledger.State(store, tree).get("agents/a.json")
    unknown = make_op("task.teleport", "a", {}, 1.0)
    assert ledger.apply_op(store, head, unknown, FOLD)[1]["error"] == "unknown_op"


def test_a_commit_that_is_not_an_op_is_reported(lanes, repo):
    store = lanes.ctx.store
    trunk = git("rev-parse", "main", cwd=repo).strip()
    with pytest.raises(UnsupportedFormat, match="not a ledger op"):
        ledger.read_op(store, trunk)


def test_plain_git_reads_every_record(lanes, repo):
    lanes.agent_register("coder-1", lane=None)
    lanes.board_post("hi", "coder-1")
    post = ledger_record(repo, "board/00/00/00/00000001.json")
    assert post == {"format": 1, "seq": 1, "id": post["id"], "from": "coder-1", "to": None, "kind": "note",
                    "text": "hi", "time": post["time"], "resolved": None, "broadcasts": 1, "indexed": True}
    assert subprocess.run(["git", "fsck", "--no-progress"], cwd=repo).returncode == 0


def test_fold_is_pure_given_state_and_op(lanes, repo):
    store = lanes.ctx.store
    lanes.task_create("t", actor="a")
    state = ledger.state_at(store, ledger_head(repo))
    op = make_op("ticket.open", "a", {"title": "T"}, 5.0)
    assert FOLD.apply(state, op) == FOLD.apply(state, op)


def test_a_transaction_sees_directories_its_own_edits_create(lanes, repo):
    from git_lanes.domain import board_index

    lanes.agent_register("a")
    state = ledger.state_at(lanes.ctx.store, ledger_head(repo))
    tx = ledger.Tx(state)
    tx.put(board_index.post_path(99), {"seq": 99})
    tx.put(board_index.post_path(100), {"seq": 100})
    assert tx.names("board/00/00") == ["00", "01"]
    assert board_index.current_seq(tx) == 100
    tx.delete(board_index.post_path(100))
    assert board_index.current_seq(tx) == 99


def test_ledger_log_lists_recent_ops_newest_first(lanes):
    assert lanes.ledger_log() == []
    lanes.agent_register("a")
    lanes.board_post("hello", "a")
    rows = lanes.ledger_log(limit=5)
    assert [(r["type"], r["summary"]) for r in rows] == [("board.post", "a: post #1 note to everyone"),
                                                         ("agent.register", "a: register a (kind agent, lane -)")]
    assert rows[0]["result"] == {"post": 1, "kind": "note", "to": None}


def test_reads_use_a_checkpoint_tree_and_the_edits_since_never_the_history(lanes, repo):
    store = lanes.ctx.store
    task = lanes.task_create("t", actor="a")["task"]  # the first op: a checkpoint
    head = ledger_head(repo)
    # A checkpoint whose history holds no op at all: a replaying reader would fail, a tree reader cannot tell.
    orphan = store.write_commit(store.tree_of(head), [], "not an op\n")
    store.update_refs([RefUpdate("refs/lanes/ledger", orphan, head, "test: history without ops")])
    lanes.board_post("hello", "a")  # a delta on it
    assert [t["id"] for t in lanes.task_list()] == [task]
    assert [p["text"] for p in lanes.board_read()["posts"]] == ["hello"]


def _decoded(message: str) -> tuple:
    from git_lanes.ledger.op import decode_message

    try:
        op = decode_message(message, "c" * 40)
    except Exception as exc:  # noqa: BLE001 - the very error is what must match
        return type(exc), str(exc)
    return op.id, op.type


def _identity(message: str) -> tuple:
    from git_lanes.ledger.op import op_identity

    try:
        return op_identity(message, "c" * 40)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


def test_the_oplogs_reading_of_an_op_is_decode_messages_answer_or_error():
    """The operation log reads only an op's id and type, checked in place (domain/oplog.py): it must accept
    exactly what decode_message accepts, with the same answer, and refuse the rest with the same error."""
    from git_lanes.errors import UnsupportedFormat

    good = {"format": 1, "id": "0123456789abcdef", "type": "board.post", "actor": "agent-1", "time": 1.5,
            "args": {"text": "hi"}, "result": {"post": 3}}
    variants: list = [good, {**good, "args": None}, {**good, "result": None}, {**good, "time": 7}]
    bad = {"format": [2, 1.0, 1.5, True, "1", None, float("nan")], "id": ["0123456789ABCDEF", "0123", 5, None, ""],
           "type": ["", 3, None, "a\x00b", "a\nb", "é", "\ud800"], "actor": ["", " ", "a<b", "a\tb", 3, None, "x" * 101],
           "time": [True, "1", None, float("inf")], "args": [[], [["k", "v"]], [1, 2], "", 0, "text", {"k": 1}]}
    for key, values in bad.items():
        variants += [{**good, key: value} for value in values]
        variants.append({k: v for k, v in good.items() if k != key})
    messages = [f"summary\n\n{json.dumps(data, ensure_ascii=False)}\n" for data in variants]
    messages += ["summary only", "summary\n\n", "summary\n\n  \n", "summary\n\n{not json", "summary\n\n[1, 2]",
                 "summary\n\n" + json.dumps(good) + " trailing", "a\n\nb\n\n" + json.dumps(good), "\n\n" + json.dumps(good)]
    messages += [f"summary\n\n{before}{json.dumps(good)}{after}"
                 for before, after in ((" ", ""), ("", "\n\n"), ("", " \t\r\n"), ("\ufeff", ""), ("", ""))]
    answers = [(_identity(message), _decoded(message)) for message in messages]
    assert [mine for mine, theirs in answers if mine != theirs] == []
    # a bool is an int to Python: `"time": true` was once read as time 1 by both
    assert _decoded(f"summary\n\n{json.dumps({**good, 'time': True})}\n")[0] is UnsupportedFormat
    assert sum(isinstance(mine[0], str) for mine, _ in answers) >= 6  # both sides accept some, refuse others
    assert sum(isinstance(mine[0], type) for mine, _ in answers) >= 20


def test_an_op_is_read_before_a_deltas_edits_and_the_actors_it_remembers_stay_bounded():
    """A delta's edits follow its op (a long line in a busy ledger): the op log reads the op where it stands,
    with decode_message's answer or error whatever comes after it. The valid actors it remembers, to check
    the thousands of ops of a sync once per actor, are bounded, and a refused one is never among them."""
    from git_lanes.ledger import op as op_module

    good = {"format": 1, "id": "0123456789abcdef", "type": "board.post", "actor": "agent-1", "time": 1.5}
    edits = json.dumps({"edits": {"board/readers/agent-1.json": {"own": list(range(2_000)), "text": "a\n\nb"}}})
    messages = [f"s\n\n{json.dumps(good)}\n{edits}\n", f"s\n\n{json.dumps(good)}\n{{not json\n",
                f"s\n\n{json.dumps(good)}{edits}\n", f"s\n\n{json.dumps({**good, 'actor': 'a<b'})}\n{edits}\n",
                f"s\n\n{json.dumps({**good, 'actor': 'agent-1'})} \n{edits}\n", f"s\n\n\n{json.dumps(good)}\n"]
    answers = [(_identity(message), _decoded(message)) for message in messages]
    assert [mine for mine, theirs in answers if mine != theirs] == []
    assert [isinstance(mine[0], str) for mine, _ in answers] == [True, True, False, False, True, False]
    for number in range(op_module._ACTORS_KEPT + 50):
        assert _identity(f"s\n\n{json.dumps({**good, 'actor': f'agent {number}'})}\n") == (good["id"], good["type"])
    assert len(op_module._ACTORS) <= op_module._ACTORS_KEPT
    assert "a<b" not in op_module._ACTORS
    refused = f"s\n\n{json.dumps({**good, 'actor': 'a<b'})}\n"
    assert _identity(refused) == _decoded(refused) and isinstance(_identity(refused)[0], type)


def test_an_op_with_args_not_an_object_or_nested_too_deeply_is_refused_as_a_format_error():
    """A peer's ledger commit is bad input: refused with UnsupportedFormat (exit 1, one line), never a
    TypeError from dict() or json's RecursionError (an internal error, exit 6); the op log's reading agrees."""
    from git_lanes.errors import UnsupportedFormat

    good = {"format": 1, "id": "0123456789abcdef", "type": "board.post", "actor": "agent-1", "time": 1.5}
    messages = [f"s\n\n{json.dumps({**good, 'args': args})}\n" for args in ("text", 5, [["k", "v"]], True)]
    messages.append("s\n\n" + json.dumps(good)[:-1] + ', "args": {"d": ' + "[" * 100_000 + "]" * 100_000 + "}}\n")
    for message in messages:
        assert _decoded(message)[0] is UnsupportedFormat, message[:80]
        assert _identity(message) == _decoded(message)


def test_a_record_nested_too_deeply_is_refused_as_a_format_error(lanes):
    """A ledger tree a peer pushed may hold any blob: one json cannot read for its depth is UnsupportedFormat
    (one line, exit 1), never json's RecursionError (an internal error)."""
    from git_lanes.ledger.state import State
    from git_lanes.model.entries import Entry

    store = lanes.ctx.store
    blob = store.write_blob(b'{"format": 1, "d": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    state = State(store, store.edit_tree(None, {"tasks/deep.json": Entry(blob, 0o100644)}))
    for read in (state.get, state.copy_of):
        with pytest.raises(UnsupportedFormat, match="nested too deeply"):
            read("tasks/deep.json")


@pytest.mark.parametrize("text", ["a\x00b", "a\udcffb", "a\x1bb"], ids=["nul", "not-utf8", "escape"])
def test_an_op_summary_never_cuts_or_breaks_the_commit_message(lanes, repo, text):
    """libgit2 ends a commit message at a NUL: a summary repeating raw text once cut the op's JSON off."""
    from git_lanes.ledger.op import decode_message, encode_message

    op = make_op("task.create", "coder-1", {"title": "t"}, 1.0)
    message = encode_message(op, f"coder-1: create task {text}")
    message.encode()  # a lone surrogate would fail here, as the commit is written
    assert "\x00" not in message and "\x1b" not in message
    assert decode_message(message, "0" * 40) == op


def test_a_held_open_append_goes_through_no_import_of_the_write_path(lanes, monkeypatch):
    """Once a process has appended, its next appends reach the fold, the writer and the ref move without the
    import machinery: a `from module import name` in a function is thousands of instructions at every call
    (sys.modules, then a failed `__path__` look-up with its formatted AttributeError), and the write path
    had ten of them, a twentieth of a held-open append's instructions."""
    import builtins

    lanes.agent_heartbeat("coder-1")
    tasks = [lanes.task_create(f"task {n}", actor="lead")["task"] for n in range(3)]
    lanes.task_claim(tasks[0], "coder-1", version=1)
    lanes.board_post("warmed up", "coder-1")
    imported: list[str] = []
    real = builtins.__import__

    def spy(name, *args, **kwargs):  # a spy, not a stand-in: every import still happens
        imported.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", spy)
    for task in tasks[1:]:
        lanes.task_claim(task, "coder-1", version=1)
        lanes.board_post(f"took {task}", "coder-1")
    monkeypatch.undo()
    assert "git_lanes.domain" in imported  # the precondition: the spy sees the API's own imports
    write_path = {"git_lanes.ledger.combine", "git_lanes.ledger.log", "git_lanes.domain.coordination",
                  "git_lanes.store.objects", "git_lanes.store.append_queue", "git_lanes.store.reflogs"}
    assert write_path.isdisjoint(imported)
    assert "git_lanes" not in imported  # `from git_lanes import ledger`, for every op


def test_an_op_given_its_result_is_not_checked_again():
    """`with_result` changes only the result: the id, type, actor and time were checked when the op was made
    (every append makes one and records it with its result)."""
    import sys

    from git_lanes.model import ids, text

    op = make_op("task.claim", "coder-1", {"task": "0123456789abcdef"}, 1_800_000_000.25)
    calls: list[str] = []

    def count(frame, event, arg):
        if event == "call" and frame.f_code.co_filename in (ids.__file__, text.__file__):
            calls.append(frame.f_code.co_name)

    sys.setprofile(count)
    try:
        recorded = op.with_result({"task": "0123456789abcdef", "version": 2})
    finally:
        sys.setprofile(None)
    assert calls == []
    assert recorded == Op(op.id, "task.claim", op.actor, op.time, op.args, {"task": "0123456789abcdef", "version": 2})
    assert op.result is None and recorded.to_dict() == {**op.to_dict(), "result": recorded.result}
