"""A write the file system refuses (a full disk, an objects folder this user may not write) is one line saying
what failed, where, and what to do, exit 1 with code `repository_unwritable` and the cause, as git says
"insufficient permission for adding an object to repository database" or "No space left on device". It was
exit 6 with a raw OSError, and worse: libgit2 1.9's `create_commit` answers with an id where the write failed,
so `lane create` on a read-only objects folder moved refs/lanes/oplog to a commit that does not exist, and
every later command that read the operation log failed (`git fsck`: "invalid sha1 pointer"). Nothing is left
half-written: every ref is as it was, `git fsck` is clean, and the same command succeeds once the cause is gone.

As root (these tests' usual user here), permission bits bind only a process without CAP_DAC_OVERRIDE: the
commands run under `setpriv`, as tests/test_sync_light.py does. A full disk is a small tmpfs, mounted by root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from conftest import fsck_clean, git, run_cli
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_helpers import call, fails, mcp_session

from git_lanes.api import Lanes
from git_lanes.errors import WriteFailed

AS_A_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
needs_setpriv = pytest.mark.skipif(bool(AS_A_USER) and shutil.which("setpriv") is None, reason="root, and no setpriv")


def every_ref(path: Path) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(objectname) %(refname)", cwd=path)
    return {name: oid for oid, name in (line.split(" ", 1) for line in out.splitlines())}


def lanes(*args: str, cwd: Path, as_user: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*(AS_A_USER if as_user else []), sys.executable, "-m", "git_lanes", *args], cwd=cwd,
                          capture_output=True, text=True, env=dict(os.environ), timeout=120)


def set_up(root: Path) -> Path:
    """A repository set up for lanes at `root`, with lane `feat` holding a proposal (its id in
    .git/test-proposal) and a new file in its workspace to commit."""
    root.mkdir()
    (root / "README.md").write_text("# project\n")
    Lanes.init(root, "main")
    api = Lanes(root)
    api.lane_create("feat")
    api.agent_register("coder-1")
    workspace = root / ".lanes" / "workspaces" / "feat"
    (workspace / "proposed.txt").write_text("proposed\n")
    (root / ".git" / "test-proposal").write_text(api.commit("a proposal", "coder-1", lane="feat")["id"])
    (workspace / "new.txt").write_text("new\n")
    return root


# What each command writes first: the ledger's objects by our own writer, a workspace's files by `git add`,
# and a note by libgit2.
COMMANDS = {"ledger": ("task", "create", "a task"),
            "commit": ("commit", "-m", "add new", "--agent", "coder-1", "--auto-accept"),
            "reject": ("reject", "PROPOSAL", "--reason", "not now")}


def command_line(root: Path, command: str) -> list[str]:
    proposal = (root / ".git" / "test-proposal").read_text()
    return [proposal if arg == "PROPOSAL" else arg for arg in COMMANDS[command]]


def where(root: Path, command: str) -> Path:
    return root / ".lanes" / "workspaces" / "feat" if command == "commit" else root


def refused(proc: subprocess.CompletedProcess[str], cause: str) -> dict:
    """The command failed as a refused write does: exit 1, one error line and a hint, its JSON record."""
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal" not in proc.stdout, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("git-lanes: error: ") and lines[1].startswith("hint: "), lines
    record = json.loads(proc.stdout)
    assert (record["error"], record["cause"]) == ("repository_unwritable", cause), record
    return record


@pytest.fixture
def read_only_objects(tmp_path: Path) -> Iterator[Path]:
    root = set_up(tmp_path / "repo")
    objects = root / ".git" / "objects"
    subprocess.run(["chmod", "-R", "a-w", str(objects)], check=True)
    try:
        yield root
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(objects)], check=True)


@needs_setpriv
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_objects_folder_this_user_cannot_write_is_said_so_and_nothing_moves(read_only_objects, command):
    root = read_only_objects
    before = every_ref(root)
    record = refused(lanes(*command_line(root, command), "--json", cwd=where(root, command), as_user=True), "no_permission")
    objects = str(root / ".git" / "objects")
    if command == "commit":  # git's own words, from `git add`
        assert record["message"] == f"git add failed: insufficient permission for adding an object to " \
                                    f"repository database {objects}", record
    else:
        assert record["message"] == f"cannot add an object to the repository database {objects}: " \
                                    "Permission denied", record
    assert every_ref(root) == before
    subprocess.run(["chmod", "-R", "u+w", str(root / ".git" / "objects")], check=True)
    fsck_clean(root)
    assert lanes(*command_line(root, command), cwd=where(root, command), as_user=True).returncode == 0  # the cause gone
    fsck_clean(root)


@needs_setpriv
def test_an_operation_done_whose_log_entry_cannot_be_written_yet_succeeds_and_the_entry_follows(read_only_objects):
    """`lane create` at the trunk's head writes no object but the operation log's entry: libgit2 "wrote" that
    commit into the read-only folder, and refs/lanes/oplog named a commit that does not exist. The lane is
    made, so the command succeeds; the entry waits in its journal, as a killed process's does, and the next
    writer appends it."""
    root = read_only_objects
    before = every_ref(root)
    proc = lanes("lane", "create", "other", cwd=root, as_user=True)
    assert proc.returncode == 0, proc.stderr
    after = every_ref(root)
    assert after.pop("refs/lanes/heads/other") == before["refs/heads/main"] and after == before
    subprocess.run(["chmod", "-R", "u+w", str(root / ".git" / "objects")], check=True)
    fsck_clean(root)
    assert lanes("task", "create", "the next writer", cwd=root, as_user=True).returncode == 0
    described = [entry["description"] for entry in run_cli("op", "log", "--json", cwd=root).json]
    assert described[0].endswith('"the next writer"') and described[1] == "create lane other", described
    fsck_clean(root)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A file system of 8 MiB of its own, filled to the last byte by `fill` and freed by `free`."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr!r}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> None:
    with open(disk / "filler", "wb") as filler:
        try:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        except OSError:
            pass
    with pytest.raises(OSError):  # the precondition: not a byte more fits
        (disk / "probe").write_bytes(b"x")


def free(disk: Path) -> None:
    (disk / "filler").unlink()
    (disk / "probe").unlink(missing_ok=True)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_full_disk_is_said_so_and_a_retry_after_freeing_space_succeeds(small_disk, command):
    root = set_up(small_disk / "repo")
    before = every_ref(root)
    fill(small_disk)
    record = refused(lanes(*command_line(root, command), "--json", cwd=where(root, command)), "no_space")
    assert record["message"].endswith("No space left on device"), record
    assert every_ref(root) == before
    free(small_disk)
    fsck_clean(root)
    assert lanes(*command_line(root, command), cwd=where(root, command)).returncode == 0
    fsck_clean(root)


def test_init_on_a_full_disk_is_said_so_and_a_retry_after_freeing_space_succeeds(small_disk):
    """libgit2 reports the config write's refusal as a GitError ("failed to write out file: No space left on
    device"), which was exit 6."""
    root = small_disk / "repo"
    root.mkdir()
    git("init", "--quiet", "--initial-branch=main", cwd=root)
    (root / "README.md").write_text("# project\n")
    git("add", "README.md", cwd=root)
    git("commit", "--quiet", "-m", "first", cwd=root)
    fill(small_disk)
    refused(lanes("init", "--json", cwd=root), "no_space")
    free(small_disk)
    assert lanes("init", cwd=root).returncode == 0
    assert lanes("lane", "create", "feat", cwd=root).returncode == 0
    fsck_clean(root)


