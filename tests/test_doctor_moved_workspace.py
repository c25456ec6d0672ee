"""`doctor` on a workspace whose folder is gone from where git records it. git cannot tell a folder deleted
from one moved with `mv` (it calls both "prunable"); doctor used to call every one "deleted by hand" and --fix
forgot it (`git worktree prune`), which leaves a moved workspace's files no longer a worktree. A move next to
where it stood, next to the repository or into the home folder is now found and reconnected; any other is
told as "deleted, or moved", with `git worktree repair` for a move."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import git, run_cli, workspace

from git_lanes.api import Lanes


def doctor(repo: Path, *args: str) -> list[dict]:
    result = run_cli("doctor", "--check", "workspaces", *args, "--json", cwd=repo)
    assert result.code == 0, result.err
    return result.json["checks"]


def test_a_workspace_moved_with_mv_next_to_the_repository_is_reconnected_never_forgotten(tmp_path: Path,
                                                                                        repo: Path):
    api = Lanes(repo)
    api.lane_create("z-moved")
    api.lane_create("a-deleted")  # its record comes first: --fix's prune must not forget the moved one
    (workspace(repo, "z-moved") / "wip.txt").write_text("unsaved\n")
    moved = tmp_path / "z-moved-here"
    assert moved.parent == repo.parent
    shutil.move(str(workspace(repo, "z-moved")), str(moved))  # `mv`, not `git worktree move`
    shutil.rmtree(workspace(repo, "a-deleted"))
    porcelain = git("worktree", "list", "--porcelain", cwd=repo)
    assert porcelain.count("prunable gitdir file points to non-existent location") == 2  # git tells neither

    found = {c["message"]: c for c in doctor(repo)}
    said = f"workspace {workspace(repo, 'z-moved')} was moved to {moved} by hand"
    moved_finding = next(c for m, c in found.items() if m.startswith(said))
    assert f"`git worktree repair {moved}`" in moved_finding["hint"] and moved_finding["fixable"]
    deleted = next(c for m, c in found.items() if "a-deleted" in m)
    assert "is missing: deleted, or moved by hand" in deleted["message"], deleted
    assert "`git worktree repair NEW_PATH`" in deleted["hint"]
    assert not any("deleted by hand" in m for m in found)

    fixed = {c["message"]: c["status"] for c in doctor(repo, "--fix")}
    assert [s for m, s in fixed.items() if m.startswith(said)] == ["fixed"]
    assert (moved / "wip.txt").read_text() == "unsaved\n"
    assert git("status", "--porcelain", cwd=moved) == "?? wip.txt\n"  # still a worktree, edits and all
    assert str(moved) in git("worktree", "list", cwd=repo)
    # then, as for a `git worktree move` out of .lanes/workspaces, --fix puts it back where git-lanes looks
    doctor(repo, "--fix")
    assert (workspace(repo, "z-moved") / "wip.txt").read_text() == "unsaved\n"
    assert api.lane_show("z-moved")["dirty"] == {"wip.txt": "added"}


def test_a_workspace_moved_out_of_sight_is_told_as_deleted_or_moved_with_the_way_back(tmp_path: Path,
                                                                                      repo: Path):
    api = Lanes(repo)
    api.lane_create("far")
    (workspace(repo, "far") / "wip.txt").write_text("unsaved\n")
    far = tmp_path / "somewhere" / "deep" / "far"
    far.parent.mkdir(parents=True)
    shutil.move(str(workspace(repo, "far")), str(far))
    [missing] = [c for c in doctor(repo) if c["status"] != "ok"]
    assert missing["message"] == (f"workspace {workspace(repo, 'far')} is missing: deleted, or moved by hand "
                                  "(git: gitdir file points to non-existent location)")
    assert missing["hint"].startswith(f"if it was moved, `git worktree repair NEW_PATH` (in {repo}) reconnects it")
    git("worktree", "repair", str(far), cwd=repo)  # as the hint says
    assert git("status", "--porcelain", cwd=far) == "?? wip.txt\n"
    assert not [c for c in doctor(repo) if "is missing" in c["message"]]
