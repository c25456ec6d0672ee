"""The append queue reuses its files (store/append_queue.py): a waiter's file goes round as its entry, the
holder's outcome, the waiter's spare and its next entry, and the round journal's file as the next journal, so
steady contention creates and frees no file (on ext4 without a journal each create scans the inodes freed
lately). A file is rewritten only when it is a plain file with no other name; what else lies under a spare's
name is not followed, not written, and slows nothing; spares of processes that are gone are dropped."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import fsck_clean, run_cli

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain.coordination import FOLD
from git_lanes.ledger import combine
from git_lanes.ledger.log import AGENT_EMAIL
from git_lanes.store.append_queue import FOLDER, JOURNAL_SPARE, STALE_SECONDS


def queue_post(api: Lanes, text: str) -> str:
    """`text` queued by this thread as a waiting writer would queue it; the entry's name."""
    store = api.ctx.store
    op = ledger.make_op("board.post", "waiter", {"text": text, "kind": "note", "to": None}, time.time())
    queue = store.append_queue()
    name = queue.new_name(op.id)
    signed = store.exported_signatures(store.signatures("waiter", AGENT_EMAIL))
    queue.put(name, {"op": op.to_dict(), "signed": signed, "fold": combine._identity(FOLD)})
    return name


def spare_name() -> str:
    return f"{os.getpid()}-{threading.get_ident()}.spare"


def texts(api: Lanes) -> list[str]:
    return [op.args["text"] for op in ledger.ops_between(api.ctx.store, None, ledger.head(api.ctx.store))
            if op.type == "board.post"]


def test_a_waiters_file_serves_every_entry_and_outcome_and_the_journal_one_file(repo: Path):
    api = Lanes(repo)
    queue = api.ctx.store.append_queue()
    folder = repo / ".git" / FOLDER
    entries, journals = set(), set()
    for n in range(5):
        name = queue_post(api, f"queued {n}")
        entries.add((folder / f"{name}.op").stat().st_ino)
        api.board_post(f"held {n}", "holder")  # the holder: its own op, then a round for the queued one
        done = folder / f"{name}.done"
        entries.add(done.stat().st_ino)
        assert queue.outcome(name)["result"]["post"] == 2 * n + 2
        entries.add((folder / spare_name()).stat().st_ino)
        journals.add((folder / JOURNAL_SPARE).stat().st_ino)
    assert len(entries) == 1 and len(journals) == 1  # five entries, outcomes and journals: one file each
    assert sorted(os.listdir(folder)) == sorted([spare_name(), JOURNAL_SPARE])
    assert texts(api) == [text for n in range(5) for text in (f"held {n}", f"queued {n}")]
    fsck_clean(repo)


def test_a_spare_parked_longer_than_half_the_stale_age_is_not_trusted(repo: Path):
    """A `.tmp` older than the stale age may be a dead writer's, dropped by a holder: a spare that old,
    renamed to one, could be dropped while it is written."""
    api = Lanes(repo)
    queue = api.ctx.store.append_queue()
    name = queue_post(api, "first")
    api.board_post("held", "holder")
    assert queue.outcome(name) is not None
    spare = repo / ".git" / FOLDER / spare_name()
    parked = spare.stat().st_ino
    queue._parked[threading.get_ident()] -= STALE_SECONDS
    name = queue_post(api, "second")
    assert (repo / ".git" / FOLDER / f"{name}.op").stat().st_ino != parked
    assert spare.stat().st_ino == parked  # left as it was: dropped with its process, or replaced when parking


def outside_file(tmp_path: Path) -> Path:
    target = tmp_path / "not-the-queues.txt"
    target.write_text("someone else's\n")
    return target


def a_symlink(spare: Path, target: Path) -> None:
    spare.symlink_to(target)


def a_hard_link(spare: Path, target: Path) -> None:
    os.link(target, spare)


def a_fifo(spare: Path, target: Path) -> None:
    os.mkfifo(spare)


def a_directory(spare: Path, target: Path) -> None:
    spare.mkdir()
    (spare / "inside").write_text("kept\n")


@pytest.mark.parametrize("stray", [a_symlink, a_hard_link, a_fifo, a_directory])
def test_what_lies_under_a_spares_name_is_never_written_and_stops_no_append(repo: Path, tmp_path: Path, stray):
    api = Lanes(repo)
    queue = api.ctx.store.append_queue()
    first = queue_post(api, "first")
    api.board_post("held", "holder")
    assert queue.outcome(first) is not None
    folder = repo / ".git" / FOLDER
    target = outside_file(tmp_path)
    for spare in folder / spare_name(), folder / JOURNAL_SPARE:
        spare.unlink()
        stray(spare, target)
    second = queue_post(api, "second")
    api.board_post("held again", "holder")
    assert queue.outcome(second)["result"]["post"] == 4
    assert target.read_text() == "someone else's\n"
    assert texts(api) == ["held", "first", "held again", "second"]
    assert not [name for name in os.listdir(folder) if name.endswith((".tmp", ".op", ".taken", ".done"))]
    if stray is a_directory:
        assert (folder / JOURNAL_SPARE / "inside").read_text() == "kept\n"
    fsck_clean(repo)


def test_spares_of_processes_that_are_gone_are_dropped_by_the_next_holder_and_by_gc(repo: Path):
    api = Lanes(repo)
    folder = repo / ".git" / FOLDER
    folder.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        for pid in gone.pid, alive.pid:
            (folder / f"{pid}-1.spare").write_text("{}")
        queue_post(api, "queued")  # a listing for a round: the holder looks at every file
        api.board_post("held", "holder")
        assert not (folder / f"{gone.pid}-1.spare").exists() and (folder / f"{alive.pid}-1.spare").exists()
        (folder / f"{gone.pid}-2.spare").write_text("{}")
        doctor = run_cli("doctor", "--check", "queue", cwd=repo)
        assert doctor.code == 0 and "holds nothing a killed process left" in doctor.out, doctor.out
        assert run_cli("gc", cwd=repo).code == 0
        assert not (folder / f"{gone.pid}-2.spare").exists() and (folder / f"{alive.pid}-1.spare").exists()
    finally:
        alive.kill()
        alive.wait()


WRITER = """
import sys
from git_lanes.api import Lanes
api = Lanes(sys.argv[1])
for n in range(int(sys.argv[3])):
    api.board_post(f"{sys.argv[2]} {n}", sys.argv[2])
"""


def test_writers_in_many_processes_each_land_every_op_once_through_reused_files(repo: Path):
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(repo), f"w{i}", "40"], stderr=subprocess.PIPE,
                                text=True) for i in range(6)]
    for writer in writers:
        assert writer.wait(timeout=300) == 0, writer.stderr.read()
    landed = texts(Lanes(repo))
    assert sorted(landed) == sorted(f"w{i} {n}" for i in range(6) for n in range(40))
    for i in range(6):  # each writer's ops in its own order
        assert [t for t in landed if t.startswith(f"w{i} ")] == [f"w{i} {n}" for n in range(40)]
    left = os.listdir(repo / ".git" / FOLDER) if (repo / ".git" / FOLDER).exists() else []
    assert not [name for name in left if not name.endswith(".spare")]
    fsck_clean(repo)
