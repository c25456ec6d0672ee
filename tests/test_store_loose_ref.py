"""The ledger's ref move without libgit2 (store/loose_ref.py) keeps libgit2's contract and writes libgit2's
files: a wrong expectation moves nothing, a lock taken by someone else is reported (or cleared) as before,
the reflog line is the one libgit2 writes, a packed ref is moved by a loose one, and concurrent writers
(other processes, the git CLI) lose nothing. Each test first makes sure which path it is on."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pygit2
import pytest
from conftest import fsck_clean, git
from dulwich.reflog import parse_reflog_line

from git_lanes.errors import Conflict
from git_lanes.store import RefUpdate, loose_ref, open_store, ref_moves
from git_lanes.store.repo import Store

REF = "refs/lanes/ledger"
MESSAGES = ["lanes ledger: board.post 0123abcd", "two\nlines", "trailing newline\n", "  spaced out \t ",
            "", "\n", "ünïcode ✓", "tab\tinside"]


@pytest.fixture
def store(repo: Path):
    return open_store(repo)


@pytest.fixture
def transactions(monkeypatch):
    """How many times libgit2's transaction ran (the fast path never starts one)."""
    calls: list[list[RefUpdate]] = []
    original = Store._transact

    def spy(self, updates):
        calls.append(updates)
        return original(self, updates)

    monkeypatch.setattr(Store, "_transact", spy)
    return calls


def libgit2_only(monkeypatch) -> None:
    monkeypatch.setattr(Store, "_move_loose", lambda self, update: False)


def _commits(repo: Path, count: int) -> list[str]:
    tree = git("write-tree", cwd=repo).strip()
    return [git("commit-tree", tree, "-m", f"c{i}", cwd=repo).strip() for i in range(count)]


def _log(repo: Path, name: str = REF) -> bytes:
    return (repo / ".git" / "logs" / name).read_bytes()


@pytest.fixture
def ledger(store, repo):
    """`REF` at a commit of its own (a ref of the test's, since the repository's ledger is already in use)
    and two more to move it to."""
    one, two, three = _commits(repo, 3)
    store.update_refs([RefUpdate(REF, one, store.read_ref(REF), "start")])
    return one, two, three


def test_a_wrong_expectation_refuses_and_changes_nothing(store, repo, ledger, transactions):
    one, two, three = ledger
    log = _log(repo)
    transactions.clear()
    with pytest.raises(Conflict) as raised:
        store.update_refs([RefUpdate(REF, three, two, "expects two")])
    assert raised.value.code == "stale_ref" and REF in raised.value.message
    assert raised.value.message == f"{REF} moved: expected {two[:8]}, found {one[:8]}"
    assert transactions == []  # the fast path answered
    assert store.read_ref(REF) == one and _log(repo) == log
    assert not (repo / ".git" / f"{REF}.lock").exists()
    store.update_refs([RefUpdate(REF, two, one, "expects one")])
    assert transactions == [] and git("rev-parse", REF, cwd=repo).strip() == two


def test_a_ref_at_an_unexpected_value_reads_the_same_on_both_paths(store, repo, ledger, monkeypatch):
    one, two, three = ledger
    with pytest.raises(Conflict) as fast:
        store.update_refs([RefUpdate(REF, three, two, "expects two")])
    libgit2_only(monkeypatch)
    with pytest.raises(Conflict) as slow:
        store.update_refs([RefUpdate(REF, three, two, "expects two")])
    assert (fast.value.code, fast.value.message, fast.value.hint) == \
        (slow.value.code, slow.value.message, slow.value.hint)


def _hold_open(lock: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'a'); "
                               "print('held', flush=True); time.sleep(60)", str(lock)], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("path", ["fast", "libgit2"])
def test_a_move_to_where_the_ref_is_writes_nothing(store, repo, ledger, monkeypatch, transactions, path):
    one, _, _ = ledger
    if path == "libgit2":
        libgit2_only(monkeypatch)
    ref, log = repo / ".git" / REF, _log(repo)
    before = ref.stat()
    transactions.clear()
    store.update_refs([RefUpdate(REF, one, one, "stays")])
    after = ref.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns) and _log(repo) == log
    assert not (repo / ".git" / f"{REF}.lock").exists() and bool(transactions) == (path == "libgit2")