def test_a_sync_that_cannot_store_what_it_fetched_on_a_full_disk_does_not_blame_the_remote(small_disk, tmp_path):
    """git's fetch says only "couldn't write '….lock'" for a full disk: that was exit 5 with "check the
    remote's URL and your access to it"."""
    remote = tmp_path / "remote.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote), cwd=tmp_path)
    root = set_up(small_disk / "repo")
    git("remote", "add", "origin", f"file://{remote}", cwd=root)
    assert run_cli("sync", cwd=root).code == 0
    peer = tmp_path / "peer"
    git("clone", "--quiet", f"file://{remote}", str(peer), cwd=tmp_path)
    assert run_cli("sync", cwd=peer).code == 0
    assert run_cli("board", "post", "from the peer", "--agent", "peer-1", cwd=peer).code == 0
    assert run_cli("sync", cwd=peer).code == 0
    before = every_ref(root)
    fill(small_disk)
    record = refused(lanes("sync", "--json", cwd=root), "no_space")
    assert "git push" not in record["message"] and "remote" not in record.get("hint", ""), record
    assert every_ref(root) == before
    free(small_disk)
    assert lanes("sync", cwd=root).returncode == 0
    assert "from the peer" in run_cli("board", "read", "--all", cwd=root).out
    fsck_clean(root)


