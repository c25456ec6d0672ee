"""A peer with push access writing refs git-lanes never would: sync refuses and reports each one (exit 3),
leaves it alone on both sides, and moves everything else. The trunk is only ever `refs/heads/<trunk>`."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import fsck_clean, git, run_cli, workspace
from gitserver import make_origin

from git_lanes.api import Lanes


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """A machine set up for lanes and synced with a bare repository on a local path."""
    bare = tmp_path / "origin.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    machine = make_origin(tmp_path, str(bare))
    assert Lanes(machine).sync()["invalid"] == []
    return machine, bare


def plant(bare: Path, ref: str, oid: str) -> None:
    git("update-ref", ref, oid, cwd=bare)


def commit_with(bare: Path, files: dict[str, str], parent: str = "main") -> str:
    """A commit in `bare` whose tree holds exactly `files`, made with plain git as any pusher could."""
    rows = "".join(f"100644 blob {git('hash-object', '-w', '--stdin', cwd=bare, input=text).strip()}\t{name}\n"
                   for name, text in files.items())
    tree = git("mktree", cwd=bare, input=rows).strip()
    return git("commit-tree", "-p", parent, "-m", "planted", tree, cwd=bare).strip()


def sync(machine: Path, seed: str = "0") -> tuple[int, dict]:
    result = run_cli("sync", "--json", cwd=machine, env={"PYTHONHASHSEED": seed})
    assert "Traceback" not in result.err and "internal" not in result.out, result.err
    return result.code, result.json


@pytest.mark.parametrize("seed", ["0", "3", "5"])
def test_a_lane_named_like_the_trunk_never_reaches_the_main_worktree(pair, seed):
    machine, bare = pair
    shadow = commit_with(bare, {"README.md": "# project\n", "evil.txt": "injected\n"})
    plant(bare, "refs/lanes/heads/main", shadow)
    (machine / "t.txt").write_text("trunk work\n")
    Lanes(machine).commit("trunk work", "coder-1", cwd=machine, auto_accept=True)

    code, report = sync(machine, seed)
    assert code == 3
    assert [(i["ref"], i["side"]) for i in report["invalid"]] == [("refs/lanes/heads/main", "remote")]
    assert "trunk" in report["invalid"][0]["reason"]
    # whatever the hash seed, the trunk is planned from refs/heads/main, and it went out
    assert [m["ref"] for m in report["went_out"] if m["kind"] == "lane"] == ["refs/heads/main"]
    assert git("rev-parse", "main", cwd=bare) == git("rev-parse", "main", cwd=machine)
    assert not (machine / "evil.txt").exists()
    assert git("status", "--porcelain", cwd=machine) == ""
    assert git("for-each-ref", "refs/lanes/heads", cwd=machine) == ""
    assert [lane["name"] for lane in Lanes(machine).lane_list()] == ["main"]
    fsck_clean(machine)


def test_bad_refs_under_every_lanes_namespace_are_refused_and_the_rest_moves(pair):
    machine, bare = pair
    main = git("rev-parse", "main", cwd=bare).strip()
    blob = git("hash-object", "-w", "--stdin", cwd=bare, input="x\n").strip()
    tag = git("mktag", cwd=bare, input=f"object {main}\ntype commit\ntag t\ntagger x <x@y> 1 +0000\n\nm\n").strip()
    tree = git("rev-parse", "main^{tree}", cwd=bare).strip()
    planted = {
        "refs/lanes/heads/blobby": blob, "refs/lanes/heads/tagged": tag, "refs/lanes/heads/HEAD": main,
        "refs/lanes/heads/-rf": main, "refs/lanes/proposals/not-a-transition": main,
        "refs/lanes/rejected/0123456789abcdef": tree, "refs/lanes/runs/-x": main,
        "refs/lanes/deleted/a/b": main, "refs/lanes/meta/-x": main,
    }
    for ref, oid in planted.items():
        git("update-ref", "--no-deref", ref, oid, cwd=bare)
    # ... beside a good lane someone pushed in the same round
    good = commit_with(bare, {"README.md": "# project\n", "g.txt": "good\n"})
    plant(bare, "refs/lanes/heads/good", good)

    code, report = sync(machine)
    assert code == 3
    assert sorted(i["ref"] for i in report["invalid"]) == sorted(planted)
    assert all(i["side"] == "remote" and i["hint"] for i in report["invalid"])
    assert [m["ref"] for m in report["came_in"]] == ["refs/lanes/heads/good"]
    assert git("for-each-ref", "--format=%(refname)", "refs/lanes/heads", cwd=machine).split() == \
        ["refs/lanes/heads/good"]
    # nothing was pushed over or under them, and the next sync says the same, without failing
    assert git("rev-parse", "refs/lanes/heads/blobby", cwd=bare).strip() == blob
    again_code, again = sync(machine)
    assert again_code == 3 and sorted(i["ref"] for i in again["invalid"]) == sorted(planted)
    assert Lanes(machine).lane_create("good")["head"] == good
    fsck_clean(machine)


def test_remote_lanes_too_long_for_the_file_system_are_refused_not_fatal(pair):
    """git's atomic fetch names one ref it cannot store per attempt: past 20 of them, every sync failed."""
    machine, bare = pair
    long_names = [f"{index:02d}" + "a" * 300 for index in range(25)]
    main = git("rev-parse", "main", cwd=bare).strip()
    git("pack-refs", "--all", cwd=bare)
    packed = (bare / "packed-refs").read_text().splitlines()
    header = [line for line in packed if line.startswith("#")]
    rows = sorted([line for line in packed if not line.startswith("#")] +
                  [f"{main} refs/lanes/heads/{name}" for name in long_names], key=lambda line: line.split(" ")[1])
    (bare / "packed-refs").write_text("\n".join(header + rows) + "\n")
    plant(bare, "refs/lanes/heads/good", main)

    code, report = sync(machine)
    assert code == 3
    assert sorted(i["ref"] for i in report["invalid"]) == [f"refs/lanes/heads/{name}" for name in long_names]
    assert [m["ref"] for m in report["came_in"]] == ["refs/lanes/heads/good"]
    assert sync(machine)[0] == 3
    fsck_clean(machine)


