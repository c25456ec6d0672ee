"""`git lanes promote`, `evaluate` and `lane reset` as real processes: exit codes, --json, hints."""

from __future__ import annotations

import subprocess

from conftest import git, run_cli, workspace
from promotion_fixtures import AUTH, edit, head

AGENT = {"GIT_LANES_AGENT": "coder"}


def _commit(repo, lane, changes, agent):
    edit(workspace(repo, lane), changes)
    result = run_cli("commit", "-m", f"work in {lane}", "--auto-accept", "--json", cwd=workspace(repo, lane),
                     env={"GIT_LANES_AGENT": agent})
    assert result.code == 0, result.err
    return result.json


def test_auth_py_changed_on_both_sides_in_different_regions_stops_the_promotion(repo):
    """The failure the issue names: A and B fork from the same trunk; B changes the top of auth.py and is
    promoted first; A changes the bottom. Plain git would merge this cleanly; promote must stop."""
    edit(repo, {"auth.py": AUTH})
    assert run_cli("commit", "-m", "add auth", "--auto-accept", cwd=repo, env=AGENT).code == 0
    for lane in ("agent-a", "agent-b"):
        assert run_cli("lane", "create", lane, cwd=repo).code == 0
    _commit(repo, "agent-b", {"auth.py": AUTH.replace("level > 1\n", "level >= 1\n")}, "agent-b")
    assert run_cli("promote", "agent-b", "--auto-accept", cwd=repo, env=AGENT).code == 0
    _commit(repo, "agent-a", {"auth.py": AUTH.replace("level > 18\n", "level >= 18\n"), "api.py": "x\n"},
            "agent-a")
    lane_a, trunk = head(repo, "refs/lanes/heads/agent-a"), head(repo, "main")
    # plain git would merge it without a word
    assert git("merge-tree", "--write-tree", trunk, lane_a, cwd=repo, check=False).count("\n") == 1

    result = run_cli("promote", "agent-a", "--auto-accept", cwd=repo, env=AGENT)
    assert result.code == 3
    assert "auth.py" in result.err and "lane modified, main modified" in result.err
    for way in ("git lanes lane reset agent-a --onto main", "git lanes promote main --into agent-a --force",
                "git lanes promote agent-a --into main --force"):
        assert way in result.err
    assert head(repo, "main") == trunk and head(repo, "refs/lanes/heads/agent-a") == lane_a
    assert git("for-each-ref", "refs/lanes/proposals/", cwd=repo) == ""

    as_json = run_cli("promote", "agent-a", "--json", cwd=repo, env=AGENT)
    assert as_json.code == 3
    record = as_json.json
    assert record["error"] == "collision"
    assert record["collisions"] == [{"path": "auth.py", "lane": "modified", "target": "modified"}]
    assert record["lane_only"] == [{"path": "api.py", "kind": "added"}] and record["target_only"] == []
    assert [w["way"] for w in record["ways"]] == ["rerun", "resolve", "force"]


def test_promote_json_reports_the_merge_and_the_worktree(repo):
    run_cli("lane", "create", "a", cwd=repo)
    _commit(repo, "a", {"a.txt": "a\n"}, "coder")
    result = run_cli("promote", "a", "--auto-accept", "-m", "Ship a", "--tokens-in", "7", "--json",
                     cwd=repo, env=AGENT)
    assert result.code == 0, result.err
    record = result.json
    assert record["status"] == "accepted" and record["attempts"] == 1
    assert record["transition"]["intent"] == {"prompt": "Ship a", "agent_id": "coder", "agent_type": None,
                                              "model": None, "tags": []}
    assert record["transition"]["cost"]["tokens_in"] == 7
    assert record["worktree"] == {"path": str(repo.resolve()), "updated": ["a.txt"], "attention": []}


def test_promote_without_an_agent_id_is_recorded_as_the_git_user(repo):
    run_cli("lane", "create", "a", cwd=repo)
    _commit(repo, "a", {"a.txt": "a\n"}, "coder")
    result = run_cli("promote", "a", "--auto-accept", "--json", cwd=repo)
    assert result.code == 0, result.err
    assert result.json["transition"]["intent"]["agent_id"] == "Test"
    assert result.json["transition"]["intent"]["prompt"] == "Promote a into main"


