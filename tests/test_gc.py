"""`git lanes gc` against a real remote: it removes what it reports and nothing a lane head, a pending
proposal or an open task reaches; a sync afterwards does not bring pruned refs back (their tombstones travel
in the ledger and delete them on the remote and on other machines); `git fsck` is clean after."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git, run_cli, workspace
from gitserver import GitServer, clone, make_origin, server  # noqa: F401 (fixture)

from git_lanes.api import Lanes
from git_lanes.errors import UserError


def exists(repo: Path, oid: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", oid], cwd=repo, capture_output=True).returncode == 0


def refs_under(repo: Path, prefix: str) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(refname) %(objectname)", prefix, cwd=repo)
    return dict(line.split() for line in out.splitlines())


def test_gc_prunes_what_it_reports_keeps_what_is_live_and_sync_does_not_bring_it_back(tmp_path,
                                                                                       server: GitServer):  # noqa: F811
    url = server.bare("project")
    machine = make_origin(tmp_path, url)
    api = Lanes(machine)
    # a rejected attempt on lane `tried`
    api.lane_create("tried")
    (workspace(machine, "tried") / "attempt.txt").write_text("a dead end\n")
    attempt = api.commit("try something", "coder-1", lane="tried")
    api.reject(attempt["id"], "too slow")
    rejected = attempt["to"]
    # a pending proposal on lane `pending`, and an open task working in lane `busy` with accepted work
    api.lane_create("pending")
    (workspace(machine, "pending") / "p.txt").write_text("pending\n")
    proposal = api.commit("awaiting review", "coder-2", lane="pending")
    task = api.task_create("keep going")["task"]
    api.lane_create("busy")
    api.task_claim(task, "coder-3", lane="busy")
    (workspace(machine, "busy") / "b.txt").write_text("busy\n")
    busy = api.commit("half done", "coder-3", lane="busy", auto_accept=True)["to"]
    # a backup (unsaved edits kept by a forced restore), and a workspace whose lane was deleted by hand
    (workspace(machine, "busy") / "b.txt").write_text("unsaved\n")
    backup = api.restore("busy", lane="busy", force=True)["backup"]
    api.lane_create("gone")
    git("update-ref", "-d", "refs/lanes/heads/gone", cwd=machine)
    assert api.sync()["went_out"]
    other = clone(tmp_path, url, "other")
    assert run_cli("pull", cwd=other).code == 0
    assert f"refs/lanes/rejected/{attempt['id']}" in refs_under(other, "refs/lanes/rejected/")

    dry = run_cli("gc", "--dry-run", "--older-than", "0", "--json", cwd=machine)
    assert dry.code == 0, dry.err
    assert [e["transition"] for e in dry.json["removed"]["rejected"]] == [attempt["id"]]
    assert exists(machine, rejected) and refs_under(machine, "refs/lanes/rejected/")  # a dry run changes nothing

    result = run_cli("gc", "--older-than", "0", "--json", cwd=machine)
    assert result.code == 0, result.err
    removed = result.json["removed"]
    assert [e["oid"] for e in removed["rejected"]] == [rejected]
    assert [e["ref"] for e in removed["backups"]] == [backup]
    assert [e["lane"] for e in removed["workspaces"]] == ["gone"]
    assert result.json["bytes_freed"] >= 0 and result.json["bytes_before"] > 0
    # what it reported is gone...
    assert refs_under(machine, "refs/lanes/rejected/") == {} and refs_under(machine, "refs/lanes/backups/") == {}
    assert not exists(machine, rejected)
    assert not workspace(machine, "gone").exists()
    assert api.history(status="rejected")["transitions"] == []
    # ...and what is live stays: lane heads, the pending proposal, the open task's lane
    assert exists(machine, proposal["to"]) and api.show(proposal["id"])["status"] == "proposed"
    assert git("rev-parse", "refs/lanes/heads/busy", cwd=machine).strip() == busy
    assert api.task_show(task)["lane"] == "busy"
    assert git("fsck", "--no-progress", cwd=machine, check=True) is not None

    # the next sync deletes it on the remote instead of bringing it back, and another machine follows
    synced = api.sync()
    assert any(m["how"] == "pruned" for m in synced["went_out"]), synced
    assert refs_under(machine, "refs/lanes/rejected/") == {}
    assert refs_under(server.path("project"), "refs/lanes/rejected/") == {}
    assert run_cli("sync", cwd=other).code == 0
    assert refs_under(other, "refs/lanes/rejected/") == {}
    assert "too slow" not in git("log", "--notes=lanes", "--all", cwd=other)
    assert api.sync()["came_in"] == []
    for where in (machine, other, server.path("project")):
        subprocess.run(["git", "fsck", "--no-progress"], cwd=where, check=True, capture_output=True)


def test_gc_keeps_what_is_younger_and_a_workspace_with_unsaved_edits(repo: Path):
    api = Lanes(repo)
    api.lane_create("tried")
    (workspace(repo, "tried") / "x.txt").write_text("x\n")
    attempt = api.commit("x", "coder-1", lane="tried")
    api.reject(attempt["id"], "no")
    api.lane_create("orphan")
    (workspace(repo, "orphan") / "wip.txt").write_text("work in progress\n")
    git("update-ref", "-d", "refs/lanes/heads/orphan", cwd=repo)
    kept = api.gc()  # the default age: 30 days
    assert kept["removed"]["rejected"] == [] and refs_under(repo, "refs/lanes/rejected/")
    now = api.gc(older_than=0)
    assert [k["lane"] for k in now["kept"]] == ["orphan"] and (workspace(repo, "orphan") / "wip.txt").exists()
    assert "commit or copy them" in now["kept"][0]["hint"]


def test_gc_refuses_an_age_it_cannot_read(repo: Path):
    result = run_cli("gc", "--older-than", "soon", cwd=repo)
    assert result.code == 1 and "invalid age 'soon'" in result.err


@pytest.mark.parametrize("age", ["99999999999d", "inf", "1e400s", "infd"])
def test_gc_refuses_an_age_reaching_back_before_1970(repo: Path, age: str):
    """Ages no commit can have (before the epoch git dates start at, or infinite) were taken: the huge ones
    pruned nothing, the infinite ones ended in an internal error (exit 6)."""
    result = run_cli("gc", "--older-than", age, "--json", cwd=repo)
    assert (result.code, result.json["error"]) == (1, "invalid_age"), result.err
    assert f"invalid age '{age}'" in result.err and "before 1970" in result.err


def test_gc_refuses_a_numeric_age_that_is_not_a_number(api: Lanes):
    for age in (float("nan"), float("inf"), -1.0):
        with pytest.raises(UserError) as refused:
            api.gc(older_than=age, dry_run=True)
        assert refused.value.code == "invalid_age"


def test_a_gc_stopped_midway_removes_states_with_their_records_or_neither(repo: Path, monkeypatch):
    """gc stopped after its first ref transaction that removes a state (a kill, a crash: here an interrupt
    raised there) must not leave transition records naming states that are gone, which no later gc finds."""
    api = Lanes(repo)
    api.lane_create("tried")
    attempts = []
    for n in range(3):
        (workspace(repo, "tried") / "attempt.txt").write_text(f"attempt {n}\n")
        attempt = api.commit(f"try {n}", "coder-1", lane="tried")
        api.reject(attempt["id"], "no")
        attempts.append(attempt)
    store, apply, seen = api.ctx.store, api.ctx.store.update_refs, []

    def stopped_after_the_first(updates):
        if seen and any(u.name.startswith("refs/lanes/rejected/") for u in updates):
            raise KeyboardInterrupt
        apply(updates)
        seen.extend(u.name for u in updates if u.name.startswith("refs/lanes/rejected/"))

    monkeypatch.setattr(store, "update_refs", stopped_after_the_first)
    try:
        api.gc(older_than=0)
    except KeyboardInterrupt:
        pass
    monkeypatch.undo()
    assert seen  # it got as far as removing something
    noted = set(git("notes", "--ref=lanes", "list", cwd=repo).split()[1::2])
    left = refs_under(repo, "refs/lanes/rejected/")
    for attempt in attempts:  # each state kept with its record, or gone with it
        assert (attempt["to"] in noted) == (f"refs/lanes/rejected/{attempt['id']}" in left)


def test_gc_keeps_the_record_of_a_state_accepted_on_one_machine_and_rejected_on_another(tmp_path,
                                                                                        server: GitServer):  # noqa: F811
    """One machine accepts a proposal while another rejects it; the notes merge keeps `accepted` (the lane
    moved), but the rejected ref travels too. gc then took the accepted lane head for a rejected state and
    dropped its transition record: the lane's history lost it."""
    url = server.bare("project")
    first = make_origin(tmp_path, url)
    Lanes(first).sync()
    second = clone(tmp_path, url, "second")
    Lanes.open_for_sync(second)[0].pull()
    Lanes(first).lane_create("shared")
    (workspace(first, "shared") / "idea.txt").write_text("an idea\n")
    proposed = Lanes(first).commit("an idea", "coder-1", lane="shared")
    Lanes(first).sync()
    Lanes(second).sync()
    Lanes(second).reject(proposed["id"], "no")
    Lanes(first).accept(proposed["id"])
    for machine in (first, second, first):
        Lanes(machine).sync()
    assert git("rev-parse", "refs/lanes/heads/shared", cwd=second).strip() == proposed["to"]
    assert Lanes(second).show(proposed["id"][:8])["status"] == "accepted"
    assert f"refs/lanes/rejected/{proposed['id']}" in refs_under(second, "refs/lanes/rejected")

    result = run_cli("gc", "--older-than", "0", "--json", cwd=second)
    assert result.code == 0, result.err
    shown = run_cli("show", proposed["id"][:8], "--json", cwd=second)
    assert shown.code == 0 and shown.json["status"] == "accepted", shown.err
    listed = run_cli("history", "--lane", "shared", "--json", cwd=second)
    assert [t["id"] for t in listed.json["transitions"]] == [proposed["id"]], listed.out
    Lanes(second).sync()
    Lanes(first).sync()
    assert Lanes(first).show(proposed["id"][:8])["status"] == "accepted"
