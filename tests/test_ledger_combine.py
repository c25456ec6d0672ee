"""Appends under contention (ledger/combine.py): the lock's holder applies the ops queued by writers waiting
for it, each as its own commit with its own signatures, one ledger move a round; every outcome (result or
refusal) reaches its writer as it would have raised it; a dead writer's op is never applied; an operation
being recorded appends alone; and a holder killed on either side of the ledger's move leaves every queued op
applied exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import fsck_clean, run_cli
from ledger_helpers import ledger_head

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain import board
from git_lanes.domain.coordination import FOLD
from git_lanes.errors import Conflict, NotFound
from git_lanes.ledger import combine
from git_lanes.ledger.log import AGENT_EMAIL
from git_lanes.store.append_queue import FOLDER, JOURNAL

OTHER_COMMITTER = ["Another Machine", "another@example.com", 1_700_000_000, 60]


def queue_op(api: Lanes, op_type: str, actor: str, args: dict, *, pid: int | None = None) -> str:
    """Queue an op as a waiting writer would (committed by OTHER_COMMITTER); its entry's name."""
    store = api.ctx.store
    op = ledger.make_op(op_type, actor, args, 1_700_000_000.5)
    signed = store.exported_signatures(store.signatures(actor, AGENT_EMAIL))
    queue = store.append_queue()
    name = queue.new_name(op.id)
    queue.put(name, {"op": op.to_dict(), "signed": [signed[0], OTHER_COMMITTER], "fold": combine._identity(FOLD)})
    if pid is not None:  # a writer that is gone
        path = Path(queue.folder) / f"{name}.op"
        path.write_text(json.dumps({**json.loads(path.read_text()), "pid": pid}))
    return name


def reflog(repo: Path) -> list[str]:
    return (repo / ".git/logs/refs/lanes/ledger").read_text().splitlines()


def queue_files(repo: Path) -> list[str]:
    """What the queue holds but the files it keeps for reuse (spares: tests/test_queue_spares.py)."""
    folder = repo / ".git" / FOLDER
    return sorted(name for name in os.listdir(folder) if not name.endswith(".spare")) if folder.exists() else []


def test_the_holder_applies_queued_ops_each_its_own_commit_in_one_move(repo):
    api = Lanes(repo)
    api.board_post("first", "holder")
    names = [queue_op(api, "board.post", agent, {"text": f"from {agent}", "kind": "note", "to": None})
             for agent in ("x", "y", "z")]
    moves = len(reflog(repo))
    mine = api.board_post("second", "holder")
    assert len(reflog(repo)) == moves + 2  # its own op, then the three queued in one round
    first = json.loads((repo / ".git" / FOLDER / f"{names[0]}.done").read_text())
    first_op = ledger.read_op(api.ctx.store, first["commit"])
    assert reflog(repo)[-1].endswith(f"lanes ledger: board.post {first_op.id} and 2 more")
    assert first_op.args["text"] == "from x" and first_op.result == first["result"]
    queue = api.ctx.store.append_queue()
    outcomes = [queue.outcome(name) for name in names]
    assert [o["result"]["post"] for o in outcomes] == [3, 4, 5] and mine["post"] == 2
    head = ledger_head(repo)
    ops = ledger.ops_between(api.ctx.store, None, head)
    assert [op.args.get("text") for op in ops[-4:]] == ["second", "from x", "from y", "from z"]
    assert [o["commit"] for o in outcomes][-1] == head
    for agent, outcome in zip(("x", "y", "z"), outcomes):  # byte for byte the commit its writer would have made
        shown = subprocess.run(["git", "cat-file", "commit", outcome["commit"]], cwd=repo, capture_output=True,
                               text=True, check=True).stdout
        assert "\ncommitter Another Machine <another@example.com> 1700000000 +0100\n" in shown
        assert f"\nauthor {agent} <{AGENT_EMAIL}> " in shown
    assert queue_files(repo) == []
    fsck_clean(repo)


