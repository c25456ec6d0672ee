"""Workspaces: real git worktrees. Snapshots go through each worktree's own index, so git's stat cache makes
their cost follow what changed, and `git diff` inside a workspace shows exactly what is not yet snapshotted."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from git_lanes.errors import Conflict, NotFound, UserError
from git_lanes.store import stale
from git_lanes.store.gitcli import GitCommandFailed, run_git, unredirected_env
from git_lanes.store.values import Worktree
from git_lanes.store.worktree_add import add_detached_worktree, submodule_histories, unfinished, worktree_admin_dir

if TYPE_CHECKING:  # reading and carrying files load with the first command that does (not status, not lists)
    from collections.abc import Iterable

    from git_lanes.store import checkout
    from git_lanes.store.watched_index import WatchedIndex
    from git_lanes.store.worktree_files import WorktreeFiles

# Whatever git counts as a difference between HEAD, the index and the files (ignored files excepted).
_CHANGED = ~(pygit2.GIT_STATUS_CURRENT | pygit2.GIT_STATUS_IGNORED)
_WORKTREE_CHANGED = (pygit2.GIT_STATUS_WT_NEW | pygit2.GIT_STATUS_WT_MODIFIED | pygit2.GIT_STATUS_WT_DELETED |
                     pygit2.GIT_STATUS_WT_TYPECHANGE | pygit2.GIT_STATUS_WT_RENAMED | pygit2.GIT_STATUS_CONFLICTED)
_INDEX_CHANGED = (pygit2.GIT_STATUS_INDEX_NEW | pygit2.GIT_STATUS_INDEX_MODIFIED | pygit2.GIT_STATUS_INDEX_DELETED |
                  pygit2.GIT_STATUS_INDEX_TYPECHANGE | pygit2.GIT_STATUS_INDEX_RENAMED)


class WorkspaceOps:
    """Mixed into Store: operations on the repository's worktrees."""

    repo: pygit2.Repository
    root: Path
    common_dir: Path
    _workspace_repos: dict[Path, pygit2.Repository]
    _warm_indexes: set[Path]
    _watched_indexes: dict[Path, WatchedIndex]

    def workspace_repo(self, path: Path) -> pygit2.Repository:
        path = Path(path).resolve()
        cached = self._workspace_repos.get(path)
        if cached is None:
            if not (path / ".git").exists():
                raise NotFound(f"no workspace at {path}", code="workspace_missing")
            cached = pygit2.Repository(str(path))
            self._workspace_repos[path] = cached
        return cached

    def is_workspace(self, path: Path) -> bool:
        """A finished worktree lives at `path` (not one a killed `git worktree add` left half made)."""
        return (path / ".git").is_file() and not unfinished(path)

    def unfinished_worktree(self, path: Path) -> bool:
        """What stands at `path` is a worktree a killed `git worktree add` left half made."""
        return unfinished(path)

    def clear_unfinished_worktree(self, path: Path) -> bool:
        """Remove what a killed `git worktree add` left at `path`; True when there was something. Nothing in
        it was ever handed to anyone: git marks a worktree `initializing` until its checkout is complete."""
        if not unfinished(path):
            return False
        self.remove_worktree(path)
        return True

    def forget_missing_worktree(self, path: Path) -> None:
        """Drop git's record of a worktree at `path` whose directory was deleted by hand (not locked with
        `git worktree lock`), so that making it again leaves one entry in `git worktree list`, not two."""
        from git_lanes.store import worktree_remove

        path = Path(path)
        for admin in worktree_remove.missing_worktree_admins(self.common_dir, path):
            worktree_remove.require_no_histories(path, admin)
            worktree_remove.discard_admin(self.common_dir, admin)

    def add_worktree(self, path: Path, commit: str) -> None:
        # libgit2's add_worktree insists on creating a branch, and `git worktree add` leaves a HEAD fsck
        # rejects when killed halfway; see worktree_add.
        add_detached_worktree(self.common_dir, path, commit, unredirected_env())

    def remove_worktree(self, path: Path) -> None:
        """Remove a worktree and its private git dir, refusing where that would lose anything (see
        worktree_remove). The files move out of the way in one rename first, so a kill mid-removal never
        leaves a half-deleted directory that looks like, or blocks, a workspace."""
        from git_lanes.store import worktree_remove  # with the first removal, not at start-up

        path = Path(path)
        admin = worktree_remove.removable_admin(path)
        if admin is not None and path.is_dir():  # a `git commit` running there would lose its files under it
            self._require_unlocked(path.resolve(), admin / "index.lock")
        self._workspace_repos.pop(path.resolve(), None)
        self._warm_indexes.discard(path.resolve())
        watched = self._watched_indexes.pop(path.resolve(), None)
        if watched is not None:
            watched.close()
        worktree_remove.remove(self.root, self.common_dir, path)

    def main_worktree(self) -> Worktree:
        return self._describe(self.root, is_main=True)

    def list_worktrees(self) -> list[Worktree]:
        """The main worktree, then every linked one git records whose folder exists. One that is not what
        git recorded (see `workspace_problem`) is listed as broken, never read through."""
        found = [self.main_worktree()]
        for name in self.repo.list_worktrees():
            try:
                worktree = self.repo.lookup_worktree(name)
                path = Path(worktree.path)
            except (KeyError, pygit2.GitError):
                continue
            if not os.path.lexists(path):
                continue
            problem = self.workspace_problem(path)
            found.append(Worktree(path, None, False, None, problem) if problem
                         else self._describe(path, is_main=False))
        return found

    def workspace_problem(self, path: Path) -> str | None:
        """Why what stands at `path` is not the linked worktree git made for `path` (None when it is). A
        folder replaced by a symlink to another lane's workspace, or a `.git` pointing at another worktree,
        would make every command act on the wrong lane's files (the agent hooks ask gitfiles the same)."""
        from git_lanes.store import gitfiles  # with the first workspace looked at, not at start-up

        return gitfiles.worktree_problem(str(self.root), str(self.common_dir), str(path))

    def _describe(self, path: Path, is_main: bool) -> Worktree:
        repo = self.repo if is_main else self.workspace_repo(path)
        branch = None
        head = None
        try:
            ref = repo.references.get("HEAD")
            if ref is not None and ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
                branch = str(ref.target)
            head = None if repo.head_is_unborn else str(repo.head.target)
        except pygit2.GitError:
            pass
        return Worktree(path, head, is_main, branch)

    def workspace_head(self, path: Path) -> str | None:
        repo = self.workspace_repo(path)
        return None if repo.head_is_unborn else str(repo.head.target)

    def set_workspace_head(self, path: Path, commit: str) -> None:
        """Point a linked workspace's HEAD, detached, at `commit` (the main worktree follows its branch). A
        branch someone checked out there with plain git keeps its commits; HEAD leaves it for the lane."""
        repo = self.workspace_repo(path)
        if repo.head_is_detached or repo.head_is_unborn or Path(path).resolve() != self.root:
            stale.retrying(lambda: repo.set_head(pygit2.Oid(hex=commit)), [Path(repo.path) / "HEAD.lock"],
                           pygit2.GitError, "could not move the workspace's HEAD", worktree=Path(path))

    def snapshot(self, path: Path) -> str:
        """Stage the workspace's files as they are (ignore rules apply) and return the tree's id."""
        path = Path(path).resolve()
        index_lock = self._admin_dir(path) / "index.lock"
        locks = [index_lock] if path != self.root else []
        if path not in self._warm_indexes or self._filter_drivers(path):
            # A fresh process: git refreshes the index with parallel lstat and needs no libgit2 index load,
            # which beats pygit2 until the index is held open (then the next snapshot takes the path below).
            # libgit2 runs no configured filter driver (git-lfs, git-crypt): with one, only git stages
            # content as git would (an LFS pointer, not the large file; ciphertext, not the secret).
            self._warm_indexes.add(path)
            return self._scan_with_git(path, locks)
        # Snapshotting again in this process: it stays open (MCP server, SDK, dashboard), so it watches the
        # workspace and, from then on, stages only the paths the watcher heard of (see watched_index).
        watched = self._watched_indexes.get(path)
        if watched is None:
            from git_lanes.store.watched_index import WatchedIndex

            watched = self._watched_indexes[path] = WatchedIndex(self.workspace_repo(path), path, self.common_dir)
        return watched.snapshot(lambda write, failure: stale.retrying(write, locks, failure,
                                                                      "could not write the workspace's index",
                                                                      worktree=path),
                                lambda: self._scan_with_git(path, locks))

    def _scan_with_git(self, path: Path, locks: list[Path]) -> str:
        stale.retrying(lambda: run_git(["add", "-A"], cwd=path, env=unredirected_env()), locks,
                       GitCommandFailed, "could not update the workspace's index", worktree=path)
        return run_git(["write-tree"], cwd=path, env=unredirected_env()).stdout.strip()

    def stop_watching(self) -> None:
        """Stop watching every workspace this process watches: each watcher holds an inotify instance (128 per
        user by default), which a process that opens repositories one after another should give back. A later
        snapshot of a workspace scans it whole and watches it again."""
        watched, self._watched_indexes = list(self._watched_indexes.values()), {}
        for index in watched:
            index.close()

    def snapshot_scan(self, path: Path) -> str | None:
        """Why this process's last snapshot of `path` staged every file rather than what its watcher heard
        of; None when it followed the watcher."""
        watched = self._watched_indexes.get(Path(path).resolve())
        return "not snapshotted by this process since it started watching" if watched is None else watched.last_scan

    def _filter_drivers(self, path: Path) -> bool:
        return any(entry.name.startswith("filter.") and entry.name.endswith((".clean", ".process"))
                   for entry in self.workspace_repo(path).config)

    def operation_in_progress(self, path: Path) -> str | None:
        """The git operation a person left unfinished in the workspace (merge, rebase, cherry-pick, revert,
        am), which a snapshot would cut short; None when there is none (a bisect does not count)."""
        state = self.workspace_repo(path).state()
        return _OPERATIONS.get(int(state))

    def unmerged_paths(self, path: Path) -> list[str]:
        """Paths with unresolved merge conflicts in the workspace's index (a conflicted `git merge`, `git
        stash pop`...): a snapshot would record their conflict markers as content."""
        path = Path(path).resolve()
        if path in self._warm_indexes:
            index = self.workspace_repo(path).index
            watched = self._watched_indexes.get(path)
            if watched is None or not watched.index_is_current():
                index.read(False)  # after this process's own write, it would only parse and hash it again
            conflicts = index.conflicts
            if conflicts is None:
                return []
            return sorted({next(e.path for e in sides if e is not None) for sides in conflicts})
        listed = run_git(["ls-files", "-u", "-z"], cwd=path, env=unredirected_env()).stdout
        return sorted({entry.split("\t", 1)[1] for entry in listed.split("\0") if "\t" in entry})

    def _admin_dir(self, path: Path) -> Path:
        """The worktree's private git dir, where its index and HEAD live."""
        return Path(self.workspace_repo(path).path)

    def content_tree(self, path: Path, ignored: Iterable[str] = ()) -> str:
        """The workspace's files as a tree, like `snapshot`, but leaving the index as it was: for keeping
        edits in a backup without staging them. git stages a scratch copy of the index, as `git stash` does:
        it records a nested repository as the gitlink of its HEAD (libgit2 refuses one that is untracked)
        and runs configured filter drivers. `ignored`: ignored files to take as well (ones a checkout is
        about to overwrite)."""
        path = Path(path).resolve()
        index = self._admin_dir(path) / "index"
        scratch = index.with_name(f"lanes-content-index-{os.getpid()}")
        try:
            if index.exists():
                shutil.copyfile(index, scratch)
            env = unredirected_env({"GIT_INDEX_FILE": str(scratch)})
            # --ignore-errors: a nested repository without a commit has nothing to record; the rest is kept
            run_git(["add", "-A", "--ignore-errors"], cwd=path, env=env, check=False)
            if ignored:
                run_git(["--literal-pathspecs", "add", "--force", "--", *sorted(ignored)], cwd=path, env=env)
            return run_git(["write-tree"], cwd=path, env=env).stdout.strip()
        finally:
            scratch.unlink(missing_ok=True)

    def files_match(self, path: Path, tree: str) -> bool:
        """Whether the workspace's files (ignore rules apply) equal `tree`. Reads only: no object, no index."""
        repo = self.workspace_repo(path)
        flags = pygit2.enums.DiffOption.INCLUDE_UNTRACKED | pygit2.enums.DiffOption.RECURSE_UNTRACKED_DIRS | \
            pygit2.enums.DiffOption.INCLUDE_TYPECHANGE
        return len(repo[tree].peel(pygit2.Tree).diff_to_workdir(flags=flags)) == 0

    def index_tree(self, path: Path) -> str:
        index = self.workspace_repo(path).index
        index.read(False)
        return str(index.write_tree())

    def changed_paths(self, path: Path) -> dict[str, str]:
        """Paths whose file or index entry differs from the workspace's HEAD: path -> short status."""
        changed = {}
        for name, flags in self._status(path).items():
            if flags & _CHANGED:
                changed[name] = _describe_status(flags)
        return changed

    def _status(self, path: Path) -> dict[str, int]:
        """git's status of the workspace at `path`; a damaged index there (a tool killed while writing it) is
        that workspace's problem, said as such, not a failure of every command that looks at all lanes."""
        repo = self.workspace_repo(path)
        try:
            return repo.status()
        except pygit2.GitError as exc:
            raise UserError(f"the workspace at {path} cannot be read: {exc}", code="damaged_workspace",
                            hint=f"if its index is damaged, remove it (`git -C {path} rev-parse --git-path index`) "
                                 f"and run `git -C {path} reset` to rebuild it from HEAD; the files stay") from None

    def workspace_changes(self, path: Path) -> tuple[dict[str, str], dict[str, str]]:
        """(files that differ from the index, index entries that differ from HEAD): path -> short status,
        from one walk of the workspace. The first is what `git diff` shows."""
        unstaged: dict[str, str] = {}
        staged: dict[str, str] = {}
        for name, flags in self._status(path).items():
            if flags & _WORKTREE_CHANGED:
                unstaged[name] = _describe_status(flags & _WORKTREE_CHANGED)
            if flags & _INDEX_CHANGED:
                staged[name] = _describe_status(flags & _INDEX_CHANGED)
        return unstaged, staged

    def worktree_files(self, path: Path) -> WorktreeFiles:
        """The worktree at `path`, path by path (see worktree_files)."""
        from git_lanes.store.worktree_files import WorktreeFiles

        return WorktreeFiles(self.workspace_repo(path))

    def plan_checkout(self, path: Path, tree: str, *, baseline: str | None = None,
                      force: bool) -> checkout.CheckoutPlan:
        """How the worktree at `path` would become `tree` (see checkout); reads only. A worktree whose index
        another git command holds (a `git commit` running its hooks) cannot be carried there: Conflict."""
        from git_lanes.store import checkout

        self.require_index_free(path)
        return checkout.plan(self.worktree_files(path), tree, baseline=baseline, force=force)

    def require_index_free(self, path: Path) -> None:
        """Refuse (`index_locked`, exit 3) while another process holds the worktree's index lock: anything
        written now could not be recorded in the index. Call with the writers' lock held: a lock a killed
        process left on a lane workspace's index is cleared; the main worktree's, where people run git, never."""
        path = Path(path).resolve()
        self._require_unlocked(path, self._admin_dir(path) / "index.lock")

    def _require_unlocked(self, path: Path, lock: Path) -> None:
        if lock.exists() and (path == self.root or not stale.clear_if_stale(lock, path)):
            raise Conflict(f"the index of {path} is locked by another git command (a `git commit` running?)",
                           code="index_locked", details={"lock": str(lock)},
                           hint=f"let it finish and try again; if no git process is running, delete {lock}")

    def apply_checkout(self, path: Path, plan: checkout.CheckoutPlan) -> None:
        from git_lanes.store import checkout

        checkout.apply(self.worktree_files(path), plan)

    def submodule_histories(self, path: Path) -> list[str]:
        """The repositories of the submodules of the worktree at `path` that git keeps in its private git
        dir: removing the worktree would delete them, whether or not their work trees are still there (or
        the worktree's folder itself: its private dir stays until it is forgotten)."""
        from git_lanes.store.worktree_remove import missing_worktree_admins

        path = Path(path)
        admins = [worktree_admin_dir(path)] if path.exists() else missing_worktree_admins(self.common_dir, path)
        return [str(found) for admin in admins for found in submodule_histories(admin)]

    def nested_repositories(self, path: Path) -> list[str]:
        """Every folder inside the worktree at `path` that holds a `.git` of its own (see worktree_remove)."""
        from git_lanes.store.worktree_remove import nested_repositories

        return nested_repositories(path)


