"""The ledger's delta commits (issue 15): an append writes its commit alone, carrying the records its op wrote;
every 32nd commit is a checkpoint whose tree is the whole state. Whatever reads the ledger (the API, a fresh
process, the agent hook's own object reader, dulwich as a second implementation) sees the same state after
every op, across checkpoints and deletions."""

from __future__ import annotations

import json

import pytest
from conftest import git, run_cli
from dulwich.repo import Repo
from hook_helpers import decision, hook, lane, set_policy, write
from ledger_helpers import Clock, ledger_head, ledger_message, ledger_op

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain.coordination import FOLD
from git_lanes.errors import UnsupportedFormat
from git_lanes.model import ledger_delta
from git_lanes.model.ledger_delta import CHECKPOINT_EVERY
from git_lanes.store import RefUpdate


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


def dulwich_state(repo, rev: bytes = b"refs/lanes/ledger") -> dict[str, dict]:
    """Every record of the state after `rev`, read by dulwich by the README's rule: the edits of the delta
    commits back to the nearest checkpoint, laid over that checkpoint's tree."""
    store = Repo(str(repo))
    commit = store[store.refs[rev]]
    edits: list[dict] = []
    while True:
        body = commit.message.decode().partition("\n\n")[2]
        edits_line = body.partition("\n")[2].strip()  # a delta's edits: the line after its op's JSON
        if not edits_line:
            break
        edits.append(json.loads(edits_line)["edits"])
        commit = store[commit.parents[0]]
    state = {}
    for entry in store.object_store.iter_tree_contents(commit.tree):
        state[entry.path.decode()] = json.loads(store[entry.sha].data)
    for changed in reversed(edits):
        for path, record in changed.items():
            if record is None:
                state.pop(path, None)
            else:
                state[path] = record
    return state


def api_state(api: Lanes) -> dict[str, dict]:
    state = ledger.state_at(api.ctx.store, ledger.head(api.ctx.store))
    paths = [path for name in state.names("") for path in state.files(name)]
    return {path: state.get(path) for path in paths if state.get(path) is not None}


def test_every_reader_sees_the_same_state_after_every_op_across_checkpoints(lanes, repo):
    task = lanes.task_create("t", actor="lead")["task"]
    seen = set()
    for i in range(CHECKPOINT_EVERY + 8):
        if i % 3 == 0:
            lanes.claim_add(["src/**"], "coder-1")
        elif i % 3 == 1:
            lanes.claim_release("coder-1")  # deletes claims/coder-1.json, emptying claims/
        else:
            lanes.board_post(f"post {i}", "coder-1")
        seen.add(ledger.log.is_checkpoint(lanes.ctx.store, ledger_head(repo)))
        fresh = Lanes(repo, clock=lanes.ctx.clock)  # a new process's reader: no state remembered
        ledger_delta._KNOWN.clear()
        expected = dulwich_state(repo)
        assert api_state(fresh) == expected == api_state(lanes)
        assert ("claims" in ledger.state_at(fresh.ctx.store, ledger_head(repo)).names("")) == \
            any(path.startswith("claims/") for path in expected)
    assert seen == {True, False}
    assert [t.id for t in lanes.task_list()] == [task]


@pytest.mark.parametrize("padding", [0, CHECKPOINT_EVERY - 1])  # the replay a delta, then the checkpoint
def test_a_replayed_op_writes_the_same_commit_on_the_same_base(lanes, repo, padding):
    """Sync replays an op on a head a process may or may not have remembered: the records, the message and
    whether the commit is a checkpoint (so its tree) depend on the base and the op alone."""
    store = lanes.ctx.store
    lanes.agent_register("a")
    for i in range(padding):
        lanes.board_post(f"padding {i}", "a")
    base = ledger_head(repo)
    op = ledger.make_op("board.post", "a", {"text": "hi", "kind": "note", "to": None}, 1_800_000_000.0)
    first, _ = ledger.apply_op(store, base, op, FOLD)  # on a base this process remembers
    ledger_delta._KNOWN.clear()
    second, _ = ledger.apply_op(store, base, op, FOLD)  # on the same base read afresh
    assert first is not None and second is not None
    made = [(git("log", "-1", "--format=%T%n%B", commit, cwd=repo), ledger.log.is_checkpoint(store, commit))
            for commit in (first, second)]
    assert made[0] == made[1] and made[0][1] == (padding == CHECKPOINT_EVERY - 1)
    edits_line = made[0][0].partition("\n\n")[2].partition("\n")[2]
    assert padding or "board/00/00/00/00000001.json" in json.loads(edits_line)["edits"]


