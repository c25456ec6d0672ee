"""`git --git-dir=… --work-tree=… lanes …`: git hands an external command the place it was told to work in as
GIT_DIR and GIT_WORK_TREE. git-lanes finds its repository from the folder it runs in (and runs git there with
those variables dropped), so without this it would act on the repository of the current folder, another one
than the user named, and say nothing.

The work tree git means (GIT_WORK_TREE, else the current folder) must hold the repository git means (GIT_DIR,
else the one found from the current folder): then the command runs from that work tree. Any other pairing
(a git dir that is not the work tree's, a bare repository, a work tree of another repository) is refused
before anything is read, with the spelling that works."""

from __future__ import annotations

import os

from git_lanes.errors import NotARepository, UserError
from git_lanes.store import gitfiles


def follow() -> None:
    """Move to the work tree GIT_WORK_TREE names, once it is checked to hold the repository git means; refuse
    a place git-lanes cannot work in. Nothing happens when neither variable is set."""
    git_dir, work_tree = os.environ.get("GIT_DIR"), os.environ.get("GIT_WORK_TREE")
    if not git_dir and not work_tree:
        return
    here = os.path.realpath(os.getcwd())
    tree = os.path.realpath(work_tree) if work_tree else here
    meant = _named(git_dir) if git_dir else _git_dir_of(here)
    found = _git_dir_of(tree)
    if meant is None or found != meant:
        told = " and ".join(f"{name}={value}" for name, value in (("GIT_DIR", git_dir), ("GIT_WORK_TREE", work_tree))
                            if value)
        raise UserError(f"{told}: the git directory {meant or '(none)'} and the work tree {tree} do not go "
                        f"together (that work tree's repository is {found or 'none'}); git-lanes works on a work "
                        "tree with its own repository", code="git_place_mismatch",
                        hint="run it inside the work tree, or name the work tree alone: `git -C <work tree> lanes …`")
    if tree != here and not here.startswith(tree.rstrip(os.sep) + os.sep):
        os.chdir(tree)


def _named(git_dir: str) -> str | None:
    try:
        return gitfiles.named_git_dir(git_dir)
    except OSError:
        return None


def _git_dir_of(folder: str) -> str | None:
    try:
        return os.path.realpath(gitfiles.discover(folder).git_dir)
    except (NotARepository, OSError):
        return None
