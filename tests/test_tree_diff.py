"""`diff_trees` reads trees from their bytes (store/trees.py): it must agree with git on trees other tools
write in forms git accepts, such as a zero-padded folder mode (`040000`)."""

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
