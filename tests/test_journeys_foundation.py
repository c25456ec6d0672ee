"""Journeys of a demanding user through the foundation: plain git inside workspaces, hand-written notes,
repositories that are not fresh, lanes made and deleted in odd places. Each pins a bug found by using
`git lanes` as an agent or a person would: through real processes in real repositories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import git, workspace
from journey_helpers import auto_commit, git_commit, lanes, make_lane

from git_lanes.errors import Conflict


def _foreign_commit(repo: Path) -> str:
    """A commit no transition record describes."""
    tree = git("write-tree", cwd=repo).strip()
    return git("commit-tree", tree, "-m", "not a lanes state", cwd=repo).strip()


# -- notes written by hand under refs/notes/lanes ------------------------------------------------------------
def test_a_foreign_note_in_the_lanes_notes_ref_is_skipped_by_listings(repo):
    ws = make_lane(repo, "a")
    (ws / "x.txt").write_text("x\n")
    assert auto_commit(ws, "add x").code == 0
    # A person annotates a commit that holds no record (a commit of its own) and appends to a record.
    ledger = _foreign_commit(repo)
    git("notes", "--ref", "lanes", "add", "-m", "hi", ledger, cwd=repo)
    head = git("rev-parse", "refs/lanes/heads/a", cwd=repo).strip()
    git("notes", "--ref", "lanes", "append", "-m", "reviewed by a human", head, cwd=repo)
    shown = lanes("history", "--json", cwd=repo)
    assert shown.code == 0, shown.err
    assert [t["intent"]["prompt"] for t in shown.json["transitions"]] == ["add x", "Initial state"]
    assert lanes("status", cwd=repo).code == 0
    assert lanes("lane", "show", "a", cwd=repo).code == 0


def test_a_lanes_record_of_an_unknown_format_version_still_fails_clearly(repo):
    ledger = _foreign_commit(repo)
    record = {"format": 2, "id": "f" * 16, "lane": "main"}
    git("notes", "--ref", "lanes", "add", "-m", json.dumps(record), ledger, cwd=repo)
    shown = lanes("history", cwd=repo)
    assert shown.code == 1
    assert "format 2" in shown.err and "Traceback" not in shown.err


# -- plain git inside a lane's workspace ---------------------------------------------------------------------
def test_commits_made_with_plain_git_in_a_workspace_become_the_new_states_ancestry(repo):
    ws = make_lane(repo, "a")
    agent_commit = git_commit(ws, "one.txt", "1\n", "agent's own commit")
    # `git status` there is clean, but nothing the lane holds has this work yet: status must say so.
    status = lanes("status", "--json", cwd=repo).json
    assert next(row for row in status["lanes"] if row["name"] == "a")["dirty"] == ["one.txt"]
    (ws / "two.txt").write_text("2\n")
    result = auto_commit(ws, "snapshot on top", "--json")
    assert result.code == 0, result.err
    state = result.json["to"]
    assert git("rev-parse", f"{state}^", cwd=repo).strip() == agent_commit
    assert git("rev-parse", "refs/lanes/heads/a", cwd=repo).strip() == state
    assert git("rev-parse", "HEAD", cwd=ws).strip() == state
    assert git("ls-tree", "--name-only", state, cwd=repo).split() == ["README.md", "one.txt", "src", "two.txt"]


def test_a_branch_checked_out_in_a_workspace_is_left_with_its_commits_and_head_returns_to_the_lane(repo):
    ws = make_lane(repo, "a")
    git("checkout", "-q", "-b", "topic", cwd=ws)
    topic = git_commit(ws, "one.txt", "1\n", "on a branch")
    assert auto_commit(ws, "take the branch's work").code == 0
    state = git("rev-parse", "refs/lanes/heads/a", cwd=repo).strip()
    assert git("rev-parse", "HEAD", cwd=ws).strip() == state
    assert git("rev-parse", "topic", cwd=repo).strip() == topic
    (ws / "three.txt").write_text("3\n")
    assert auto_commit(ws, "and another").code == 0  # HEAD followed the lane, so the workspace is current


def test_a_workspace_whose_commits_diverged_from_the_lane_is_refused_with_a_way_on_that_works(repo):
    ws = make_lane(repo, "a")
    source = make_lane(repo, "src")
    (source / "s.txt").write_text("s\n")
    assert auto_commit(source, "s").code == 0
    git_commit(ws, "one.txt", "1\n", "agent's own commit")
    assert lanes("promote", "src", "--into", "a", "--auto-accept", cwd=repo).code == 0
    refused = auto_commit(ws, "would revert s.txt")
    assert refused.code == 3 and "Traceback" not in refused.err
    assert "git merge refs/lanes/heads/a" in refused.err
    # restore and delete see the commits as work the lane lacks
    assert lanes("restore", "a", "-w", "a", cwd=repo).code == 1
    assert lanes("lane", "delete", "a", cwd=repo).code == 1
    git("merge", "-q", "--no-edit", "refs/lanes/heads/a", cwd=ws)
    merged = auto_commit(ws, "after merging the lane head", "--json")
    assert merged.code == 0, merged.err
    assert git("ls-tree", "--name-only", merged.json["to"], cwd=repo).split() == \
        ["README.md", "one.txt", "s.txt", "src"]


def test_the_stale_workspace_way_on_works_through_a_conflicting_merge(repo):
    ws = make_lane(repo, "a")
    source = make_lane(repo, "src")
    (source / "README.md").write_text("# from src\n")
    assert auto_commit(source, "readme from src").code == 0
    git_commit(ws, "README.md", "# from a's own git commit\n", "agent's readme")
    assert lanes("promote", "src", "--into", "a", "--auto-accept", cwd=repo).code == 0
    refused = auto_commit(ws, "would revert the promoted readme")
    assert refused.code == 3 and "resolve them and `git commit`" in refused.err
    assert git("merge", "refs/lanes/heads/a", cwd=ws, check=False) is not None
    assert git("ls-files", "-u", cwd=ws).strip()  # stopped on the conflict
    (ws / "README.md").write_text("# both\n")
    git("add", "README.md", cwd=ws)
    git("commit", "-q", "--no-edit", cwd=ws)
    merged = auto_commit(ws, "merged", "--json")
    assert merged.code == 0 and merged.json["status"] == "accepted", merged.err
    assert git("show", "refs/lanes/heads/a:README.md", cwd=repo) == "# both\n"


def test_an_orphan_branch_in_a_workspace_is_named_as_such_and_the_way_on_works(repo):
    ws = make_lane(repo, "a")
    git("switch", "-q", "--orphan", "fresh", cwd=ws)
    refused = auto_commit(ws, "would delete everything")
    assert refused.code == 3 and "unborn branch" in refused.err and "None" not in refused.err
    git("merge", "-q", "refs/lanes/heads/a", cwd=ws)
    (ws / "x.txt").write_text("x\n")
    assert auto_commit(ws, "x").code == 0


def test_forced_restore_keeps_commits_made_with_plain_git_in_the_backup(repo):
    ws = make_lane(repo, "a")
    agent_commit = git_commit(ws, "one.txt", "1\n", "agent's own commit")
    restored = lanes("restore", "a", "-w", "a", "--force", "--json", cwd=repo)
    assert restored.code == 0, restored.err
    backup = restored.json["backup"]
    assert backup
    git("merge-base", "--is-ancestor", agent_commit, backup, cwd=repo)  # raises unless kept
    assert not (ws / "one.txt").exists()


def test_a_commit_in_the_middle_of_a_git_merge_is_refused_until_git_concludes_it(repo):
    git("checkout", "-q", "-b", "side", cwd=repo)
    (repo / "side.txt").write_text("side\n")
    git("add", "side.txt", cwd=repo)
    git("commit", "-q", "-m", "side", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    git("merge", "-q", "--no-ff", "--no-commit", "side", cwd=repo)
    refused = auto_commit(repo, "would drop the merge's second parent")
    assert refused.code == 3 and "git merge is in progress" in refused.err and "`git commit`" in refused.err
    git("commit", "-q", "--no-edit", cwd=repo)
    (repo / "after.txt").write_text("after\n")
    assert auto_commit(repo, "after the merge").code == 0
    assert git("rev-list", "--count", "--merges", "main", cwd=repo).strip() == "1"


# -- unresolved merge conflicts in a workspace ---------------------------------------------------------------
def _conflicted_stash_pop(ws: Path, commit) -> None:
    """Leave `a.txt` unmerged in the workspace's index, as a conflicting `git stash pop` does."""
    (ws / "a.txt").write_text("stashed\n")
    git("add", "a.txt", cwd=ws)
    git("stash", "-q", cwd=ws)
    (ws / "a.txt").write_text("snapshotted\n")
    commit()
    assert git("stash", "pop", cwd=ws, check=False) is not None
    assert git("ls-files", "-u", cwd=ws).strip()