@pytest.mark.parametrize("path", ["fast", "libgit2"])
def test_a_lock_held_by_a_live_process_is_reported_and_left(store, repo, ledger, monkeypatch, transactions, path):
    one, two, _ = ledger
    if path == "libgit2":
        libgit2_only(monkeypatch)
    lock = repo / ".git" / f"{REF}.lock"
    holder = _hold_open(lock)
    transactions.clear()
    try:
        with pytest.raises(Conflict) as raised:
            store.update_refs([RefUpdate(REF, two, one, "while locked")])
    finally:
        holder.kill()
        holder.wait()
    assert (raised.value.code, raised.value.message, raised.value.hint) == (
        "locked", f"could not update refs: {lock} is locked by another process",
        f"retry; if no git process is running, delete {lock}")
    assert lock.exists() and store.read_ref(REF) == one
    assert bool(transactions) == (path == "libgit2")
    lock.unlink()


@pytest.mark.parametrize("path", ["fast", "libgit2"])
def test_a_lock_a_dead_process_left_is_cleared(store, repo, ledger, monkeypatch, transactions, path):
    one, two, _ = ledger
    if path == "libgit2":
        libgit2_only(monkeypatch)
    lock = repo / ".git" / f"{REF}.lock"
    lock.write_text("")
    transactions.clear()
    store.update_refs([RefUpdate(REF, two, one, "after a crash")])
    assert not lock.exists() and git("rev-parse", REF, cwd=repo).strip() == two
    assert bool(transactions) == (path == "libgit2")


def _git_prepared(repo: Path, old: str, new: str) -> subprocess.Popen:
    """`git update-ref --stdin` moving REF from `old` to `new`, stopped after `prepare`: it holds the ref's lock
    (closed, as git keeps its locks) until it is sent "commit\n"."""
    git_side = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=repo, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert git_side.stdin is not None and git_side.stdout is not None
    git_side.stdin.write(f"start\nupdate {REF} {new} {old}\nprepare\n")
    git_side.stdin.flush()
    assert git_side.stdout.readline() == "start: ok\n" and git_side.stdout.readline() == "prepare: ok\n"
    return git_side


def test_a_lock_held_for_a_plain_git_transaction_meets_the_same_answer_on_both_paths(store, repo, ledger,
                                                                                     monkeypatch):
    """`git update-ref --stdin` holding `<ref>.lock` through `prepare` (closed, as git keeps its locks) is
    treated by the fast path exactly as by libgit2's: whatever stale.py decides, both decide it."""
    one, two, three = ledger
    outcomes = []
    for path in ("fast", "libgit2"):
        if path == "libgit2":
            libgit2_only(monkeypatch)
        at = store.read_ref(REF)
        other = two if at != two else three
        git_side = _git_prepared(repo, at, other)
        mine = one if at != one else three
        try:
            store.update_refs([RefUpdate(REF, mine, at, f"{path} against git")])
            outcome = "moved"
        except Conflict as exc:
            outcome = exc.code
        git_side.communicate("commit\n", timeout=30)
        outcomes.append((outcome, git_side.returncode, store.read_ref(REF) == mine))
        assert not (repo / ".git" / f"{REF}.lock").exists()
    assert outcomes[0] == outcomes[1], outcomes


