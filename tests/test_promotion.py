"""Promotion through the API: collisions of every kind stop it, a clean one lands as one merge commit with
parents (target, lane), --force keeps what it overwrote, and lane reset reruns from the new head."""

from __future__ import annotations

import os

import pytest
from conftest import git, workspace
from promotion_fixtures import AUTH, edit, head, land, trunk_file

from git_lanes.errors import Conflict, Refused


def _collides(api, repo, lane_changes, trunk_changes, setup=None):
    if setup:
        land(api, repo, "setup", setup)
        api.promote("setup", auto_accept=True)
    if not workspace(repo, "a").exists():
        api.lane_create("a")
    land(api, repo, "b", trunk_changes)
    api.promote("b", auto_accept=True)
    land(api, repo, "a", lane_changes)
    before = head(repo, "main")
    with pytest.raises(Conflict) as info:
        api.promote("a", auto_accept=True)
    assert info.value.code == "collision"
    assert head(repo, "main") == before
    assert git("for-each-ref", "refs/lanes/proposals/", cwd=repo) == ""
    return info.value.details["collisions"]


def test_content_changed_on_both_sides_collides(api, repo):
    assert _collides(api, repo, {"src/app.py": "print('a')\n"}, {"src/app.py": "print('b')\n"}) == [
        {"path": "src/app.py", "lane": "modified", "target": "modified"}]


def test_mode_change_against_an_edit_collides(api, repo):
    api.lane_create("a")
    os.chmod(workspace(repo, "a") / "src/app.py", 0o755)
    collisions = _collides(api, repo, {}, {"src/app.py": "print('b')\n"})
    assert collisions == [{"path": "src/app.py", "lane": "mode", "target": "modified"}]


def test_type_change_against_an_edit_collides(api, repo):
    api.lane_create("a")
    app = workspace(repo, "a") / "src/app.py"
    app.unlink()
    app.symlink_to("../README.md")
    collisions = _collides(api, repo, {}, {"src/app.py": "print('b')\n"})
    assert collisions == [{"path": "src/app.py", "lane": "type", "target": "modified"}]


def test_deletion_against_an_edit_collides(api, repo):
    assert _collides(api, repo, {"src/app.py": None}, {"src/app.py": "print('b')\n"}) == [
        {"path": "src/app.py", "lane": "deleted", "target": "modified"}]


def test_deleting_a_directory_against_an_edit_beneath_it_collides(api, repo):
    collisions = _collides(api, repo, {"d": None}, {"d/x.txt": "trunk\n"},
                           setup={"d/x.txt": "x\n", "d/y.txt": "y\n"})
    assert collisions == [{"path": "d/x.txt", "lane": "deleted", "target": "modified"}]


def test_a_file_replacing_a_directory_collides_with_a_file_added_beneath_it(api, repo):
    land(api, repo, "setup", {"d/x.txt": "x\n"})
    api.promote("setup", auto_accept=True)
    api.lane_create("a")
    land(api, repo, "b", {"d/new.txt": "new\n"})
    api.promote("b", auto_accept=True)
    edit(workspace(repo, "a"), {"d": None})
    edit(workspace(repo, "a"), {"d": "now a file\n"})
    api.commit("file for dir", "a", lane="a", auto_accept=True)
    with pytest.raises(Conflict) as info:
        api.promote("a", auto_accept=True)
    assert info.value.details["collisions"] == [
        {"path": "d", "lane": "added", "target": "beneath", "beneath": [{"path": "d/new.txt", "kind": "added"}]}]


def test_an_edit_beneath_a_directory_the_target_replaced_by_a_file_collides(api, repo):
    land(api, repo, "setup", {"d/x.txt": "x\n"})
    api.promote("setup", auto_accept=True)
    api.lane_create("a")
    land(api, repo, "b", {"d": None})
    land(api, repo, "b", {"d": "a file now\n"})
    api.promote("b", auto_accept=True)
    land(api, repo, "a", {"d/x.txt": "lane\n"})
    with pytest.raises(Conflict) as info:
        api.promote("a", auto_accept=True)
    assert info.value.details["collisions"] == [
        {"path": "d", "lane": "beneath", "target": "added", "beneath": [{"path": "d/x.txt", "kind": "modified"}]},
        {"path": "d/x.txt", "lane": "modified", "target": "deleted"}]


