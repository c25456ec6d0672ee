"""A folder holding a `.git` of its own inside a workspace (a cloned dependency, a real `git submodule add`)
may hold the only copy of its history: no command deletes it, with or without --force. Restore and reset
refuse, or with --force leave it in place and say so; lane delete refuses; a sync fast-forward that would
drop it leaves the workspace stale and says how on; promotion leaves it for attention. A restore is planned
whole before a file is touched (a folder with ignored files becoming a file works; a refusal changes
nothing and writes no backup ref)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import fsck_clean, git, workspace
from journey_helpers import auto_commit, lanes, make_lane


def nested_repo(where: Path, name: str = "nested") -> str:
    """A repository of its own at `where/name` with one commit; returns that commit (its only copy)."""
    root = where / name
    root.mkdir(parents=True)
    git("init", "--quiet", cwd=root)
    (root / "h.txt").write_text("nested history, only copy\n")
    git("add", "h.txt", cwd=root)
    git("commit", "--quiet", "-m", "only copy", cwd=root)
    return git("rev-parse", "HEAD", cwd=root).strip()


def still_there(where: Path, commit: str) -> None:
    assert git("rev-parse", "HEAD", cwd=where).strip() == commit
    assert git("cat-file", "-t", commit, cwd=where).strip() == "commit"


def kept_in(history: Path, commit: str) -> bool:
    """`commit` is in the repository `history` (a git dir whose config names a work tree that moved away)."""
    return git(f"--git-dir={history}", "--work-tree=.", "cat-file", "-t", commit, cwd=history).strip() == "commit"


def refs_and_files(repo: Path, ws: Path) -> tuple[str, str]:
    return git("for-each-ref", cwd=repo), git("status", "--porcelain", "--ignored", cwd=ws)


def src_becomes_a_file(repo: Path) -> None:
    """Lane `l1`, whose state has a file `src` where the trunk has the folder `src/`."""
    ws = make_lane(repo, "l1")
    (ws / "src" / "app.py").unlink()
    (ws / "src").rmdir()
    (ws / "src").write_text("now a file\n")
    assert auto_commit(ws, "src is a file").code == 0


@pytest.fixture
def vendored(repo: Path) -> tuple[Path, str, dict]:
    """Lane `l1` whose second state records a nested repository as a gitlink (as `git add -A` does)."""
    ws = make_lane(repo, "l1")
    commit = nested_repo(ws)
    added = auto_commit(ws, "vendor a nested repo", "--json")
    assert added.code == 0 and added.json["status"] == "accepted", added.err
    assert git("ls-files", "-s", "nested", cwd=ws).startswith("160000")
    return ws, commit, added.json


def test_restore_refuses_to_remove_a_nested_repository_and_force_leaves_it(repo, vendored):
    ws, commit, added = vendored
    before = refs_and_files(repo, ws)
    refused = lanes("restore", "main", "--json", cwd=ws)
    assert refused.code == 1 and refused.json["error"] == "nested_repository", refused.err
    assert refused.json["nested"] == ["nested"]
    assert refs_and_files(repo, ws) == before
    still_there(ws / "nested", commit)

    forced = lanes("restore", "main", "--force", "--json", cwd=ws)
    assert forced.code == 0, forced.err
    assert forced.json["nested_left"] == ["nested"]
    still_there(ws / "nested", commit)
    text = lanes("restore", "main", "--force", cwd=ws)
    assert "left in place" in text.out and "nested" in text.out
    fsck_clean(repo)


def test_lane_reset_and_lane_delete_never_delete_a_nested_repository(repo, vendored):
    ws, commit, _ = vendored
    reset = lanes("lane", "reset", "l1", "--onto", "main", "--json", cwd=repo)
    assert reset.code == 1 and reset.json["error"] == "nested_repository", reset.err
    assert git("rev-parse", "refs/lanes/heads/l1", cwd=repo) != git("rev-parse", "main", cwd=repo)
    still_there(ws / "nested", commit)
    assert lanes("promote", "l1", "--auto-accept", cwd=repo).code == 0
    for force in ((), ("--force",)):
        deleted = lanes("lane", "delete", "l1", *force, "--json", cwd=repo)
        assert deleted.code == 1 and deleted.json["error"] == "nested_repository", deleted.err
        assert git("for-each-ref", "refs/lanes/heads/l1", "refs/lanes/backups", cwd=repo).strip().startswith(
            git("rev-parse", "refs/lanes/heads/l1", cwd=repo).strip())
        still_there(ws / "nested", commit)
    forced_reset = lanes("lane", "reset", "l1", "--onto", "main", "--force", "--json", cwd=repo)
    assert forced_reset.code == 0 and forced_reset.json["nested_left"] == [], forced_reset.err
    fsck_clean(repo)


def _lane_with_submodule(repo: Path, tmp_path: Path) -> Path:
    """Lane `l1` whose workspace has committed a real submodule at vendor/sub (of a repository with one
    commit); returns the workspace."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git("init", "--quiet", "-b", "main", cwd=upstream)
    (upstream / "s.txt").write_text("v1\n")
    git("add", ".", cwd=upstream)
    git("commit", "--quiet", "-m", "s", cwd=upstream)
    ws = make_lane(repo, "l1")
    git("-c", "protocol.file.allow=always", "submodule", "add", "--quiet", str(upstream), "vendor/sub", cwd=ws)
    assert auto_commit(ws, "add a submodule").code == 0
    return ws