def test_a_bad_ref_already_here_is_reported_and_every_workspace_still_catches_up(pair):
    machine, bare = pair
    api = Lanes(machine)
    api.lane_create("feat")
    api.sync()
    blob = git("hash-object", "-w", "--stdin", cwd=machine, input="x\n").strip()
    # what an older git-lanes took from a hostile remote: a lane head that is a blob, with a workspace on it
    api.lane_create("victim")
    git("update-ref", "refs/lanes/heads/victim", blob, cwd=machine)
    # meanwhile feat moved on the remote: another machine's commit, pushed with plain git
    feat_head = git("rev-parse", "refs/lanes/heads/feat", cwd=machine).strip()
    index = {"GIT_INDEX_FILE": str(machine / ".git" / "other-index")}
    git("read-tree", feat_head, cwd=machine, env=index)
    blob_f = git("hash-object", "-w", "--stdin", cwd=machine, input="f\n").strip()
    git("update-index", "--add", "--cacheinfo", f"100644,{blob_f},f.txt", cwd=machine, env=index)
    tree = git("write-tree", cwd=machine, env=index).strip()
    moved = git("commit-tree", "-p", feat_head, "-m", "elsewhere", tree, cwd=machine).strip()
    git("push", "--quiet", str(bare), f"{moved}:refs/lanes/heads/feat", cwd=machine)

    code, report = sync(machine)
    assert code == 3
    assert [(i["ref"], i["side"]) for i in report["invalid"]] == [("refs/lanes/heads/victim", "local")]
    assert (workspace(machine, "feat") / "f.txt").read_text() == "f\n"
    shown = run_cli("lane", "show", "victim", "--json", cwd=machine)
    assert shown.code == 1 and shown.json["error"] == "invalid_lane_head", shown.err
    assert os.path.isdir(workspace(machine, "victim"))
    # The repair both offer keeps the workspace a lane's: removing the ref (what they offered) left it to no
    # lane, which neither `lane delete` nor `lane create` would then take.
    held = git("rev-parse", "HEAD", cwd=workspace(machine, "victim")).strip()
    repair = f"`git update-ref refs/lanes/heads/victim {held} {blob}`"
    assert repair in report["invalid"][0]["hint"] and repair in shown.json["hint"]
    git(*shlex.split(repair.strip("`"))[1:], cwd=machine)
    assert run_cli("lane", "show", "victim", cwd=machine).code == 0
    assert sync(machine)[0] == 0