def test_clean_promotion_is_one_merge_commit_with_target_then_lane_as_parents(api, repo):
    api.lane_create("a")
    land(api, repo, "b", {"b.txt": "b\n"})
    api.promote("b", auto_accept=True)
    trunk_before = head(repo, "main")
    land(api, repo, "a", {"a.txt": "a\n", "src/app.py": "print('a')\n"})
    lane_head = head(repo, "refs/lanes/heads/a")
    result = api.promote("a", auto_accept=True, prompt="Ship a", agent_id="lead")
    merge = head(repo, "main")
    assert result["status"] == "accepted" and result["transition"]["to"] == merge
    assert git("rev-parse", f"{merge}^1", f"{merge}^2", cwd=repo).split() == [trunk_before, lane_head]
    assert trunk_file(repo, "a.txt") == "a\n" and trunk_file(repo, "b.txt") == "b\n"
    assert trunk_file(repo, "src/app.py") == "print('a')\n"
    assert [c["path"] for c in result["lane_only"]] == ["a.txt", "src/app.py"]
    assert result["transition"]["kind"] == "promote" and result["transition"]["intent"]["agent_id"] == "lead"
    note = git("notes", "--ref=lanes", "show", merge, cwd=repo)
    assert '"status": "accepted"' in note and '"promoted_lane": "a"' in note
    assert "Lanes-Kind: promote" in git("log", "-1", "--format=%B", merge, cwd=repo)
    # the trunk's checkout (the main worktree) now holds exactly the promoted content
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "src/app.py").read_text() == "print('a')\n"
    assert sorted(result["worktree"]["updated"]) == ["a.txt", "src/app.py"]
    assert git("status", "--porcelain", cwd=repo) == ""


def test_the_same_change_on_both_sides_is_no_collision(api, repo):
    api.lane_create("a")
    land(api, repo, "b", {"fix.txt": "same\n"})
    api.promote("b", auto_accept=True)
    land(api, repo, "a", {"fix.txt": "same\n", "more.txt": "m\n"})
    result = api.promote("a", auto_accept=True)
    assert result["same_on_both"] == ["fix.txt"] and result["status"] == "accepted"