def test_a_real_submodule_keeps_its_unsaved_edits_through_restore_force(repo, tmp_path):
    ws = _lane_with_submodule(repo, tmp_path)
    (ws / "vendor" / "sub" / "s.txt").write_text("unsaved edit\n")
    (ws / "vendor" / "sub" / "new.txt").write_text("new file\n")

    refused = lanes("restore", "main", "--json", cwd=ws)
    assert refused.code == 1, refused.err
    forced = lanes("restore", "main", "--force", "--json", cwd=ws)
    assert forced.code == 0 and forced.json["nested_left"] == ["vendor/sub"], forced.err
    # the only unsaved edits are the submodule's, which stay in it: no backup ref claims to hold them
    assert forced.json["backup"] is None
    assert git("for-each-ref", "refs/lanes/backups", cwd=repo) == ""
    assert (ws / "vendor" / "sub" / "s.txt").read_text() == "unsaved edit\n"
    assert (ws / "vendor" / "sub" / "new.txt").read_text() == "new file\n"
    assert not (ws / ".gitmodules").exists()
    for force in ((), ("--force",)):
        deleted = lanes("lane", "delete", "l1", *force, "--json", cwd=repo)
        assert deleted.code == 1 and deleted.json["nested"] == ["vendor/sub"], deleted.err
    assert (ws / "vendor" / "sub" / "s.txt").read_text() == "unsaved edit\n"
    fsck_clean(repo)


def _submodule_with_local_history(repo: Path, tmp_path: Path) -> tuple[Path, Path, str]:
    """Lane `l1` with a real submodule at vendor/sub holding a commit of its own nowhere else; returns the
    workspace, the submodule's repository (in the workspace's private git dir) and that commit."""
    ws = _lane_with_submodule(repo, tmp_path)
    (ws / "vendor" / "sub" / "local.txt").write_text("local work\n")
    git("add", "local.txt", cwd=ws / "vendor" / "sub")
    git("commit", "--quiet", "-m", "local-only commit", cwd=ws / "vendor" / "sub")
    local = git("rev-parse", "HEAD", cwd=ws / "vendor" / "sub").strip()
    history = Path(git("rev-parse", "--absolute-git-dir", cwd=ws / "vendor" / "sub").strip())
    assert history.is_relative_to(repo / ".git" / "worktrees")  # not in the work tree: its .git is a pointer
    return ws, history, local


