"""File claims and dirty sets: glob overlap, warnings and wakes (never blocks), dirty sets computed from the
lane workspace with git, globs that escape the repository refused."""

from __future__ import annotations

import pytest
from conftest import workspace
from ledger_helpers import Clock, ledger_head

from git_lanes.api import Lanes
from git_lanes.domain.claims import glob_matches, globs_overlap
from git_lanes.errors import NotFound, UserError


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


@pytest.mark.parametrize("a,b,expected", [
    ("src/**", "src/auth/login.py", True),
    ("src", "src/auth/login.py", True),
    ("src/*.py", "src/auth/login.py", False),
    ("src/**/*.py", "src/auth/login.py", True),
    ("src/auth/*", "src/*/login.py", True),
    ("docs/**", "src/**", False),
    ("**/test_*.py", "tests/unit/test_x.py", True),
    ("src/a*.py", "src/b*.py", False),
    ("src/[ab].py", "src/a.py", True),
    ("**", "anything/at/all", True),
])
def test_glob_overlap(a, b, expected):
    assert globs_overlap(a, b) is expected
    assert globs_overlap(b, a) is expected


@pytest.mark.parametrize("glob,path,expected", [
    ("src/**", "src/a/b.py", True), ("src", "src/a.py", True), ("src", "srcx/a.py", False),
    ("*.py", "a.py", True), ("*.py", "d/a.py", False), ("**/*.py", "d/e/a.py", True),
])
def test_glob_matches(glob, path, expected):
    assert glob_matches(glob, path) is expected


def test_wildcard_match_is_fnmatchcase_without_a_regex():
    """The hook path's matcher for `*`-only patterns (claims, command rules) answers as fnmatchcase does, on
    every pattern and text up to five characters over an alphabet that makes the overlaps hard."""
    import itertools
    from fnmatch import fnmatchcase

    from git_lanes.model.globs import wildcard_match

    def words(alphabet: str):
        return ["".join(w) for n in range(6) for w in itertools.product(alphabet, repeat=n)]

    texts = words("ab\n")
    differ = [(p, t) for p in words("a*b") for t in texts if wildcard_match(t, p) != fnmatchcase(t, p)]
    assert differ == []
    assert wildcard_match("src/a.py", "src/[ab].py") and not wildcard_match("src/c.py", "src/?[ab].py")


def test_claims_warn_wake_and_never_block(lanes):
    lanes.agent_register("a")
    lanes.agent_register("b")
    lanes.claim_add(["src/auth/**"], "a")
    second = lanes.claim_add(["src/auth/login.py", "docs/**"], "b")
    assert second["claims"] == ["src/auth/login.py", "docs/**"]
    assert second["overlaps"] == [{"agent": "a", "glob": "src/auth/login.py", "claim": "src/auth/**"}]
    woke = lanes.wait("a", timeout=0)
    assert woke["reason"] == "overlap" and woke["wakes"][0]["agent"] == "b"
    # claiming the same globs again reports the overlap but wakes nobody anew
    assert lanes.claim_add(["src/auth/login.py"], "b")["added"] == []
    assert lanes.wait("a", timeout=0)["reason"] == "timeout"
    assert [(c["agent"], c["glob"]) for c in lanes.claim_list()] == [
        ("a", "src/auth/**"), ("b", "src/auth/login.py"), ("b", "docs/**")]
    assert lanes.claim_release("b", ["docs/**"])["claims"] == ["src/auth/login.py"]
    assert lanes.claim_release("b")["released"] == ["src/auth/login.py"]
    assert [c["agent"] for c in lanes.claim_list()] == ["a"]


def test_globs_escaping_the_repository_are_refused(lanes, repo):
    lanes.agent_register("a")
    head = ledger_head(repo)
    for glob in ["../outside/**", "/etc/passwd", "src/../../x", ".git/config", ""]:
        with pytest.raises(UserError):
            lanes.claim_add([glob], "a")
    with pytest.raises(UserError) as raised:
        lanes.claim_release("a", ["never/claimed"])
    assert raised.value.code == "unknown_claim"
    assert ledger_head(repo) == head


def test_dirty_set_is_computed_from_the_lane_workspace(lanes, repo):
    lanes.lane_create("feat-a")
    lanes.lane_create("feat-b")
    lanes.agent_register("a", lane="feat-a")
    lanes.agent_register("b", lane="feat-b")
    lanes.claim_add(["src/**"], "a")
    lanes.claim_add(["src/app.py"], "b")
    (workspace(repo, "feat-a") / "src" / "app.py").write_text("changed\n")
    (workspace(repo, "feat-a") / "notes.txt").write_text("new\n")
    published = lanes.dirty_publish("a")
    assert published["files"] == ["notes.txt", "src/app.py"]
    assert published["unclaimed"] == ["notes.txt"]
    assert published["overlaps"] == [{"agent": "b", "file": "src/app.py", "claim": "src/app.py"}]
    assert lanes.wait("b", timeout=0)["reason"] == "overlap"
    (workspace(repo, "feat-b") / "src" / "app.py").write_text("also changed\n")
    beat = lanes.agent_heartbeat("b")
    assert beat["dirty"]["files"] == ["src/app.py"]
    assert {"agent": "a", "file": "src/app.py", "dirty": True} in beat["dirty"]["overlaps"]
    assert [d["agent"] for d in lanes.dirty_list()] == ["a", "b"]
    (workspace(repo, "feat-a") / "src" / "app.py").write_text("print('hello')\n")
    (workspace(repo, "feat-a") / "notes.txt").unlink()
    assert lanes.dirty_publish("a")["files"] == []
    assert [d["agent"] for d in lanes.dirty_list()] == ["b"]


def test_a_file_named_in_another_encoding_is_in_the_dirty_set_as_shown_not_a_failure(lanes, repo):
    # An agent whose workspace held a Latin-1 file name (unpacked from an old archive) could never heartbeat
    # nor publish its dirty set: "invalid path". The name is kept as people see it (`\xe9`), the same for
    # every agent, so two agents touching it still overlap.
    import os

    for lane, agent in (("feat-a", "a"), ("feat-b", "b")):
        lanes.lane_create(lane)
        lanes.agent_register(agent, lane=lane)
        (workspace(repo, lane) / os.fsdecode(b"caf\xe9.txt")).write_text(f"{agent}\n")
    assert lanes.dirty_publish("a")["files"] == ["caf\\xe9.txt"]
    beat = lanes.agent_heartbeat("b")
    assert beat["dirty"]["files"] == ["caf\\xe9.txt"]
    assert {"agent": "a", "file": "caf\\xe9.txt", "dirty": True} in beat["dirty"]["overlaps"]


def test_an_empty_actor_is_refused_not_taken_for_the_person(lanes):
    # `task create --agent ""` (an unset variable) was recorded as git's user; `board post --agent ""` refused.
    with pytest.raises(UserError) as info:
        lanes.task_create("work", actor="")
    assert info.value.code == "invalid_agent"
    assert lanes.task_list() == []


def test_dirty_publish_needs_a_lane(lanes):
    lanes.agent_register("a")
    with pytest.raises(UserError) as info:
        lanes.dirty_publish("a")
    assert info.value.code == "no_lane"
    with pytest.raises(NotFound) as raised:
        lanes.dirty_publish("ghost")
    assert raised.value.code == "unknown_agent"
    with pytest.raises(NotFound) as raised:
        lanes.agent_register("b", lane="no-such-lane")
    assert raised.value.code == "unknown_lane"
