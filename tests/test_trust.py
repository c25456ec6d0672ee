"""What a lane cannot do to the gates that judge it and to the other lanes: a gate's workdir never follows a
symlink the candidate committed; paths the trunk protects (and `.lanes.toml`, always) are never accepted
automatically, they wait for a person; no state tracks files under `.lanes/`, where the workspaces live."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fsck_clean, git, run_cli, workspace
from promotion_fixtures import edit, head, land

from git_lanes.domain import gates, protected
from git_lanes.errors import UserError
from git_lanes.model import config

AGENT = {"GIT_LANES_AGENT": "coder"}
PY = json.dumps(sys.executable)


def declare(api, repo: Path, toml: str) -> None:
    edit(repo, {".lanes.toml": toml})
    api.accept(api.commit("declare", "lead", cwd=repo, auto_accept=True)["id"])


# -- D3: a gate's workdir stays inside the candidate's checkout ---------------------------------------------
@pytest.mark.parametrize("link", ["tests", "tests/unit"])
def test_a_gate_never_runs_beyond_a_symlink_the_lane_committed(api, repo, tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    edit(repo, {"tests/unit/t.txt": "t\n"})
    declare(api, repo, f'[[gate]]\nname = "tests"\ncommand = "pwd; touch gate-was-here"\nworkdir = "tests/unit"\n')
    api.lane_create("a")
    ws = workspace(repo, "a")
    target = ws / link
    subprocess.run(["rm", "-rf", str(target)], check=True)
    # a link out of the checkout, or (the variant) one into the lane's workspace, which is not the checkout
    target.symlink_to(outside if link == "tests" else ws / "src")
    result = run_cli("commit", "-m", "tests elsewhere", "--auto-accept", "--json", cwd=ws, env=AGENT)
    assert result.code == 4, result.err
    [evaluation] = result.json["transition"]["evaluations"]
    assert not evaluation["passed"] and "symbolic link" in evaluation["output_tail"]
    assert list(outside.iterdir()) == []
    assert not (ws / "src" / "gate-was-here").exists()


def test_a_gate_follows_a_symlink_that_resolves_inside_the_candidates_checkout(api, repo):
    edit(repo, {"tests/unit/t.txt": "t\n"})
    declare(api, repo, '[[gate]]\nname = "tests"\ncommand = "test -e t.txt && touch ran"\nworkdir = "tests/unit"\n')
    api.lane_create("a")
    ws = workspace(repo, "a")
    subprocess.run(["mv", str(ws / "tests" / "unit"), str(ws / "suite")], check=True)
    (ws / "tests" / "unit").symlink_to("../suite")  # relative: it stays inside whatever checkout holds it
    result = run_cli("commit", "-m", "move the suite", "--auto-accept", "--json", cwd=ws, env=AGENT)
    assert result.code == 0 and result.json["status"] == "accepted", result.err
    assert not (ws / "suite" / "ran").exists()  # it ran in the scratch checkout's suite/


# -- D15: protected paths wait for a person -----------------------------------------------------------------
def test_policy_parses_protected_globs_and_always_protects_lanes_toml():
    assert protected.parse(config.parse('[policy]\nprotected = ["ci/**", "tests"]\n', UserError)) == \
        (".lanes.toml", "ci/**", "tests")
    assert protected.parse({}) == (".lanes.toml",)
    for text in ('[policy]\nprotected = "ci"\n', '[policy]\nprotected = ["../x"]\n', '[policy]\nother = 1\n'):
        with pytest.raises(UserError) as info:
            protected.parse(config.parse(text, UserError))
        assert info.value.code == "invalid_policy"


def test_a_lane_that_neuters_a_gate_script_is_held_for_a_person(api, repo):
    edit(repo, {"ci/check.sh": "#!/bin/sh\ntest ! -e broken.txt\n"})
    (repo / "ci" / "check.sh").chmod(0o755)
    declare(api, repo, '[policy]\nprotected = ["ci/**"]\n[[gate]]\nname = "check"\ncommand = "./ci/check.sh"\n')
    api.lane_create("a")
    ws = workspace(repo, "a")
    edit(ws, {"ci/check.sh": "#!/bin/sh\nexit 0\n", "broken.txt": "x\n"})
    before = head(repo, "refs/lanes/heads/a")

    result = run_cli("commit", "-m", "neuter the check", "--auto-accept", "--json", cwd=ws, env=AGENT)
    assert result.code == 0, result.err
    assert result.json["status"] == "proposed"
    assert result.json["extra"]["held"]["paths"] == ["ci/check.sh"]
    assert head(repo, "refs/lanes/heads/a") == before
    assert [e["gate"] for e in result.json["evaluations"]] == ["check"]  # judged, and held anyway
    text = run_cli("show", result.json["id"][:8], "--json", cwd=repo)
    assert text.json["extra"]["held"]["reason"].startswith("it changes protected paths (ci/check.sh)")
    # the same with the CLI's words, and a promotion of a lane that changed it
    (ws / "more.txt").write_text("more\n")
    printed = run_cli("commit", "-m", "again", "--auto-accept", cwd=ws, env=AGENT)
    assert "held for a person" in printed.out and "git lanes accept" in printed.out
    # a person accepts explicitly: that is the decision the hold waits for
    accepted = api.accept(printed.out.split("git lanes accept ")[1].split("`")[0])
    assert accepted["status"] == "accepted"
    promoted = api.promote("a", auto_accept=True)
    assert promoted["status"] == "proposed" and promoted["transition"]["extra"]["held"]["paths"] == ["ci/check.sh"]
    assert api.accept(promoted["transition"]["id"])["status"] == "accepted"
    assert git("show", "main:ci/check.sh", cwd=repo) == "#!/bin/sh\nexit 0\n"
    fsck_clean(repo)


def test_a_lane_loosening_lanes_toml_is_held_saying_it_is_always_protected(api, repo):
    """With no [policy] at all, a change to .lanes.toml was held "…; [policy] protected in the trunk's
    .lanes.toml names them": it names nothing here; .lanes.toml protects itself."""
    api.lane_create("a")
    edit(workspace(repo, "a"), {".lanes.toml": "[budget]\nphases = { plan = 999 }\n"})
    result = run_cli("commit", "-m", "loosen", "--auto-accept", "--json", cwd=workspace(repo, "a"), env=AGENT)
    reason = result.json["extra"]["held"]["reason"]
    assert result.json["status"] == "proposed" and ".lanes.toml protects itself" in reason, reason


