"""The light sync (issue 15): with nothing to replay, `git lanes sync` runs without pygit2 or click, through the
same domain code on a store of its own (git_lanes/store/light.py). It must end exactly where the ordinary
sync ends, and hand everything else to it before anything moves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_cli
from gitserver import make_origin
from test_startup_imports import PROBE  # `python -m git_lanes ARGS`, then the modules it loaded

from git_lanes.api import Lanes
from git_lanes.api.sync_light import LightSync
from git_lanes.model.sync_results import SyncReport


ORDINARY = {"GIT_CONFIG_COUNT": "0"}  # see test_a_light_sync_ends_where_the_ordinary_one_does


def every_ref(path: Path) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(objectname) %(refname)", cwd=path)
    return {name: oid for oid, name in (line.split(" ", 1) for line in out.splitlines())}


def last_entry(path: Path) -> dict:
    """The newest operation-log entry, without what differs between two runs (its id and time)."""
    message = git("log", "-1", "--format=%B", "refs/lanes/oplog", cwd=path)
    entry = json.loads(message.split("\n", 2)[2])
    return {key: value for key, value in entry.items() if key not in ("id", "time")}


@pytest.fixture
def behind(tmp_path: Path) -> tuple[Path, Path]:
    """A remote that moved on (ledger posts, a rejected proposal and its note) since a clone last synced with it."""
    remote = tmp_path / "remote.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote), cwd=tmp_path)
    origin = make_origin(tmp_path, f"file://{remote}")
    api = Lanes(origin)
    api.board_post("first", "setup")
    api.sync()
    clone = tmp_path / "clone"
    git("clone", "--quiet", f"file://{remote}", str(clone), cwd=tmp_path)
    Lanes.open_for_sync(clone)[0].pull()
    for number in range(40):  # past the light store's short walk: `git rev-list` answers
        api.board_post(f"remote post {number}", f"agent-{number % 3}")
    (origin / "notes.txt").write_text("a proposal on the trunk leaves a transition note\n")
    proposed = api.commit("propose a change", "coder-1", lane="main")
    api.reject(proposed["id"], "not now")
    api.sync()
    return clone, tmp_path


def twin(clone: Path, where: Path, name: str) -> Path:
    copy = where / name
    shutil.copytree(clone, copy, symlinks=True)
    return copy


def test_a_light_sync_ends_where_the_ordinary_one_does(behind):
    clone, where = behind
    light, full = twin(clone, where, "light"), twin(clone, where, "full")
    before = every_ref(light)

    report = LightSync(light).report()  # what the CLI prints: the domain's report, not checked by its record
    assert report is not None, "the light path handed this plain fast-forward to the ordinary one"
    assert SyncReport.from_dict(report).to_dict() == report
    # The ordinary sync in a process of its own, as the light one reads git's config (pygit2 loaded in this
    # test process keeps the identity of the first HOME it saw). GIT_CONFIG_COUNT=0 changes nothing for git,
    # but the light path does not read such config, so the click command runs the ordinary sync.
    expected = run_cli("sync", "--json", cwd=full, env=ORDINARY)
    assert expected.code == 0, expected.err

    assert report | {"initialized": False, "trunk": "main"} == expected.json
    assert report["ledger"]["came_in"] >= 40 and {m["kind"] for m in report["came_in"]} >= {"ledger", "notes", "rejected"}  # the case is what it claims to be
    assert every_ref(light) != before
    assert {k: v for k, v in every_ref(light).items() if k != "refs/lanes/oplog"} == \
        {k: v for k, v in every_ref(full).items() if k != "refs/lanes/oplog"}
    assert last_entry(light) == last_entry(full)
    assert git("fsck", "--no-dangling", cwd=light) == ""
    # the ordinary store reads what the light one wrote
    assert Lanes(light).op_log(1)[0]["description"] == "sync"
    # a short history (read in Python, no `git log`) ends where the ordinary sync ends too
    origin = where / "origin-machine"
    for number in range(3):
        Lanes(origin).board_post(f"later post {number}", "agent-a")
    Lanes(origin).sync()
    again = LightSync(light).run()
    assert again is not None and again["ledger"]["came_in"] == 3
    assert again.to_dict() | {"initialized": False, "trunk": "main"} == \
        run_cli("sync", "--json", cwd=full, env=ORDINARY).json
    assert last_entry(light) == last_entry(full)


def test_local_ops_to_replay_go_to_the_ordinary_path_untouched(behind):
    clone, _ = behind
    Lanes(clone).board_post("a local post", "agent-b")
    before = every_ref(clone)
    assert LightSync(clone).run() is None
    assert every_ref(clone) == before  # not even fetched: the ordinary sync does it all
    result = run_cli("sync", "--json", cwd=clone)
    assert result.code == 0, result.err
    assert result.json["ledger"]["replayed"] == 1


def test_a_plan_beyond_fast_forwards_stops_before_anything_moves(behind, tmp_path):
    clone, _ = behind
    origin = tmp_path / "origin-machine"
    api = Lanes(origin)
    api.lane_create("feat")  # a lane created on the remote: lanes move through the ordinary path
    api.sync()
    before = {k: v for k, v in every_ref(clone).items() if not k.startswith("refs/lanes-remote/")}
    assert LightSync(clone).run() is None
    assert {k: v for k, v in every_ref(clone).items() if not k.startswith("refs/lanes-remote/")} == before
    result = run_cli("sync", "--json", cwd=clone)
    assert result.code == 0, result.err
    assert any(move["kind"] == "lane" and move["name"] == "feat" for move in result.json["came_in"])


def probe(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, set(proc.stderr.splitlines()[-1].split())


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_the_cli_syncs_without_pygit2_or_click_and_prints_what_the_click_command_prints(behind, as_json):
    clone, where = behind
    light, full = twin(clone, where, "light"), twin(clone, where, "full")
    args = ["sync", "origin"] + (["--json"] if as_json else [])
    out, loaded = probe(args, light)
    assert "git_lanes.api.sync_light" in loaded, "the probe did not take the light path"
    assert not {"pygit2", "click"} & loaded
    assert not any(name.startswith(("pygit2.", "click.", "git_lanes.cli")) for name in loaded)
    # ~7 ms of start-up: the light store's paths are strings, and typing is for the type checker alone; ~3 ms
    # more: git is started by os.posix_spawnp (store/gitcli.py StartedGit), not subprocess; ~0.6 ms: the three
    # signal numbers it needs come from _signal, without `signal`'s enums
    assert not {"pathlib", "typing", "subprocess", "signal"} & loaded
    expected, ordinary = probe(args, full, ORDINARY)
    assert {"pygit2", "click", "git_lanes.cli.sync"} <= ordinary
    assert out == expected
    if as_json:
        assert json.loads(out)["ledger"]["came_in"] >= 40


def test_the_light_store_moves_refs_only_by_compare_and_swap(repo):
    from git_lanes.errors import Conflict
    from git_lanes.store.light import open_light
    from git_lanes.store.values import RefUpdate

    store = open_light(repo)
    head = git("rev-parse", "HEAD", cwd=repo).strip()
    first = store.write_commit(store.empty_tree(), [head], "one\n")
    second = store.write_commit(store.empty_tree(), [first], "two\n")
    store.update_refs([RefUpdate("refs/lanes/runs/r1", first, None, "lanes: create"),
                       RefUpdate("refs/lanes/runs/r2", first, None, "lanes: create")])
    with pytest.raises(Conflict):  # r1 is not at `second`: neither ref moves
        store.update_refs([RefUpdate("refs/lanes/runs/r2", second, first, "lanes: move"),
                           RefUpdate("refs/lanes/runs/r1", head, second, "lanes: move")])
    assert every_ref(repo)["refs/lanes/runs/r1"] == every_ref(repo)["refs/lanes/runs/r2"] == first
    assert not list((repo / ".git" / "refs" / "lanes" / "runs").glob("*.lock"))
    store.update_refs([RefUpdate("refs/lanes/runs/r1", second, first, "lanes: move")])
    assert git("rev-parse", "refs/lanes/runs/r1", cwd=repo).strip() == second
    assert git("log", "-1", "--format=%s", "refs/lanes/runs/r1", cwd=repo).strip() == "two"
    assert "lanes: move" in git("reflog", "refs/lanes/runs/r1", cwd=repo)
    assert store.is_ancestor(first, second) and not store.is_ancestor(second, first)
    assert store.count_between(head, second) == 2
    assert git("fsck", "--no-dangling", cwd=repo) == ""


@pytest.mark.parametrize("setting", [("core.sharedRepository", "group"), ("core.fsyncObjectFiles", "true"),
                                     ("extensions.worktreeConfig", "true")])
def test_a_repository_asking_for_what_the_light_store_does_not_do_goes_to_the_ordinary_path(behind, setting):
    clone, _ = behind
    git("config", *setting, cwd=clone)
    before = every_ref(clone)
    assert LightSync(clone).run() is None
    assert every_ref(clone) == before


def test_an_unexpected_error_before_anything_moves_hands_the_sync_to_the_ordinary_path(behind, monkeypatch):
    """A gap in the light store (a str where the domain does Path arithmetic, as bdd43c0 once left) found
    before the gate: users get the ordinary sync, the suite (GIT_LANES_LIGHT_STRICT) gets the error."""
    from git_lanes.domain import sync_plan

    clone, _ = behind
    before = {k: v for k, v in every_ref(clone).items() if not k.startswith("refs/lanes-remote/")}
    build = sync_plan.build

    def broken(*args, **kwargs):
        raise TypeError("unsupported operand type(s) for /: 'str' and 'str'")

    monkeypatch.setattr(sync_plan, "build", broken)
    with pytest.raises(TypeError):
        LightSync(clone).report()
    monkeypatch.delenv("GIT_LANES_LIGHT_STRICT")
    assert LightSync(clone).report() is None
    assert {k: v for k, v in every_ref(clone).items() if not k.startswith("refs/lanes-remote/")} == before
    monkeypatch.setattr(sync_plan, "build", build)
    result = run_cli("sync", "--json", cwd=clone)  # a process of its own: the ordinary path, then
    assert result.code == 0, result.err
    assert result.json["ledger"]["came_in"] >= 40


# Root may write anywhere: run git-lanes as root without that power, so file modes bind it as any user.
AS_A_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []


@pytest.mark.skipif(bool(AS_A_USER) and shutil.which("setpriv") is None, reason="root, and no setpriv")
@pytest.mark.parametrize("path", ["light", "ordinary"])
@pytest.mark.parametrize("read_only", [".git/refs", ".git"])
def test_a_repository_this_user_cannot_write_is_said_so_not_blamed_on_the_remote(behind, path, read_only):
    """A fetch that cannot store its tracking refs here (refs/ not writable) was reported as a remote ref to
    delete from the remote (`git push origin :refs/lanes/ledger`), and a read-only .git as an internal
    PermissionError: both paths now say the repository is not writable, exit 1, and nothing moves."""
    clone, _ = behind
    before = every_ref(clone)
    subprocess.run(["chmod", "-R", "a-w", str(clone / read_only)], check=True)
    try:
        proc = subprocess.run([*AS_A_USER, sys.executable, "-m", "git_lanes", "sync", "--json"], cwd=clone,
                              capture_output=True, text=True, env={**os.environ, **(ORDINARY if path == "ordinary" else {})})
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(clone / ".git")], check=True)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["error"] == "repository_unwritable"
    assert proc.stderr.startswith("git-lanes: error: cannot write in this repository: "), proc.stderr
    assert "git push" not in proc.stdout + proc.stderr
    assert every_ref(clone) == before
    assert run_cli("sync", "--json", cwd=clone).json["ledger"]["came_in"] >= 40  # writable again: it syncs


def test_the_light_sync_records_the_agent_the_environment_names_and_refuses_a_bad_one(behind):
    """`sync` took no agent: a sync GIT_LANES_AGENT=syncer ran was recorded as git's user, in the operation
    log the light path writes as in the one the ordinary path writes."""
    clone, where = behind
    light, full = twin(clone, where, "light"), twin(clone, where, "full")
    before = every_ref(light)
    refused = run_cli("sync", "--json", cwd=light, env={"GIT_LANES_AGENT": "Jane Doe"})
    assert (refused.code, refused.json["error"]) == (1, "invalid_agent"), refused.err
    assert every_ref(light) == before  # refused before the fetch
    _, loaded = probe(["sync", "--json"], light, {"GIT_LANES_AGENT": "syncer"})
    assert "git_lanes.api.sync_light" in loaded and "pygit2" not in loaded, "the probe did not take the light path"
    assert last_entry(light)["actor"] == "syncer"
    ordinary = run_cli("sync", "--agent", "syncer", "--json", cwd=full, env=ORDINARY)
    assert ordinary.code == 0, ordinary.err
    assert last_entry(full) == last_entry(light)