def test_a_commit_over_unresolved_merge_conflicts_is_refused_like_git_commit(repo):
    ws = make_lane(repo, "a")
    _conflicted_stash_pop(ws, lambda: auto_commit(ws, "snapshotted"))
    refused = auto_commit(ws, "would record conflict markers")
    assert refused.code == 3 and "a.txt" in refused.err and "unresolved merge conflicts" in refused.err
    (ws / "a.txt").write_text("merged\n")
    git("add", "a.txt", cwd=ws)
    assert auto_commit(ws, "resolved").code == 0
    assert git("show", "refs/lanes/heads/a:a.txt", cwd=repo) == "merged\n"


def test_a_long_lived_api_refuses_unresolved_merge_conflicts_too(api, repo):
    api.lane_create("a")
    ws = workspace(repo, "a")
    _conflicted_stash_pop(ws, lambda: api.commit("snapshotted", "coder-1", lane="a", auto_accept=True))
    with pytest.raises(Conflict) as info:
        api.commit("would record conflict markers", "coder-1", lane="a")
    assert info.value.code == "unmerged_paths" and info.value.details["paths"] == ["a.txt"]


# -- proposals of the same content ---------------------------------------------------------------------------
def test_accepting_one_of_two_proposals_of_the_same_content_supersedes_the_other(repo):
    ws = make_lane(repo, "a")
    (ws / "x.txt").write_text("x\n")
    first = lanes("propose", "-m", "x", "--tokens-in", "10", "--json", cwd=ws).json
    # an agent finishing with `commit --auto-accept` though nothing changed since it proposed
    second = auto_commit(ws, "x, for real", "--json")
    assert second.code == 0 and second.json["status"] == "accepted"
    assert lanes("status", "--json", cwd=repo).json["proposals"] == []
    kept = lanes("show", first["id"][:8], "--json", cwd=repo).json
    assert kept["status"] == "rejected" and "superseded" in kept["reason"]
    assert kept["cost"]["tokens_in"] == 10
    # a proposal of different content on the old head stays for a person to decide
    (ws / "y.txt").write_text("y\n")
    other = lanes("propose", "-m", "y", "--json", cwd=ws).json
    (ws / "y.txt").unlink()
    (ws / "z.txt").write_text("z\n")
    assert auto_commit(ws, "z instead").code == 0
    assert [p["id"] for p in lanes("status", "--json", cwd=repo).json["proposals"]] == [other["id"]]


