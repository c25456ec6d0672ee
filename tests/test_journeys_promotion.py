"""Journeys of a demanding user through promotion and the help's examples: every `Example:` typed as
shown, a collision's ways on typed as printed, and worktrees a promotion must update as git would (files
needing attention, symlinked folders, CRLF checkouts). Real processes in real repositories."""

from __future__ import annotations

from pathlib import Path

from conftest import git, workspace
from journey_helpers import auto_commit, lanes, make_lane, shell

from git_lanes.cli import cli
from git_lanes.cli.manpage import root_context, walk


# -- files a promotion left needing attention ----------------------------------------------------------------
def test_status_and_lane_show_name_the_files_a_promotion_left_needing_attention(repo):
    ws = make_lane(repo, "a")
    (ws / "src" / "app.py").write_text("print('from the lane')\n")
    assert auto_commit(ws, "change app").code == 0
    (repo / "src" / "app.py").write_text("print('typed by a person')\n")
    assert lanes("promote", "a", "--auto-accept", cwd=repo).code == 0

    status = lanes("status", "--json", cwd=repo).json
    assert next(row for row in status["lanes"] if row["name"] == "main")["attention"] == ["src/app.py"]
    assert lanes("lane", "show", "main", "--json", cwd=repo).json["attention"] == ["src/app.py"]
    text = lanes("status", cwd=repo).out
    assert "1 need attention" in text and "needing attention in main" in text
    assert "needing attention" in lanes("lane", "show", "main", cwd=repo).out
    # Reading twice changes nothing: status only looks.
    assert lanes("status", "--json", cwd=repo).json == status

    git("add", "src/app.py", cwd=repo)  # the person's answer: their version, merged
    status = lanes("status", "--json", cwd=repo).json
    assert all(row["attention"] == [] for row in status["lanes"])


# -- every Example: in the foundation's and promotion's help, typed as shown ---------------------------------
PLACEHOLDER_ID = "3f9c2a1b"


def _examples() -> dict[str, list[str]]:
    """Each command's example lines as shown in its help (continuation lines joined), keyed by path."""
    found = {}
    for command, ctx in walk(cli, root_context()):
        block = next(b for b in (command.help or "").split("\n\n") if "Example:" in b)
        lines = [line.strip() for line in block.splitlines()[2:] if line.strip()]
        joined: list[str] = []
        for line in lines:
            if joined and joined[-1].endswith("\\"):
                joined[-1] = joined[-1][:-1] + line
            else:
                joined.append(line)
        found[ctx.command_path.removeprefix("git lanes ")] = joined
    return found


def test_every_example_in_the_help_works_when_typed_as_shown(tmp_path):
    examples = _examples()
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# project\n")
    done: list[str] = []

    def typed(command: str, cwd: Path, index: int = 0, placeholder_id: str | None = None) -> str:
        line = examples[command][index]
        ran = shell(line, cwd, **({PLACEHOLDER_ID: placeholder_id} if placeholder_id else {}))
        assert ran.returncode == 0, f"`{line}` failed:\n{ran.stderr}"
        done.append(command)
        return ran.stdout

    def proposal(message: str) -> str:
        (ws / "auth.py").write_text((ws / "auth.py").read_text() + f"# {message}\n")
        result = lanes("propose", "-m", message, "--json", cwd=ws)
        assert result.code == 0, result.err
        return result.json["id"][:8]

    typed("init", project)
    typed("lane create", project)
    typed("lane list", project)
    typed("lane show", project)
    ws = Path(typed("lane path", project).splitlines()[-1])
    assert ws == workspace(project, "feature/auth")
    (ws / "auth.py").write_text("def login(): ...\n")
    typed("commit", ws)
    (ws / "auth.py").write_text("def login(): ...\n# session store\n")
    typed("propose", project)
    accepted = lanes("history", "--status", "proposed", "--json", cwd=project).json["transitions"][0]["id"][:8]
    typed("accept", project, placeholder_id=accepted)
    typed("reject", project, placeholder_id=proposal("a bad idea"))
    typed("restore", project, placeholder_id=accepted)
    typed("status", project)
    typed("history", project)
    typed("show", project, placeholder_id=accepted)
    typed("diff", project)
    lanes("lane", "create", "release", cwd=project)
    for index in range(len(examples["promote"])):
        typed("promote", project, index)
    typed("evaluate", project, placeholder_id=proposal("to evaluate"))
    typed("lane reset", project)
    typed("lane delete", project)
    assert set(done) >= {"init", "lane create", "lane list", "lane show", "lane path", "lane delete",
                         "lane reset", "commit", "propose", "accept", "reject", "restore", "status", "history",
                         "show", "diff", "promote", "evaluate"}


