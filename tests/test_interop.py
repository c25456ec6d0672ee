"""What git-lanes writes is standard git: dulwich, a second implementation sharing no code with libgit2 or
git, reads the refs, commits, trailers, fanned-out notes and worktrees; and plain git shows it all with
`git log --notes=lanes`, `git for-each-ref refs/lanes` and `git worktree list`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git, workspace
from dulwich.objects import Commit, Tree
from dulwich.repo import Repo
from dulwich.trailers import parse_trailers
from dulwich.worktree import list_worktrees

from git_lanes.model.records import Cost

NOTES_REF = b"refs/notes/lanes"


@pytest.fixture
def story(api, repo):
    """Two lanes (one nested), accepted, rejected and pending transitions with intent and cost."""
    api.lane_create("feat")
    api.lane_create("docs/guide")
    feat, docs = workspace(repo, "feat"), workspace(repo, "docs/guide")
    (feat / "login.py").write_text("def login():\n    return True\n")
    accepted = api.commit("Add login\n\nWith a body line.", "coder-1", lane="feat", agent_type="dev",
                          model="m", tags=("auth",), cost=Cost(tokens_in=120, cost_usd=0.03), auto_accept=True)
    (feat / "login.py").write_text("broken\n")
    rejected = api.commit("Break login", "coder-1", lane="feat")
    api.reject(rejected["id"], "breaks login")
    api.restore("feat", lane="feat", force=True)
    (docs / "guide.md").write_text("# Guide\n")
    pending = api.commit("Write the guide", "writer", lane="docs/guide")
    return {"accepted": accepted, "rejected": rejected, "pending": pending, "feat": feat, "docs": docs}


def test_dulwich_reads_the_refs(repo, story):
    refs = Repo(str(repo)).refs.as_dict(b"refs/lanes")
    accepted, rejected, pending = story["accepted"], story["rejected"], story["pending"]
    assert refs[b"heads/feat"].decode() == accepted["to"]
    assert refs[b"heads/docs/guide"].decode() == pending["from"]
    assert refs[f"rejected/{rejected['id']}".encode()].decode() == rejected["to"]
    assert refs[f"proposals/{pending['id']}".encode()].decode() == pending["to"]
    assert f"proposals/{accepted['id']}".encode() not in refs


@pytest.mark.parametrize("which", ["accepted", "rejected", "pending"])
def test_dulwich_reads_state_commits_with_intent_in_message_and_trailers(repo, story, which):
    record = story[which]
    commit = Repo(str(repo))[record["to"].encode()]
    assert isinstance(commit, Commit)
    assert commit.tree.decode() == record["tree"]
    assert [p.decode() for p in commit.parents] == [record["from"]]
    assert commit.author.startswith(record["intent"]["agent_id"].encode() + b" <")
    body, trailers = parse_trailers(commit.message)
    assert body.decode().strip() == record["intent"]["prompt"].strip()
    assert {t.key: t.value for t in trailers} == {"Lanes-Agent": record["intent"]["agent_id"],
                                                  "Lanes-Lane": record["lane"], "Lanes-Transition": record["id"]}


def test_dulwich_reads_a_world_state_tree(repo, story):
    r = Repo(str(repo))
    tree = r[r[story["accepted"]["to"].encode()].tree]
    assert isinstance(tree, Tree)
    mode, blob = tree[b"login.py"]
    assert r[blob].data == b"def login():\n    return True\n"
    assert b"README.md" in tree and b"src" in tree


def test_dulwich_reads_the_fanned_out_transition_notes(repo, story, api):
    r = Repo(str(repo))
    notes_tree = r[r[r.refs[NOTES_REF]].tree]
    assert all(mode == 0o40000 and len(name) == 2 for name, mode, _ in notes_tree.iteritems()), \
        "git-lanes writes notes with a 2/38 fanout, as git does for many notes"
    for which in ("accepted", "rejected", "pending"):
        record = story[which]
        note = json.loads(r.notes.get_note(record["to"].encode(), notes_ref=NOTES_REF))
        assert note == {k: v for k, v in api.show(record["id"]).to_dict().items() if k != "changes"}
    listed = {sha.decode() for sha, _ in r.notes.list_notes(notes_ref=NOTES_REF)}
    assert {t["to"] for t in api.history()["transitions"]} <= listed


def test_dulwich_lists_the_workspaces_as_worktrees(repo, story):
    r = Repo(str(repo))
    found = {Path(w.path).resolve(): w for w in list_worktrees(r)}
    for lane in ("feat", "docs/guide"):
        info = found[workspace(repo, lane).resolve()]
        assert info.detached and info.head.decode() == r.refs[f"refs/lanes/heads/{lane}".encode()].decode()
    linked = Repo(str(story["feat"]))
    assert linked.head().decode() == story["accepted"]["to"]


def test_plain_git_log_shows_the_records(repo, story):
    accepted = story["accepted"]
    log = git("log", "--notes=lanes", "--format=%H%n%B%n%N--end--", "refs/lanes/heads/feat", cwd=repo)
    entry = log.split("--end--")[0]
    assert entry.startswith(accepted["to"]) and "Add login" in entry and "Lanes-Agent: coder-1" in entry
    note = json.loads(entry[entry.index("{"):])
    assert note["id"] == accepted["id"] and note["cost"]["tokens_in"] == 120
    # notes.displayRef, set by init, makes a bare `git log` show the record too
    assert f'"id": "{accepted["id"]}"' in git("log", "-1", "refs/lanes/heads/feat", cwd=repo)
    trailers = subprocess.run(["git", "interpret-trailers", "--parse"], input=git("log", "-1", "--format=%B",
                              accepted["to"], cwd=repo), capture_output=True, text=True, cwd=repo).stdout
    assert f"Lanes-Transition: {accepted['id']}" in trailers


def test_plain_git_lists_lanes_proposals_and_workspaces(repo, story):
    refs = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/lanes", cwd=repo).splitlines()
    assert f"refs/lanes/heads/feat {story['accepted']['to']}" in refs
    assert f"refs/lanes/proposals/{story['pending']['id']} {story['pending']['to']}" in refs
    assert f"refs/lanes/rejected/{story['rejected']['id']} {story['rejected']['to']}" in refs
    worktrees = git("worktree", "list", "--porcelain", cwd=repo)
    for lane in ("feat", "docs/guide"):
        assert f"worktree {workspace(repo, lane)}\nHEAD " in worktrees
    assert worktrees.count("detached") == 2
    reflog = git("reflog", "show", "--format=%gs", "refs/lanes/heads/feat", cwd=repo)
    assert f"lanes: accept {story['accepted']['id'][:8]}" in reflog
    assert subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo, capture_output=True).returncode == 0


def test_git_reads_notes_git_lanes_wrote_and_git_lanes_reads_notes_git_rewrote(repo, story, api):
    """A user's `git notes` on refs/notes/lanes (here: editing a record) keeps the tree readable both ways."""
    accepted = story["accepted"]
    assert json.loads(git("notes", "--ref=lanes", "show", accepted["to"], cwd=repo))["id"] == accepted["id"]
    record = json.loads(git("notes", "--ref=lanes", "show", accepted["to"], cwd=repo))
    record["reason"] = "edited by hand"
    subprocess.run(["git", "notes", "--ref=lanes", "add", "-f", "-F", "-", accepted["to"]],
                   input=json.dumps(record), text=True, cwd=repo, check=True)
    assert api.show(accepted["id"])["reason"] == "edited by hand"