def test_dry_run_reports_and_moves_nothing(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    before = head(repo, "main")
    result = api.promote("a", dry_run=True)
    assert result["status"] == "clean" and result["lane_only"] == [{"path": "a.txt", "kind": "added"}]
    assert head(repo, "main") == before and not (repo / "a.txt").exists()


def test_promoting_twice_finds_nothing_left(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    api.promote("a", auto_accept=True)
    assert api.promote("a", auto_accept=True)["status"] == "up_to_date"


def test_force_lets_the_lane_win_and_keeps_the_target_version_in_a_backup_ref(api, repo):
    api.lane_create("a")
    land(api, repo, "b", {"auth.py": "trunk\n"})
    api.promote("b", auto_accept=True)
    trunk_before = head(repo, "main")
    land(api, repo, "a", {"auth.py": "lane\n"})
    result = api.promote("a", force=True, auto_accept=True)
    assert result["forced"] == ["auth.py"] and trunk_file(repo, "auth.py") == "lane\n"
    assert head(repo, result["backup"]) == trunk_before
    assert git("show", f"{result['backup']}:auth.py", cwd=repo) == "trunk\n"
    assert result["backup"].startswith("refs/lanes/backups/main/")


def test_without_auto_accept_the_promotion_waits_as_a_proposal(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    before = head(repo, "main")
    result = api.promote("a")
    assert result["status"] == "proposed" and head(repo, "main") == before
    accepted = api.accept(result["transition"]["id"])
    assert accepted["status"] == "accepted" and (repo / "a.txt").read_text() == "a\n"
    assert accepted["worktree"]["updated"] == ["a.txt"]


def test_promotion_into_a_lane_updates_its_workspace(api, repo):
    api.lane_create("target")
    land(api, repo, "a", {"a.txt": "a\n"})
    result = api.promote("a", "target", auto_accept=True)
    ws = workspace(repo, "target")
    assert (ws / "a.txt").read_text() == "a\n"
    assert git("rev-parse", "HEAD", cwd=ws).strip() == result["transition"]["to"]
    assert git("status", "--porcelain", cwd=ws) == ""


def test_reset_reruns_from_the_new_head_and_keeps_the_attempt_as_rejected_signal(api, repo):
    api.lane_create("a")
    land(api, repo, "b", {"auth.py": AUTH.replace("> 1", "> 100")})
    api.promote("b", auto_accept=True)
    land(api, repo, "a", {"auth.py": AUTH.replace("> 18", "> 180")})
    old = head(repo, "refs/lanes/heads/a")
    result = api.lane_reset("a", "main", reason="auth.py moved on main")
    assert head(repo, "refs/lanes/heads/a") == head(repo, "main") == result["to"]
    kept = result["transition"]
    assert kept["kind"] == "reset" and kept["status"] == "rejected" and kept["reason"] == "auth.py moved on main"
    assert git("rev-parse", f"{result['kept_at']}^{{tree}}", cwd=repo) == git("rev-parse", f"{old}^{{tree}}", cwd=repo)
    ws = workspace(repo, "a")
    assert (ws / "auth.py").read_text() == AUTH.replace("> 1", "> 100")
    assert git("rev-parse", "HEAD", cwd=ws).strip() == result["to"]
    assert api.history(status="rejected")["transitions"][0]["id"] == kept["id"]


def test_reset_refuses_over_unsaved_edits_unless_forced(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    edit(workspace(repo, "a"), {"draft.txt": "typed by a person\n"})
    with pytest.raises(Refused):
        api.lane_reset("a")
    result = api.lane_reset("a", force=True)
    assert git("show", f"{result['backup']}:draft.txt", cwd=repo) == "typed by a person\n"
    assert not (workspace(repo, "a") / "draft.txt").exists()


def test_resolving_by_hand_brings_the_target_in_then_promotes_cleanly(api, repo):
    api.lane_create("a")
    land(api, repo, "b", {"auth.py": "one\ntwo B\n"})
    api.promote("b", auto_accept=True)
    land(api, repo, "a", {"auth.py": "one A\ntwo\n"})
    with pytest.raises(Conflict):
        api.promote("a", auto_accept=True)
    api.promote("main", "a", force=True, auto_accept=True)
    ws = workspace(repo, "a")
    assert (ws / "auth.py").read_text() == "one\ntwo B\n"
    edit(ws, {"auth.py": "one A\ntwo B\n"})
    api.commit("merge auth by hand", "a", lane="a", auto_accept=True)
    assert api.promote("a", auto_accept=True)["status"] == "accepted"
    assert trunk_file(repo, "auth.py") == "one A\ntwo B\n"


def test_a_newer_promotion_of_the_same_lane_supersedes_a_pending_one(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    first = api.promote("a")["transition"]
    land(api, repo, "other", {"o.txt": "o\n"})
    other = api.promote("other")["transition"]
    second = api.promote("a", auto_accept=True)["transition"]
    assert api.show(first["id"])["status"] == "rejected"
    assert api.show(first["id"])["reason"].startswith(f"superseded by {second['id'][:8]}")
    assert api.show(other["id"])["status"] == "proposed"


def test_reset_rejects_proposals_made_on_the_old_head(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    edit(workspace(repo, "a"), {"b.txt": "b\n"})
    pending = api.commit("pending work", "agent", lane="a")
    land(api, repo, "b", {"c.txt": "c\n"})
    api.promote("b", auto_accept=True)
    result = api.lane_reset("a", force=True)
    assert result["rejected_proposals"] == [pending["id"]]
    assert api.show(pending["id"])["status"] == "rejected"


def test_the_trunk_worktree_receives_modes_links_deletions_and_a_file_turned_directory(api, repo):
    api.lane_create("a")
    ws = workspace(repo, "a")
    edit(ws, {"bin/run": "#!/bin/sh\necho hi\n", "README.md": None, "src/app.py": None,
              "src/app.py/main.py": "print('now a package')\n"})
    os.chmod(ws / "bin/run", 0o755)
    (ws / "link").symlink_to("bin/run")
    api.commit("reshape", "a", lane="a", auto_accept=True)
    result = api.promote("a", auto_accept=True)
    assert result["worktree"]["attention"] == []
    assert os.access(repo / "bin/run", os.X_OK) and os.readlink(repo / "link") == "bin/run"
    assert not (repo / "README.md").exists()
    assert (repo / "src/app.py/main.py").read_text() == "print('now a package')\n"
    assert git("status", "--porcelain", cwd=repo) == ""