def test_the_agent_hook_sees_file_claims_made_and_released_in_delta_commits(repo):
    set_policy(repo, '[claims]\nforeign_writes = "deny"\n')
    ws = lane(repo)
    started = run_cli("run", "start", "--agent", "coder-2", "--phase", "execute", cwd=ws)
    env = {"GIT_LANES_RUN": started.out.strip()}
    assert run_cli("agent", "register", "coder-1", cwd=repo).code == 0  # the first op: a checkpoint
    assert run_cli("claim", "add", "src/**", "--agent", "coder-1", cwd=repo).code == 0
    assert not ledger.log.is_checkpoint(Lanes(repo).ctx.store, ledger_head(repo))  # the claim rides in a delta
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "src" / "a.py"), env=env))
    assert verdict == "deny" and "claimed by coder-1" in reason
    api = Lanes(repo)
    for i in range(CHECKPOINT_EVERY):  # past a checkpoint, then the release in a delta after it
        api.board_post(f"note {i}", "coder-3")
    assert run_cli("claim", "release", "--agent", "coder-1", cwd=repo).code == 0
    assert decision(hook("claude", "PreToolUse", write(ws, ws / "src" / "a.py", "t2"), env=env))[0] == "allow"


def test_edits_that_name_no_record_path_fail_reads_clearly(lanes, repo):
    lanes.agent_register("a")
    head = ledger_head(repo)
    tree = git("rev-parse", f"{head}^{{tree}}", cwd=repo).strip()
    op = ledger_op(repo, head)
    op["edits"] = {"../outside.json": {"format": 1}}
    commit = git("commit-tree", tree, "-p", head, "-m", ledger_message("a peer's op", op), cwd=repo).strip()
    lanes.ctx.store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: a peer's bad edits")])
    ledger_delta._KNOWN.clear()
    with pytest.raises(UnsupportedFormat, match="not record paths"):
        Lanes(repo).agent_list()
    listed = run_cli("agent", "list", cwd=repo)
    assert listed.code != 0 and "not record paths" in listed.err and "Traceback" not in listed.err
    doctor = run_cli("doctor", "--check", "ledger", cwd=repo)
    assert doctor.code != 0 and "not record paths" in doctor.out + doctor.err and "Traceback" not in doctor.err
    # doctor prints the error's hint: it says what to do, not "`git lanes doctor` reports it"
    [found] = run_cli("doctor", "--check", "ledger", "--json", cwd=repo).json["checks"]
    assert found["hint"] == (f"a newer git-lanes or a damaged peer wrote it: upgrade git-lanes on every machine; "
                             f"`git show {commit[:8]}` shows the op and who made it, for them to repair the ledger "
                             "they push")


def test_a_record_a_peer_wrote_as_no_object_is_set_aside_by_listings(lanes, repo):
    task = lanes.task_create("kept", actor="lead")["task"]
    other = lanes.task_create("odd", actor="lead")["task"]
    head = ledger_head(repo)
    tree = git("rev-parse", f"{head}^{{tree}}", cwd=repo).strip()
    op = ledger_op(repo, head)
    op["edits"] = {f"tasks/{other[:2]}/{other}.json": 5}
    commit = git("commit-tree", tree, "-p", head, "-m", ledger_message("a peer's op", op), cwd=repo).strip()
    lanes.ctx.store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: a peer's odd record")])
    assert [t.id for t in Lanes(repo).task_list()] == [task]
    shown = run_cli("task", "show", other[:8], cwd=repo)
    assert shown.code == 1 and "is not a JSON object" in shown.err and "Traceback" not in shown.err