@pytest.mark.parametrize("identity", ["configured", "untidy", "none"])
def test_the_reflog_line_is_the_one_libgit2_writes(store, repo, ledger, monkeypatch, transactions, identity):
    one, two, _ = ledger
    # libgit2 reads the global config from its own search path, fixed when it starts (not the test's HOME)
    levels = [pygit2.enums.ConfigLevel.GLOBAL, pygit2.enums.ConfigLevel.XDG, pygit2.enums.ConfigLevel.SYSTEM]
    saved = [pygit2.settings.search_path[level] for level in levels]
    if identity == "none":
        empty = repo.parent / "empty-home"
        empty.mkdir()
        for level in levels:
            pygit2.settings.search_path[level] = str(empty)
        store = open_store(repo)
    else:  # libgit2 trims what git trims from a name (the fast path asks libgit2 for it)
        git("config", "user.name", "Test" if identity == "configured" else "  Ann O'Nym. ", cwd=repo)
        git("config", "user.email", "test@example.com" if identity == "configured" else " ann@ex.com", cwd=repo)
    try:
        lines = {}
        for path in ("fast", "libgit2"):
            if path == "libgit2":
                libgit2_only(monkeypatch)
            transactions.clear()
            for message in MESSAGES:
                at = store.read_ref(REF)
                store.update_refs([RefUpdate(REF, two if at == one else one, at, message)])
            assert bool(transactions) == (path == "libgit2")
            lines[path] = _log(repo).splitlines(keepends=True)[-len(MESSAGES):]
    finally:
        for level, path in zip(levels, saved):
            pygit2.settings.search_path[level] = path
    fast, slow = ([_without_time(line) for line in lines[path]] for path in ("fast", "libgit2"))
    assert fast == slow
    name = {"configured": b"Test <test@example.com>", "untidy": b"Ann O'Nym. <ann@ex.com>",
            "none": b"unknown <unknown>"}[identity]
    assert all(name in line for line in lines["fast"]), lines["fast"]
    # git and dulwich read every entry the same whichever wrote it
    shown = git("reflog", "show", "--format=%H %gn %ge %gs", REF, cwd=repo).splitlines()
    half = len(MESSAGES)
    assert [line.split(" ", 1)[1] for line in shown[:half]] == [line.split(" ", 1)[1] for line in shown[half:2 * half]]
    # (dulwich reads no line without a tab, which both write for an empty message, as git does)
    entries = [parse_reflog_line(line) for line in _log(repo).splitlines()[-2 * half:] if b"\t" in line]
    fields = [(e.committer, e.timezone, e.message) for e in entries]
    assert fields[:len(fields) // 2] == fields[len(fields) // 2:] and len(fields) > half


def test_the_reflog_names_whom_the_commit_was_signed_by_and_a_changed_identity_within_a_second(
        store, repo, ledger, monkeypatch, transactions):
    """A ref move's reflog line takes the identity read for the commit it lands, a moment before (libgit2
    copies the whole configuration to read it); past IDENTITY_REUSE_SECONDS it reads the config again."""
    one, two, _ = ledger
    git("config", "user.name", "Signer", cwd=repo)
    git("config", "user.email", "signer@example.com", cwd=repo)
    assert store.signature().name == "Signer"
    git("config", "user.name", "Renamed", cwd=repo)
    store.update_refs([RefUpdate(REF, two, one, "within the second")])
    clock = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: clock + ref_moves.IDENTITY_REUSE_SECONDS + 1)
    store.update_refs([RefUpdate(REF, one, two, "a second later")])
    assert transactions == []
    first, second = _log(repo).splitlines()[-2:]
    assert b" Signer <signer@example.com> " in first and b" Renamed <signer@example.com> " in second
    assert git("reflog", "-1", "--format=%gn %ge", REF, cwd=repo).strip() == "Renamed signer@example.com"


def _without_time(line: bytes) -> bytes:
    head, tab, message = line.partition(b"\t")
    parts = head.split(b" ")
    return b" ".join(parts[2:-2] + parts[-1:]) + tab + message  # drop the two oids and the seconds


def test_the_line_format_matches_libgit2s_quirks():
    who = (b"A B", b"a@b", 1_800_000_000, -300)
    assert loose_ref.reflog_line("0" * 40, "1" * 40, who, "m") == \
        b"0" * 40 + b" " + b"1" * 40 + b" A B <a@b> 1800000000 -0500\tm\n"
    assert loose_ref.reflog_line("0" * 40, "1" * 40, who, "").endswith(b"-0500\n")
    assert loose_ref.reflog_line("0" * 40, "1" * 40, who, "a\nb\n").endswith(b"\ta b\n")
    assert loose_ref.reflog_line("0" * 40, "1" * 40, (b"A", b"a", 0, 330), "x").endswith(b" 0 +0530\tx\n")