def test_lane_delete_and_gc_keep_a_submodules_history_kept_in_the_workspaces_git_dir(repo, api, tmp_path):
    """In a linked worktree `git submodule add` keeps the submodule's repository in the worktree's private
    git dir (worktrees/<name>/modules/); its work tree's .git only points there. Moved out of the workspace
    (as the refusal's hint says), deleted or deinitialised, the work tree left that history where lane delete
    and gc removed it with the private dir: `git worktree remove` refuses a worktree with submodules for this."""
    ws, history, local = _submodule_with_local_history(repo, tmp_path)
    moved = tmp_path / "sub-moved"
    (ws / "vendor" / "sub").rename(moved)
    before = git("for-each-ref", cwd=repo)
    for force in ((), ("--force",)):
        deleted = lanes("lane", "delete", "l1", *force, "--json", cwd=repo)
        assert deleted.code == 1 and deleted.json["error"] == "nested_repository", deleted.err
        assert deleted.json["histories"] == [str(history)] and str(history) in deleted.json["hint"]
    assert git("for-each-ref", cwd=repo) == before
    assert kept_in(history, local)

    moved.rename(ws / "vendor" / "sub")
    git("submodule", "deinit", "--quiet", "--force", "vendor/sub", cwd=ws)  # the work tree goes, the gitlink stays
    assert git("status", "--porcelain", cwd=ws) == ""
    head = git("rev-parse", "refs/lanes/heads/l1", cwd=repo).strip()
    git("update-ref", "-d", "refs/lanes/heads/l1", cwd=repo)  # deleted elsewhere: the deletion travelled
    kept = api.gc(older_than=0)["kept"]
    assert [(k["lane"], k["reason"], k["paths"]) for k in kept] == [("l1", "nested_repository", [str(history)])]
    assert ws.exists() and kept_in(history, local)

    git("update-ref", "refs/lanes/heads/l1", head, cwd=repo)
    shutil.rmtree(ws)  # the workspace's folder deleted by hand: git's record of it, with the history, stays
    deleted = lanes("lane", "delete", "l1", "--force", "--json", cwd=repo)
    assert deleted.code == 1 and deleted.json["histories"] == [str(history)], deleted.err
    assert kept_in(history, local) and git("rev-parse", "refs/lanes/heads/l1", cwd=repo).strip() == head
    shutil.rmtree(history)  # once its owner has kept what they need
    assert lanes("lane", "delete", "l1", "--force", cwd=repo).code == 0
    assert git("worktree", "list", "--porcelain", cwd=repo).count("worktree ") == 1
    fsck_clean(repo)


def test_a_prune_keeps_the_submodule_history_of_a_workspace_deleted_by_hand(repo, tmp_path):
    """A workspace's folder deleted by hand leaves git's record of it, and there its submodules' history.
    Removing any other workspace ran `git worktree prune`, which forgot that record with the history in it;
    now such a record is locked first (git's own gc then keeps it too), saying why."""
    ws, history, local = _submodule_with_local_history(repo, tmp_path)
    shutil.rmtree(ws)
    make_lane(repo, "l2")
    assert lanes("lane", "delete", "l2", cwd=repo).code == 0
    assert kept_in(history, local)
    listed = git("worktree", "list", "--porcelain", cwd=repo)
    assert "locked git-lanes kept it: it holds the repositories of its submodules" in listed
    doctor = lanes("doctor", cwd=repo)
    assert "git-lanes kept it" in doctor.out and "git worktree unlock" in doctor.out, doctor.out
    fsck_clean(repo)


def test_an_untracked_nested_repository_is_kept_by_restore_force(repo):
    ws = make_lane(repo, "l1")
    (ws / "a.txt").write_text("a\n")
    assert auto_commit(ws, "a").code == 0
    commit = nested_repo(ws, "clone")
    forced = lanes("restore", "main", "--force", "--json", cwd=ws)
    assert forced.code == 0 and forced.json["nested_left"] == ["clone"], forced.err
    still_there(ws / "clone", commit)
    assert not (ws / "a.txt").exists()
    # a backup could hold only the clone's gitlink, whose commits are not in this repository: none is made
    assert forced.json["backup"] is None and git("for-each-ref", "refs/lanes/backups", cwd=repo) == ""
    for force in ((), ("--force",)):
        deleted = lanes("lane", "delete", "l1", *force, "--json", cwd=repo)
        assert deleted.code == 1 and deleted.json["nested"] == ["clone"], deleted.err
        still_there(ws / "clone", commit)
    assert git("for-each-ref", "refs/lanes/heads/l1", cwd=repo) != ""
    fsck_clean(repo)


