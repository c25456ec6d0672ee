"""Bringing a whole worktree to a tree, planned in full before any file is touched.

libgit2's checkout deletes a folder holding a nested repository (a cloned dependency, a submodule's work
tree) together with its `.git`, the only copy of that history, and stops half way on a folder it cannot
remove. Here every change is decided first: the files to write and to delete, the ignored files in the way
(deleted, as git deletes them), and the nested repositories in the way, which are never deleted. A plan
that refuses anything is not carried out at all.

Two modes:
- force (restore, lane reset): files and index become the tree; untracked files go too (the caller keeps
  them in a backup first). A nested repository in the way is left where it is and reported.
- safe (a fast-forward, the way `git merge --ff-only` moves files): only paths that differ between
  `baseline` and the tree move; an edit, an untracked file or a nested repository in the way refuses the
  whole update.

Files are written through WorktreeFiles, so git's configured filter drivers apply as for `git checkout`."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pygit2

from git_lanes.store import trees
from git_lanes.model.entries import Entry
from git_lanes.store.worktree_files import GITLINK, NOT_A_FILE, WorktreeFiles

_IN_WORKTREE = (pygit2.GIT_STATUS_WT_NEW | pygit2.GIT_STATUS_WT_MODIFIED | pygit2.GIT_STATUS_WT_DELETED |
                pygit2.GIT_STATUS_WT_TYPECHANGE | pygit2.GIT_STATUS_WT_RENAMED | pygit2.GIT_STATUS_CONFLICTED)


class CheckoutPlan:
    """What a checkout will do, filled in by `plan`. (A plain class, not a dataclass: this module is loaded by
    every command that opens a repository, and a dataclass costs ~1 ms to define.)"""

    def __init__(self) -> None:
        self.writes: dict[str, Entry] = {}
        # files and symlinks to delete
        self.removals: set[str] = set()
        # ignored files and folders in the way of what the tree holds, deleted as git deletes them
        self.expendable: set[str] = set()
        # folders that must be gone (once emptied) for a file of the tree to take their place
        self.emptied: set[str] = set()
        self.index: dict[str, Entry | None] = {}
        # nested repositories the tree would replace or delete: never touched
        self.nested: set[str] = set()
        # ignored files (a `.env`) at paths the tree gives other content: git overwrites them without a word;
        # here a safe update refuses, and a forced one is for the caller to keep first (see content_tree)
        self.ignored_overwritten: set[str] = set()
        # path -> why it stops the whole update (safe mode; or something no mode may delete)
        self.refusals: dict[str, str] = {}

    @property
    def changes_files(self) -> bool:
        return bool(self.writes or self.removals or self.expendable or self.emptied)


def plan(files: WorktreeFiles, target: str, *, baseline: str | None = None, force: bool) -> CheckoutPlan:
    """Decide how the worktree of `files` becomes `target` (a tree id). Reads only."""
    repo = files.repo
    status = {path: flags for path, flags in repo.status(untracked_files="all").items() if flags & _IN_WORKTREE}
    result = CheckoutPlan()
    if force:
        index_differs = repo.index.diff_to_tree(repo[target])
        candidates = {delta.old_file.path for delta in index_differs.deltas} | \
            {delta.new_file.path for delta in index_differs.deltas} | set(status)
    else:
        candidates = {change.path for change in trees.diff_trees(repo, baseline, target)}
    for raw in sorted(candidates):
        path = raw.rstrip("/")  # an untracked nested repository is listed as "name/"
        desired = _file_entry(repo, target, path)
        _plan_path(files, result, path, desired, raw in status or path in status, baseline, force)
    _clear_parents(files, result, force)
    return result


def _file_entry(repo: pygit2.Repository, tree: str | None, path: str) -> Entry | None:
    """The tree's entry at `path` unless it is a folder there (folders are made by their files)."""
    entry = trees.entry_at(repo, tree, path) if tree else None
    return None if entry is None or entry.mode == trees.TREE_MODE else entry


def _plan_path(files: WorktreeFiles, result: CheckoutPlan, path: str, desired: Entry | None, edited: bool,
               baseline: str | None, force: bool) -> None:
    staged = files.index_entry(path)
    if staged == desired and not edited:
        return
    nested = files.nested_repository(path)
    if nested is not None:
        if desired is not None and desired.mode == GITLINK and nested == path:
            result.index[path] = desired  # a submodule stays one; its own checkout is its own business
        else:
            result.nested.add(nested)
            if not force:
                result.refusals[nested] = "a nested repository (it holds its own .git) is in the way"
        return
    if not force:
        old = _file_entry(files.repo, baseline, path)
        if staged != old or edited:
            result.refusals[path] = "untracked file in the way" if staged is None and old is None \
                else "unsaved edits"
            return
    full = files.root / path
    if files.beyond_reach(path):
        pass  # beneath a symlinked folder: the link goes (it is a path of the plan's too), never what it points at
    elif _is_folder(full):
        if desired is not None and desired.mode == GITLINK:
            result.index[path] = desired  # an empty folder for a submodule not checked out: it is that
            return
        if not _plan_folder_away(files, result, path, baseline, force):
            result.index[path] = None  # the folder stays, around a nested repository
            return
    elif os.path.lexists(full):
        if staged is None and not edited and desired is not None and files.file_entry(path) not in \
                (desired, NOT_A_FILE) and _ignored(files, path):
            # an ignored file: its content no state holds, and no snapshot would take it
            if not force:
                result.refusals[path] = "an ignored file is in the way"
                return
            result.ignored_overwritten.add(path)
        result.removals.add(path)
    if desired is not None:
        result.writes[path] = desired
    result.index[path] = desired