# -- a collision's ways on, typed as printed -----------------------------------------------------------------
def _collide(repo: Path) -> tuple[Path, str]:
    (repo / "auth.py").write_text("l1\nl2\nl3\n")
    git("add", "auth.py", cwd=repo)
    git("commit", "-q", "-m", "auth", cwd=repo)
    a, b = make_lane(repo, "feature/a"), make_lane(repo, "feature/b")
    (a / "auth.py").write_text("A1\nl2\nl3\n")
    (b / "auth.py").write_text("l1\nl2\nB3\n")
    assert auto_commit(a, "a").code == 0 and auto_commit(b, "b").code == 0
    assert lanes("promote", "feature/b", "--auto-accept", cwd=repo).code == 0
    refused = lanes("promote", "feature/a", "--auto-accept", "--json", cwd=repo)
    assert refused.code == 3
    return a, refused.json


def test_the_resolve_way_on_brings_the_targets_version_into_the_workspace_when_typed(repo):
    a, record = _collide(repo)
    resolve = next(w["command"] for w in record["ways"] if w["way"] == "resolve")
    ran = shell(resolve, repo)
    assert ran.returncode == 0, ran.stderr
    assert (a / "auth.py").read_text() == "l1\nl2\nB3\n"  # main's version, in the workspace
    backup = ran.stdout.split("kept at ")[1].split()[0]
    assert git("show", f"{backup}:auth.py", cwd=repo) == "A1\nl2\nl3\n"  # the lane's, kept
    (a / "auth.py").write_text("A1\nl2\nB3\n")  # merged by hand
    assert auto_commit(a, "merge main's auth.py by hand").code == 0
    assert lanes("promote", "feature/a", "--auto-accept", cwd=repo).code == 0
    assert git("show", "main:auth.py", cwd=repo) == "A1\nl2\nB3\n"


def test_the_force_way_on_lands_when_typed(repo):
    _, record = _collide(repo)
    force = next(w["command"] for w in record["ways"] if w["way"] == "force")
    ran = shell(force, repo)
    assert ran.returncode == 0, ran.stderr
    assert git("show", "main:auth.py", cwd=repo) == "A1\nl2\nl3\n"


def test_promote_says_when_proposals_on_the_lane_are_left_out(repo):
    ws = make_lane(repo, "a")
    (ws / "x.txt").write_text("x\n")
    assert auto_commit(ws, "x").code == 0
    (ws / "y.txt").write_text("y\n")
    pending = lanes("propose", "-m", "y, not yet accepted", "--json", cwd=ws).json["id"]
    dry = lanes("promote", "a", "--dry-run", "--json", cwd=repo).json
    assert dry["left_pending"] == [pending]
    promoted = lanes("promote", "a", "--auto-accept", cwd=repo)
    assert promoted.code == 0
    assert f"pending proposals {pending[:8]} are not included" in promoted.out
    assert git("ls-tree", "--name-only", "main", cwd=repo).split() == ["README.md", "src", "x.txt"]


