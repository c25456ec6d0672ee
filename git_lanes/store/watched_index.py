"""Snapshots in a process that stays open (MCP server, SDK, dashboard): the workspace's index is brought up
to date for the paths a watcher heard of, the new tree is the last one with only those paths' subtrees
rewritten, and the index file gets only their entries spliced in (see index_image), so a snapshot costs what
changed rather than what exists (but for writing the whole file, which git's format requires).

The result must be exactly what a full scan (`git add -A && git write-tree`) gives. Whenever that cannot be
vouched for, the snapshot scans every file instead: the first time, after the watcher lost events or died,
when the index was written by anyone else, when ignore or attribute rules or git's configuration changed, for
a nested repository, or wherever the watcher cannot run."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pygit2

from git_lanes.model.entries import Entry
from git_lanes.store.index_image import IndexImage, Unsupported
from git_lanes.store.trees import edit_tree
from git_lanes.store.watcher import Unwatchable, Watcher

# Files whose change can alter what is recorded for paths that did not change themselves.
_RULE_NAMES = frozenset({".gitignore", ".gitattributes", ".git"})


_RULES_CHANGED = "ignore rules or git's configuration changed"
SCAN_ATTEMPTS = 3  # full listings tried before git scans (a file vanishing mid-listing fails one)


class Rescan(Exception):
    """The watcher's names cannot be trusted for this snapshot: scan every file."""


