"""Stray and hostile files in the append queue (`.git/lanes-queue/`, store/append_queue.py): whatever lies
there, an append applies its own op once and says so (exit 0, no error line), applies nothing the files
name, and leaves the ledger usable for the next append."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import fsck_clean, git, run_cli
from ledger_helpers import ledger_head

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain.coordination import FOLD
from git_lanes.ledger import combine
from git_lanes.ledger.log import AGENT_EMAIL
from git_lanes.store.append_queue import FOLDER, JOURNAL, STALE_SECONDS, AppendQueue


@pytest.fixture(autouse=True)
def known_writers(repo: Path) -> None:
    """The agents these tests write as are registered: an agent's first call would say so on stderr, and
    these tests hold an append's stderr to be empty (test_first_seen_agents)."""
    with Lanes(repo) as api:
        for agent in ("a", "w"):
            api.agent_register(agent)

NAME = "00000000000000000001-0123456789abcdef"


def posts(repo: Path) -> list[str]:
    shown = run_cli("board", "read", "--agent", "reader", "-n", "1000", "--json", cwd=repo)
    assert shown.code == 0, shown.err
    return [post["text"] for post in json.loads(shown.out)["posts"]]


def queue_post(repo: Path, text: str) -> tuple[AppendQueue, str]:
    """A post queued as a writer waiting for the lock would (this process, alive, is its writer)."""
    store = Lanes(repo).ctx.store
    op = ledger.make_op("board.post", "waiter", {"text": text, "kind": "note", "to": None}, time.time())
    queue = store.append_queue()
    name = queue.new_name(op.id)
    signed = store.exported_signatures(store.signatures("waiter", AGENT_EMAIL))
    queue.put(name, {"op": op.to_dict(), "signed": signed, "fold": combine._identity(FOLD)})
    return queue, name


def post_twice(repo: Path, blocked: bool) -> None:
    """Two appends, each applied once and reported as applied, and a queued op served by the first: the
    queue's content stopped none of them."""
    queue, name = queue_post(repo, "queued")
    for text in ("first", "second"):
        result = run_cli("board", "post", text, "--agent", "a", cwd=repo)
        assert (result.code, result.err) == (0, ""), result.err
        assert result.out.startswith("posted #")
    served = queue.outcome(name)
    if served is None:  # no round can be journaled: the op stays queued, for its writer to apply itself
        assert blocked and (repo / ".git" / FOLDER / f"{name}.taken").exists()  # to be served again
        assert posts(repo) == ["first", "second"]
    else:
        assert served["result"]["post"] == 2
        assert posts(repo) == ["first", "queued", "second"]
    assert not [file for file in os.listdir(repo / ".git" / FOLDER) if file.endswith(".tmp")]
    fsck_clean(repo)


def entries_left(repo: Path) -> list[str]:
    """The queue's files but those it keeps for reuse (spares)."""
    return [name for name in os.listdir(repo / ".git" / FOLDER) if not name.endswith(".spare")]


def old(path: Path) -> None:
    then = time.time() - STALE_SECONDS - 60
    os.utime(path, (then, then))


def a_directory_named_like_an_entry(queue: Path, repo: Path) -> None:
    (queue / f"{NAME}.op").mkdir()


def a_directory_named_like_a_stale_outcome(queue: Path, repo: Path) -> None:
    (queue / f"{NAME}.done").mkdir()
    old(queue / f"{NAME}.done")


def a_directory_named_like_the_journal(queue: Path, repo: Path) -> None:
    (queue / JOURNAL).mkdir()


def a_journal_naming_no_commit(queue: Path, repo: Path) -> None:
    (queue / JOURNAL).write_text(json.dumps({"old": "zz", "new": "not-hex", "outcomes": {NAME: {"commit": "x"}}}))


def a_journal_naming_a_tree(queue: Path, repo: Path) -> None:
    tree = git("rev-parse", "HEAD^{tree}", cwd=repo).strip()
    (queue / JOURNAL).write_text(json.dumps({"old": None, "new": tree, "outcomes": {NAME: {}}}))


def a_journal_of_the_wrong_shape(queue: Path, repo: Path) -> None:
    (queue / JOURNAL).write_text(json.dumps({"old": 5, "new": [1], "outcomes": [NAME]}))


