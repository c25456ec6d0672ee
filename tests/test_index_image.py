"""The index written by splicing changed entries into its bytes (store/index_image) is byte for byte the file
libgit2 writes from the same entries in memory, and git reads the same tree from it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pygit2
import pytest

from conftest import git
from git_lanes.store.index_image import IndexImage, Unsupported


def _repository(root: Path) -> pygit2.Repository:
    root.mkdir()
    git("init", "-q", cwd=root)
    for folder in range(8):
        (root / f"d{folder}" / "sub").mkdir(parents=True)
        for number in range(20):
            (root / f"d{folder}" / f"f{number:02d}.txt").write_text(f"{folder} {number}\n")
        (root / f"d{folder}" / "sub" / "deep.txt").write_text("deep\n")
    repo = pygit2.Repository(str(root))
    repo.index.add_all()
    repo.index.write_tree()  # libgit2 then keeps the cached tree (TREE) and writes it
    repo.index.write()
    return repo


def _age(root: Path) -> None:
    """Every file a minute old, so that no entry is racily clean and libgit2's write smudges none."""
    then = time.time() - 60
    for folder, _, names in os.walk(root):
        if ".git" not in folder:
            for name in names:
                os.utime(os.path.join(folder, name), (then, then))


def test_many_entries_inserted_removed_and_changed_at_once(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    repo = _repository(root)
    index_file = Path(repo.path) / "index"
    image = IndexImage.load(index_file)
    touched = set()
    for folder in range(0, 8, 2):
        (root / f"d{folder}" / "f05.txt").unlink()
        (root / f"d{folder}" / "f07.txt").write_text("changed, a longer line than before\n")
        (root / f"d{folder}" / "new").mkdir()
        for number in range(15):
            (root / f"d{folder}" / "new" / f"n{number}.txt").write_text(f"{number}\n")
            touched.add(f"d{folder}/new/n{number}.txt")
        (root / f"d{folder}" / "a-first.txt").write_text("sorts before the rest\n")
        touched |= {f"d{folder}/f05.txt", f"d{folder}/f07.txt", f"d{folder}/a-first.txt"}
    (root / "zz-last.txt").write_text("sorts after the rest\n")
    touched.add("zz-last.txt")
    _age(root)
    index = repo.index
    for path in touched:
        if (root / path).exists():
            index.add(path)
        else:
            index.remove(path)
    image.apply(index, touched)
    image.write()
    ours = index_file.read_bytes()
    index.write()
    assert index_file.read_bytes() == ours
    assert git("write-tree", cwd=root).strip() == str(index.write_tree())
    again = IndexImage.load(index_file)  # and the offsets it keeps are those a fresh read finds
    assert again._offsets == image._offsets


def test_an_index_with_a_conflict_is_not_spliced(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    repo = _repository(root)
    blob = repo.create_blob(b"theirs\n")
    git("update-index", "--index-info", cwd=root,
        input=f"100644 {blob} 2\td0/f01.txt\n100644 {blob} 3\td0/f01.txt\n")
    with pytest.raises(Unsupported):
        IndexImage.load(Path(repo.path) / "index")