def test_a_packed_ref_is_moved_by_a_loose_one(store, repo, ledger, transactions):
    one, two, three = ledger
    git("pack-refs", "--all", cwd=repo)
    loose = repo / ".git" / REF
    assert not loose.exists() and f"{one} {REF}" in (repo / ".git/packed-refs").read_text()
    transactions.clear()
    with pytest.raises(Conflict) as raised:
        store.update_refs([RefUpdate(REF, three, two, "wrong")])
    assert raised.value.code == "stale_ref" and not loose.exists()
    store.update_refs([RefUpdate(REF, two, one, "over the packed one")])
    assert transactions == []
    assert loose.read_text() == f"{two}\n" and git("rev-parse", REF, cwd=repo).strip() == two
    assert _log(repo).splitlines()[-1].startswith(f"{one} {two} ".encode())
    store.update_refs([RefUpdate(REF, three, two, "loose again")])
    assert transactions == [] and git("rev-parse", REF, cwd=repo).strip() == three
    fsck = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling"], cwd=repo, capture_output=True,
                          text=True)
    assert fsck.returncode == 0, fsck.stderr


def test_a_ledger_append_after_pack_refs_moves_the_ledger(api, repo, transactions):
    api.board_post("before", "lead")
    git("pack-refs", "--all", cwd=repo)
    before = git("rev-parse", REF, cwd=repo).strip()
    assert not (repo / ".git" / REF).exists()
    transactions.clear()
    api.board_post("after", "lead")
    assert not any(u.name == REF for batch in transactions for u in batch)
    after = (repo / ".git" / REF).read_text().strip()
    assert git("rev-parse", REF, f"{REF}^", cwd=repo).split() == [after, before]
    assert "after" in git("cat-file", "commit", after, cwd=repo)


@pytest.mark.parametrize("unusual", ["symbolic", "head"])
def test_what_libgit2_treats_specially_goes_to_libgit2(store, repo, ledger, transactions, unusual):
    one, two, _ = ledger
    if unusual == "symbolic":
        git("symbolic-ref", "refs/lanes/alias", REF, cwd=repo)
        name = "refs/lanes/alias"
    else:  # libgit2 logs HEAD's move as well when HEAD names the ref
        git("symbolic-ref", "HEAD", REF, cwd=repo)
        name = REF
    transactions.clear()
    store.update_refs([RefUpdate(name, two, one, "special")])
    assert len(transactions) == 1 and git("rev-parse", name, cwd=repo).strip() == two
    assert not (repo / ".git" / f"{name}.lock").exists()


def test_heads_answer_is_remembered_while_head_and_its_branch_keep_their_stat(store, repo, ledger, monkeypatch,
                                                                             transactions):
    """Whether HEAD names the moved ref is read again only when HEAD or the branch it names changed (their
    stat), and only files changed a while before are trusted: HEAD moved onto the ref goes to libgit2."""
    one, two, three = ledger
    git_dir = repo / ".git"
    branch = git("symbolic-ref", "HEAD", cwd=repo).strip()
    hour_ago = time.time() - 3600
    for path in (git_dir / "HEAD", git_dir / branch):
        os.utime(path, (hour_ago, hour_ago))
    reads = []
    real = loose_ref._head_target
    monkeypatch.setattr(loose_ref, "_head_target", lambda path: reads.append(path) or real(path))
    transactions.clear()
    store.update_refs([RefUpdate(REF, two, one, "reads HEAD")])
    store.update_refs([RefUpdate(REF, three, two, "remembers")])
    assert len(reads) == 1 and transactions == []
    git("symbolic-ref", "HEAD", REF, cwd=repo)
    os.utime(git_dir / "HEAD", (hour_ago, hour_ago))  # the same time as before: the change still shows
    store.update_refs([RefUpdate(REF, one, three, "HEAD names it now")])
    assert len(reads) == 2 and len(transactions) == 1
    assert b"HEAD names it now" in (git_dir / "logs" / "HEAD").read_bytes()