class WatchedIndex:
    """One workspace's index, kept current from a watcher between snapshots of this process."""

    def __init__(self, repo: pygit2.Repository, root: Path, common_dir: Path) -> None:
        self.repo = repo
        self.root = root
        self._common_dir = common_dir
        self._rule_files = _rule_files(repo, Path(repo.path), common_dir)
        self._watcher: Watcher | None = None
        self._tree: str | None = None  # the index's tree as this process last wrote it
        self._signature: tuple[object, ...] | None = None  # index and rule files as this process left them
        self._lock = threading.Lock()
        self._ignores_case = False
        self._index_path = Path(repo.path) / "index"
        self._image: IndexImage | None = None  # the index file's bytes, kept to rewrite only what changed
        self._memory_stamp: tuple[int, int, int, int] | None = None  # the file libgit2's index in memory holds
        self.last_scan: str | None = "not snapshotted yet"  # why the last snapshot scanned every file
        self.image_writes = self.libgit2_writes = 0  # how the index was written (counted for the tests)

    def snapshot(self, save: Callable[[Callable[[], None], type[Exception]], None],
                 scan_with_git: Callable[[], str]) -> str:
        """Stage the workspace's files as they are and return the tree's id. `save(write, failure)` runs a
        write of the index file, clearing a lock a dead process left when it fails with `failure`;
        `scan_with_git` stages every file with git (and writes the index) where libgit2 refuses to."""
        with self._lock:
            signature, self._signature = self._signature, None  # a snapshot that fails trusts nothing after
            index = self.repo.index
            reason = self._why_rescan(index, signature)
            if reason == _RULES_CHANGED:
                # libgit2 reads core.excludesFile once per repository object: open it again to see a new one
                self.repo = pygit2.Repository(str(self.root))
                index = self.repo.index
            tree, touched = None, None
            if reason is None:
                try:
                    tree, touched = self._follow(index)
                except (Rescan, Unwatchable) as why:
                    reason = str(why)
                except (OSError, ValueError, pygit2.GitError) as error:
                    reason = f"following the watcher failed: {error}"
            if tree is None:
                tree = self._scan(index, scan_with_git)
            self._save(index, touched, save)
            self._tree, self._signature, self.last_scan = tree, self._current_signature(), reason
            return tree

    def index_is_current(self) -> bool:
        """Whether the index file is still as this process's last snapshot left it, so that libgit2's index
        in memory holds what the file does (reading it again would only cost a parse and a hash)."""
        with self._lock:
            return self._signature is not None and _stamp(self._index_path) == self._signature[0]

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    # -- deciding --------------------------------------------------------------------------------------
    def _why_rescan(self, index: pygit2.Index, signature: tuple[object, ...] | None) -> str | None:
        if self._watcher is None or self._tree is None:
            return "the watcher starts"
        if signature is None:
            return "the last snapshot did not finish"
        current = self._current_signature()
        if current[1:] != signature[1:]:
            return _RULES_CHANGED
        self._memory_stamp = cast("tuple[int, int, int, int] | None", signature[0])
        if current[0] != signature[0]:
            # `git status` and `git diff` rewrite the index to refresh its stat data: what it records is
            # unchanged when its tree is, and then the watcher's names still tell what changed since.
            index.read(True)
            read = _stamp(self._index_path)
            self._memory_stamp = read if read == current[0] else None  # None: it changed while being read
            try:
                if str(index.write_tree()) == self._tree:
                    return None
            except pygit2.GitError:  # unmerged entries
                pass
            return "another command changed the index"
        return None

    def _current_signature(self) -> tuple[object, ...]:
        return tuple(_stamp(path) for path in (self._index_path, *self._rule_files))

    # -- scanning everything ---------------------------------------------------------------------------
    def _scan(self, index: pygit2.Index, scan_with_git: Callable[[], str]) -> str:
        """Start a new watcher, then stage every file: a change made while the watches are being added is
        then either staged by the scan or reported by the watcher, never neither."""
        self.close()
        index.read(True)
        config = self.repo.config
        # git's configuration may have changed (the reason for this scan): core.excludesFile may name another file
        self._rule_files = _rule_files(self.repo, Path(self.repo.path), self._common_dir)
        self._ignores_case = "core.ignorecase" in config and config.get_bool("core.ignorecase")
        try:
            self._watcher = Watcher(self.root, lambda folder: self._needs_no_watch(index, folder))
        except (Unwatchable, OSError):
            self._watcher = None  # scan again next time, and try watching again
        for _ in range(SCAN_ATTEMPTS):
            try:
                index.add_all()
                return str(index.write_tree())
            except pygit2.GitError:  # an untracked nested repository, which git records as a gitlink
                break
            except OSError:
                # A file deleted between libgit2's listing and its stat (an editor's swap file): the race is
                # brief, so list again; git's own scan, the last resort, fails on it with a clear error.
                index.read(True)
        tree = scan_with_git()
        index.read(True)
        return tree

    def _needs_no_watch(self, index: pygit2.Index, folder: str) -> bool:
        return self.repo.path_is_ignored(folder) and not _entries_under(index, folder)

    # -- following the watcher -------------------------------------------------------------------------
    def _follow(self, index: pygit2.Index) -> tuple[str, set[str]]:
        """The new tree and the paths whose index entries were set again. libgit2's index in memory is not
        read again: `_why_rescan` found it to hold what the file does."""
        assert self._watcher is not None and self._tree is not None
        changes = self._watcher.drain()
        if changes.rescan:
            raise Rescan(changes.rescan)
        if self._ignores_case:
            raise Rescan("the index ignores case: its order is not the one bisection assumes")
        touched: set[str] = set()
        folders = _outermost(changes.folders)
        for path in folders:  # whatever each now is: a folder is walked whole
            self._reconcile(index, path, touched)
        for path in sorted(changes.paths - changes.folders):
            if not any(path.startswith(f"{folder}/") for folder in folders):
                self._reconcile(index, path, touched)
        if not touched:
            return self._tree, touched
        edits = {}
        for path in touched:
            found = index[path] if path in index else None
            edits[path] = Entry(str(found.id), found.mode) if found is not None else None
        return edit_tree(self.repo, self._tree, edits), touched

    # -- writing the index -----------------------------------------------------------------------------
    def _save(self, index: pygit2.Index, touched: set[str] | None,
              save: Callable[[Callable[[], None], type[Exception]], None]) -> None:
        """Write the index: after following the watcher, only the entries of `touched` are spliced into the
        file's bytes (see index_image); after a scan, or wherever that cannot be done, libgit2 writes it."""
        if touched is not None:
            if not touched:
                return  # nothing was set again: the file already holds what memory does
            try:
                image = self._image_of_memory()
                image.apply(index, touched)
                save(image.write, FileExistsError)
            except (Unsupported, OSError):  # OSError: not a live lock (that is a Conflict); libgit2 then
                pass  # fails as it always did, and says why
            except BaseException:
                self._image = None  # edited but not written
                raise
            else:
                self.image_writes += 1
                return
        self._image = None
        save(index.write, pygit2.GitError)
        self.libgit2_writes += 1

    def _image_of_memory(self) -> IndexImage:
        """The bytes of the index file that libgit2's index in memory holds (read again only when another
        command wrote the file)."""
        self._image, image = None, self._image  # until it is known to be right again
        if image is None or image.stamp != self._memory_stamp:
            image = IndexImage.load(self._index_path)
        if image.stamp is None or image.stamp != self._memory_stamp:
            raise Unsupported("the index file is not the one in memory")
        self._image = image
        return image

    def _reconcile(self, index: pygit2.Index, path: str, touched: set[str]) -> None:
        """Make the index's entries at and under `path` match the file system."""
        if os.path.basename(path) in _RULE_NAMES:
            raise Rescan(f"{path} changed")
        mode = _mode(self.root / path)
        if stat.S_ISDIR(mode):
            _drop(index, path, touched)
            self._walk(index, path, touched)
            return
        for below in _entries_under(index, path):
            _drop(index, below, touched)
        if (stat.S_ISREG(mode) or stat.S_ISLNK(mode)) and \
                (path in index or not self.repo.path_is_ignored(path)):
            index.add(path)
            touched.add(path)
        else:  # gone, ignored and untracked, or something git does not record (a socket, a fifo)
            _drop(index, path, touched)

    def _walk(self, index: pygit2.Index, top: str, touched: set[str]) -> None:
        """Stage a folder that appeared (or reappeared) as a whole, as a full scan would."""
        assert self._watcher is not None
        tracked = set(_entries_under(index, top))
        tracked_folders = {parent for path in tracked for parent in _parents(path)}
        if self.repo.path_is_ignored(top) and not tracked:
            return
        found: set[str] = set()
        pending = [top]
        while pending:
            folder = pending.pop()
            try:
                self._watcher.watch(folder)  # before listing: what is made later is reported, not lost
                listing = list(os.scandir(self.root / folder))
            except Unwatchable:
                if stat.S_ISDIR(_mode(self.root / folder)):
                    raise
                continue  # gone again (or now a link): its parent's watch reported that
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in listing:
                path = f"{folder}/{entry.name}"
                if entry.name in _RULE_NAMES:
                    raise Rescan(f"{path} appeared")
                if entry.is_dir(follow_symlinks=False):
                    if path in tracked_folders or not self.repo.path_is_ignored(path):
                        pending.append(path)
                elif (entry.is_file(follow_symlinks=False) or entry.is_symlink()) and \
                        (path in tracked or not self.repo.path_is_ignored(path)):
                    index.add(path)
                    touched.add(path)
                    found.add(path)
        for gone in tracked - found:
            _drop(index, gone, touched)