def test_a_lane_here_named_as_lane_create_refuses_is_deleted_for_good_by_lane_delete(pair):
    """What an older sync took (or plain git wrote): `lane delete HEAD` worked, but left a deletion marker named
    HEAD, which every sync from then on refused and reported (exit 3)."""
    machine, bare = pair
    main = git("rev-parse", "main", cwd=machine).strip()
    for name in ("HEAD", "-rf"):
        git("update-ref", "--no-deref", f"refs/lanes/heads/{name}", main, cwd=machine)
    code, report = sync(machine)
    assert code == 3 and [i["ref"] for i in report["invalid"]] == ["refs/lanes/heads/-rf", "refs/lanes/heads/HEAD"]

    for name in ("HEAD", "-rf"):
        deleted = run_cli("lane", "delete", "--json", "--", name, cwd=machine)
        assert deleted.code == 0, deleted.err
        assert deleted.json["kept_at"].startswith(f"refs/lanes/backups/{name}/")  # kept here, where sync never looks
        assert git("rev-parse", deleted.json["kept_at"], cwd=machine).strip() == main
    assert git("for-each-ref", "refs/lanes/heads", "refs/lanes/deleted", cwd=machine) == ""
    code, report = sync(machine)
    assert code == 0 and report["invalid"] == [], report
    assert git("for-each-ref", "refs/lanes/deleted", cwd=bare) == ""
    fsck_clean(machine)


@pytest.mark.parametrize("ref", ["refs/lanes/heads/sneaky", "refs/heads/main"])
def test_a_peer_lane_whose_state_tracks_the_lanes_folder_is_refused(pair, ref):
    machine, bare = pair
    trunk = git("rev-parse", "main", cwd=machine).strip()
    index = {"GIT_INDEX_FILE": str(bare / "scratch-index")}
    git("read-tree", "main", cwd=bare, env=index)
    blob = git("hash-object", "-w", "--stdin", cwd=bare, input="PWNED\n").strip()
    git("update-index", "--add", "--cacheinfo", f"100644,{blob},.lanes/workspaces/victim/a.txt", cwd=bare, env=index)
    tree = git("write-tree", cwd=bare, env=index).strip()
    plant(bare, ref, git("commit-tree", "-p", "main", "-m", "sneaky", tree, cwd=bare).strip())
    code, report = sync(machine)
    assert code == 3 and [i["ref"] for i in report["invalid"]] == [ref]
    assert ".lanes/" in report["invalid"][0]["reason"]
    # the remedy keeps the work: a commit on top that untracks the paths, never a deletion of the trunk
    assert "git rm -r --cached .lanes" in report["invalid"][0]["hint"] and ":refs/" not in report["invalid"][0]["hint"]
    assert git("for-each-ref", "refs/lanes/heads", cwd=machine) == ""
    assert git("rev-parse", "main", cwd=machine).strip() == trunk
    assert git("ls-files", ".lanes", cwd=machine) == "" and git("status", "--porcelain", cwd=machine) == ""