WRITER = """
import os, sys
from git_lanes.errors import Conflict
from git_lanes.store import RefUpdate, open_store
from git_lanes.store.repo import Store

def never(self, updates):
    raise AssertionError("libgit2's transaction ran")

Store._transact = never
store = open_store(sys.argv[1])
ref, me, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
tree = store.empty_tree()
done = 0
while done < count:
    head = store.read_ref(ref)
    commit = store.write_commit(tree, [head], f"{me} {done}\\n")
    try:
        store.update_refs([RefUpdate(ref, commit, head, f"{me} {done}")])
    except Conflict as exc:
        assert exc.code in ("stale_ref", "locked", "ref_locked"), exc  # a lost race, as with libgit2
        continue
    done += 1
print(done)
"""

GIT_WRITER = """
set -e
i=0
while [ $i -lt $2 ]; do
  head=$(git rev-parse "$1")
  commit=$(git commit-tree "$head^{tree}" -p "$head" -m "git $i")
  if git update-ref -m "git $i" "$1" "$commit" "$head" 2>/dev/null; then i=$((i+1)); fi
done
echo $i
"""


def test_eight_processes_and_the_git_cli_moving_one_ref_lose_nothing(store, repo, ledger):
    """No writers' lock here: `<ref>.lock` alone orders 8 fast-path processes and a git CLI loop, each
    re-reading and retrying on a lost race. Every success is on the ref's first-parent chain, once, and the
    reflog is one unbroken chain of moves."""
    one, _, _ = ledger
    each, processes = 40, 8
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(repo), REF, f"p{n}", str(each)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for n in range(processes)]
    git_writer = subprocess.Popen(["sh", "-c", GIT_WRITER, "sh", REF, str(each)], cwd=repo,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for writer in [*writers, git_writer]:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0 and out.strip() == str(each), err
    subjects = git("log", "--first-parent", "--format=%s", f"{one}..{REF}", cwd=repo).split("\n")[:-1]
    expected = {f"p{n} {i}" for n in range(processes) for i in range(each)} | {f"git {i}" for i in range(each)}
    assert len(subjects) == len(expected) and set(subjects) == expected
    entries = [line.split(b"\t")[0].split(b" ")[:2] for line in _log(repo).splitlines()]
    tail = entries[-len(expected):]
    assert all(prev[1] == nxt[0] for prev, nxt in zip(tail, tail[1:]))
    assert tail[-1][1].decode() == git("rev-parse", REF, cwd=repo).strip()
    assert not (repo / ".git" / f"{REF}.lock").exists()


PACKER = """
n=0
while [ ! -e "$1" ]; do git pack-refs --all 2>/dev/null; n=$((n+1)); done
echo $n
"""


def test_appends_while_git_packs_refs_over_and_over_lose_nothing(api, repo, transactions):
    """`git pack-refs --all` moves the ledger into packed-refs and deletes its loose file, under the ref's
    lock, while appends move it out again: each side waits for or retries around the other."""
    api.board_post("first", "lead")
    stop = repo.parent / "stop-packing"
    packer = subprocess.Popen(["sh", "-c", PACKER, "sh", str(stop)], cwd=repo, stdout=subprocess.PIPE, text=True)
    acknowledged, packed_seen = [], 0
    try:
        for i in range(150):
            deadline = time.monotonic() + (1.0 if i % 2 else 0.0)  # every other append waits for a packing
            while (repo / ".git" / REF).exists() and time.monotonic() < deadline:
                time.sleep(0.001)
            packed_seen += not (repo / ".git" / REF).exists()  # this append starts from the packed ledger
            try:
                acknowledged.append(api.board_post(f"post {i}", "lead")["op"])
            except Conflict as exc:  # the packer held the lock through every retry: refused, nothing half-done
                assert exc.code in ("locked", "ref_locked"), exc
    finally:
        stop.touch()
        out, _ = packer.communicate(timeout=60)
    assert int(out) >= 10 and packed_seen >= 30, (out, packed_seen)  # the packer ran, packing the ledger between
    assert not any(u.name == REF and u.old is not None for batch in transactions for u in batch)
    from git_lanes import ledger

    ops = [op.id for op in ledger.ops_between(api.ctx.store, None, api.ctx.store.read_ref(REF))]
    assert set(acknowledged) <= set(ops) and len(acknowledged) >= 100
    moves = [line.split(b"\t")[0].split(b" ")[:2] for line in _log(repo).splitlines()]
    assert all(before[1] == after[0] for before, after in zip(moves, moves[1:]))
    fsck = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling"], cwd=repo, capture_output=True,
                          text=True)
    assert fsck.returncode == 0, fsck.stderr