def test_a_nested_repository_inside_a_folder_that_becomes_a_file_refuses_before_anything(repo):
    src_becomes_a_file(repo)
    other = make_lane(repo, "l2")
    commit = nested_repo(other / "src", "dep")
    (other / "src" / "notes.txt").write_text("mine\n")
    before = refs_and_files(repo, other)
    refused = lanes("restore", "l1", "--json", cwd=other)
    assert refused.code == 1, refused.err
    assert refs_and_files(repo, other) == before
    forced = lanes("restore", "l1", "--force", "--json", cwd=other)
    assert forced.code == 0 and forced.json["nested_left"] == ["src/dep"], forced.err
    still_there(other / "src" / "dep", commit)
    assert forced.json["backup"] is not None
    fsck_clean(repo)


def test_restore_over_a_folder_holding_ignored_files_is_planned_whole(repo):
    """A folder holding an ignored file becomes a file: the ignored file goes as git deletes it, the
    untracked one is in the backup, and the restore finishes (it used to fail half way, leaving a new backup
    ref per retry)."""
    (repo / ".gitignore").write_text("__pycache__/\n")
    trunk = lanes("commit", "-m", "ignore caches", "--auto-accept", cwd=repo)
    assert trunk.code == 0, trunk.err
    src_becomes_a_file(repo)
    other = make_lane(repo, "l2")
    (other / "src" / "__pycache__").mkdir()
    (other / "src" / "__pycache__" / "app.pyc").write_text("pyc\n")
    (other / "src" / "notes.txt").write_text("mine\n")

    restored = lanes("restore", "l1", "--force", "--json", cwd=other)
    assert restored.code == 0, restored.err
    assert (other / "src").read_text() == "now a file\n"
    assert restored.json["ignored_removed"] == ["src/__pycache__/app.pyc"]
    backup = restored.json["backup"]
    assert git("show", f"{backup}:src/notes.txt", cwd=repo) == "mine\n"
    assert git("for-each-ref", "refs/lanes/backups", cwd=repo).count("\n") == 1
    assert git("diff", "--cached", "--name-status", "refs/lanes/heads/l1", cwd=other) == ""
    fsck_clean(repo)


def test_a_fast_forward_over_a_folder_holding_a_staged_new_file_refuses_before_anything(repo, api):
    """The folder becomes a file; a file `git add`ed in it is in no state, and no path of the update names
    it: the update refuses whole (it used to delete the folder's other files, then fail on the folder)."""
    from git_lanes.store.follow import fast_forward_files

    src_becomes_a_file(repo)
    ws = make_lane(repo, "l2")
    (ws / "src" / "new.py").write_text("staged only\n")
    git("add", "src/new.py", cwd=ws)
    before = refs_and_files(repo, ws)
    target = api.ctx.store.tree_of(git("rev-parse", "refs/lanes/heads/l1", cwd=repo).strip())
    with api.ctx.store.locked():
        assert fast_forward_files(api.ctx.store, ws, target) == {"unsaved edits": ["src/new.py"]}
    assert refs_and_files(repo, ws) == before and (ws / "src" / "app.py").exists()