def test_a_ledger_op_whose_text_was_cut_is_reported_and_skipped_not_fatal_for_every_sync(pair, tmp_path):
    """An older git-lanes let a NUL through the API; libgit2 cut the op's commit message there, dropping its
    JSON. The next sync that had to replay it failed, and so did every one after it."""
    machine, bare = pair
    other = tmp_path / "other"
    git("clone", "--quiet", str(bare), str(other), cwd=tmp_path)
    Lanes.open_for_sync(other)[0].pull()
    Lanes(machine).task_create("moved on the first machine", actor="ag1")
    Lanes(machine).sync()
    api = Lanes(other)
    api.task_create("kept", actor="ag2")
    api.task_create("cut", actor="ag1")
    head = git("rev-parse", "refs/lanes/ledger", cwd=other).strip()
    cut = git("commit-tree", "-p", f"{head}^", "-m", 'ag1: create task "a', f"{head}^{{tree}}", cwd=other,
              env={"GIT_AUTHOR_NAME": "ag1"}).strip()
    git("update-ref", "refs/lanes/ledger", cut, head, cwd=other)

    code, report = sync(other)
    assert code == 0, report
    assert report["ledger"]["replayed"] == 1 and report["ledger"]["refused"] == 1
    [refused] = report["refused"]["ag1"]
    assert refused["type"] == "unreadable" and refused["args"]["commit"] == cut
    assert "not a ledger op" in refused["refusal"]["message"]
    titles = sorted(task["title"] for task in Lanes(other).task_list())
    assert titles == ["kept", "moved on the first machine"]
    assert git("rev-parse", "refs/lanes/ledger", cwd=bare) == git("rev-parse", "refs/lanes/ledger", cwd=other)
    assert sync(other)[0] == 0
    # the actor hears of it, as of any op a sync refused
    assert [notice["original"]["type"] for notice in Lanes(other).agent_heartbeat("ag1")["refused"]] == \
        ["unreadable"]
    fsck_clean(other)


@pytest.mark.parametrize("replay", [False, True], ids=["fast-forward", "replay"])
def test_a_cut_ledger_op_from_the_remote_fails_neither_the_sync_that_brings_it_nor_op_log(pair, tmp_path, replay):
    """The operation log read every op a sync brought in, after the ledger had moved: a cut op from a peer
    failed that sync on every machine (its push not made), and `op log` and `undo` from then on."""
    machine, bare = pair
    other = tmp_path / "other"
    git("clone", "--quiet", str(bare), str(other), cwd=tmp_path)
    Lanes.open_for_sync(other)[0].pull()
    api = Lanes(machine)
    api.task_create("before", actor="ag1")
    head = git("rev-parse", "refs/lanes/ledger", cwd=machine).strip()
    cut = git("commit-tree", "-p", head, "-m", 'ag1: create task "a', f"{head}^{{tree}}", cwd=machine).strip()
    git("update-ref", "refs/lanes/ledger", cut, head, cwd=machine)
    api.task_create("after", actor="ag1")
    api.sync()
    if replay:
        Lanes(other).task_create("here", actor="ag2")

    code, report = sync(other)
    assert code == 0, report
    assert sorted(task["title"] for task in Lanes(other).task_list()) == \
        sorted(["before", "after"] + (["here"] if replay else []))
    assert git("rev-parse", "refs/lanes/ledger", cwd=bare) == git("rev-parse", "refs/lanes/ledger", cwd=other)
    assert cut in git("rev-list", "refs/lanes/ledger", cwd=other).split()
    logged = run_cli("op", "log", "--json", cwd=other)
    assert logged.code == 0 and logged.json[0]["description"].startswith("sync"), logged.err
    assert cut not in [entry.commit for entry in Lanes(other).ledger_log()]  # what GET /ledger lists
    assert sync(other)[0] == 0


def test_a_remote_ref_name_that_is_not_utf8_is_refused_and_reported_as_strict_json(pair):
    machine, bare = pair
    plant(bare, "refs/lanes/heads/\udcffbad", git("rev-parse", "main", cwd=bare).strip())
    result = run_cli("sync", "--json", cwd=machine)
    assert result.code == 3, result.err
    assert "\\ud" not in result.out  # a lone surrogate, which strict JSON readers (Rust, Go) refuse
    [refused] = result.json["invalid"]
    assert refused["ref"] == "refs/lanes/heads/\\xffbad" and "UTF-8" in refused["reason"]
    assert "$'refs/lanes/heads/\\xffbad'" in refused["hint"]  # a shell spelling that names the bytes
    assert git("for-each-ref", "refs/lanes/heads", cwd=machine) == ""