class _Holder(threading.Timer):
    let_go_at: float | None = None  # time.monotonic() just before the lock goes


def _held_then_let_go(lock: Path, seconds: float) -> _Holder:
    """`lock` taken and held open now (so never taken for abandoned), let go after `seconds` as git lets go
    of a lock it did not commit: closed, then deleted."""
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL)

    def let_go() -> None:
        os.close(fd)
        timer.let_go_at = time.monotonic()  # before the lock goes: a mover may run the moment it is gone
        lock.unlink()

    timer = _Holder(seconds, let_go)
    timer.start()
    return timer


@pytest.mark.parametrize("path", ["fast", "libgit2"])
def test_a_lock_let_go_within_gits_timeout_is_waited_for(store, repo, ledger, monkeypatch, transactions, path):
    """git retries a taken ref lock for core.filesRefLockTimeout (100 ms unless set); so do we, on both
    paths, where a lock held for a moment (by `git pack-refs`, `git reflog expire`…) used to fail the move.
    (Set to 5 s here: on a loaded machine the thread letting go may run well after its 30 ms.)"""
    one, two, _ = ledger
    if path == "libgit2":
        libgit2_only(monkeypatch)
    git("config", "core.filesRefLockTimeout", "5000", cwd=repo)
    store = open_store(repo)
    lock = repo / ".git" / f"{REF}.lock"
    clearings = _count_clearings(monkeypatch)
    timer = _held_then_let_go(lock, 0.03)
    transactions.clear()
    try:
        store.update_refs([RefUpdate(REF, two, one, "after a moment")])
        moved_at = time.monotonic()
    finally:
        timer.join()
    # it did wait for the holder: it moved the ref after the lock was gone (a time since the call began would
    # flake: on a loaded machine the timer's 30 ms may have mostly passed before the call starts)
    assert timer.let_go_at is not None and moved_at >= timer.let_go_at
    assert not clearings  # waited out, not taken for abandoned (whose check the lock may go during)
    assert git("rev-parse", REF, cwd=repo).strip() == two and not lock.exists()
    assert bool(transactions) == (path == "libgit2")


def _count_clearings(monkeypatch) -> list[object]:
    from git_lanes.store import stale

    calls: list[object] = []
    original = stale.clear_if_stale

    def spy(lock, worktree=None):
        calls.append(lock)
        return original(lock, worktree)

    monkeypatch.setattr(stale, "clear_if_stale", spy)
    return calls


@pytest.mark.parametrize("path", ["fast", "libgit2"])
def test_the_configured_ref_lock_timeout_is_honoured(repo, ledger, monkeypatch, path):
    """core.filesRefLockTimeout=0 means no retry, as in git; a longer one waits a longer holder out."""
    one, two, three = ledger
    if path == "libgit2":
        libgit2_only(monkeypatch)
    lock = repo / ".git" / f"{REF}.lock"
    git("config", "core.filesRefLockTimeout", "0", cwd=repo)
    timer = _held_then_let_go(lock, 1.0)  # longer than stale.py's look at it, which finds it held open
    try:
        with pytest.raises(Conflict) as raised:
            open_store(repo).update_refs([RefUpdate(REF, two, one, "no patience")])
    finally:
        timer.join()
    assert raised.value.code == "locked" and git("rev-parse", REF, cwd=repo).strip() == one
    git("config", "core.filesRefLockTimeout", "3000", cwd=repo)
    clearings = _count_clearings(monkeypatch)
    timer = _held_then_let_go(lock, 0.3)
    try:
        open_store(repo).update_refs([RefUpdate(REF, three, one, "more patience")])
    finally:
        timer.join()
    assert git("rev-parse", REF, cwd=repo).strip() == three and not clearings


