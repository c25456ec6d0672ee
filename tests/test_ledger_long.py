"""Reads stay flat in the ledger's length (issue 15): at 100,000 ops `task list`, `board read` and the
other reads touch the same objects as at a few hundred, because they read a checkpoint's tree and the
messages of at most `CHECKPOINT_EVERY - 1` commits after it, never the history. Proved without timing: the
100,000-op ledger's history is then deleted outright (all but the last checkpoint), and every read (and an
append) still works, reading exactly the objects the short ledger's reads do."""

from __future__ import annotations

import hashlib
import random
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from conftest import git
from ledger_helpers import Clock

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain.coordination import FOLD
from git_lanes.ledger.op import encode_message, make_op
from git_lanes.model.refs import LEDGER
from git_lanes.store import RefUpdate

LONG = 100_000
SHORT_PAD = 100  # more than CHECKPOINT_EVERY: the short ledger's reads stop at a checkpoint too
PADDING_READER = "reader"


def live_state(api: Lanes, clock: Clock) -> None:
    """The same live state in both ledgers: tasks (some claimed, some done, one waiting on another), agents,
    posts to everyone and to one agent."""
    tasks = [api.task_create(f"task {i}", actor="lead")["task"] for i in range(12)]
    api.task_dep_add(tasks[1], tasks[0], actor="lead")
    for n, task in enumerate(tasks[:6]):
        api.task_claim(task, f"coder-{n % 3}", ahead=True)  # task 1 waits on task 0: claimed ahead
    api.task_done(tasks[0], actor="coder-0")
    for n in range(4):
        api.board_post(f"progress {n}", f"coder-{n % 3}")
    api.board_post("a question for the reader", "coder-1", kind="question", to=PADDING_READER)
    clock.advance(5)


def pad(repo: Path, count: int, clock: Clock) -> None:
    """`count` more ledger commits on the head, each a real op (the reader marking the board read through
    #0, which changes nothing) and each a checkpoint holding the whole state, as a writer that took the op
    would write it, all but the last stored as one pack of whole objects (git fast-import takes ~10 s for
    this, deltifying each commit against the last)."""
    store = Lanes(repo).ctx.store
    head = git("rev-parse", "refs/lanes/ledger", cwd=repo).strip()
    tree = ledger.log.state_tree(store, head)
    template = make_op("board.read", PADDING_READER, {"agent": PADDING_READER, "through": 0}, clock.now)
    message = encode_message(template.with_result({"agent": PADDING_READER, "cursor": 0}),
                             f"{PADDING_READER}: read board through #0").encode()
    assert message.count(template.id.encode()) == 1 and message.count(b"%") == 0
    message = message.replace(template.id.encode(), b"%016x")
    parent = head
    objects = []
    for i in range(count):
        when = int(clock.now) + i // 1000
        body = b"tree %s\nparent %s\nauthor %s <agent@lanes> %d +0000\ncommitter %s <agent@lanes> %d +0000\n\n" \
            % (tree.encode(), parent.encode(), PADDING_READER.encode(), when, PADDING_READER.encode(), when) \
            + message % random.getrandbits(64)
        oid = hashlib.sha1(b"commit %d\0" % len(body) + body).digest()
        objects.append((oid, body))
        parent = oid.hex()
    write_pack(repo / ".git" / "objects" / "pack", objects[:-1])
    last = subprocess.run(["git", "hash-object", "-w", "-t", "commit", "--stdin"], input=objects[-1][1], cwd=repo,
                          capture_output=True, check=True).stdout.decode().strip()
    assert last == parent
    git("update-ref", "refs/lanes/ledger", parent, head, cwd=repo)
    clock.advance(count / 1000 + 1)


def write_pack(folder: Path, commits: list[tuple[bytes, bytes]]) -> None:
    """A pack (v2) of whole commit objects and its index (v2), as git's pack-format documentation has them."""
    data = bytearray(b"PACK" + struct.pack(">II", 2, len(commits)))
    rows = []
    for oid, body in commits:
        size, header = len(body), bytearray()
        byte = (1 << 4) | (size & 0x0F)  # type 1: commit
        size >>= 4
        while size:
            header.append(byte | 0x80)
            byte, size = size & 0x7F, size >> 7
        header.append(byte)
        entry = bytes(header) + zlib.compress(body, 1)
        rows.append((oid, zlib.crc32(entry), len(data)))
        data += entry
    pack_sum = hashlib.sha1(data).digest()
    rows.sort()
    fanout = [0] * 256
    for oid, _, _ in rows:
        fanout[oid[0]] += 1
    index = bytearray(b"\377tOc" + struct.pack(">I", 2))
    total = 0
    for count in fanout:
        total += count
        index += struct.pack(">I", total)
    index += b"".join(oid for oid, _, _ in rows)
    index += b"".join(struct.pack(">I", crc) for _, crc, _ in rows)
    index += b"".join(struct.pack(">I", offset) for _, _, offset in rows)
    index += pack_sum
    index += hashlib.sha1(index).digest()
    name = folder / f"pack-{pack_sum.hex()}"
    name.with_suffix(".pack").write_bytes(bytes(data) + pack_sum)
    name.with_suffix(".idx").write_bytes(bytes(index))