@pytest.mark.parametrize("named", [b"ma\xffin", b"-D", b"*", b"a b", b"main:refs/heads/x"],
                         ids=["not-utf8", "option", "glob", "space", "refspec"])
def test_a_fresh_clone_refuses_a_trunk_name_a_peer_wrote_that_names_no_branch(pair, tmp_path, named):
    """refs/lanes/meta/trunk names the trunk for a fresh clone (probe 3.4): one naming no branch is the clear
    no_trunk refusal, whatever its bytes (probe D13: bytes that are not UTF-8 gave an internal Unicode error)."""
    machine, bare = pair
    index = {"GIT_INDEX_FILE": str(bare / "scratch-index")}
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=bare, input=named + b"\n",
                          capture_output=True, check=True).stdout.decode().strip()
    git("update-index", "--add", "--cacheinfo", f"100644,{blob},trunk", cwd=bare, env=index)
    tree = git("write-tree", cwd=bare, env=index).strip()
    # The peer's history of the name starts at its own commit (plain git, the pinned date): the clone's own
    # naming of main below is then never that very commit, as it was when both fell in the same second.
    named_main = git("rev-parse", "refs/lanes/meta/trunk^{tree}", cwd=bare).strip()
    start = git("commit-tree", "-m", "lanes: the trunk is main", named_main, cwd=bare).strip()
    plant(bare, "refs/lanes/meta/trunk", git("commit-tree", "-p", start, "-m", "renamed", tree, cwd=bare).strip())
    clone = tmp_path / "clone"
    git("clone", "--quiet", "--no-checkout", str(bare), str(clone), cwd=tmp_path)
    for command in ("pull", "sync"):
        refused = run_cli(command, "--json", cwd=clone)
        assert refused.code == 1 and refused.json["error"] == "no_trunk", refused.out + refused.err
        assert "\\ud" not in refused.out and "--trunk main" in refused.json["hint"]
    # the way on the hint gives: set up on main, the peer's other name reported as a divergence, not taken
    pulled = run_cli("pull", "--trunk", "main", "--json", cwd=clone)
    assert pulled.code == 3 and [d["ref"] for d in pulled.json["diverged"]] == ["refs/lanes/meta/trunk"], pulled.err
    assert git("config", "lanes.trunk", cwd=clone).strip() == "main"


def test_a_lane_head_here_that_is_no_commit_is_refused_by_every_command_that_reads_it(repo):
    """What an older sync took from a hostile remote (or plain git wrote): `lane create` made a workspace on
    a tag-headed lane, or failed halfway on a blob; diff and restore failed with internal errors."""
    from git_lanes.errors import Refused

    api = Lanes(repo)
    api.lane_create("l1")
    main = git("rev-parse", "main", cwd=repo).strip()
    git("update-ref", "refs/lanes/heads/blobby", git("hash-object", "-w", "--stdin", cwd=repo, input="x\n").strip(),
        cwd=repo)
    tag = git("mktag", cwd=repo, input=f"object {main}\ntype commit\ntag t\ntagger x <x@y> 1 +0000\n\nm\n").strip()
    git("update-ref", "refs/lanes/heads/tagged", tag, cwd=repo)
    worktrees = git("worktree", "list", cwd=repo)
    for lane in ("blobby", "tagged"):
        for attempt in (lambda: api.lane_create(lane), lambda: api.diff("main", lane),
                        lambda: api.restore(lane, lane="l1"), lambda: api.lane_create("l2", source=lane)):
            with pytest.raises(Refused) as refusal:
                attempt()
            assert refusal.value.code == "invalid_lane_head", refusal.value
    assert git("worktree", "list", cwd=repo) == worktrees
    fsck_clean(repo)