def peer_delta(lanes, repo, edits) -> str:
    """A delta commit a peer wrote on the ledger's head, carrying `edits`, moved in as a sync would."""
    head = ledger_head(repo)
    tree = git("rev-parse", f"{head}^{{tree}}", cwd=repo).strip()
    op = ledger_op(repo, head)
    op["edits"] = edits
    commit = git("commit-tree", tree, "-p", head, "-m", ledger_message("a peer's op", op), cwd=repo).strip()
    lanes.ctx.store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: a peer's edits")])
    ledger_delta._KNOWN.clear()
    return commit


@pytest.mark.parametrize("edits", [
    [{"tasks": None}],  # a folder deleted whole: listings read on, the next checkpoint drops every task
    [{"tasks": {"format": 1}}, {"tasks/x.json": {"format": 1}}],  # a record, then a folder at the same path
    [{"claims/coder-1.json/y.json": {"format": 1}}],  # a folder where the tree holds a record
    [{".git/hooks.json": {"format": 1}}],  # a tree git refuses to check out, fsck flags
    [{"claims/.GIT/x.json": {"format": 1}}],
])
def test_edits_that_could_not_be_a_tree_fail_reads_instead_of_losing_records_at_the_next_checkpoint(
        lanes, repo, edits):
    task = lanes.task_create("kept", actor="lead")["task"]
    lanes.claim_add(["src/**"], "coder-1")
    for each in edits:
        peer_delta(lanes, repo, each)
    with pytest.raises(UnsupportedFormat, match="not record paths"):
        Lanes(repo).task_list()
    made = run_cli("board", "post", "hi", "--agent", "a", cwd=repo)  # no checkpoint is built on it
    assert made.code != 0 and "not record paths" in made.err and "Traceback" not in made.err
    doctor = run_cli("doctor", "--check", "ledger", cwd=repo)
    assert doctor.code != 0 and "not record paths" in doctor.out + doctor.err
    assert task in git("show", f"{ledger_head(repo)}~{len(edits)}:tasks/{task[:2]}", cwd=repo)


@pytest.mark.parametrize("path, record", [
    ("claims/coder-9.json", {"format": 1, "agent": "coder-9", "globs": 5}),
    ("claims/coder-9.json", {"format": 1, "agent": "coder-9", "globs": ["src/**"]}),
    ("exclusive/abcd.json", {"format": 1, "task": "abcd", "globs": 5}),
    ("exclusive/abcd.json", {"format": 1, "task": 5}),
    ("exclusive/abcd.json", {"format": 1, "task": "ab" * 8, "globs": "src/**"}),
    ("exclusive/abcd.json", {"format": 1, "task": "ab" * 8, "globs": [5]}),
])
def test_a_claim_a_peer_wrote_malformed_is_left_out_by_listings_and_the_agent_hook_alike(repo, path, record):
    set_policy(repo, '[claims]\nforeign_writes = "deny"\n')
    ws = lane(repo)
    started = run_cli("run", "start", "--agent", "coder-2", "--phase", "execute", cwd=ws)
    env = {"GIT_LANES_RUN": started.out.strip()}
    assert run_cli("claim", "add", "src/**", "--agent", "coder-1", cwd=repo).code == 0
    lanes = Lanes(repo)
    peer_delta(lanes, repo, {path: record})
    # the hook enforces the claims `claim list` shows, and only those: no internal error denying every write
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "src" / "a.py"), env=env))
    assert verdict == "deny" and "claimed by coder-1" in reason
    assert decision(hook("claude", "PreToolUse", write(ws, ws / "notes.md", "t2"), env=env))[0] == "allow"
    listed = run_cli("claim", "list", "--json", cwd=repo)
    assert listed.code == 0 and "Traceback" not in listed.err, listed.err
    assert {row["agent"] for row in json.loads(listed.out)} == {"coder-1"}
    doctor = run_cli("doctor", "--check", "ledger", cwd=repo)
    assert doctor.code != 0 and path in doctor.out