def an_entry_of_a_live_process_that_is_no_op(queue: Path, repo: Path) -> None:
    (queue / f"{NAME}.op").write_text(json.dumps({"pid": os.getpid(), "op": {"type": "board.post"}, "fold": ""}))


def junk_bytes(queue: Path, repo: Path) -> None:
    (queue / f"{NAME}.op").write_bytes(b"\xff\xfe{not json")
    (queue / f"{NAME}.done").write_bytes(b"\xff\xfe{not json")
    (queue / JOURNAL).write_bytes(b"\xff" * 100_000)


def fifos_named_like_an_entry_and_the_journal(queue: Path, repo: Path) -> None:
    os.mkfifo(queue / f"{NAME}.op")  # opened to be read, a FIFO blocks until someone writes to it
    os.mkfifo(queue / JOURNAL)


def links_to_an_endless_file_named_like_an_entry_and_the_journal(queue: Path, repo: Path) -> None:
    (queue / f"{NAME}.op").symlink_to("/dev/zero")  # read to its end, it never ends
    (queue / JOURNAL).symlink_to("/dev/zero")


@pytest.mark.parametrize("stray", [
    a_directory_named_like_an_entry, a_directory_named_like_a_stale_outcome, a_directory_named_like_the_journal,
    a_journal_naming_no_commit, a_journal_naming_a_tree, a_journal_of_the_wrong_shape,
    an_entry_of_a_live_process_that_is_no_op, junk_bytes, fifos_named_like_an_entry_and_the_journal,
    links_to_an_endless_file_named_like_an_entry_and_the_journal])
def test_an_append_applies_its_op_once_and_says_so_whatever_lies_in_the_queue(repo, stray):
    queue = repo / ".git" / FOLDER
    queue.mkdir()
    stray(queue, repo)
    post_twice(repo, blocked=stray is a_directory_named_like_the_journal)


def test_a_journal_cannot_have_an_outcome_written_outside_the_queue(repo):
    run_cli("board", "post", "zero", "--agent", "a", cwd=repo)
    head = ledger_head(repo)
    queue = repo / ".git" / FOLDER
    queue.mkdir()
    # The ledger holds the journaled round (its new head is the head), so its outcomes would be left.
    (queue / JOURNAL).write_text(json.dumps({"old": None, "new": head, "outcomes": {"../escaped": {"commit": head}}}))
    result = run_cli("board", "post", "one", "--agent", "a", cwd=repo)
    assert result.code == 0, result.err
    assert not (repo / ".git" / "escaped.done").exists()
    assert not (queue / JOURNAL).exists()


def test_a_half_written_file_of_a_killed_process_is_removed_once_stale(repo):
    queue = repo / ".git" / FOLDER
    queue.mkdir()
    (queue / f"{NAME}.op.999999.tmp").write_text('{"op":')
    (queue / f"{NAME}.done.999998.tmp").write_text('{"op":')
    fresh = queue / f"{NAME}.op.999997.tmp"
    fresh.write_text('{"op":')  # a file being written now is left alone
    for stale in ("op.999999", "done.999998"):
        old(queue / f"{NAME}.{stale}.tmp")
    assert run_cli("board", "post", "one", "--agent", "a", cwd=repo).code == 0
    assert sorted(os.listdir(queue)) == [fresh.name]