def test_ops_applied_while_writers_wait_are_a_burst_whatever_each_writers_pace(repo, monkeypatch):
    from git_lanes.ledger import log

    monkeypatch.setattr(log, "BURST", 0.0)  # no process appends twice within a burst's time
    api = Lanes(repo)
    api.board_post("first", "holder")  # the first op: a checkpoint
    checkpoint_tree = git_tree(repo, "refs/lanes/ledger")
    api.board_post("apart", "holder")  # alone: its delta's tree is the whole state
    assert git_tree(repo, "refs/lanes/ledger") != checkpoint_tree
    head = ledger_head(repo)
    for agent in ("x", "y"):
        queue_op(api, "board.post", agent, {"text": f"from {agent}", "kind": "note", "to": None})
    api.board_post("contended", "holder")
    # the holder's own op and the two it served each wrote its commit alone: their trees are the checkpoint's
    commits = subprocess.run(["git", "rev-list", f"{head}..refs/lanes/ledger"], cwd=repo, capture_output=True,
                             text=True, check=True).stdout.split()
    assert len(commits) == 3 and {git_tree(repo, commit) for commit in commits} == {checkpoint_tree}
    texts = [op.args["text"] for op in ledger.ops_between(api.ctx.store, head, ledger_head(repo))]
    assert texts == ["contended", "from x", "from y"]
    assert [post["text"] for post in api.board_read("reader", limit=5)["posts"]][-3:] == texts