def test_an_ignored_file_a_state_would_overwrite_is_refused_or_kept_in_the_backup(repo, api):
    """git overwrites an ignored `.env` without a word when a commit tracks one; no state and no snapshot
    holds its content, so here restore, lane reset and a fast-forward refuse, and with --force it is kept
    in the backup ref first."""
    from git_lanes.errors import Refused
    from git_lanes.store.follow import fast_forward_files

    (repo / ".gitignore").write_text(".env\n")
    assert lanes("commit", "-m", "ignore .env", "--auto-accept", cwd=repo).code == 0
    tracking = make_lane(repo, "l1")
    (tracking / ".env").write_text("the lane's\n")
    git("add", "--force", ".env", cwd=tracking)
    assert auto_commit(tracking, "track .env").code == 0
    ws = make_lane(repo, "l2")
    (ws / ".env").write_text("my secret\n")
    before = refs_and_files(repo, ws)

    for attempt in (lambda: api.restore("l1", lane="l2"), lambda: api.lane_reset("l2", "l1")):
        with pytest.raises(Refused) as refused:
            attempt()
        assert refused.value.code == "in_the_way" and ".env" in refused.value.message
    target = api.ctx.store.tree_of(git("rev-parse", "refs/lanes/heads/l1", cwd=repo).strip())
    with api.ctx.store.locked():
        assert fast_forward_files(api.ctx.store, ws, target) == {"an ignored file is in the way": [".env"]}
    assert refs_and_files(repo, ws) == before and (ws / ".env").read_text() == "my secret\n"

    restored = api.restore("l1", lane="l2", force=True)
    assert (ws / ".env").read_text() == "the lane's\n"
    assert restored.backup and git("show", f"{restored.backup}:.env", cwd=repo) == "my secret\n"
    (ws / ".env").write_text("my secret again\n")
    git("rm", "--cached", "--force", "--quiet", ".env", cwd=ws)
    reset = api.lane_reset("l2", "l1", force=True)
    assert reset.backup and git("show", f"{reset.backup}:.env", cwd=repo) == "my secret again\n"
    assert (ws / ".env").read_text() == "the lane's\n"
    fsck_clean(repo)


def test_a_sync_fast_forward_that_drops_a_nested_repository_leaves_the_workspace_stale(tmp_path, repo):
    from git_lanes.api import Lanes

    bare = tmp_path / "origin.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=repo)
    ws = make_lane(repo, "feat")
    commit = nested_repo(ws)
    assert auto_commit(ws, "vendor it").code == 0
    Lanes(repo).sync()
    other = tmp_path / "other"
    git("clone", "--quiet", str(bare), str(other), cwd=tmp_path)
    assert lanes("pull", cwd=other).code == 0
    theirs = make_lane(other, "feat")
    (theirs / "nested").rmdir()  # a clone gets an empty folder for the gitlink
    assert auto_commit(theirs, "drop the nested repo").code == 0
    assert lanes("sync", cwd=other).code == 0

    synced = lanes("sync", "--json", cwd=repo)
    assert synced.code == 0, synced.err
    stale = [w for w in synced.json["workspaces"] if w["lane"] == "feat"]
    assert stale and stale[0]["status"] == "stale" and "nested" in stale[0]["reason"]
    assert "move nested out of" in stale[0]["hint"] and "restore" not in stale[0]["hint"]
    still_there(ws / "nested", commit)
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=repo) == git("rev-parse", "refs/lanes/heads/feat",
                                                                       cwd=other)
    fsck_clean(repo)


def test_gc_keeps_a_deleted_lanes_workspace_holding_a_nested_repository_and_removes_the_rest(repo, api, vendored):
    ws, commit, _ = vendored
    other = make_lane(repo, "l2")
    for lane in ("l1", "l2"):  # deleted elsewhere: the deletion travelled, the workspaces stayed
        git("update-ref", "-d", f"refs/lanes/heads/{lane}", cwd=repo)
    result = api.gc(older_than=0)
    assert [(k["lane"], k["reason"], k["paths"]) for k in result["kept"]] == [("l1", "nested_repository", ["nested"])]
    assert [e["lane"] for e in result["removed"]["workspaces"]] == ["l2"] and not other.exists()
    still_there(ws / "nested", commit)
    fsck_clean(repo)


def test_promotion_leaves_a_nested_repository_in_the_way_for_attention(repo, api):
    commit = nested_repo(repo, "vendor")  # in the main worktree, untracked
    ws = make_lane(repo, "l1")
    (ws / "vendor").mkdir()
    (ws / "vendor" / "x.txt").write_text("from the lane\n")
    assert auto_commit(ws, "vendor/x").code == 0
    promoted = lanes("promote", "l1", "--auto-accept", "--json", cwd=repo)
    assert promoted.code == 0, promoted.err
    assert promoted.json["worktree"]["attention"] == ["vendor/x.txt"]
    still_there(repo / "vendor", commit)
    assert not (repo / "vendor" / "x.txt").exists()
    assert workspace(repo, "l1").exists()


