"""A process that stays open snapshots what its watcher heard of (store/watched_index): every snapshot must
equal what a full scan (`git add -A && git write-tree`) gives, after every kind of edit, and the process must
fall back to a full scan whenever it cannot trust the watcher (overflow, a dead watcher, rules that changed,
an index someone else wrote, a nested repository)."""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import git
from git_lanes.api import Lanes
from git_lanes.store.repo import Store

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/sys/fs/inotify"), reason="needs inotify (Linux)")


@dataclass
class Held:
    store: Store
    ws: Path

    def snapshot(self) -> tuple[str, str | None]:
        """The tree this process's snapshot makes and why it scanned every file (None: it followed the
        watcher), after checking it against git's own full scan and git's reading of the index written."""
        tree = self.store.snapshot(self.ws)
        assert tree == self.store.content_tree(self.ws), "the snapshot differs from a full scan"
        assert git("write-tree", cwd=self.ws).strip() == tree, "git reads another tree from the index"
        assert git("diff", "--name-only", cwd=self.ws) == "", "git sees files the index does not record"
        return tree, self.store.snapshot_scan(self.ws)

    def watched(self) -> str:
        tree, scan = self.snapshot()
        assert scan is None, f"expected the snapshot to follow the watcher, it scanned: {scan}"
        return tree


@pytest.fixture
def held(repo: Path) -> Held:
    """A lane workspace held open by one process, past its start-up scans, so its next snapshot follows
    the watcher."""
    api = Lanes(repo)
    api.lane_create("w")
    ws = repo / ".lanes" / "workspaces" / "w"
    (ws / "docs").mkdir()
    (ws / "docs" / "guide.md").write_text("guide\n")
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    store = api.ctx.store
    held = Held(store, ws)
    held.snapshot()  # the first one in a process runs git
    _, scan = held.snapshot()
    assert scan == "the watcher starts"
    held.watched()  # nothing changed: the same tree, from the watcher alone
    return held


def test_file_edits_follow_the_watcher(held: Held) -> None:
    ws = held.ws
    before = held.watched()
    (ws / "src" / "app.py").write_text("print('changed')\n")
    (ws / "src" / "new.py").write_text("new\n")
    (ws / "README.md").unlink()
    os.chmod(ws / "docs" / "guide.md", 0o755)
    os.symlink("guide.md", ws / "docs" / "link")
    assert held.watched() != before
    os.remove(ws / "docs" / "link")
    os.symlink("elsewhere", ws / "docs" / "link")  # a link retargeted
    (ws / "src" / "new.py").unlink()
    os.symlink("app.py", ws / "src" / "new.py")  # a file become a link
    os.chmod(ws / "docs" / "guide.md", 0o644)
    held.watched()


def test_folders_made_filled_moved_and_removed(held: Held, tmp_path: Path) -> None:
    ws = held.ws
    (ws / "fresh" / "deep" / "er").mkdir(parents=True)
    (ws / "fresh" / "deep" / "er" / "a.txt").write_text("a\n")
    (ws / "empty").mkdir()
    held.watched()
    (ws / "empty" / "filled.txt").write_text("filled later, after its folder was watched\n")
    (ws / "fresh" / "deep" / "b.txt").write_text("b\n")
    held.watched()
    os.rename(ws / "fresh" / "deep", ws / "docs" / "moved")  # a folder renamed across folders
    held.watched()
    (ws / "docs" / "moved" / "er" / "a.txt").write_text("edited where it now lives\n")
    held.watched()
    shutil.move(str(ws / "docs" / "moved"), str(tmp_path / "outside"))  # moved out of the workspace
    (tmp_path / "outside" / "er" / "a.txt").write_text("edited outside: no longer the workspace's\n")
    held.watched()
    shutil.move(str(tmp_path / "outside"), str(ws / "back"))  # and in again, already filled
    held.watched()
    shutil.rmtree(ws / "back")
    held.watched()