def test_promote_text_output_and_dry_run(repo):
    run_cli("lane", "create", "a", cwd=repo)
    _commit(repo, "a", {"a.txt": "a\n"}, "coder")
    dry = run_cli("promote", "a", "--dry-run", cwd=repo)
    assert dry.code == 0 and "would land cleanly" in dry.out and "a.txt" in dry.out
    done = run_cli("promote", "a", "--auto-accept", cwd=repo, env=AGENT)
    assert done.code == 0 and done.out.startswith("promoted a into main as ")
    again = run_cli("promote", "a", cwd=repo, env=AGENT)
    assert again.code == 0 and "nothing to promote" in again.out


def test_promote_bad_input_is_one_line_and_exit_1(repo):
    result = run_cli("promote", "no-such-lane", cwd=repo, env=AGENT)
    assert result.code == 1 and result.err.startswith("git-lanes: error: no lane named 'no-such-lane'")
    assert "Traceback" not in result.err
    same = run_cli("promote", "main", cwd=repo, env=AGENT)
    assert same.code == 1 and "into itself" in same.err


def test_an_empty_target_or_agent_given_is_refused_not_replaced_by_the_default(repo):
    """`promote L --into "$TARGET"` with TARGET unset promoted into the trunk, `lane reset L --onto ""` reset
    onto it, and `--agent ""` recorded the git user, where every other command refuses an empty lane name
    or agent id: a value given is judged as given."""
    run_cli("lane", "create", "a", cwd=repo)
    _commit(repo, "a", {"a.txt": "a\n"}, "coder")
    before = git("for-each-ref", cwd=repo)
    for args, code in ((("promote", "a", "--into", ""), "invalid_lane_name"),
                       (("promote", "a", "--agent", "", "--auto-accept"), "invalid_agent"),
                       (("promote", "a", "-m", "", "--auto-accept"), "empty_prompt"),
                       (("lane", "reset", "a", "--onto", ""), "invalid_lane_name"),
                       (("lane", "reset", "a", "--agent", ""), "invalid_agent")):
        result = run_cli(*args, "--json", cwd=repo)
        assert result.code == 1, (args, result.err)
        assert "Traceback" not in result.err and result.err.startswith("git-lanes: error: "), result.err
        assert result.json["error"] == code, (args, result.json)
    assert git("for-each-ref", cwd=repo) == before


def test_lane_reset_command(repo):
    run_cli("lane", "create", "a", cwd=repo)
    _commit(repo, "a", {"a.txt": "a\n"}, "coder")
    result = run_cli("lane", "reset", "a", "--onto", "main", "--reason", "start over", "--json", cwd=repo)
    assert result.code == 0, result.err
    assert result.json["transition"]["reason"] == "start over"
    assert head(repo, "refs/lanes/heads/a") == head(repo, "main")
    text = run_cli("lane", "reset", "a", cwd=repo)
    assert text.code == 0 and text.out.startswith("reset a onto main")


def test_dry_run_exits_as_the_real_run_would(repo):
    for lane, text in (("a", "a\n"), ("b", "b\n")):
        run_cli("lane", "create", lane, cwd=repo)
        _commit(repo, lane, {"same.txt": text}, "coder")
    assert run_cli("promote", "a", "--auto-accept", cwd=repo, env=AGENT).code == 0
    dry = run_cli("promote", "b", "--dry-run", "--json", cwd=repo)
    real = run_cli("promote", "b", "--json", cwd=repo, env=AGENT)
    assert dry.code == real.code == 3
    assert dry.json["status"] == "collision" and dry.json["problem"]["error"] == real.json["error"] == "collision"
    assert dry.json["collisions"] == real.json["collisions"]
    forced = run_cli("promote", "b", "--dry-run", "--force", "--json", cwd=repo)
    assert forced.code == 0 and forced.json["problem"] is None
    assert "would stop on collisions" in run_cli("promote", "b", "--dry-run", cwd=repo).out