def _plan_folder_away(files: WorktreeFiles, result: CheckoutPlan, folder: str, baseline: str | None,
                      force: bool) -> bool:
    """A folder stands where the tree has a file (or nothing): everything in it must go. Files the plan
    decides on their own (tracked ones) go their way; ignored ones go as git deletes them; untracked ones
    go only in force mode. A nested repository never goes: then the folder stays (False). A safe update
    decides only the paths that differ between `baseline` and the tree, so a file staged there that
    `baseline` lacks (`git add` of a new file) is nobody's decision: it refuses."""
    top = files.root / folder
    ignored: list[str] = []
    untracked: list[str] = []
    for current, dirs, names in os.walk(top):
        here = Path(current)
        relative = here.relative_to(files.root).as_posix()
        if ".git" in names or ".git" in dirs:
            result.nested.add(relative)
            if not force:
                result.refusals[relative] = "a nested repository (it holds its own .git) is in the way"
            return False
        for name in dirs:
            if (here / name).is_symlink():
                names.append(name)  # a link to a folder is deleted as a link, never followed
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
        for name in names:
            path = f"{relative}/{name}"
            if path in result.removals or path in files.index:
                if not force and files.index_entry(path) != _file_entry(files.repo, baseline, path):
                    result.refusals[path] = "unsaved edits"
                continue  # a tracked file is a path of the plan's own, decided on its own
            (ignored if _ignored(files, path) else untracked).append(path)
    if untracked and not force:
        result.refusals.update({path: "untracked file in the way" for path in untracked})
    result.expendable.update(ignored)
    result.removals.update(untracked)
    result.emptied.add(folder)
    return True


def _clear_parents(files: WorktreeFiles, result: CheckoutPlan, force: bool) -> None:
    """A file or symlink on the way to a path the plan writes must be one the plan deletes, or ignored."""
    for path in list(result.writes):
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            parent = "/".join(parts[:depth])
            full = files.root / parent
            if not os.path.lexists(full) or _is_folder(full) or parent in result.removals:
                continue
            if _ignored(files, parent):
                result.expendable.add(parent)
            elif force and parent not in files.index:
                result.removals.add(parent)
            else:
                result.refusals[parent] = "a file is in the way of a folder"


def _ignored(files: WorktreeFiles, path: str) -> bool:
    """Whether the ignore rules cover `path`. pygit2 takes a name only as text it encodes strictly, so a name
    that is not UTF-8 (held as lone surrogates: a Latin-1 `café` git took as bytes) failed the whole plan;
    git itself is asked about those few."""
    try:
        return files.repo.path_is_ignored(path)
    except UnicodeEncodeError:
        from git_lanes.store.gitcli import run_git, unredirected_env

        # subprocess hands a name to git as the bytes it was read from (os.fsencode)
        asked = run_git(["check-ignore", "-q", "--no-index", "--", path], files.root, check=False,
                        env=unredirected_env())
        return asked.returncode == 0


def _is_folder(full: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(full).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def apply(files: WorktreeFiles, result: CheckoutPlan) -> None:
    """Carry out a plan that refuses nothing: deletions deepest first, then writes shallowest first, then
    the index in one write."""
    assert not result.refusals, result.refusals
    for path in sorted(result.expendable, key=_deepest_first):
        full = files.root / path
        if _is_folder(full):
            shutil.rmtree(full)
        elif os.path.lexists(full):
            full.unlink()
    for path in sorted(result.removals, key=_deepest_first):
        files.remove(path)
    for folder in sorted(result.emptied, key=_deepest_first):
        _remove_empty_tree(files.root / folder)
    files.smudge_ahead(result.writes)
    for path in sorted(result.writes, key=_shallowest_first):
        files.write(path, result.writes[path])
    for path, entry in result.index.items():
        if path not in result.writes:
            files.stage(path, entry)
    files.save_index()


def _remove_empty_tree(folder: Path) -> None:
    """Remove `folder` and the empty folders inside it; anything else left there is an error (the plan
    accounted for every file)."""
    if not _is_folder(folder):
        return
    for current, _, _ in sorted(os.walk(folder), key=lambda item: -len(Path(item[0]).parts)):
        os.rmdir(current)


def _deepest_first(path: str) -> tuple[int, str]:
    return -path.count("/"), path


def _shallowest_first(path: str) -> tuple[int, str]:
    return path.count("/"), path