def test_a_gate_can_run_the_trunks_copy_of_its_script_whatever_the_lane_did_to_it(api, repo, tmp_path):
    """`from_trunk` (opt-in per gate): the named paths are the trunk's in the scratch checkout, so replacing,
    adding beside, or symlinking away the gate's script changes nothing the gate runs."""
    edit(repo, {"ci/check.sh": "#!/bin/sh\ntest ! -e broken.txt && test ! -e ci/extra.sh\n"})
    (repo / "ci" / "check.sh").chmod(0o755)
    declare(api, repo, '[[gate]]\nname = "check"\ncommand = "./ci/check.sh"\nfrom_trunk = ["ci"]\n'
                       '[[gate]]\nname = "candidate"\ncommand = "test -e ci/check.sh"\n')
    assert api.gates()[0]["from_trunk"] == ["ci"] and "from_trunk" not in api.gates()[1]
    assert "./ci/check.sh  (trunk's ci)" in run_cli("gates", cwd=repo).out
    for bad in ('"ci"', '["../x"]', '[".git/hooks"]', "[1]"):
        with pytest.raises(UserError) as invalid:
            gates.parse(f'[[gate]]\nname = "g"\ncommand = "true"\nfrom_trunk = {bad}\n')
        assert invalid.value.code == "invalid_gates" and "from_trunk" in invalid.value.message
    api.lane_create("a")
    ws = workspace(repo, "a")
    edit(ws, {"ci/check.sh": "#!/bin/sh\nexit 0\n", "broken.txt": "x\n"})
    neutered = run_cli("commit", "-m", "neuter the check", "--auto-accept", "--json", cwd=ws, env=AGENT)
    assert neutered.code == 4, neutered.err
    assert [(e["gate"], e["passed"]) for e in neutered.json["transition"]["evaluations"]] == \
        [("check", False), ("candidate", True)]  # the next gate sees the candidate again

    outside = tmp_path / "outside"
    outside.mkdir()
    api.restore("a", lane="a", force=True)
    subprocess.run(["rm", "-rf", str(ws / "ci")], check=True)
    (ws / "ci").symlink_to(outside)  # the trunk's ci/check.sh is written in its place, never through it
    linked = run_cli("commit", "-m", "ci elsewhere", "--auto-accept", "--json", cwd=ws, env=AGENT)
    assert linked.code == 4 and [e["passed"] for e in linked.json["transition"]["evaluations"]] == [True, False]
    assert list(outside.iterdir()) == []

    api.restore("a", lane="a", force=True)
    edit(ws, {"ci/extra.sh": "x\n"})  # a path the trunk lacks is the candidate's own: set aside
    assert api.commit("extra", "coder", lane="a", auto_accept=True)["status"] == "accepted"
    fsck_clean(repo)


