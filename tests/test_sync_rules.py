"""The merge rules of sync as pure decisions: no repository needed."""

from __future__ import annotations

import json

import pytest

from git_lanes.domain.sync_rules import DIVERGED, PULL, PUSH, SAME, classify, kind_of, merge_note, note_status
from git_lanes.errors import UnsupportedFormat
from git_lanes.model.records import FORMAT_VERSION

# a -> b -> c, and a -> d: b and d have diverged
HISTORY = {"b": {"a"}, "c": {"a", "b"}, "d": {"a"}}


def is_ancestor(ancestor: str, descendant: str) -> bool:
    return ancestor == descendant or ancestor in HISTORY.get(descendant, set())


@pytest.mark.parametrize("local, remote, expected", [
    ("a", "a", SAME), (None, "a", PULL), ("a", None, PUSH), ("a", "c", PULL), ("c", "a", PUSH),
    ("b", "d", DIVERGED), ("d", "c", DIVERGED),
])
def test_only_fast_forwards_travel(local, remote, expected):
    assert classify(local, remote, is_ancestor) == expected


def record(status: str, evaluations=(), decided_at=None, **extra) -> str:
    data = {"format": FORMAT_VERSION, "id": "t1", "lane": "feat", "status": status,
            "evaluations": list(evaluations), "decided_at": decided_at, **extra}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def test_a_decision_beats_proposed_and_evaluations_are_united():
    gate_a = {"gate": "tests", "passed": True}
    gate_b = {"gate": "lint", "passed": False}
    proposed = record("proposed", [gate_a])
    accepted = record("accepted", [gate_b], decided_at=5.0)
    merged = merge_note(proposed, accepted)
    data = json.loads(merged.text)
    assert data["status"] == "accepted" and data["decided_at"] == 5.0
    assert data["evaluations"] == [gate_b, gate_a]
    assert merged.conflict is None


def test_merge_is_symmetric_so_machines_converge():
    gate = {"gate": "tests", "passed": True}
    for ours, theirs in [(record("proposed", [gate]), record("rejected", decided_at=2.0)),
                         (record("accepted", decided_at=1.0), record("rejected", [gate], decided_at=2.0)),
                         (record("proposed", [gate]), record("proposed", [{"gate": "x", "passed": True}]))]:
        assert merge_note(ours, theirs).text == merge_note(theirs, ours).text


def test_two_different_decisions_keep_accepted_and_say_so():
    merged = merge_note(record("rejected", decided_at=9.0), record("accepted", decided_at=1.0))
    assert json.loads(merged.text)["status"] == "accepted"
    assert "accepted and rejected" in merged.conflict


def test_equal_records_are_untouched_and_unreadable_notes_are_reported():
    text = record("accepted")
    assert merge_note(text, text).text == text and merge_note(text, text).conflict is None
    odd = merge_note("not json", text)
    assert odd.conflict == "unreadable note" and odd.text == text  # a record is never traded for garbage
    assert merge_note(text, "\ufffd\ufffd").text == text
    newer = json.dumps({"format": FORMAT_VERSION + 1, "status": "accepted"})
    assert merge_note(text, newer).text == newer  # kept for the git-lanes that reads it
    assert note_status(None) is None and note_status("junk") is None
    assert note_status(record("rejected")) == "rejected"


def test_a_record_from_a_newer_major_format_is_not_merged_as_if_understood():
    newer = json.dumps({"format": FORMAT_VERSION + 1, "status": "accepted"})
    assert merge_note(newer, record("proposed")).conflict == "unreadable note"
    with pytest.raises(UnsupportedFormat):
        from git_lanes.domain.sync_rules import _record

        _record(newer)


def test_every_synced_ref_has_a_kind():
    assert kind_of("refs/heads/main", "main") == ("lane", "main")
    assert kind_of("refs/lanes/heads/a/b", "main") == ("lane", "a/b")
    assert kind_of("refs/lanes/proposals/abc", "main") == ("proposal", "abc")
    assert kind_of("refs/lanes/runs/r1", "main") == ("run", "r1")
    assert kind_of("refs/lanes/ledger", "main") == ("ledger", "ledger")
    assert kind_of("refs/notes/lanes", "main") == ("notes", "lanes")
    with pytest.raises(ValueError):
        kind_of("refs/heads/other", "main")


def test_only_refs_git_lanes_could_have_written_are_moved():
    from git_lanes.domain.sync_rules import ref_problem

    good = ["refs/heads/main", "refs/lanes/heads/feat/x", "refs/lanes/deleted/feat%2Fx", "refs/lanes/deleted/x%25",
            "refs/lanes/proposals/0123456789abcdef", "refs/lanes/runs/r1", "refs/lanes/meta/trunk",
            "refs/lanes/ledger", "refs/notes/lanes"]
    assert [ref_problem(ref, "main", "commit") for ref in good] == [None] * len(good)
    assert "trunk" in ref_problem("refs/lanes/heads/main", "main", "commit")
    # a second spelling of one lane's deletion marker (`x%` beside `x%25`) would be planned in hash order
    for bad in ("refs/lanes/heads/HEAD", "refs/lanes/heads/-rf", "refs/lanes/deleted/a/b", "refs/lanes/deleted/x%",
                "refs/lanes/deleted/feat%2fx",
                "refs/lanes/proposals/zz", "refs/lanes/runs/-x", "refs/lanes/heads/" + "a" * 300):
        assert ref_problem(bad, "main", "commit") is not None, bad
    assert ref_problem("refs/lanes/heads/feat", "main", "blob") == "points at a blob, not a commit"
    assert "missing" in ref_problem("refs/lanes/heads/feat", "main", None)