@pytest.mark.parametrize("path", ["run log", "light store"])
def test_the_hook_paths_wait_for_a_ref_lock_as_git_says_too(repo, ledger, path):
    """The agent hooks' ref moves (a run's log, the light store's updates: store/ref_files.py) waited a fixed
    2 s for a taken lock, whatever core.filesRefLockTimeout said; they honour it now, as the ledger's do:
    0 fails at once, 3000 waits a 0.3 s holder out, unset is git's 100 ms."""
    from git_lanes.store import ref_files
    from git_lanes.store.light import open_light

    one, two, three = ledger
    common = str(repo / ".git")

    def move(new: str, old: str) -> None:
        if path == "run log":
            ref_files.update_ref(common, REF, new, old, "hook", "Test <test@example.com>", time.time())
        else:
            open_light(repo).update_refs([RefUpdate(REF, new, old, "light")])

    lock = repo / ".git" / f"{REF}.lock"
    git("config", "core.filesRefLockTimeout", "0", cwd=repo)
    timer = _held_then_let_go(lock, 1.0)  # held open: stale.py leaves it
    started = time.monotonic()
    try:
        with pytest.raises(Conflict) as raised:
            move(two, one)
        waited = time.monotonic() - started
        assert lock.exists()  # the holder's lock, left to it (the light store's cleanup used to remove it)
    finally:
        timer.join()
    assert raised.value.code == "locked" and waited < 0.9 and git("rev-parse", REF, cwd=repo).strip() == one
    git("config", "core.filesRefLockTimeout", "3000", cwd=repo)
    timer = _held_then_let_go(lock, 0.3)
    try:
        move(two, one)
    finally:
        timer.join()
    git("config", "--unset", "core.filesRefLockTimeout", cwd=repo)
    timer = _held_then_let_go(lock, 0.03)
    try:
        move(three, two)  # a moment's holder (git pack-refs) is waited out under git's default
    finally:
        timer.join()
    assert git("rev-parse", REF, cwd=repo).strip() == three and not lock.exists()


def test_the_lock_timeouts_are_gits_unless_set(store, repo):
    assert (store._ref_lock_timeout(), store._ref_lock_timeout(packed=True)) == (100, 1000)
    git("config", "core.filesRefLockTimeout", "1k", cwd=repo)  # git's integer suffixes
    git("config", "core.packedRefsTimeout", "-1", cwd=repo)  # for ever
    reopened = open_store(repo)
    assert (reopened._ref_lock_timeout(), reopened._ref_lock_timeout(packed=True)) == (1024, -1)


def test_an_uncontended_move_reads_no_lock_timeout(store, ledger, monkeypatch):
    def never(self, packed=False):
        raise AssertionError("read core.filesRefLockTimeout with no lock in the way")

    one, two, _ = ledger
    monkeypatch.setattr(Store, "_ref_lock_timeout", never)
    store.update_refs([RefUpdate(REF, two, one, "free")])
    assert store.read_ref(REF) == two


def test_a_ref_lock_a_live_git_holds_closed_is_left_to_it(store, repo, ledger):
    """`git update-ref --stdin` holds the lock closed from `prepare` to `commit` (as `git pack-refs` does
    while it prunes a packed ref's loose file): cleared as abandoned, git would then move or delete the ref
    under our move. Our move is refused instead, and git's commit goes through."""
    one, two, three = ledger
    git_side = _git_prepared(repo, one, two)
    try:
        with pytest.raises(Conflict) as raised:
            store.update_refs([RefUpdate(REF, three, one, "while git prepares")])
    finally:
        out, err = git_side.communicate("commit\n", timeout=30)
    assert raised.value.code == "locked"
    assert git_side.returncode == 0 and out == "commit: ok\n", err
    assert git("rev-parse", REF, cwd=repo).strip() == two