_OPERATIONS = {
    int(pygit2.enums.RepositoryState.MERGE): "merge",
    int(pygit2.enums.RepositoryState.REVERT): "revert",
    int(pygit2.enums.RepositoryState.REVERT_SEQUENCE): "revert",
    int(pygit2.enums.RepositoryState.CHERRYPICK): "cherry-pick",
    int(pygit2.enums.RepositoryState.CHERRYPICK_SEQUENCE): "cherry-pick",
    int(pygit2.enums.RepositoryState.REBASE): "rebase",
    int(pygit2.enums.RepositoryState.REBASE_INTERACTIVE): "rebase",
    int(pygit2.enums.RepositoryState.REBASE_MERGE): "rebase",
    int(pygit2.enums.RepositoryState.APPLY_MAILBOX): "am",
    int(pygit2.enums.RepositoryState.APPLY_MAILBOX_OR_REBASE): "rebase",
}


def _describe_status(flags: int) -> str:
    if flags & (pygit2.GIT_STATUS_WT_NEW | pygit2.GIT_STATUS_INDEX_NEW):
        return "added"
    if flags & (pygit2.GIT_STATUS_WT_DELETED | pygit2.GIT_STATUS_INDEX_DELETED):
        return "deleted"
    if flags & pygit2.GIT_STATUS_CONFLICTED:
        return "conflicted"
    return "modified"