def test_a_promotion_that_drops_a_gitlink_leaves_the_nested_repository_for_attention(repo):
    """As `git merge` leaves it ("unable to rmdir"): the folder and its .git stay, the index no longer
    tracks it, and a snapshot, which would record it again and so revert the promotion, is refused until it
    is moved out."""
    commit = nested_repo(repo)
    assert lanes("commit", "-m", "vendor it on the trunk", "--auto-accept", cwd=repo).code == 0
    ws = make_lane(repo, "l1")
    (ws / "nested").rmdir()  # a worktree gets an empty folder for the gitlink
    assert auto_commit(ws, "drop the nested repo").code == 0
    promoted = lanes("promote", "l1", "--auto-accept", "--json", cwd=repo)
    assert promoted.code == 0, promoted.err
    assert promoted.json["worktree"] == {"path": str(repo), "updated": [], "attention": ["nested"]}
    still_there(repo / "nested", commit)
    assert git("ls-files", "nested", cwd=repo) == ""
    refused = lanes("commit", "-m", "anything", "--auto-accept", "--json", cwd=repo)
    assert refused.code == 3 and refused.json["error"] == "unmerged_promotion", refused.err
    assert "git repository of its own" in refused.json["message"]
    (repo / "nested").rename(repo.parent / "nested-moved")
    assert lanes("commit", "-m", "anything", "--auto-accept", cwd=repo).code == 0
    assert git("ls-tree", "main", "nested", cwd=repo) == ""
    fsck_clean(repo)


# -- filter drivers (git-lfs, git-crypt): written as `git checkout` writes them ----------------------------
def _lowercase_driver(repo: Path) -> None:
    """A filter driver that stores text in capitals and checks it out in lower case: a stand-in for git-lfs
    (pointer stored, content checked out) that needs no git-lfs binary."""
    (repo / ".gitattributes").write_text("*.dat filter=upper\n")
    git("config", "filter.upper.clean", "tr a-z A-Z", cwd=repo)
    git("config", "filter.upper.smudge", "tr A-Z a-z", cwd=repo)
    git("config", "filter.upper.required", "true", cwd=repo)
    assert lanes("commit", "-m", "attributes", "--auto-accept", cwd=repo).code == 0


def test_restore_and_promotion_write_files_through_configured_smudge_filters(repo):
    _lowercase_driver(repo)
    ws = make_lane(repo, "l1")
    assert (ws / ".gitattributes").exists()
    (ws / "f.dat").write_text("first\n")
    first = auto_commit(ws, "first", "--json").json
    assert git("show", f"{first['to']}:f.dat", cwd=repo) == "FIRST\n"
    (ws / "f.dat").write_text("second\n")
    assert auto_commit(ws, "second").code == 0

    restored = lanes("restore", first["id"][:8], "--json", cwd=ws)
    assert restored.code == 0, restored.err
    assert (ws / "f.dat").read_text() == "first\n"
    assert git("status", "--porcelain", cwd=ws) == "M  f.dat\n"  # staged: the lane head holds "second"
    (ws / "f.dat").write_text("second\n")
    assert auto_commit(ws, "unchanged", "--json").json["status"] == "unchanged"
    assert lanes("restore", first["id"][:8], "--force", cwd=ws).code == 0
    assert auto_commit(ws, "back to first").code == 0
    assert git("status", "--porcelain", cwd=ws) == ""

    promoted = lanes("promote", "l1", "--auto-accept", "--json", cwd=repo)
    assert promoted.code == 0, promoted.err
    assert promoted.json["worktree"]["updated"] == ["f.dat"]
    assert (repo / "f.dat").read_text() == "first\n"
    assert git("show", "main:f.dat", cwd=repo) == "FIRST\n"
    assert git("status", "--porcelain", cwd=repo) == ""
    # and a later edit there is seen as one (hashed through the clean filter, not as the raw bytes)
    (repo / "f.dat").write_text("third\n")
    assert lanes("commit", "-m", "third", "--auto-accept", cwd=repo).code == 0
    assert git("show", "main:f.dat", cwd=repo) == "THIRD\n"