def test_threads_remembering_ledger_states_at_once_never_fail():
    """`serve` reads and writes on two threads; both remember states in the one per-process cache."""
    import sys
    import threading

    errors: list[BaseException] = []

    def remember_many(thread: int) -> None:
        try:
            for i in range(100_000):
                ledger_delta.remember(f"{thread}-{i}", ledger_delta.EMPTY)
        except BaseException as exc:  # noqa: BLE001  (the assertion below reports it)
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can, so evictions overlap
    try:
        threads = [threading.Thread(target=remember_many, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        ledger_delta._KNOWN.clear()
    assert errors == []


def test_edits_under_a_key_spelled_with_escapes_are_read_as_plain_git_reads_them(lanes, repo):
    from ledger_helpers import ledger_record

    lanes.claim_add(["src/**"], "coder-1")
    head = ledger_head(repo)
    tree = git("rev-parse", f"{head}^{{tree}}", cwd=repo).strip()
    op = ledger_op(repo, head)
    op.pop("edits", None)
    body = json.dumps(op) + '\n{"\\u0065dits": {"claims/coder-1.json": null}}'
    commit = git("commit-tree", tree, "-p", head, "-m", f"a peer's op\n\n{body}", cwd=repo).strip()
    lanes.ctx.store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: a peer's edits")])
    ledger_delta._KNOWN.clear()
    assert ledger_record(repo, "claims/coder-1.json") is None
    assert Lanes(repo).claim_list(None) == [] and api_state(Lanes(repo)) == dulwich_state(repo)


def test_a_long_chain_of_deltas_a_peer_made_without_a_checkpoint_reads_in_linear_time():
    """A peer may push any number of delta commits with no checkpoint; every read (the hook's on each call)
    lays all of them over the tree, so that must cost in proportion to the chain, not its square. Here the
    first 50,000 are a state this process already knows, and 2,000 more come on top."""
    import time

    known = ledger_delta.Materialized("tree", {f"wakes/w{i}.json": {"format": 1} for i in range(50_000)}, 50_000)
    count = 2_000
    commits = {f"c{i}": ("tree", f"c{i - 1}" if i else "known",
                         f"op\n\n{{}}\n{json.dumps({'edits': {f'claims/a{i}.json': {'format': 1}}})}")
               for i in range(count)}
    ledger_delta._KNOWN.clear()
    ledger_delta.remember("known", known)
    started = time.perf_counter()
    state = ledger_delta.materialize(f"c{count - 1}", commits.__getitem__)
    took = time.perf_counter() - started
    ledger_delta._KNOWN.clear()
    assert state.tree == "tree" and state.depth == 50_000 + count and len(state.overlay) == 50_000 + count
    assert state.overlay["claims/a1.json"] == {"format": 1} and len(known.overlay) == 50_000
    assert took < 1, f"{took:.1f} s"  # linear: ~0.05 s; a copy of the overlay per commit: ~4 s


def test_a_ledger_fetched_shallow_fails_reads_clearly_instead_of_reading_and_syncing_an_empty_state(
        lanes, repo, tmp_path):
    task = lanes.task_create("kept", actor="lead")["task"]
    lanes.claim_add(["src/**"], "coder-1")
    lanes.board_post("a delta at the head", "coder-1")
    shallow = tmp_path / "shallow"
    git("clone", "-q", "--depth", "1", f"file://{repo}", str(shallow), cwd=tmp_path)
    git("fetch", "-q", "--depth", "1", "origin", "refs/lanes/ledger:refs/lanes/ledger", cwd=shallow)
    assert run_cli("init", cwd=shallow).code == 0
    for command in (["task", "list"], ["board", "post", "x", "--agent", "b"], ["sync"]):
        result = run_cli(*command, cwd=shallow)
        assert result.code != 0 and "shallow fetch" in result.err and "Traceback" not in result.err, command
    doctor = run_cli("doctor", "--check", "ledger", cwd=shallow)
    assert doctor.code != 0 and "shallow fetch" in doctor.out
    assert [t.id for t in Lanes(repo).task_list()] == [task] and Lanes(repo).claim_list(None)  # nothing pushed
    git("fetch", "-q", "--unshallow", "origin", "refs/lanes/ledger:refs/lanes/ledger", cwd=shallow)
    listed = run_cli("task", "list", "--json", cwd=shallow)
    assert listed.code == 0 and [t["id"] for t in listed.json] == [task]


def test_a_delta_a_peer_wrote_with_no_parent_fails_reads_clearly(lanes, repo):
    lanes.task_create("kept", actor="lead")
    head = ledger_head(repo)
    tree = git("rev-parse", f"{head}^{{tree}}", cwd=repo).strip()
    op = ledger_op(repo, head)
    op["edits"] = {"claims/coder-2.json": {"format": 1, "agent": "coder-2", "globs": []}}
    commit = git("commit-tree", tree, "-m", ledger_message("a peer's op", op), cwd=repo).strip()
    lanes.ctx.store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: a peer's root delta")])
    ledger_delta._KNOWN.clear()
    listed = run_cli("task", "list", cwd=repo)
    assert listed.code != 0 and "not the commit they apply to" in listed.err and "Traceback" not in listed.err


def test_doctor_warns_of_a_full_tree_an_older_git_lanes_wrote_over_delta_commits(lanes, repo):
    for i in range(CHECKPOINT_EVERY + 4):  # a checkpoint after the first, and deltas after: nothing to warn of
        lanes.board_post(f"note {i}", "coder-1")
    clean = run_cli("doctor", "--check", "ledger", cwd=repo)
    assert clean.code == 0 and clean.out.startswith("ok"), clean.out
    lanes.claim_add(["src/**"], "coder-1")  # a delta: a git-lanes from before deltas reads past it
    head = ledger_head(repo)
    op = ledger_op(repo, head)
    op.pop("edits")
    op["id"] = "ab" * 8
    tree = git("rev-parse", f"{head}^{{tree}}", cwd=repo).strip()  # the last checkpoint's, as it would read it
    commit = git("commit-tree", tree, "-p", head, "-m", ledger_message("older: an op", op), cwd=repo).strip()
    lanes.ctx.store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: an older git-lanes")])
    doctor = run_cli("doctor", "--check", "ledger", cwd=repo)
    assert doctor.out.startswith("warn") and f"{commit[:8]} (over 4 delta commits)" in doctor.out, doctor.out


def test_doctor_names_an_op_a_newer_git_lanes_wrote_as_such_not_as_an_older_ones(lanes, repo):
    # A peer's newer git-lanes appended an op of format 2, whose commit holds no edits this version reads:
    # doctor called it "a git-lanes from before delta commits" and said to upgrade the other machines.
    for i in range(CHECKPOINT_EVERY + 4):
        lanes.board_post(f"note {i}", "coder-1")
    head = ledger_head(repo)
    op = ledger_op(repo, head)
    op.pop("edits", None)
    op.update(id="cd" * 8, format=2)
    tree = git("rev-parse", f"{head}^{{tree}}", cwd=repo).strip()
    commit = git("commit-tree", tree, "-p", head, "-m", ledger_message("newer: an op", op), cwd=repo).strip()
    lanes.ctx.store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: a newer git-lanes")])
    lanes.board_post("after it", "coder-1")  # this version appends on: the newer op's state is its parent's tree
    doctor = run_cli("doctor", "--check", "ledger", cwd=repo)
    assert doctor.out.startswith("warn") and "before delta commits" not in doctor.out, doctor.out
    assert f"{commit[:8]} (format 2)" in doctor.out and "upgrade git-lanes on this machine" in doctor.out + doctor.err