def _mode(path: Path) -> int:
    """The file's type and mode, not following a link; 0 when nothing is there."""
    try:
        return os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return 0


def _drop(index: pygit2.Index, path: str, touched: set[str]) -> None:
    if path in index:
        index.remove(path)
        touched.add(path)


def _entries_under(index: pygit2.Index, folder: str) -> list[str]:
    """The index's paths beneath `folder`, found by bisection: the index is sorted by path, byte by byte
    (which is code point order for UTF-8), so they are one run."""
    prefix = f"{folder}/"
    low, high = 0, len(index)
    while low < high:
        middle = (low + high) // 2
        if str(index[middle].path) < prefix:
            low = middle + 1
        else:
            high = middle
    found = []
    while low < len(index):
        path = str(index[low].path)
        if not path.startswith(prefix):
            break
        found.append(path)
        low += 1
    return found


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _outermost(folders: set[str]) -> list[str]:
    ordered = sorted(folders)
    return [f for f in ordered if not any(f.startswith(f"{other}/") for other in folders)]


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns


def _rule_files(repo: pygit2.Repository, admin_dir: Path, common_dir: Path) -> list[Path]:
    """Files outside the workspace whose change alters what a scan records: ignore and attribute rules and
    git's configuration at every level (a change to one makes the next snapshot scan everything)."""
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git"
    files = [common_dir / "info" / "exclude", common_dir / "info" / "attributes", common_dir / "config",
             admin_dir / "config.worktree", home / ".gitconfig", xdg / "config", xdg / "ignore",
             xdg / "attributes", Path("/etc/gitconfig")]
    for key in ("core.excludesFile", "core.attributesFile"):
        try:
            files.append(Path(os.path.expanduser(str(repo.config[key]))))
        except (KeyError, pygit2.GitError):
            pass
    return files
