"""`diff_trees` reads trees from their bytes (store/trees.py, and the hook path's store/light_objects.py): it
must agree with git, also on trees other tools write in forms git accepts, such as a zero-padded folder mode
(`040000`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2

from conftest import git
from git_lanes.store.trees import diff_trees


def _tree(repo: Path, entries: list[tuple[bytes, bytes, str]]) -> str:
    raw = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries)
    return subprocess.run(["git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin"], cwd=repo,
                          input=raw, capture_output=True, check=True).stdout.decode().strip()


def test_a_zero_padded_folder_mode_is_the_same_folder(repo: Path) -> None:
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=b"x\n", capture_output=True,
                          check=True).stdout.decode().strip()
    other = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=b"y\n", capture_output=True,
                           check=True).stdout.decode().strip()
    sub = _tree(repo, [(b"100644", b"f", blob)])
    canonical = _tree(repo, [(b"100644", b"a", blob), (b"40000", b"d", sub)])
    padded = _tree(repo, [(b"100644", b"a", other), (b"040000", b"d", sub)])
    assert git("diff-tree", "-r", "--name-only", canonical, padded, cwd=repo).split() == ["a"]
    changes = diff_trees(pygit2.Repository(str(repo)), canonical, padded)
    assert [(change.path, change.kind) for change in changes] == [("a", "modified")]


def test_a_held_open_commit_parses_each_tree_it_diffs_once(repo: Path) -> None:
    """A commit diffs its new state against the lane head for exclusive paths and again for protected ones,
    and the operation log diffs the notes trees it moved: each tree is parsed once, and the next commit's
    diffs start from trees already parsed."""
    from git_lanes.api import Lanes
    from git_lanes.store import trees

    api = Lanes(repo)
    api.lane_create("a")
    ws = repo / ".lanes" / "workspaces" / "a"
    parsed = []
    for round_ in range(4):
        (ws / "src" / "app.py").write_text(f"round {round_}\n")
        before = trees.parses
        api.commit(f"round {round_}", "tester", lane="a", auto_accept=True)
        parsed.append(trees.parses - before)
    # Only the new trees: the state's root and src/, the notes' root and fan-out folder after the proposal
    # and after the decision.
    assert parsed[-1] <= 6, parsed
    store = api.ctx.store
    head = store.tree_of(store.read_ref("refs/lanes/heads/a") or "")
    first = store.tree_of(store.read_ref("refs/heads/main") or "")
    store.diff_trees(first, head)
    before = trees.parses
    assert store.diff_trees(first, head) and trees.parses == before


def test_both_readers_of_trees_report_what_git_diff_tree_reports(repo: Path) -> None:
    """The pygit2 store and the hook path's light store share one walk (model/entries.py): each reports,
    path by path, the change git reports, through files becoming folders, links, gitlinks and modes."""
    from git_lanes.store.light import open_light

    def blob(text: bytes) -> str:
        return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=text, capture_output=True,
                              check=True).stdout.decode().strip()

    x, y = blob(b"x\n"), blob(b"y\n")
    commit = git("rev-parse", "HEAD", cwd=repo).strip()
    inner = _tree(repo, [(b"100644", b"f", x), (b"100644", b"g", y)])
    before = _tree(repo, [(b"100644", b"becomes-folder", x), (b"40000", b"becomes-file", inner),
                          (b"100644", b"exec", x), (b"100644", b"link", x), (b"160000", b"module", commit),
                          (b"100644", b"same", x), (b"100644", b"gone", y), (b"100644", b"text", x)])
    after = _tree(repo, [(b"40000", b"becomes-folder", inner), (b"100644", b"becomes-file", y),
                         (b"100755", b"exec", x), (b"120000", b"link", x), (b"100644", b"module", x),
                         (b"100644", b"new", y), (b"100644", b"same", x), (b"100644", b"text", y)])
    letters = {"A": "added", "D": "deleted", "M": "modified", "T": "type"}
    gits = []
    for line in git("diff-tree", "-r", "--no-renames", before, after, cwd=repo).splitlines():
        meta, path = line.split("\t")
        _, _, old_oid, new_oid, letter = meta.split()
        gits.append((path, "mode" if letter == "M" and old_oid == new_oid else letters[letter]))
    assert {kind for _, kind in gits} == {"added", "deleted", "modified", "mode", "type"}  # what is compared
    for changes in (diff_trees(pygit2.Repository(str(repo)), before, after),
                    open_light(repo).diff_trees(before, after)):
        assert sorted((change.path, change.kind) for change in changes) == sorted(gits)