def git_tree(repo: Path, commit: str) -> str:
    return subprocess.run(["git", "rev-parse", f"{commit}^{{tree}}"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_queued_op_the_fold_refuses_gets_the_error_its_writer_would_have_raised(repo):
    api = Lanes(repo)
    task = api.task_create("taken", actor="lead")["task"]
    api.task_claim(task, "first", version=1)
    taken = queue_op(api, "task.claim", "second", {"task": task, "agent": "second", "version": None, "lane": None})
    unknown = queue_op(api, "task.claim", "third", {"task": "0123456789abcdef", "agent": "third", "version": None,
                                                     "lane": None})
    head = ledger_head(repo)
    api.board_post("holder's own", "holder")
    queue = api.ctx.store.append_queue()
    asked = ledger.make_op("task.claim", "second", {}, 1_700_000_000.5)  # a refusal's answer does not read it
    with pytest.raises(Conflict) as conflict:
        combine._appended(asked, queue.outcome(taken))
    assert conflict.value.code == "task_claimed" and conflict.value.exit_code == 3
    assert conflict.value.details["owner"] == "first" and "task list --ready" in conflict.value.hint
    with pytest.raises(NotFound) as missing:
        combine._appended(asked, queue.outcome(unknown))
    assert missing.value.code == "unknown_task"
    assert [op.type for op in ledger.ops_between(api.ctx.store, head, ledger_head(repo))] == ["board.post"]
    assert queue_files(repo) == []


def test_the_op_of_a_writer_that_is_gone_is_dropped_never_applied(repo):
    api = Lanes(repo)
    gone = subprocess.Popen(["true"])
    gone.wait()
    queue_op(api, "board.post", "ghost", {"text": "from the dead", "kind": "note", "to": None}, pid=gone.pid)
    api.board_post("alive", "holder")
    texts = [op.args.get("text") for op in ledger.ops_between(api.ctx.store, None, ledger_head(repo))]
    assert "from the dead" not in texts and "alive" in texts
    assert queue_files(repo) == []


def test_an_operation_being_recorded_appends_its_op_alone(repo):
    api = Lanes(repo)
    name = queue_op(api, "board.post", "waiter", {"text": "queued", "kind": "note", "to": None})
    with api._operation("a recorded operation") as recorder:
        api.board_post("inside the operation", "recorder")
    assert [step.type for step in recorder.ledger] == ["board.post"]
    assert f"{name}.op" in queue_files(repo)  # left for the next holder
    api.board_post("outside", "holder")
    assert api.ctx.store.append_queue().outcome(name)["result"]["post"] == 3


HOLDER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from git_lanes.api import Lanes
    from git_lanes import ledger
    from git_lanes.ledger import combine
    from git_lanes.ledger.log import AGENT_EMAIL
    from git_lanes.domain.coordination import FOLD
    from git_lanes.store.append_queue import AppendQueue
    from git_lanes.store.repo import Store

    repo, die, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    api = Lanes(repo)
    store = api.ctx.store
    if die == "after-move":  # killed with the ledger moved and no outcome left
        AppendQueue.finish_all = lambda self, outcomes: os._exit(9) if outcomes else None
    elif die == "mid-outcome":  # killed rewriting an entry's file as its outcome, its name already given up
        from git_lanes.store import append_queue
        taking = append_queue._reused
        def _reused(spare, temporary, size):
            fd = taking(spare, temporary, size)
            if spare.endswith(".taken"):
                os.write(fd, b'{"commit":')
                os._exit(9)
            return fd
        append_queue._reused = _reused
    else:  # killed with the round journaled and the ledger not moved
        plain = Store.update_refs
        def update_refs(self, updates):
            if Path(store.append_queue().folder, "batch").exists():
                os._exit(9)
            plain(self, updates)
        Store.update_refs = update_refs
    op = ledger.make_op("board.post", "holder", {"text": "the holder's", "kind": "note", "to": None}, 1.0)
    with store.locked():
        print("holding", flush=True)
        while not go.exists():
            time.sleep(0.01)
        combine._lead(store, store.append_queue(), op, FOLD, store.signatures("holder", AGENT_EMAIL), False)
    os._exit(0)
""")


@pytest.mark.parametrize("die", ["after-move", "mid-outcome", "before-move"])
def test_a_holder_killed_mid_round_leaves_each_queued_op_applied_exactly_once(repo, tmp_path, die):
    go = tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(repo), die, str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding", holder.stderr.read()
    waiter = subprocess.Popen([sys.executable, "-m", "git_lanes", "board", "post", "the waiter's", "--agent",
                               "waiter", "--json"], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 60
    while not any(name.endswith(".op") for name in queue_files(repo)):
        assert time.monotonic() < deadline and waiter.poll() is None, waiter.stderr.read() if waiter.poll() else ""
        time.sleep(0.01)
    go.touch()
    assert holder.wait(timeout=60) == 9
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    api = Lanes(repo)
    texts = [op.args.get("text") for op in ledger.ops_between(api.ctx.store, None, ledger_head(repo))]
    assert texts.count("the waiter's") == 1
    assert texts.count("the holder's") == 1  # its own round came first, before the one it died in
    state = ledger.state_at(api.ctx.store, ledger_head(repo))
    assert board.get_post(state, json.loads(out)["post"])["text"] == "the waiter's"
    assert JOURNAL not in queue_files(repo) and not [n for n in queue_files(repo) if n.endswith(".op")]
    fsck_clean(repo)


def test_a_waiter_interrupted_takes_its_op_back(repo):
    api = Lanes(repo)
    head = ledger_head(repo)
    with api.ctx.store.locked():
        waiter = subprocess.Popen([sys.executable, "-m", "git_lanes", "board", "post", "never", "--agent", "w"],
                                  cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not any(name.endswith(".op") for name in queue_files(repo)):
            assert time.monotonic() < deadline and waiter.poll() is None
            time.sleep(0.01)
        waiter.send_signal(signal.SIGINT)
        waiter.communicate(timeout=60)
        assert waiter.returncode != 0
    assert queue_files(repo) == []
    api.board_post("after", "holder")
    assert [op.args.get("text") for op in ledger.ops_between(api.ctx.store, head, ledger_head(repo))] == ["after"]


def test_writers_that_queued_while_the_lock_was_held_are_served_by_one_of_them(repo):
    api = Lanes(repo)
    api.board_post("before", "lead")
    moves = len(reflog(repo))
    with api.ctx.store.locked():
        writers = [subprocess.Popen([sys.executable, "-m", "git_lanes", "board", "post", f"post {i}", "--agent",
                                     f"w{i}", "--json"], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True) for i in range(4)]
        deadline = time.monotonic() + 60
        while len([n for n in queue_files(repo) if n.endswith(".op")]) < 4:
            assert time.monotonic() < deadline and all(w.poll() is None for w in writers)
            time.sleep(0.01)
    posts = []
    for writer in writers:
        out, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
        posts.append(json.loads(out)["post"])
    assert sorted(posts) == [2, 3, 4, 5]
    assert len(reflog(repo)) == moves + 2  # the first to take the lock: its own op, then the other three
    assert queue_files(repo) == []


def test_without_unix_sockets_a_writer_waits_for_the_lock_itself(repo, monkeypatch):
    import socket

    api = Lanes(repo)
    api.board_post("first", "lead")

    class NoSockets(socket.socket):
        def bind(self, address):
            raise PermissionError("no sockets in this sandbox")

    monkeypatch.setattr(socket, "socket", NoSockets)
    with api.ctx.store.locked_if_free() as free:
        assert free
        # Another holder: this thread's append finds the lock taken, cannot listen, and blocks for it.
        import threading

        done = []
        writer = threading.Thread(target=lambda: done.append(api.board_post("waited", "w")))
        writer.start()
        time.sleep(0.2)
        assert not done and queue_files(repo) == []
    writer.join(timeout=60)
    assert done and done[0]["post"] == 2


def test_a_holder_whose_serving_fails_still_returns_its_own_op(repo, monkeypatch):
    api = Lanes(repo)
    api.board_post("first", "lead")
    name = queue_op(api, "board.post", "waiter", {"text": "queued", "kind": "note", "to": None})
    plain = combine._round

    def failing(store, queue, fold, ops, contended=False):
        if any(each_name for each_name, _, _ in ops):
            raise OSError(28, "No space left on device")
        return plain(store, queue, fold, ops, contended)

    monkeypatch.setattr(combine, "_round", failing)
    assert api.board_post("the holder's", "holder")["post"] == 2
    assert f"{name}.taken" in queue_files(repo)  # still queued (taken by a holder that let it be), nothing half done
    monkeypatch.setattr(combine, "_round", plain)
    api.board_post("next", "holder")
    assert api.ctx.store.append_queue().outcome(name)["result"]["post"] == 4


def test_what_writers_that_died_mid_write_left_is_removed_once_old(repo):
    api = Lanes(repo)
    api.board_post("first", "lead")
    folder = repo / ".git" / FOLDER
    folder.mkdir(exist_ok=True)
    old, fresh = folder / "0001-x.op.123.tmp", folder / "0002-y.op.456.tmp"
    old.write_text("{")
    fresh.write_text("{")
    long_ago = time.time() - 3600
    os.utime(old, (long_ago, long_ago))
    api.board_post("second", "lead")
    assert not old.exists() and fresh.exists()


def test_a_queued_writers_refusal_is_its_answer_not_an_interruption(repo, monkeypatch):
    """A refusal (from a holder's outcome, or met applying the op itself) is raised at once: the writer does
    not wait for the lock again to learn what it already knows."""
    import threading

    api = Lanes(repo)
    task = api.task_create("taken", actor="lead")["task"]
    api.task_claim(task, "first", version=1)
    settled = []
    monkeypatch.setattr(combine, "_settle", lambda *args: settled.append(args) or None)
    errors = []

    def claim():
        try:
            api.task_claim(task, "second")
        except Conflict as exc:
            errors.append(exc)

    with api.ctx.store.locked():
        writer = threading.Thread(target=claim)
        writer.start()
        deadline = time.monotonic() + 60
        while not any(name.endswith(".op") for name in queue_files(repo)):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    writer.join(timeout=60)
    assert [e.code for e in errors] == ["task_claimed"] and settled == []


def test_a_holder_leaves_alone_the_op_of_a_writer_that_reads_another_outcome_format(repo):
    """A release whose holder left the whole op (before 7f87c12) and one that leaves commit and result each
    told the other's writers an op the ledger took had failed (InternalError: a caller that retries it
    applies it twice) when both ran from one install path, upgraded in place under a running MCP server.
    Each entry names its outcome format: a holder serves only its own, the rest apply their ops themselves."""
    api = Lanes(repo)
    api.board_post("first", "holder")
    name = queue_op(api, "board.post", "older", {"text": "from an older release", "kind": "note", "to": None})
    entry = Path(repo / ".git" / FOLDER / f"{name}.op")
    kind = type(FOLD)
    before = f"{kind.__module__}.{kind.__qualname__}@{sys.modules[kind.__module__].__file__}"  # 7f87c12^'s
    entry.write_text(json.dumps({**json.loads(entry.read_text()), "fold": before}))
    moves = len(reflog(repo))
    api.board_post("second", "holder")
    assert len(reflog(repo)) == moves + 1 and not reflog(repo)[-1].endswith("more")
    assert f"{name}.op" in queue_files(repo) and f"{name}.done" not in queue_files(repo)