def queued_post(repo: Path, queue: AppendQueue, text: str) -> tuple[subprocess.Popen, list]:
    """`board post TEXT` by agent w in its own process, once its entry is in the queue (the caller holds the
    writers' lock); the process and the queue's listing."""
    waiter = subprocess.Popen([sys.executable, "-m", "git_lanes", "board", "post", text, "--agent", "w"],
                              cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (listed := queue.waiting(8)):
        assert time.monotonic() < deadline and waiter.poll() is None
        time.sleep(0.01)
    return waiter, listed


def test_a_writer_interrupted_after_a_holder_took_its_op_reports_the_op_done(repo):
    """Ctrl-C reaches a waiting writer while the holder is applying its op: it says the op is done (exit 0,
    its result), not interrupted, and leaves nothing behind; before, it exited 130 though the ledger held the
    op, and its outcome lay in the queue for ten minutes."""
    api = Lanes(repo)
    store = api.ctx.store
    api.board_post("first", "holder")
    queue = store.append_queue()
    with store.locked():
        waiter, listed = queued_post(repo, queue, "late")
        [(name, entry)] = listed
        assert queue.take(name)  # this process is the holder now, in the middle of its round
        waiter.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert waiter.poll() is None  # it waits for the round it is in
        op = ledger.Op.from_dict(entry["op"])
        combine._round(store, queue, FOLD, [(name, op, store.imported_signatures(entry["signed"]))])
    out, err = waiter.communicate(timeout=60)
    assert (waiter.returncode, err, out) == (0, "", "posted #2 (note to everyone)\n"), f"exit {waiter.returncode}: {err}"
    assert posts(repo) == ["first", "late"]
    assert entries_left(repo) == []


def test_a_writer_interrupted_whose_holder_died_before_the_ledger_took_its_op_is_interrupted(repo):
    api = Lanes(repo)
    store = api.ctx.store
    queue = store.append_queue()
    before = ledger_head(repo)
    with store.locked():
        waiter, listed = queued_post(repo, queue, "never")
        assert queue.take(listed[0][0])  # taken, and then this "holder" lets the lock go without a round
        waiter.send_signal(signal.SIGINT)
        time.sleep(0.3)
    waiter.communicate(timeout=60)
    assert waiter.returncode == 130
    assert ledger.ops_between(store, before, ledger_head(repo)) == []
    assert entries_left(repo) == []


def test_a_stopped_writers_outcome_waits_for_it_however_old_and_its_op_is_applied_once(repo):
    """A waiting writer stopped (Ctrl-Z, a machine asleep, a clock stepped forward) past the stale age: its
    outcome stays for it, for the next holder, doctor and gc alike. Before, the next holder dropped it as
    nobody's, and the writer, finding none when it ran again, applied its op a second time."""
    api = Lanes(repo)
    store = api.ctx.store
    queue = store.append_queue()
    api.board_post("first", "holder")
    with store.locked():
        waiter, listed = queued_post(repo, queue, "late")
        [(name, entry)] = listed
        waiter.send_signal(signal.SIGSTOP)
        try:
            assert queue.take(name)
            op = ledger.Op.from_dict(entry["op"])
            combine._round(store, queue, FOLD, [(name, op, store.imported_signatures(entry["signed"]))])
            done = repo / ".git" / FOLDER / f"{name}.done"
            old(done)
            assert time.time() - done.stat().st_mtime > STALE_SECONDS and waiter.poll() is None  # old; its writer lives
        except BaseException:
            waiter.kill()
            raise
    try:
        doctor = run_cli("doctor", "--check", "queue", cwd=repo)
        assert doctor.code == 0 and "holds nothing a killed process left" in doctor.out, doctor.out
        assert run_cli("gc", cwd=repo).code == 0
        api.board_post("another", "holder")  # a holder whose listing holds the outcome
        assert done.exists()
    finally:
        waiter.send_signal(signal.SIGCONT)
    out, err = waiter.communicate(timeout=60)
    assert (waiter.returncode, err, out) == (0, "", "posted #2 (note to everyone)\n"), f"exit {waiter.returncode}: {err}"
    assert posts(repo) == ["first", "late", "another"]
    assert entries_left(repo) == []


def test_a_file_where_the_queue_folder_goes_slows_appends_but_fails_none(repo):
    """Something not a folder named like the queue (not ours to delete): a lone append and one that finds the
    lock taken both land, the latter by waiting for the lock as it would without sockets; before, every
    append failed with an internal error."""
    blocker = repo / ".git" / FOLDER
    blocker.write_text("someone's file\n")
    assert run_cli("board", "post", "alone", "--agent", "a", cwd=repo).code == 0
    store = Lanes(repo).ctx.store
    with store.locked():
        waiter = subprocess.Popen([sys.executable, "-m", "git_lanes", "board", "post", "queued", "--agent", "w"],
                                  cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        assert waiter.poll() is None  # it waits for the lock
    out, err = waiter.communicate(timeout=60)
    assert (waiter.returncode, err) == (0, ""), out
    assert posts(repo) == ["alone", "queued"]
    assert blocker.read_text() == "someone's file\n"