def test_deleted_then_recreated(held: Held) -> None:
    ws = held.ws
    (ws / "src" / "app.py").unlink()
    (ws / "src" / "app.py").write_text("print('recreated')\n")
    shutil.rmtree(ws / "docs")
    (ws / "docs").mkdir()
    (ws / "docs" / "other.md").write_text("the folder came back with other files\n")
    held.watched()
    shutil.rmtree(ws / "src")
    (ws / "src").write_text("a file where a folder was\n")
    held.watched()
    (ws / "src").unlink()
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "m.py").write_text("a folder where a file was\n")
    held.watched()
    (ws / "docs" / "made").mkdir()
    os.rmdir(ws / "docs" / "made")
    os.symlink("../src", ws / "docs" / "made")  # a folder replaced by a link to one before the snapshot
    held.watched()


def test_renamed_across_folders(held: Held) -> None:
    ws = held.ws
    (ws / "lib").mkdir()
    os.rename(ws / "src" / "app.py", ws / "lib" / "app.py")
    os.rename(ws / "README.md", ws / "docs" / "README.md")
    held.watched()


def test_ignored_paths_are_not_recorded_unless_tracked(held: Held) -> None:
    ws = held.ws
    (ws / "debug.log").write_text("ignored\n")
    (ws / "build" / "out").mkdir(parents=True)
    (ws / "build" / "out" / "bin").write_text("ignored folder\n")
    tree = held.watched()
    assert git("ls-tree", "-r", "--name-only", tree, cwd=ws).split() == [
        ".gitignore", "README.md", "docs/guide.md", "src/app.py"]
    git("add", "-f", "build/out/bin", cwd=ws)  # tracked despite the rule: the index changed under us
    _, scan = held.snapshot()
    assert scan == "another command changed the index"
    (ws / "build" / "out" / "bin").write_text("a tracked file in an ignored folder changed\n")
    assert "build/out/bin" in git("ls-tree", "-r", "--name-only", held.watched(), cwd=ws)


def test_rule_changes_scan_everything(held: Held, repo: Path) -> None:
    ws = held.ws
    (ws / "debug.log").write_text("ignored until the rule goes\n")
    held.watched()
    (ws / ".gitignore").write_text("build/\n")
    tree, scan = held.snapshot()
    assert scan == ".gitignore changed" and "debug.log" in git("ls-tree", "--name-only", tree, cwd=ws)
    (repo / ".git" / "info" / "exclude").write_text("*.log\n")
    _, scan = held.snapshot()
    assert scan == "ignore rules or git's configuration changed"
    held.watched()
    excludes = repo.parent / "excludes"
    excludes.write_text("")
    git("config", "core.excludesFile", str(excludes), cwd=repo)
    _, scan = held.snapshot()
    assert scan == "ignore rules or git's configuration changed"
    (ws / "notes.tmp").write_text("recorded until the newly named excludes file ignores it\n")
    held.watched()
    excludes.write_text("*.tmp\n")
    (ws / "other.tmp").write_text("ignored by the rule just written\n")
    assert git("check-ignore", "other.tmp", cwd=ws).strip() == "other.tmp"
    tree, scan = held.snapshot()
    assert scan == "ignore rules or git's configuration changed"
    recorded = git("ls-tree", "--name-only", tree, cwd=ws).split()
    assert "other.tmp" not in recorded and "notes.tmp" in recorded  # a tracked file stays tracked


def test_edits_while_no_snapshot_runs_are_all_heard(held: Held) -> None:
    ws = held.ws
    for round_ in range(3):
        for i in range(20):
            (ws / "docs" / f"n{i}.md").write_text(f"{round_}\n")
        (ws / "docs" / f"n{round_}.md").unlink()
        held.watched()