HOUSEKEEPER = """
n=0
while [ ! -e "$1" ]; do
  git reflog expire --expire=now --all 2>/dev/null
  git pack-refs --all 2>/dev/null
  n=$((n+1))
done
echo $n
"""

POSTER = """
import sys
from git_lanes.api import Lanes

api = Lanes(sys.argv[1])
for i in range(int(sys.argv[3])):
    print(api.board_post(f"{sys.argv[2]} {i}", sys.argv[2])["op"], flush=True)
"""


def test_appends_while_git_expires_reflogs_and_packs_refs_all_succeed(repo):
    """git's housekeeping (`git reflog expire`, `git pack-refs`, as `git gc --auto` runs them) takes the
    ledger's lock for moments, over and over: every append waits that out as git would, none fails and none
    is lost. (Before, about one post in 450 failed with exit 3 while `git reflog expire --all` looped.)"""
    from git_lanes import ledger
    from git_lanes.api import Lanes

    Lanes(repo).board_post("first", "lead")
    stop = repo.parent / "stop-housekeeping"
    keeper = subprocess.Popen(["sh", "-c", HOUSEKEEPER, "sh", str(stop)], cwd=repo, stdout=subprocess.PIPE,
                              text=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    each, processes = 60, 3
    try:
        posters = [subprocess.Popen([sys.executable, "-c", POSTER, str(repo), f"p{n}", str(each)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for n in range(processes)]
        results = [poster.communicate(timeout=600) for poster in posters]
    finally:
        stop.touch()
        rounds, _ = keeper.communicate(timeout=60)
    for poster, (out, err) in zip(posters, results):
        assert poster.returncode == 0 and len(out.split()) == each, err
    assert int(rounds) >= 20, rounds  # the housekeeping did run throughout
    store = Lanes(repo).ctx.store
    ops = {op.id for op in ledger.ops_between(store, None, store.read_ref(REF))}
    acknowledged = {op for out, _ in results for op in out.split()}
    assert len(acknowledged) == each * processes and acknowledged <= ops
    fsck_clean(repo)


def test_the_ledger_is_read_as_libgit2_reads_it_and_a_plain_one_without_libgit2(store, repo, ledger, monkeypatch):
    """The ledger's ref, read on every append, is read from its file where git wrote it plainly; whatever else
    is there (packed, symbolic, written by hand) is libgit2's to read, and reads as it always did."""
    one, two, _ = ledger
    asked: list[str] = []
    original = pygit2.repository.References.get

    def spy(self, name):
        asked.append(name)
        return original(self, name)

    monkeypatch.setattr(pygit2.repository.References, "get", spy)
    assert store.read_ref(REF) == one and asked == []  # as git writes it: no libgit2
    path = repo / ".git" / REF
    git("pack-refs", "--all", cwd=repo)  # no loose file
    assert not path.exists() and store.read_ref(REF) == one and asked == [REF]
    def outcome(read):
        try:
            return read()
        except (ValueError, pygit2.GitError) as exc:  # a damaged file: raised, as libgit2 raises it
            return type(exc).__name__

    def libgit2s():
        fresh = original(pygit2.Repository(str(repo)).references, REF)
        return None if fresh is None else str(fresh.resolve().target)

    main = git("rev-parse", "refs/heads/main", cwd=repo).strip()
    seen = []
    for text in (f"{two}", f"{two}\r\n", f"{two.upper()}\n", f"{two}\n\n", "ref: refs/heads/main\n", f"{two[:39]}\n"):
        path.write_text(text)
        theirs = outcome(libgit2s)
        asked.clear()
        assert outcome(lambda: store.read_ref(REF)) == theirs, text
        assert asked == [REF], text  # not as git writes it: libgit2 read it
        seen.append(theirs)
    assert seen == [two, two, two, two, main, "GitError"]