def test_accepting_a_stale_proposal_gives_a_way_on_that_keeps_the_lanes_work(repo):
    ws = make_lane(repo, "a")
    (ws / "x.txt").write_text("x\n")
    stale = lanes("propose", "-m", "first try", "--json", cwd=ws).json
    (ws / "y.txt").write_text("y\n")
    assert auto_commit(ws, "moves the lane").code == 0
    refused = lanes("accept", stale["id"][:8], cwd=repo)
    assert refused.code == 3
    # `lane reset` would move the lane onto the trunk, dropping "moves the lane": not a way on here.
    assert "lane reset" not in refused.err
    suggested = refused.err.split("`git lanes diff ")[1].split("`")[0].split()
    shown = lanes("diff", *suggested, "--name-only", cwd=repo)
    assert shown.code == 0 and shown.out == "x.txt\n"


def test_restore_after_a_reject_goes_back_without_force_the_attempt_is_kept(repo):
    ws = make_lane(repo, "a")
    (ws / "x.txt").write_text("x\n")
    proposed = lanes("propose", "-m", "an attempt", "--json", cwd=ws).json
    assert lanes("reject", proposed["id"][:8], cwd=repo).code == 0
    restored = lanes("restore", "a", cwd=ws)
    assert restored.code == 0, restored.err
    assert not (ws / "x.txt").exists()
    assert git("cat-file", "-p", f"refs/lanes/rejected/{proposed['id']}:x.txt", cwd=repo) == "x\n"
    (ws / "z.txt").write_text("z\n")  # an edit no state holds is still refused
    assert lanes("restore", "a", cwd=ws).code == 1