def test_a_dry_run_refuses_the_input_and_the_gates_the_real_run_refuses(repo):
    """A script asks `--dry-run` whether the promotion would go through: an agent id, a tag or trunk gates
    the real run refuses must be refused by the dry run too, with the same code, not answered "would land"."""
    run_cli("lane", "create", "a", cwd=repo)
    _commit(repo, "a", {"a.txt": "a\n"}, "coder")
    for bad in (["--agent", "bad id"], ["--agent", "coder", "--tag", ""]):
        real = run_cli("promote", "a", *bad, "--json", cwd=repo)
        dry = run_cli("promote", "a", "--dry-run", *bad, "--json", cwd=repo)
        assert real.code == 1 and "Traceback" not in real.err, real.err
        assert (dry.code, dry.json["error"]) == (real.code, real.json["error"]), (bad, dry.out)
    edit(repo, {".lanes.toml": "[[gate]]\nname = \"tests\"\n"})  # a gate with no command: unreadable
    git("add", ".lanes.toml", cwd=repo)
    git("commit", "-q", "-m", "a broken gate", cwd=repo)
    real = run_cli("promote", "a", "--json", cwd=repo, env=AGENT)
    dry = run_cli("promote", "a", "--dry-run", "--json", cwd=repo, env=AGENT)
    assert real.code == 1 and git("for-each-ref", "refs/lanes/proposals/", cwd=repo) == "", real.out
    assert (dry.code, dry.json["error"]) == (real.code, real.json["error"]), dry.out


def test_an_unreachable_remote_and_an_internal_error_have_codes_of_their_own(repo, tmp_path):
    import pytest

    from git_lanes.cli.output import run
    from git_lanes.errors import EXIT_INTERNAL, EXIT_REMOTE

    subprocess.run(["git", "remote", "add", "origin", str(tmp_path / "nowhere.git")], cwd=repo, check=True)
    unreachable = run_cli("sync", "--json", cwd=repo)
    assert unreachable.code == EXIT_REMOTE == 5 and unreachable.json["error"] == "remote_failed", unreachable.err

    def bug() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(SystemExit) as info:
        run(bug, False, str)
    assert info.value.code == EXIT_INTERNAL == 6


def test_a_stale_promotion_proposal_says_to_promote_again(repo):
    """A promotion proposed, then left while the target moved, is refused as stale (3); the way on is to promote
    the lane again (a fresh merge onto the target's new head), not to "redo its change" by hand as for a commit."""
    assert run_cli("lane", "create", "a", cwd=repo).code == 0
    _commit(repo, "a", {"feature.py": "x = 1\n"}, "agent-a")
    proposal = run_cli("promote", "a", "--json", cwd=repo).json["transition"]
    edit(repo, {"notes.txt": "the trunk moves\n"})
    assert run_cli("commit", "-m", "trunk moves", "--agent-id", "h", "--auto-accept", cwd=repo).code == 0
    refused = run_cli("accept", proposal["id"][:8], "--json", cwd=repo)
    assert (refused.code, refused.json["error"]) == (3, "stale_proposal")
    assert "git lanes promote a --into main" in refused.json["hint"], refused.json["hint"]
    again = run_cli("promote", "a", "--into", "main", "--auto-accept", "--json", cwd=repo)
    assert again.code == 0 and again.json["status"] == "accepted"
    assert run_cli("show", proposal["id"], "--json", cwd=repo).json["status"] == "rejected"  # superseded, as said


def test_a_colliding_file_named_in_another_encoding_is_shown_as_its_bytes(repo):
    # The collision's message printed a Latin-1 name as Python holds it, `caf\udce9.txt`, where every other
    # message shows the bytes, `caf\xe9.txt`; --json keeps the name as the CLI's JSON always has it.
    import os

    latin = os.fsdecode(b"caf\xe9.txt")
    for lane in ("agent-a", "agent-b"):
        assert run_cli("lane", "create", lane, cwd=repo).code == 0
        (workspace(repo, lane) / latin).write_text(f"{lane}\n")
        assert run_cli("commit", "-m", "name a file in Latin-1", "--auto-accept", cwd=workspace(repo, lane),
                       env={"GIT_LANES_AGENT": lane}).code == 0
    assert run_cli("promote", "agent-b", "--auto-accept", cwd=repo, env=AGENT).code == 0
    result = run_cli("promote", "agent-a", "--auto-accept", cwd=repo, env=AGENT)
    assert result.code == 3 and "  caf\\xe9.txt  (lane added, main added)" in result.err, result.err
    assert "\\udce9" not in result.err
    as_json = run_cli("promote", "agent-a", "--json", cwd=repo, env=AGENT)
    assert as_json.code == 3 and [c["path"] for c in as_json.json["collisions"]] == [latin]
