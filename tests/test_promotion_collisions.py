"""The collision rule on its own: two change lists in, collisions and one-sided changes out. No git."""

from __future__ import annotations

from git_lanes.domain.collisions import compare
from git_lanes.model.entries import Change, Entry

FILE, EXEC, LINK = 0o100644, 0o100755, 0o120000


def change(path: str, kind: str, new: str | None = "n", mode: int = FILE) -> Change:
    return Change(path, kind, Entry("o" * 40, FILE), None if new is None else Entry(new * 40, mode))


def test_disjoint_changes_do_not_collide_and_are_sorted_by_side():
    result = compare([change("b.py", "modified"), change("a.py", "added")], [change("c.py", "deleted", None)])
    assert result.collisions == ()
    assert [c.path for c in result.lane_only] == ["a.py", "b.py"]
    assert [c.path for c in result.target_only] == ["c.py"]


def test_every_kind_on_one_path_collides_with_both_kinds_named():
    lane = [change("m", "mode", "o", EXEC), change("t", "type", "t", LINK), change("d", "deleted", None)]
    target = [change("m", "modified", "x"), change("t", "modified", "x"), change("d", "modified", "x")]
    assert [c.to_dict() for c in compare(lane, target).collisions] == [
        {"path": "d", "lane": "deleted", "target": "modified"},
        {"path": "m", "lane": "mode", "target": "modified"},
        {"path": "t", "lane": "type", "target": "modified"}]


def test_the_very_same_change_on_both_sides_is_not_a_collision():
    result = compare([change("x", "modified", "s"), change("gone", "deleted", None)],
                     [change("x", "modified", "s"), change("gone", "deleted", None)])
    assert result.collisions == () and result.same_on_both == ("gone", "x")
    assert result.lane_only == () and result.target_only == ()


def test_a_file_against_changes_beneath_it_as_a_directory_collides_either_way():
    lane_file = compare([change("d", "added")], [change("d/x", "added"), change("d/y/z", "modified")])
    assert [c.to_dict() for c in lane_file.collisions] == [
        {"path": "d", "lane": "added", "target": "beneath",
         "beneath": [{"path": "d/x", "kind": "added"}, {"path": "d/y/z", "kind": "modified"}]}]
    assert lane_file.target_only == ()
    target_file = compare([change("d/x", "modified")], [change("d", "added")])
    assert [c.to_dict() for c in target_file.collisions] == [
        {"path": "d", "lane": "beneath", "target": "added", "beneath": [{"path": "d/x", "kind": "modified"}]}]


def test_both_deleting_a_file_the_target_turned_into_a_directory_still_collides():
    result = compare([change("d", "deleted", None)], [change("d", "deleted", None), change("d/x", "added")])
    assert [c.to_dict() for c in result.collisions] == [
        {"path": "d", "lane": "deleted", "target": "beneath", "beneath": [{"path": "d/x", "kind": "added"}]}]
    assert result.same_on_both == ()


def test_a_sibling_with_a_shared_prefix_is_not_beneath():
    result = compare([change("src", "added")], [change("src2/x", "added"), change("srcx", "added")])
    assert result.collisions == ()