def objects_read(repo: Path, clock: Clock, read) -> int:
    """How many objects (commits, trees, records) a fresh process's read pulls from the repository."""
    api = Lanes(repo, clock=clock)
    read(api)
    cache = api.ctx.store._records
    return len(cache._trees) + len(cache._blobs) + len(cache._commit_trees)


READS = {
    "task list": lambda api: api.task_list(),
    "task list --ready": lambda api: api.task_list(ready=True),
    "board read (all)": lambda api: api.board_read(limit=20),
    "agent list": lambda api: api.agent_list(),
    "claim list": lambda api: api.claim_list(),
    "ticket list": lambda api: api.ticket_list(),
}


def replay(repo: Path, ops: list) -> None:
    """Apply `ops` (keeping their ids and times) on the ledger's head, as sync replays ops, and move the ref."""
    store = Lanes(repo).ctx.store
    with store.locked():
        base = head = ledger.head(store)
        for op in ops:
            head, result = ledger.apply_op(store, head, op, FOLD)
            assert head is not None, result
        store.update_refs([RefUpdate(LEDGER, head, base, "test: replay")])


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory) -> dict[str, tuple[Path, Clock]]:
    """Two ledgers whose heads hold the same state, the ops of one made through the API (`source`): a short
    one with SHORT_PAD padding ops between the first two and the rest, and a long one with LONG - len(ops)."""
    built: dict[str, tuple[Path, Clock]] = {}
    for name in ("source", "short", "long"):
        root = tmp_path_factory.mktemp(name) / "repo"
        root.mkdir()
        (root / "README.md").write_text("# project\n")
        Lanes.init(root, "main")
        built[name] = (root, Clock())
    source, clock = built["source"]
    api = Lanes(source, clock=clock)
    api.agent_register(PADDING_READER)
    api.board_read(PADDING_READER)
    live_state(api, clock)
    ops = ledger.ops_between(api.ctx.store, None, ledger.head(api.ctx.store))
    for name, padding in (("short", SHORT_PAD), ("long", LONG - len(ops))):
        repo, repo_clock = built[name]
        replay(repo, ops[:2])
        pad(repo, padding, repo_clock)  # repo_clock stays at the start: op times are the ops' own
        replay(repo, ops[2:])
        repo_clock.now = clock.now
    return built


def state_tree(repo: Path) -> str:
    store = Lanes(repo).ctx.store
    return ledger.log.state_tree(store, ledger.head(store))


def test_a_100000_op_ledger_reads_what_a_short_one_reads_and_needs_no_history(ledgers):
    short, short_clock = ledgers["short"]
    long, long_clock = ledgers["long"]
    count = int(git("rev-list", "--count", "refs/lanes/ledger", cwd=long))
    assert count == LONG
    assert int(git("rev-list", "--count", "refs/lanes/ledger", cwd=short)) < SHORT_PAD + 40
    assert state_tree(long) == state_tree(short)  # the precondition: the same live state

    for name, read in READS.items():
        assert objects_read(long, long_clock, read) == objects_read(short, short_clock, read), name

    # Delete the history: the pack `pad` wrote holds every padding commit but the last, and only them (the
    # others are the few small packs the replayed ops' checkpoints wrote).
    packs = sorted((long / ".git" / "objects" / "pack").glob("*.pack"), key=lambda pack: pack.stat().st_size)
    assert packs[-1].stat().st_size > 100 * packs[0].stat().st_size
    for file in packs[-1].parent.glob(packs[-1].stem + ".*"):
        file.unlink()
    broken = subprocess.run(["git", "rev-list", "--count", "refs/lanes/ledger"], cwd=long, capture_output=True)
    assert broken.returncode != 0  # the precondition: git cannot walk the history any more

    api = Lanes(long, clock=long_clock)
    tasks = api.task_list()
    assert len(tasks) == 12 and sum(t.status == "done" for t in tasks) == 1
    assert {t.title for t in api.task_list(ready=True)} == {f"task {i}" for i in range(6, 12)}
    read = api.board_read(PADDING_READER)  # marks the question read: an append on the history-less ledger
    assert [p.text for p in read.posts if p.unread] == [f"progress {n}" for n in range(4)] + \
        ["a question for the reader"]
    assert api.board_read(PADDING_READER, unread_only=True).posts == ()
    for name, reader in READS.items():
        reader(api)