# -- repositories that are not fresh -------------------------------------------------------------------------
def test_a_trunk_the_main_worktree_is_not_on_is_said_at_init_and_when_committing_there(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", "-b", "master", cwd=project)
    (project / "a.txt").write_text("a\n")
    git("add", "a.txt", cwd=project)
    git("commit", "-q", "-m", "a", cwd=project)
    git("branch", "main", cwd=project)  # a trunk must exist: init makes no branch of a --trunk it is given
    (project / "sub").mkdir()
    init = lanes("init", "--trunk", "main", cwd=project / "sub")
    assert init.code == 0, init.err
    assert "is on branch master, not the trunk" in init.out and "git switch main" in init.out
    assert lanes("init", "--json", cwd=project).json["checked_out"] == "master"
    (project / "sub" / "b.txt").write_text("b\n")
    refused = lanes("commit", "-m", "b", cwd=project / "sub")
    assert refused.code == 1
    assert "on branch 'master', not the trunk 'main'" in refused.err and "git switch main" in refused.err
    for command in (("commit", "-w", "main", "-m", "b"), ("lane", "path", "main")):
        missing = lanes(*command, cwd=project)
        assert missing.code == 1 and "git switch main" in missing.err and "lane create" not in missing.err
    git("switch", "-q", "main", cwd=project)
    assert lanes("commit", "-m", "b", "--auto-accept", cwd=project / "sub").code == 0
    assert git("show", "main:sub/b.txt", cwd=project) == "b\n"


# -- deleting a lane with proposals awaiting a decision ------------------------------------------------------
def test_lane_delete_refuses_pending_proposals_and_with_force_rejects_and_keeps_them(repo):
    ws = make_lane(repo, "a")
    (ws / "x.txt").write_text("x\n")
    assert auto_commit(ws, "x").code == 0
    assert lanes("promote", "a", "--auto-accept", cwd=repo).code == 0
    (ws / "y.txt").write_text("y\n")
    proposed = lanes("propose", "-m", "y", "--json", cwd=ws).json
    refused = lanes("lane", "delete", "a", cwd=repo)
    assert refused.code == 1 and proposed["id"][:8] in refused.err
    deleted = lanes("lane", "delete", "a", "--force", "--json", cwd=repo)
    assert deleted.code == 0, deleted.err
    assert deleted.json["rejected_proposals"] == [proposed["id"]]
    assert lanes("status", "--json", cwd=repo).json["proposals"] == []
    shown = lanes("show", proposed["id"][:8], "--json", cwd=repo).json
    assert shown["status"] == "rejected" and "deleted" in shown["reason"]
    assert git("cat-file", "-p", f"refs/lanes/rejected/{proposed['id']}:y.txt", cwd=repo) == "y\n"


def test_a_workspace_deleted_by_hand_is_made_again_with_one_worktree_entry(repo):
    ws = make_lane(repo, "a")
    shutil.rmtree(ws)
    assert lanes("status", "--json", cwd=repo).json["lanes"][1]["workspace"] is None
    assert make_lane(repo, "a") == ws
    listed = [line for line in git("worktree", "list", "--porcelain", cwd=repo).splitlines()
              if line.startswith("worktree ")]
    assert listed == [f"worktree {repo}", f"worktree {ws}"]
    (ws / "x.txt").write_text("x\n")
    assert auto_commit(ws, "works again").code == 0


def test_deleting_a_lane_whose_workspace_was_removed_by_hand_prunes_it_from_git_worktree_list(repo):
    ws = make_lane(repo, "a/b")
    other = make_lane(repo, "c")
    shutil.rmtree(ws)
    assert "prunable" in git("worktree", "list", "--porcelain", cwd=repo)
    deleted = lanes("lane", "delete", "a/b", "--force", "--json", cwd=repo)
    assert deleted.code == 0, deleted.err
    listed = git("worktree", "list", "--porcelain", cwd=repo)
    assert "prunable" not in listed and str(ws) not in listed and f"worktree {other}" in listed
    assert git("fsck", "--no-progress", cwd=repo) == ""


def test_a_locked_worktree_of_a_deleted_lane_stays_as_git_worktree_lock_asks(repo):
    ws = make_lane(repo, "a")
    git("worktree", "lock", "--reason", "on a removable disk", str(ws), cwd=repo)
    shutil.rmtree(ws)
    assert lanes("lane", "delete", "a", "--force", cwd=repo).code == 0
    assert f"worktree {ws}" in git("worktree", "list", "--porcelain", cwd=repo)


def test_lane_create_from_a_transition_id_as_restore_and_diff_accept_it(repo):
    ws = make_lane(repo, "a")
    (ws / "x.txt").write_text("x\n")
    first = auto_commit(ws, "x", "--json").json
    (ws / "y.txt").write_text("y\n")
    assert auto_commit(ws, "y").code == 0
    created = lanes("lane", "create", "b", "--from", first["id"][:8], "--json", cwd=repo)
    assert created.code == 0, created.err
    assert created.json["head"] == first["to"]


def test_lane_create_refuses_a_file_in_the_workspaces_place_and_writes_nothing(repo):
    workspaces = repo / ".lanes" / "workspaces"
    workspaces.mkdir(parents=True, exist_ok=True)
    (workspaces / "a").write_text("a person's file\n")
    before = git("for-each-ref", cwd=repo)
    for name in ("a", "a/b"):
        refused = lanes("lane", "create", name, cwd=repo)
        assert refused.code == 1 and "in the way" in refused.err and "Traceback" not in refused.err
        assert "internal" not in refused.err.lower()
    assert git("for-each-ref", cwd=repo) == before
    assert (workspaces / "a").read_text() == "a person's file\n"


# -- filter drivers (git-lfs, git-crypt) ---------------------------------------------------------------------
def test_a_long_lived_api_stages_through_configured_filter_drivers_as_git_does(api, repo):
    (repo / ".gitattributes").write_text("*.dat filter=upper\n")
    git("config", "filter.upper.clean", "tr a-z A-Z", cwd=repo)
    git("config", "filter.upper.smudge", "cat", cwd=repo)
    api.commit("attributes", "coder-1", cwd=repo, auto_accept=True)
    for word in ("first", "second"):  # the second snapshot is the held-open one
        (repo / "f.dat").write_text(f"{word}\n")
        api.commit(word, "coder-1", cwd=repo, auto_accept=True)
        assert git("show", "main:f.dat", cwd=repo) == f"{word.upper()}\n"