def test_the_sdk_held_open_raises_the_refusal_and_goes_on_once_there_is_room(small_disk):
    root = set_up(small_disk / "repo")
    api = Lanes(root)
    api.task_create("warm: the store has written before")
    before = every_ref(root)
    fill(small_disk)
    with pytest.raises(WriteFailed) as failed:
        api.task_create("on a full disk")
    assert failed.value.details["cause"] == "no_space" and failed.value.exit_code == 1
    with pytest.raises(WriteFailed):
        api.lane_create("other")
    assert every_ref(root) == before
    free(small_disk)
    assert api.task_create("once there is room")["task"]
    api.lane_create("other")
    fsck_clean(root)


def test_the_mcp_server_answers_a_full_disk_as_a_tool_error_and_goes_on_once_there_is_room(small_disk):
    root = set_up(small_disk / "repo")

    async def scenario() -> tuple[dict, dict]:
        async with mcp_session(root, "--agent", "coder-1") as session:
            await call(session, "create_task", title="warm")
            fill(small_disk)
            error = await fails(session, "create_task", title="on a full disk")
            free(small_disk)
            return error, await call(session, "create_task", title="once there is room")

    error, made = anyio.run(scenario)
    assert (error["code"], error["reason"], error["exit_code"]) == ("repository_unwritable", "repository_unwritable", 1)
    assert error["details"]["cause"] == "no_space" and error["hint"]
    assert made["task"]
    fsck_clean(root)


@needs_setpriv
def test_the_mcp_server_answers_a_read_only_objects_folder_as_a_tool_error(tmp_path):
    root = set_up(tmp_path / "repo")
    objects = root / ".git" / "objects"
    server = StdioServerParameters(command=(AS_A_USER or [sys.executable])[0],
                                   args=[*AS_A_USER[1:], *([sys.executable] if AS_A_USER else []), "-m", "git_lanes",
                                         "mcp", "--agent", "coder-1"],
                                   cwd=str(root), env=dict(os.environ))

    async def scenario() -> dict:
        with open(os.devnull, "w") as quiet:
            async with stdio_client(server, errlog=quiet) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await call(session, "create_task", title="warm")
                    subprocess.run(["chmod", "-R", "a-w", str(objects)], check=True)
                    try:
                        error = await fails(session, "create_task", title="read-only")
                    finally:
                        subprocess.run(["chmod", "-R", "u+w", str(objects)], check=True)
                    await call(session, "create_task", title="writable again")
                    return error

    error = anyio.run(scenario)
    assert error["reason"] == "repository_unwritable" and error["details"]["cause"] == "no_permission"
    assert error["message"] == f"cannot add an object to the repository database {objects}: Permission denied"
    fsck_clean(root)
