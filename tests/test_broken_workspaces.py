"""A lane's workspace path that holds something else than the worktree git made there for that lane (a
symlink to another lane's workspace, a folder whose `.git` is gone or points at another worktree): no command
reads or writes through it, `status` and `lane list` show it as broken and go on with every other lane, and
the printed repair works."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import fsck_clean, git, run_cli
from journey_helpers import lanes, make_lane


@pytest.fixture
def two(repo: Path) -> tuple[Path, Path]:
    l6, l7 = make_lane(repo, "l6"), make_lane(repo, "l7")
    (l7 / "README.md").write_text("l7 unsaved\n")
    (l7 / "n.txt").write_text("l7 new\n")
    return l6, l7


def break_by_symlink(l6: Path, l7: Path) -> None:
    shutil.rmtree(l6)
    l6.symlink_to(l7)


def break_by_foreign_pointer(l6: Path, l7: Path) -> None:
    (l6 / ".git").write_text((l7 / ".git").read_text())  # .git pointing at l7's admin dir


def break_by_lost_pointer(l6: Path, l7: Path) -> None:
    (l6 / ".git").unlink()


@pytest.mark.parametrize("damage", [break_by_symlink, break_by_foreign_pointer, break_by_lost_pointer])
def test_no_command_acts_through_a_workspace_that_is_not_the_lanes(repo, two, damage):
    l6, l7 = two
    damage(l6, l7)
    before = git("for-each-ref", cwd=repo)
    for args in (("lane", "delete", "l6"), ("lane", "delete", "l6", "--force"),
                 ("restore", "main", "-w", "l6", "--force"), ("commit", "-m", "x", "-w", "l6"),
                 ("lane", "reset", "l6", "--force"), ("lane", "path", "l6")):
        result = lanes(*args, "--json", cwd=repo)
        assert result.code == 1 and result.json["error"] == "workspace_broken", (args, result.err)
    assert git("for-each-ref", cwd=repo) == before
    assert (l7 / "README.md").read_text() == "l7 unsaved\n" and (l7 / "n.txt").read_text() == "l7 new\n"
    assert str(l7) in git("worktree", "list", cwd=repo)

    listed = run_cli("lane", "list", "--json", cwd=repo)
    assert listed.code == 0, listed.err
    rows = {row["name"]: row for row in listed.json}
    assert rows["l6"]["workspace"] is None and rows["l6"]["broken"]
    assert rows["l7"]["workspace"] == str(l7) and "broken" not in rows["l7"]
    status = run_cli("status", "--json", cwd=repo)
    assert status.code == 0, status.err
    by_lane = {row["name"]: row for row in status.json["lanes"]}
    assert by_lane["l6"]["broken"] and by_lane["l7"]["dirty"] == ["README.md", "n.txt"]
    assert "BROKEN" in run_cli("status", cwd=repo).out
    fsck_clean(repo)


def test_the_printed_repair_gives_the_lane_its_workspace_back(repo, two):
    l6, l7 = two
    break_by_symlink(l6, l7)
    refused = lanes("lane", "path", "l6", cwd=repo)
    assert f"`rm {l6}`" in refused.err
    l6.unlink()
    again = lanes("lane", "create", "l6", "--json", cwd=repo)
    assert again.code == 0 and again.json["created"] is False, again.err
    assert git("worktree", "list", cwd=repo).count(str(l6)) == 1
    assert lanes("lane", "delete", "l6", cwd=repo).code == 0
    assert (l7 / "README.md").read_text() == "l7 unsaved\n"
    fsck_clean(repo)


def test_a_lost_git_file_is_restored_by_git_worktree_repair_as_the_hint_says(repo, two):
    l6, l7 = two
    break_by_lost_pointer(l6, l7)
    refused = lanes("restore", "main", "-w", "l6", cwd=repo)
    assert f"git worktree repair {l6}" in refused.err
    git("worktree", "repair", str(l6), cwd=repo, check=False)
    assert lanes("restore", "main", "-w", "l6", cwd=repo).code == 0
    assert "broken" not in run_cli("lane", "list", "--json", cwd=repo).out


def test_reclaim_keeps_an_orphan_workspace_holding_a_nested_repository(repo):
    from git_lanes.api import Lanes
    from ledger_helpers import Clock

    api = Lanes(repo, clock=Clock())
    path = Path(api.assign_worktree("gone")["workspace"])
    (path / "dep").mkdir()
    git("init", "--quiet", cwd=path / "dep")
    api.ctx.clock.advance(3600)
    for dry_run in (True, False):
        result = api.reclaim_orphan_worktrees(dry_run=dry_run)
        assert [(k["lane"], k["reason"]) for k in result["kept"]] == [("agent/gone", "nested_repository")]
    assert (path / "dep" / ".git").is_dir()


def test_a_damaged_index_is_that_workspace_s_problem_and_the_hint_repairs_it(api, repo):
    """A lane whose index a killed tool left damaged: status shows it broken and every other lane as usual
    (the dashboard's /status, the MCP status), and the printed repair gives the workspace back."""
    from git_lanes.errors import UserError

    api.lane_create("feat")
    workspace = repo / ".lanes" / "workspaces" / "feat"
    index = Path(git("rev-parse", "--path-format=absolute", "--git-path", "index", cwd=workspace).strip())
    index.write_bytes(b"not an index" * 8)
    rows = {row["name"]: row for row in api.status()["lanes"]}
    assert "cannot be read" in rows["feat"]["broken"] and "broken" not in rows["main"]
    with pytest.raises(UserError) as refused:
        api.lane_show("feat")
    assert refused.value.code == "damaged_workspace"
    index.unlink()
    git("reset", "-q", cwd=workspace)
    assert "broken" not in {row["name"]: row for row in api.status()["lanes"]}["feat"]


@pytest.mark.parametrize("damage", [break_by_symlink, break_by_foreign_pointer, break_by_lost_pointer])
def test_every_listing_shows_the_broken_workspace_and_doctor_names_its_repair(repo, two, damage):
    """The worktree listing (MCP list_worktrees) and doctor read the lane's workspace through the same check as
    status: the broken one is listed as broken, with the repair, never as healthy or "deleted by hand"."""
    from git_lanes.api import Lanes

    l6, l7 = two
    damage(l6, l7)
    rows = {row["name"]: row.to_dict() for row in Lanes(repo).list_worktrees()}
    assert rows["l6"]["workspace"] is None and rows["l6"]["broken"]
    assert rows["l7"]["workspace"] == str(l7) and "broken" not in rows["l7"]

    checked = run_cli("doctor", "--check", "workspaces", "--json", cwd=repo)
    [found] = [c for c in checked.json["checks"] if "l6" in c["message"]]
    assert found["status"] == "warn" and "broken" in found["message"], found
    lost = damage is break_by_lost_pointer
    assert ("git worktree repair" in found["hint"]) if lost else (str(l6) in found["hint"])
    assert found.get("fixable", False) is lost
    fixed = run_cli("doctor", "--check", "workspaces", "--fix", "--json", cwd=repo)
    assert fixed.code == 0, fixed.err
    assert ("broken" in run_cli("lane", "list", "--json", cwd=repo).out) is not lost  # repaired, or left alone
    assert (l7 / "README.md").read_text() == "l7 unsaved\n" and str(l7) in git("worktree", "list", cwd=repo)
    assert (l6 / "README.md").exists()
    fsck_clean(repo)


@pytest.mark.parametrize("damage", [break_by_foreign_pointer, break_by_lost_pointer])
def test_a_command_run_inside_a_broken_workspace_names_it_and_acts_on_nothing(repo, two, damage):
    """cd'd into the lane's folder, not named with -w: a .git pointing at l7's worktree made commit snapshot
    l7's index as l6's state (both lanes on one head), and a lost one said only "not inside a workspace"."""
    l6, l7 = two
    (l6 / "sub").mkdir()
    damage(l6, l7)
    before = git("for-each-ref", cwd=repo)
    for where in (l6, l6 / "sub"):
        for args in (("commit", "-m", "x"), ("restore", "main", "--force")):
            result = lanes(*args, "--json", cwd=where)
            assert result.code == 1 and result.json["error"] == "workspace_broken", (where, args, result.err)
    assert git("for-each-ref", cwd=repo) == before
    assert (l7 / "README.md").read_text() == "l7 unsaved\n" and (l7 / "n.txt").read_text() == "l7 new\n"
    assert git("status", "--porcelain", cwd=l7) == " M README.md\n?? n.txt\n"


@pytest.mark.parametrize("damage", [break_by_symlink, break_by_foreign_pointer])
def test_an_agent_of_the_lane_may_not_write_through_its_broken_workspace(repo, two, damage):
    """The agent hook confines a run's writes to its lane's workspace: with l6's path a symlink to l7's
    workspace, l6's run was let write l7's files (by either path), as the lane's own."""
    from hook_helpers import decision, hook, write

    l6, l7 = two
    started = run_cli("run", "start", "--agent", "a6", "--lane", "l6", "--phase", "execute", cwd=repo)
    assert started.code == 0, started.err
    as_l6 = {"GIT_LANES_RUN": started.out.strip()}
    verdict, _ = decision(hook("claude", "PreToolUse", write(repo, l6 / "README.md"), env=as_l6))
    assert verdict == "allow"  # the precondition: its own workspace, whole, is writable
    damage(l6, l7)
    for target in (l7 / "README.md", l6 / "README.md", l6 / "new.txt"):
        verdict, reason = decision(hook("claude", "PreToolUse", write(repo, target, f"t-{target.name}"), env=as_l6))
        assert verdict == "deny" and "lane l6 is broken" in reason and "git lanes doctor" in reason, (target, reason)
    assert (l7 / "README.md").read_text() == "l7 unsaved\n"


def test_a_fifo_in_place_of_gits_worktree_record_is_broken_not_waited_on(repo, two):
    """Every tool call's hook reads the lane's worktree record: a FIFO there held each reader waiting for a
    writer (here, `lane list`) for good."""
    l6, _ = two
    record = Path(git("rev-parse", "--git-path", "gitdir", cwd=l6).strip())
    assert record.read_text().strip() == str(l6 / ".git")  # the precondition: that is the file read
    record.unlink()
    os.mkfifo(record)
    listed = run_cli("lane", "list", "--json", cwd=repo, timeout=30)
    assert listed.code == 0, listed.err
    assert "git has no record" in {row["name"]: row for row in listed.json}["l6"]["broken"]


def test_gc_keeps_a_deleted_lanes_folder_whose_git_points_at_a_live_lanes_worktree(repo):
    """Removing it as an orphan removed the admin dir its .git names: l9's, so l9 lost its worktree."""
    l8, l9 = make_lane(repo, "l8"), make_lane(repo, "l9")
    git("update-ref", "-d", "refs/lanes/heads/l8", cwd=repo)
    break_by_foreign_pointer(l8, l9)
    for args in (("gc", "--older-than", "0", "--dry-run"), ("gc", "--older-than", "0")):
        result = lanes(*args, "--json", cwd=repo)
        assert result.code == 0, result.err
        assert [(k["lane"], k["reason"]) for k in result.json["kept"]] == [("l8", "workspace_broken")]
        assert result.json["removed"]["workspaces"] == []
    assert str(l9) in git("worktree", "list", cwd=repo) and (l8 / "README.md").exists()
    assert lanes("lane", "path", "l9", cwd=repo).out.strip() == str(l9)
    checked = run_cli("doctor", "--check", "workspaces", "--json", cwd=repo)
    assert any("'l8' has no lane but is broken" in c["message"] for c in checked.json["checks"]), checked.json


def test_a_repository_moved_by_hand_keeps_every_workspace_and_says_how_to_reconnect(repo, tmp_path):
    """Each workspace's .git names the old place. It was taken for a half-made workspace: listed as none, and
    `lane create` "cleared" it, deleting the lane's unsaved files."""
    l6 = make_lane(repo, "l6")
    (l6 / "notes.txt").write_text("unsaved\n")
    moved = tmp_path / "moved"
    repo.rename(moved)
    l6 = moved / ".lanes" / "workspaces" / "l6"
    rows = {row["name"]: row for row in run_cli("lane", "list", "--json", cwd=moved).json}
    assert rows["l6"]["workspace"] is None and "does not point at a worktree" in rows["l6"]["broken"]
    refused = lanes("lane", "create", "l6", "--json", cwd=moved)
    assert refused.code == 1 and refused.json["error"] == "workspace_broken", refused.err
    assert f"git worktree repair {l6}" in refused.json["hint"]
    assert (l6 / "notes.txt").read_text() == "unsaved\n"
    checked = run_cli("doctor", "--check", "workspaces", "--json", cwd=moved).json["checks"]
    assert [(c["status"], c.get("fixable")) for c in checked] == [("warn", True)], checked  # not "deleted by hand"
    assert f"git worktree repair {l6}" in checked[0]["hint"]
    git("worktree", "repair", str(l6), cwd=moved)  # the printed repair
    assert lanes("commit", "-m", "notes", "--auto-accept", cwd=l6).code == 0
    assert git("show", "refs/lanes/heads/l6:notes.txt", cwd=moved) == "unsaved\n"


def test_a_symlinked_workspaces_folder_breaks_every_lane_and_the_hint_names_that_link(repo, tmp_path):
    make_lane(repo, "l6")
    folder = repo / ".lanes" / "workspaces"
    folder.rename(tmp_path / "elsewhere")
    folder.symlink_to(tmp_path / "elsewhere")
    listed = run_cli("lane", "list", "--json", cwd=repo)
    assert listed.code == 0 and [row["name"] for row in listed.json if row.get("broken")] == ["l6"], listed.err
    refused = lanes("commit", "-m", "x", "-w", "l6", "--json", cwd=repo)
    assert refused.json["error"] == "workspace_broken" and f"`rm {folder}`" in refused.json["hint"], refused.err



def test_the_store_never_removes_a_folder_whose_git_names_another_worktree(repo):
    """Whatever a caller checked: removing it would take the private dir its .git names, the other's."""
    from git_lanes.api import Lanes
    from git_lanes.errors import Refused

    l8, l9 = make_lane(repo, "l8"), make_lane(repo, "l9")
    break_by_foreign_pointer(l8, l9)
    with pytest.raises(Refused) as refused:
        Lanes(repo).ctx.store.remove_worktree(l8)
    assert refused.value.code == "workspace_broken" and str(l9) in refused.value.message
    assert (l8 / "README.md").exists() and str(l9) in git("worktree", "list", cwd=repo)
    assert lanes("lane", "path", "l9", cwd=repo).out.strip() == str(l9)


@pytest.mark.parametrize("damage", [break_by_symlink, break_by_foreign_pointer, break_by_lost_pointer])
def test_lane_show_says_the_workspace_is_broken_as_lane_list_does(repo, two, damage):
    """`lane show` in text printed `workspace  -` for a broken workspace, as for a lane that has none: the
    person reading it was not told what `lane list`, `status` and its own --json say."""
    l6, l7 = two
    damage(l6, l7)
    shown = run_cli("lane", "show", "l6", "--json", cwd=repo)
    assert shown.code == 0 and shown.json["workspace"] is None and shown.json["broken"], shown.err
    text = run_cli("lane", "show", "l6", cwd=repo)
    assert text.code == 0, text.err
    [line] = [line for line in text.out.splitlines() if line.startswith("workspace")]
    assert line == f"workspace  BROKEN: {shown.json['broken']}"
    [listed] = [line for line in run_cli("lane", "list", cwd=repo).out.splitlines() if " l6 " in line]
    assert listed.endswith(f"BROKEN: {shown.json['broken']}")
