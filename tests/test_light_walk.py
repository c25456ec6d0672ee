"""The light store's history walk (store/light.py `_rev_list`): read from `git log HEAD` as git prints it and
stopped at the ancestor, it answers exactly what `git log HEAD ^ANCESTOR` answers, and hands a history it
cannot read that way (a merge in the range, an ancestor that is none) to that exact query. A log started ahead
(`start_log`, the light sync's head start) gives the same answer, and one never taken is stopped and reaped."""

from __future__ import annotations

import signal

import pytest
from conftest import git

from git_lanes.store.light import LightStore, open_light


def commit(repo, message: str, *parents: str) -> str:
    tree = git("rev-parse", "HEAD^{tree}", cwd=repo).strip()
    return git("commit-tree", tree, "-m", message, *(part for p in parents for part in ("-p", p)), cwd=repo).strip()


def line_of(repo, base: str, count: int, name: str = "step") -> list[str]:
    """`count` single-parent commits on top of `base`, oldest first (dates are pinned: `name` tells two lines
    from one base apart)."""
    made = [base]
    for number in range(count):
        made.append(commit(repo, f"{name} {number}\n\nbody {number}", made[-1]))
    return made[1:]


def exact(repo, ancestor: str | None, head: str) -> list[tuple[str, tuple[str, ...]]]:
    """What `git log head ^ancestor` says, newest first."""
    out = git("log", "--format=%H %P", head, *([f"^{ancestor}"] if ancestor else []), "--", cwd=repo)
    return [(line.split()[0], tuple(line.split()[1:])) for line in out.splitlines()]


def walked(store: LightStore, ancestor: str | None, head: str, *, exact_calls: list) -> list:
    original = store._exact

    def counted(a, h):
        exact_calls.append((a, h))
        return original(a, h)

    store._exact = counted  # type: ignore[method-assign]
    return store._rev_list(ancestor, head)


def test_a_line_is_read_as_git_prints_it_and_stopped_at_the_ancestor(repo):
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    line = line_of(repo, base, 30)
    store, calls = open_light(repo), []
    assert walked(store, line[4], line[-1], exact_calls=calls) == exact(repo, line[4], line[-1])
    assert len(store._rev_list(line[4], line[-1])) == 25 and calls == []  # no second git
    assert store.is_ancestor(line[4], line[-1]) and store.count_between(line[4], line[-1]) == 25
    assert walked(store, None, line[-1], exact_calls=calls) == exact(repo, None, line[-1]) and calls == []
    info = store.commit_info(line[-1])
    assert (info.message, info.parents) == ("step 29\n\nbody 29\n", (line[-2],))


def test_a_merge_or_an_ancestor_that_is_none_goes_to_the_exact_query(repo):
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    left, right = line_of(repo, base, 20), line_of(repo, base, 3, "other")
    merged = commit(repo, "merge", left[-1], right[-1])
    top = line_of(repo, merged, 2)[-1]
    store, calls = open_light(repo), []
    assert walked(store, left[2], top, exact_calls=calls) == exact(repo, left[2], top)
    assert calls == [(left[2], top)]
    assert not store.is_ancestor(right[-1], left[-1])  # diverged: walked to the root, then asked exactly
    assert walked(store, right[-1], left[-1], exact_calls=calls) == exact(repo, right[-1], left[-1])
    assert calls[-1] == (right[-1], left[-1])


def test_a_log_started_ahead_answers_the_same(repo):
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    line = line_of(repo, base, 40)
    store, calls = open_light(repo), []
    store.start_log(line[9], line[-1])
    assert store._started_log is not None
    assert walked(store, line[9], line[-1], exact_calls=calls) == exact(repo, line[9], line[-1]) and calls == []
    assert store._started_log is None  # taken by the walk


def test_a_short_line_is_read_here_without_starting_git(repo):
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    line = line_of(repo, base, 20)
    store = open_light(repo)
    store.start_log(line[5], line[-1])  # 14 commits: a sync of a few ops runs no git beyond its fetch
    assert store._started_log is None
    assert store.is_ancestor(line[5], line[-1]) and store.count_between(line[5], line[-1]) == 14


def test_a_started_log_no_walk_took_is_stopped_and_reaped(repo):
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    line = line_of(repo, base, 20)
    store = open_light(repo)
    store.start_log(None, line[-1])
    assert store._started_log is not None
    started = store._started_log[1]
    store.stop_logs()
    assert store._started_log is None and started._proc.returncode is not None
    assert started._proc.returncode in (0, -signal.SIGKILL)  # finished or killed, and waited for either way


def test_a_record_cut_anywhere_by_the_pipe_reads_as_git_printed_it(repo):
    """git's output reaches the walk in pieces of any size, cut anywhere: each record reads the same as from
    one piece."""
    from git_lanes.store import light_log

    base = git("rev-parse", "HEAD", cwd=repo).strip()
    first = commit(repo, "été\n\n{\"text\": \"naïve — 🚀\"}\n{\"edits\": {}}", base)
    head = commit(repo, "second\n\nbody ✓", first)
    printed = git("--no-replace-objects", *light_log._log_args(head)[1:], cwd=repo).encode()

    def read(pieces: list[bytes]) -> list:
        walk = light_log._LogWalk(base)
        for piece in pieces:
            if not walk.take(piece):
                break
        return walk.read

    whole = read([printed])
    assert whole == [(head, (first,)), (first, (base,))]
    for cut in range(1, len(printed)):
        assert read([printed[:cut], printed[cut:]]) == whole, cut
    assert read([printed[at:at + 1] for at in range(len(printed))]) == whole


def test_the_log_is_written_a_block_at_a_time(repo, monkeypatch):
    """Into a pipe git flushes after every commit unless told otherwise: a write, and a wake-up of the walk,
    per commit. The walk's git is told to buffer (GIT_FLUSH=0) whatever the caller's environment says."""
    from git_lanes.store import light_log

    monkeypatch.setenv("GIT_FLUSH", "1")
    assert light_log._log_env()["GIT_FLUSH"] == "0"
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    line = line_of(repo, base, 20)
    store = open_light(repo)
    assert store._rev_list(base, line[-1]) == exact(repo, base, line[-1])


def test_an_empty_tree_already_stored_is_freshened_not_written_again(repo):
    """Every operation-log entry names git's empty tree: when its loose object is there, the light store
    touches it (as git freshens an object it would write) instead of writing a temporary copy."""
    import os
    import time

    from git_lanes.store.light import EMPTY_TREE

    assert git("hash-object", "-t", "tree", "/dev/null", cwd=repo).strip() == EMPTY_TREE
    folder = repo / ".git" / "objects" / EMPTY_TREE[:2]
    loose = folder / EMPTY_TREE[2:]
    if loose.exists():
        loose.chmod(0o644)
        loose.unlink()
    store = open_light(repo)
    assert store.empty_tree() == EMPTY_TREE and loose.exists()  # missing: written
    assert git("cat-file", "-t", EMPTY_TREE, cwd=repo).strip() == "tree"
    long_ago = time.time() - 3600
    os.utime(loose, (long_ago, long_ago))
    before = set(os.listdir(folder))
    written = []
    store.objects.write = lambda *args: written.append(args)  # type: ignore[method-assign]
    assert store.empty_tree() == EMPTY_TREE
    assert written == [] and set(os.listdir(folder)) == before
    assert loose.stat().st_mtime > long_ago + 3000  # freshened, as a gc racing it must see
