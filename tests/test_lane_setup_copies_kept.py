"""The ignored files the trunk's `[setup]` copies into a workspace (`.env`, local config) are no state's: a
copy left as it was may go with the workspace (the main worktree has the original), but one changed there
since is work nobody else holds. `lane delete` dropped it in silence; it now refuses, naming the path, as it
refuses unsnapshotted edits, and with --force keeps it in the backup ref."""

from __future__ import annotations

import os

import pytest
from conftest import git, run_cli, workspace
from promotion_fixtures import edit
from test_gates import declare

from git_lanes.errors import Refused


def _set_up(api, repo, lane: str = "feature/a"):
    edit(repo, {".gitignore": ".env\nconf/\n", ".env": "SECRET=1\n", "conf/a.yml": "a\n", "conf/b.yml": "b\n"})
    declare(api, repo, '[setup]\ncopy = [".env", "conf"]\n')
    made = run_cli("lane", "create", lane, "--json", cwd=repo)
    assert made.code == 0 and made.json["setup"]["copied"] == [".env", "conf"], made.out
    ws = workspace(repo, lane)
    assert git("status", "--porcelain", cwd=ws) == ""  # ignored: no state holds them, status shows nothing
    return ws


def test_lane_delete_refuses_a_setup_copy_changed_in_the_workspace_naming_it(api, repo):
    ws = _set_up(api, repo)
    (ws / ".env").write_text("SECRET=1\nADDED_BY_THE_AGENT=2\n")
    (ws / "conf" / "b.yml").write_text("b, tuned\n")
    refused = run_cli("lane", "delete", "feature/a", "--json", cwd=repo)
    assert refused.code == 1 and refused.json["error"] == "dirty_workspace", refused.out
    assert refused.json["setup_copies"] == [".env", "conf/b.yml"]
    assert ".env, conf/b.yml" in refused.json["message"] and "`--force`" in refused.json["hint"]
    assert (ws / ".env").read_text() == "SECRET=1\nADDED_BY_THE_AGENT=2\n"  # nothing moved
    forced = run_cli("lane", "delete", "feature/a", "--force", "--json", cwd=repo)
    assert forced.code == 0 and not ws.exists(), forced.err
    kept = forced.json["backup"]
    assert git("show", f"{kept}:.env", cwd=repo) == "SECRET=1\nADDED_BY_THE_AGENT=2\n"
    assert git("show", f"{kept}:conf/b.yml", cwd=repo) == "b, tuned\n"


def test_setup_copies_left_as_they_were_go_with_the_workspace(api, repo):
    ws = _set_up(api, repo)
    os.utime(ws / ".env", (1, 1))  # touched, not changed: the content still equals the main worktree's
    (ws / "conf" / "a.yml").unlink()  # deleted: the main worktree still has it
    edit(repo, {".env": "SECRET=changed in the main worktree since\n"})  # the original moved on, the copy did not
    os.utime(repo / ".env", (1, 1))
    assert (ws / ".env").read_text() == "SECRET=1\n"
    deleted = run_cli("lane", "delete", "feature/a", "--json", cwd=repo)
    assert deleted.code == 0 and deleted.json["backup"] is None, deleted.out
    assert not ws.exists()


def test_releasing_an_agents_workspace_keeps_a_changed_setup_copy(api, repo):
    ws = _set_up(api, repo, "agent/coder-1")
    api.agent_register("coder-1", lane="agent/coder-1")
    (ws / ".env").write_text("SECRET=rotated\n")
    with pytest.raises(Refused) as refused:
        api.release_worktree("coder-1")
    assert refused.value.code == "dirty_workspace" and (ws / ".env").read_text() == "SECRET=rotated\n"


def test_a_copy_the_setup_command_fills_in_is_the_setups_not_an_edit(api, repo):
    edit(repo, {".gitignore": ".env\n", ".env": "SECRET=1\n"})
    declare(api, repo, '[setup]\ncopy = [".env"]\nrun = "echo PORT=20000 >> .env"\n')
    made = run_cli("lane", "create", "feature/a", "--json", cwd=repo)
    assert made.code == 0 and made.json["setup"]["status"] == "ok", made.out
    assert (workspace(repo, "feature/a") / ".env").read_text() == "SECRET=1\nPORT=20000\n"
    deleted = run_cli("lane", "delete", "feature/a", cwd=repo)
    assert deleted.code == 0, deleted.err