def test_overflow_falls_back_to_a_full_scan(held: Held) -> None:
    ws = held.ws
    queue = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    a, b = ws / "docs" / "a.md", ws / "docs" / "b.md"
    with open(a, "w") as first, open(b, "w") as second:
        for _ in range(queue // 2 + 10):  # alternating, so the kernel cannot merge them into one event
            first.write("a")
            first.flush()
            second.write("b")
            second.flush()
    (ws / "after-the-overflow.txt").write_text("heard of by no event\n")
    tree, scan = held.snapshot()
    assert scan == "the watcher's queue overflowed"
    assert "after-the-overflow.txt" in git("ls-tree", "--name-only", tree, cwd=ws)
    (ws / "docs" / "a.md").write_text("watched again\n")
    held.watched()


def test_a_dead_watcher_falls_back_and_is_replaced(held: Held) -> None:
    ws = held.ws
    watcher = held.store._watched_indexes[ws.resolve()]._watcher
    assert watcher is not None
    watcher.close()  # as if it died: nothing more is heard
    (ws / "src" / "app.py").write_text("edited after the watcher died\n")
    tree, scan = held.snapshot()
    assert scan is not None and scan.startswith("the watcher failed")
    (ws / "src" / "app.py").write_text("edited under a new watcher\n")
    assert held.watched() != tree


def test_a_nested_repository_is_scanned_every_time(held: Held) -> None:
    ws = held.ws
    (ws / "vendor").mkdir()
    git("init", "-q", cwd=ws / "vendor")
    (ws / "vendor" / "f").write_text("x\n")
    git("add", "f", cwd=ws / "vendor")
    git("commit", "-qm", "nested", cwd=ws / "vendor")
    _, scan = held.snapshot()
    assert scan == "vendor/.git appeared"
    (ws / "src" / "app.py").write_text("edited beside a nested repository\n")
    _, scan = held.snapshot()
    assert scan == "the watcher starts"  # vendor cannot be watched, so the watcher cannot start


def test_held_open_api_commits_equal_full_scans(repo: Path) -> None:
    api = Lanes(repo)
    api.lane_create("a")
    ws = repo / ".lanes" / "workspaces" / "a"
    store = api.ctx.store
    scans = []
    for round_ in range(4):
        (ws / "src" / f"m{round_}.py").write_text(f"{round_}\n")
        record = api.commit(f"round {round_}", "tester", lane="a", auto_accept=True)
        assert record.to_dict()["tree"] == store.content_tree(ws)
        scans.append(store.snapshot_scan(ws))
    assert scans[1:] == ["the watcher starts", None, None]


def test_a_file_vanishing_during_a_full_scan_never_breaks_the_snapshot(held: Held) -> None:
    """An editor's swap files come and go while a full scan lists and stats the workspace. libgit2 raised a
    bare OSError when one vanished mid-scan; the scan now lists again, and only a race that outlasts every
    attempt reaches the user, as git's own clear error (`git add -A` fails on it too), never a traceback."""
    from git_lanes.errors import LanesError

    stop = threading.Event()

    def churn() -> None:
        count = 0
        while not stop.is_set():
            swap = held.ws / f"edit{count % 20}.swp"
            try:
                swap.write_text("x")
                swap.unlink()
            except FileNotFoundError:
                pass
            count += 1

    worker = threading.Thread(target=churn)
    worker.start()
    snapshots = 0
    try:
        for number in range(30):
            (held.ws / ".gitignore").write_text(f"*.log\nbuild/\n# rule change {number}\n")
            try:
                held.store.snapshot(held.ws)
            except LanesError:
                continue
            snapshots += 1
    finally:
        stop.set()
        worker.join()
    assert snapshots > 0
    held.snapshot()  # once the churn stopped, the next snapshot equals a full scan


def _writes(held: Held) -> tuple[int, int]:
    """(index writes that spliced only the changed entries, index writes libgit2 made whole)."""
    watched = held.store._watched_indexes[held.ws.resolve()]
    return watched.image_writes, watched.libgit2_writes


def test_a_followed_snapshot_splices_the_changed_entries_into_the_index_as_libgit2_writes_it(held: Held) -> None:
    """libgit2 serializes all of the index again and hashes it with its slow SHA-1 on every write: a snapshot
    that followed the watcher writes only the changed entries into the file's bytes, and the file is byte for
    byte the one libgit2 writes from the same entries (stat data, flags, cached tree)."""
    ws = held.ws
    index_file = Path(held.store.workspace_repo(ws).path) / "index"
    for round_ in range(3):
        (ws / "src" / "app.py").write_text(f"changed {round_}\n")  # an entry replaced in place
        (ws / "lib" / f"deep{round_}").mkdir(parents=True)  # a folder the cached tree does not know yet
        (ws / "lib" / f"deep{round_}" / "mod.py").write_text("new\n")
        (ws / "docs" / f"n{round_}.md").write_text("inserted\n")  # an entry inserted among others
        if round_:
            (ws / "docs" / f"n{round_ - 1}.md").unlink()  # and one removed
            os.chmod(ws / "docs" / "guide.md", 0o755 if round_ == 1 else 0o644)
        before = _writes(held)
        tree = held.store.snapshot(ws)
        assert held.store.snapshot_scan(ws) is None
        assert _writes(held) == (before[0] + 1, before[1])
        ours = index_file.read_bytes()
        held.store.workspace_repo(ws).index.write()  # libgit2, from the entries in memory
        assert index_file.read_bytes() == ours
        assert git("write-tree", cwd=ws).strip() == tree == held.store.content_tree(ws)
        held.watched()  # nothing changed since; git's reading of the file is checked too
    unchanged = _writes(held)
    held.store.snapshot(ws)
    assert _writes(held) == unchanged, "nothing changed, yet the index was written"


def test_an_index_only_libgit2_writes_is_left_to_libgit2(held: Held) -> None:
    """An index of version 4 (prefix-compressed paths) or with an extension other than the cached tree (the
    untracked cache) is not spliced: libgit2 writes it, and the snapshot still equals a full scan."""
    ws = held.ws
    git("update-index", "--index-version", "4", cwd=ws)
    (ws / "src" / "app.py").write_text("under version 4\n")
    before = _writes(held)
    held.watched()
    assert _writes(held) == (before[0], before[1] + 1)
    git("update-index", "--index-version", "2", cwd=ws)
    git("-c", "core.untrackedCache=true", "status", "--short", cwd=ws)
    assert b"UNTR" in (Path(held.store.workspace_repo(ws).path) / "index").read_bytes()
    (ws / "src" / "app.py").write_text("with an untracked cache\n")
    before = _writes(held)
    held.watched()
    assert _writes(held) == (before[0], before[1] + 1)
    (ws / "src" / "app.py").write_text("spliced again\n")
    before = _writes(held)
    held.watched()
    assert _writes(held) == (before[0] + 1, before[1])


def test_checking_a_held_workspace_for_conflicts_does_not_read_its_own_index_again(held: Held) -> None:
    """After this process wrote the index, libgit2's copy in memory is the file's: reading the file again
    before a commit would cost a parse and a hash of all of it (libgit2 sees a checksum it did not write)."""
    ws = held.ws
    (ws / "src" / "app.py").write_text("changed\n")
    held.store.snapshot(ws)
    index = held.store.workspace_repo(ws).index
    index.remove("README.md")  # in memory only: reading the file again would bring it back
    assert held.store.unmerged_paths(ws) == []
    assert "README.md" not in index, "the index file was read again"
    git("rm", "-q", "--cached", "src/app.py", cwd=ws)  # another command wrote it: then it is read
    assert held.store.unmerged_paths(ws) == []
    assert "README.md" in index and "src/app.py" not in index


def test_the_spliced_write_takes_the_index_lock_as_git_does(held: Held) -> None:
    """A lock a killed process left is cleared, as for libgit2's writes; one a live process holds refuses
    the snapshot, naming it, and leaves the index as it was."""
    from git_lanes.errors import Conflict

    ws = held.ws
    lock = Path(held.store.workspace_repo(ws).path) / "index.lock"
    lock.write_text("left by a killed process\n")
    (ws / "src" / "app.py").write_text("past a stale lock\n")
    before = _writes(held)
    held.watched()
    assert _writes(held) == (before[0] + 1, before[1]) and not lock.exists()
    index = lock.with_name("index").read_bytes()
    (ws / "src" / "app.py").write_text("while a live process holds the lock\n")
    with open(lock, "w"):
        with pytest.raises(Conflict) as refused:
            held.store.snapshot(ws)
        assert refused.value.code == "locked" and str(lock) in refused.value.message
    assert lock.with_name("index").read_bytes() == index
    lock.unlink()
    held.snapshot()