def test_unprotected_changes_are_accepted_as_before_and_a_lane_cannot_unprotect(api, repo):
    declare(api, repo, '[policy]\nprotected = ["tests"]\n')
    land(api, repo, "a", {"src/app.py": "print('changed')\n"})
    assert api.promote("a", auto_accept=True)["status"] == "accepted"
    api.lane_create("b")
    ws = workspace(repo, "b")
    edit(ws, {".lanes.toml": "", "tests/t.py": "assert True\n"})  # unprotect, and touch tests
    held = api.commit("loosen", "coder", lane="b", auto_accept=True)
    assert held["status"] == "proposed"
    assert held["extra"]["held"]["paths"] == [".lanes.toml", "tests/t.py"]


# -- D5: nothing under .lanes/ in any state -----------------------------------------------------------------
def test_no_state_tracks_files_under_the_lanes_folder(api, repo):
    victim = Path(api.lane_create("victim")["workspace"])
    (victim / "notes.txt").write_text("victim's unsaved work\n")
    attacker = Path(api.lane_create("attacker")["workspace"])
    (attacker / ".lanes" / "workspaces" / "victim").mkdir(parents=True)
    (attacker / ".lanes" / "workspaces" / "victim" / "notes.txt").write_text("PWNED\n")
    git("add", "-f", ".lanes", cwd=attacker)
    refused = run_cli("commit", "-m", "sneaky", "--auto-accept", "--json", cwd=attacker, env=AGENT)
    assert refused.code == 1 and refused.json["error"] == "lanes_internal", refused.err
    assert refused.json["paths"] == [".lanes/workspaces/victim/notes.txt"]
    assert "git rm -r --cached .lanes" in refused.err
    # the variant: such a state made with plain git and put on the lane by hand is never promoted
    git("commit", "-qm", "sneaky, by hand", cwd=attacker)
    git("update-ref", "refs/lanes/heads/attacker", git("rev-parse", "HEAD", cwd=attacker).strip(), cwd=repo)
    promoted = run_cli("promote", "attacker", "--auto-accept", "--json", cwd=repo, env=AGENT)
    assert promoted.code == 1 and promoted.json["error"] == "lanes_internal", promoted.err
    assert git("ls-files", ".lanes", cwd=repo) == ""
    assert (victim / "notes.txt").read_text() == "victim's unsaved work\n"
    started = run_cli("lane", "create", "later", "--from", "attacker", "--json", cwd=repo)
    assert started.code == 1 and started.json["error"] == "lanes_internal"
    fsck_clean(repo)


def test_no_workspace_is_restored_or_reset_to_a_state_tracking_the_lanes_folder(api, repo):
    """A commit made with plain git (or fetched) that tracks `.lanes/…`: restored into the main worktree it
    wrote into other lanes' workspaces, made a folder in the way of a lane not yet created, and staged it
    all for the trunk's next commit."""
    victim = Path(api.lane_create("victim")["workspace"])
    (victim / "notes.txt").write_text("victim's unsaved work\n")
    api.lane_create("attacker")
    index = {"GIT_INDEX_FILE": str(repo / ".git" / "scratch-index")}
    git("read-tree", "main", cwd=repo, env=index)
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input="PWNED\n").strip()
    for path in (".lanes/workspaces/victim/notes.txt", ".lanes/workspaces/later/x.txt"):
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", cwd=repo, env=index)
    sneaky = git("commit-tree", "-p", "main", "-m", "sneaky", git("write-tree", cwd=repo, env=index).strip(),
                 cwd=repo).strip()
    git("update-ref", "refs/lanes/heads/sneaky", sneaky, cwd=repo)
    before = git("for-each-ref", cwd=repo)
    for args in (("restore", sneaky, "-w", "main", "--force"), ("restore", sneaky, "-w", "attacker"),
                 ("lane", "reset", "attacker", "--onto", "sneaky", "--force")):
        refused = run_cli(*args, "--json", cwd=repo, env=AGENT)
        assert refused.code == 1 and refused.json["error"] == "lanes_internal", (args, refused.err)
        assert refused.json["paths"] == [".lanes/workspaces/later/x.txt", ".lanes/workspaces/victim/notes.txt"]
    assert git("for-each-ref", cwd=repo) == before
    assert git("status", "--porcelain", cwd=repo) == "" and not (repo / ".lanes" / "workspaces" / "later").exists()
    assert git("status", "--porcelain", cwd=workspace(repo, "attacker")) == ""
    assert (victim / "notes.txt").read_text() == "victim's unsaved work\n"
