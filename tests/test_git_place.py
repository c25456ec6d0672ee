"""`git --git-dir=… --work-tree=… lanes …`: git passes the place as GIT_DIR and GIT_WORK_TREE. git-lanes runs
in the work tree named when it holds the repository named, and otherwise refuses; before, it ran on the current
folder's repository, another one than the user named, without a word."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_lanes.api import Lanes

PATH = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    """Repositories `a` and `b`, each with a lane named after it."""
    made = []
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        (root / "README.md").write_text(f"# {name}\n")
        Lanes.init(root, "main")
        Lanes(root).lane_create(f"only-{name}")
        made.append(root)
    return made[0], made[1]


def git_lanes(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`git ARGS…` as a user types it: git itself turns --git-dir and --work-tree into the environment."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **PATH})


def lanes_listed(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, result.stderr
    return [line.split()[-3] if line.startswith("*") else line.split()[0] for line in result.stdout.splitlines()]


def test_a_work_tree_named_with_its_repository_is_where_the_command_runs(two):
    a, b = two
    shown = git_lanes(f"--git-dir={b}/.git", f"--work-tree={b}", "lanes", "lane", "list", cwd=a)
    assert lanes_listed(shown) == ["main", "only-b"]
    made = git_lanes(f"--git-dir={b}/.git", f"--work-tree={b}", "lanes", "lane", "create", "new", cwd=a)
    assert made.returncode == 0, made.stderr
    assert [lane["name"] for lane in Lanes(b).lane_list()] == ["main", "new", "only-b"]
    assert [lane["name"] for lane in Lanes(a).lane_list()] == ["main", "only-a"]


def test_the_current_repository_named_as_such_runs_as_usual(two):
    a, _ = two
    assert lanes_listed(git_lanes("--git-dir=.git", "lanes", "lane", "list", cwd=a)) == ["main", "only-a"]
    assert lanes_listed(git_lanes(f"--work-tree={a}", "lanes", "lane", "list", cwd=a / ".lanes")) == \
        ["main", "only-a"]


@pytest.mark.parametrize("named", [["--git-dir={b}/.git"], ["--work-tree={b}"], ["--git-dir={a}/.git",
                                                                                  "--work-tree={b}"]])
def test_a_repository_and_work_tree_that_do_not_go_together_are_refused(two, named):
    a, b = two
    before = Lanes(a).lane_list(), Lanes(b).lane_list()
    options = [option.format(a=a, b=b) for option in named]
    refused = git_lanes(*options, "lanes", "lane", "delete", "only-a", "--json", cwd=a)
    assert refused.returncode == 1
    assert '"error": "git_place_mismatch"' in refused.stdout
    assert refused.stderr.startswith("git-lanes: error: GIT_") and "do not go together" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert (Lanes(a).lane_list(), Lanes(b).lane_list()) == before


def test_a_git_dir_that_is_no_repository_is_refused(two, tmp_path):
    a, _ = two
    refused = git_lanes(f"--git-dir={tmp_path}", "lanes", "status", cwd=a)
    assert refused.returncode == 1 and "do not go together" in refused.stderr, refused.stderr


def test_a_lane_workspace_named_by_its_gitfile_runs_there(two):
    """git takes a linked worktree's `.git` file as --git-dir (it follows the gitfile); so does git-lanes,
    which refused it as another repository than the work tree's."""
    a, b = two
    workspace = Path(Lanes(b).lane_path("only-b"))
    assert (workspace / ".git").is_file()
    named = [f"--git-dir={workspace}/.git", f"--work-tree={workspace}"]
    assert git_lanes(*named, "status", "--porcelain", cwd=a).returncode == 0  # git itself takes it
    assert lanes_listed(git_lanes(*named, "lanes", "lane", "list", cwd=a)) == ["main", "only-b"]