# -- promotion never writes outside the worktree -------------------------------------------------------------
def test_a_promotion_never_writes_through_a_symlinked_folder_in_the_target_worktree(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = make_lane(repo, "a")
    (ws / "out").mkdir()
    (ws / "out" / "file.txt").write_text("from the lane\n")
    assert auto_commit(ws, "add out/file.txt").code == 0
    (repo / "out").symlink_to(outside)  # a person's own, untracked link in the trunk's worktree
    promoted = lanes("promote", "a", "--auto-accept", "--json", cwd=repo)
    assert promoted.code == 0, promoted.err
    assert list(outside.iterdir()) == []
    assert promoted.json["worktree"]["attention"] == ["out/file.txt"]


def test_a_promoted_deletion_never_removes_a_file_through_a_symlinked_folder(repo, tmp_path):
    ws = make_lane(repo, "a")
    (ws / "src" / "app.py").unlink()
    assert auto_commit(ws, "delete src/app.py").code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("print('hello')\n")  # what the trunk tracks, byte for byte
    git("rm", "-rq", "--cached", "src", cwd=repo)
    for child in (repo / "src").iterdir():
        child.unlink()
    (repo / "src").rmdir()
    (repo / "src").symlink_to(outside)
    git("reset", "-q", cwd=repo)  # the index back at the trunk's head: only the files changed
    assert lanes("promote", "a", "--auto-accept", cwd=repo).code == 0
    assert (outside / "app.py").read_text() == "print('hello')\n"


def test_a_tracked_symlink_becoming_a_folder_is_promoted_without_spurious_attention(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary").write_text("outside, never touched\n")
    (repo / "e").symlink_to(outside)
    assert auto_commit(repo, "link e").code == 0
    ws = make_lane(repo, "a")
    (ws / "e").unlink()
    (ws / "e").mkdir()
    (ws / "e" / "canary").write_text("the lane's own\n")
    (ws / "e" / "new").write_text("new\n")
    assert auto_commit(ws, "e is a folder").code == 0
    linked = make_lane(repo, "b")
    promoted = lanes("promote", "a", "--auto-accept", "--json", cwd=repo)
    assert promoted.code == 0, promoted.err
    assert promoted.json["worktree"]["attention"] == []
    assert sorted(promoted.json["worktree"]["updated"]) == ["e", "e/canary", "e/new"]
    assert (outside / "canary").read_text() == "outside, never touched\n"
    # the same change by restore: the link goes, the folder's files are written, nothing through the link
    assert (linked / "e").is_symlink()
    restored = lanes("restore", "a", "--json", cwd=linked)
    assert restored.code == 0, restored.err
    assert (linked / "e" / "canary").read_text() == "the lane's own\n" and not (linked / "e").is_symlink()
    assert (outside / "canary").read_text() == "outside, never touched\n"
    assert git("status", "--porcelain", cwd=linked) == "D  e\nA  e/canary\nA  e/new\n"
    assert not (repo / "e").is_symlink() and (repo / "e" / "canary").read_text() == "the lane's own\n"
    assert git("status", "--porcelain", cwd=repo) == ""


def test_promotion_into_a_worktree_with_crlf_checkouts_updates_files_as_git_would(repo):
    (repo / ".gitattributes").write_text("*.txt text eol=crlf\n")
    (repo / "t.txt").write_bytes(b"l1\r\nl2\r\n")
    assert auto_commit(repo, "crlf text").code == 0
    ws = make_lane(repo, "a")
    assert (ws / "t.txt").read_bytes() == b"l1\r\nl2\r\n"
    (ws / "t.txt").write_bytes(b"l1\r\nl2\r\nl3\r\n")
    (ws / "new.txt").write_bytes(b"n\r\n")
    assert auto_commit(ws, "more lines").code == 0
    promoted = lanes("promote", "a", "--auto-accept", "--json", cwd=repo).json
    assert promoted["worktree"]["attention"] == []  # no file was edited: none may look edited
    assert (repo / "t.txt").read_bytes() == b"l1\r\nl2\r\nl3\r\n"
    assert (repo / "new.txt").read_bytes() == b"n\r\n"
    assert git("status", "--porcelain", cwd=repo) == ""