def test_the_light_sync_hands_a_bad_ref_to_the_ordinary_one_which_reports_it(pair):
    """`git lanes sync` first tries the light path (no pygit2); it must never take, nor silently drop, what the
    ordinary sync refuses: it stops before anything moves, and the ordinary sync gives the report."""
    from git_lanes.api.sync_light import LightSync

    machine, bare = pair
    blob = git("hash-object", "-w", "--stdin", cwd=bare, input="x\n").strip()
    plant(bare, "refs/lanes/heads/blobby", blob)
    plant(bare, "refs/lanes/heads/main", commit_with(bare, {"evil.txt": "injected\n"}))
    plant(bare, "refs/lanes/runs/HEAD", git("rev-parse", "main", cwd=bare).strip())
    before = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/lanes", "refs/heads", cwd=machine)
    light = LightSync(machine)
    assert light.store is not None  # the light path is tried here
    assert light.report() is None
    assert git("for-each-ref", "--format=%(refname) %(objectname)", "refs/lanes", "refs/heads", cwd=machine) == before
    code, report = sync(machine)
    assert code == 3
    assert sorted(i["ref"] for i in report["invalid"]) == \
        ["refs/lanes/heads/blobby", "refs/lanes/heads/main", "refs/lanes/runs/HEAD"]
    assert sorted(i["ref"] for i in Lanes(machine).sync()["invalid"]) == sorted(i["ref"] for i in report["invalid"])


def test_gc_leaves_a_rejected_or_backup_ref_that_is_no_commit_to_doctor(repo):
    api = Lanes(repo)
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input="x\n").strip()
    for ref in ("refs/lanes/rejected/0123456789abcdef", "refs/lanes/backups/l1/0123456789abcdef"):
        git("update-ref", ref, blob, cwd=repo)
    api.gc(older_than=0)  # failed with an internal error, dating a blob as a commit
    for ref in ("refs/lanes/rejected/0123456789abcdef", "refs/lanes/backups/l1/0123456789abcdef"):
        assert git("rev-parse", ref, cwd=repo).strip() == blob  # left for `git lanes doctor` to name
    doctor = run_cli("doctor", "--json", cwd=repo)
    assert "refs/lanes/rejected/0123456789abcdef" in doctor.out


def test_the_text_report_lists_a_bounded_number_of_refused_refs():
    from git_lanes.lite.sync import LISTED, render

    invalid = [{"ref": f"refs/lanes/heads/HEAD{index}", "side": "remote", "oid": None, "reason": "bad",
                "hint": "remove it"} for index in range(LISTED + 5)]
    report = {"mode": "sync", "remote": "origin", "attempts": 1, "came_in": [], "went_out": [], "diverged": [],
              "held_back": [], "kept": [], "invalid": invalid, "refused": {}, "workspaces": [],
              "notes": {"merged": 0, "conflicts": []},
              "ledger": {"came_in": 0, "went_out": 0, "replayed": 0, "refused": 0}}
    text = render(report)
    assert text.count("\n  refused refs/") == LISTED and "and 5 more refs (see --json)" in text


def test_a_peers_ref_names_reach_the_terminal_escaped(pair):
    """A ref name is what a peer chose: a bidirectional override or a C1 control (U+009B, a CSI to some
    terminals) in one is printed as its escape by the light sync too, as by every other command."""
    machine, bare = pair
    head = git("rev-parse", "main", cwd=bare).strip()
    names = ["refs/lanes/heads/c1\u009b2J", "refs/lanes/heads/feat/\u202eevil"]
    for ref in names:
        plant(bare, ref, head)
    text = run_cli("sync", cwd=machine)
    assert text.code == 3 and "Traceback" not in text.err, text.err
    assert "feat/\\u202eevil" in text.out and "c1\\x9b2J" in text.out, text.out
    assert not any(char in text.out + text.err for char in "\u202e\u009b"), text.out
    # no lane may be named so (tests/test_names_unseen.py): each is refused, on the remote alone
    code, report = sync(machine)
    assert code == 3 and [(i["ref"], i["side"]) for i in report["invalid"]] == [(ref, "remote") for ref in names]
    assert "U+202E" in report["invalid"][1]["reason"]
    assert not git("for-each-ref", "refs/lanes/heads/", cwd=machine).strip()
