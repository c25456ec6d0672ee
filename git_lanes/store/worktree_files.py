"""Path-level work on a checked-out worktree: reading what a file holds as a tree entry, writing one path's
entry into the files and the index, and a small JSON record in the worktree's private git dir. Cost follows
the paths named, never the worktree's size."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from functools import cached_property
from pathlib import Path

import pygit2

from git_lanes.store.trees import Entry

EXECUTABLE = pygit2.GIT_FILEMODE_BLOB_EXECUTABLE
REGULAR = pygit2.GIT_FILEMODE_BLOB
LINK = pygit2.GIT_FILEMODE_LINK
GITLINK = pygit2.GIT_FILEMODE_COMMIT

# A directory (or anything else no blob can describe) where a file is expected.
NOT_A_FILE = Entry("0" * 40, 0)


class WorktreeFiles:
    """One worktree's files and index, seen path by path."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.root = Path(repo.workdir)
        self.git_dir = Path(repo.path)

    @cached_property
    def index(self) -> pygit2.Index:
        index = self.repo.index
        index.read(False)
        return index

    # -- reading ---------------------------------------------------------------------------------------
    def file_entry(self, path: str) -> Entry | None:
        """What the file at `path` holds, as the entry a snapshot would record (None when absent). Below a
        symlinked folder nothing is this worktree's, as git sees it: that reads as something in the way."""
        full = self.root / path
        if self._beyond_symlink(path):
            return NOT_A_FILE
        try:
            info = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(info.st_mode):
            return Entry(str(pygit2.hash(os.fsencode(os.readlink(full)))), LINK)
        if not stat.S_ISREG(info.st_mode):
            return NOT_A_FILE
        mode = EXECUTABLE if info.st_mode & 0o111 else REGULAR
        try:
            # As git stages it: through the path's filters (eol=crlf, core.autocrlf), else a file checked
            # out with CRLF never equals its LF blob and every promoted path looks edited.
            oid = self.repo.hashfile(str(full), as_path=path)
        except pygit2.GitError:  # core.safecrlf refusing the conversion: compare the bytes as they are
            oid = pygit2.hashfile(str(full))
        return Entry(str(oid), mode)

    def stamp(self, path: str) -> list[int] | None:
        """What changes whenever anything writes the file (None when absent): to tell it was left alone."""
        try:
            info = os.lstat(self.root / path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return [info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino]

    def index_entry(self, path: str) -> Entry | None:
        try:
            entry = self.index[path]
        except KeyError:
            return None
        return Entry(str(entry.id), entry.mode)

    def _beyond_symlink(self, path: str) -> bool:
        """Whether a folder on the way to `path` is a symlink: writing there would land outside the
        worktree (git refuses such paths too)."""
        folder = self.root
        for part in Path(path).parts[:-1]:
            folder = folder / part
            try:
                if stat.S_ISLNK(os.lstat(folder).st_mode):
                    return True
            except (FileNotFoundError, NotADirectoryError):
                return False
        return False

    # -- writing ---------------------------------------------------------------------------------------
    def remove(self, path: str) -> None:
        full = self.root / path
        if self._beyond_symlink(path):
            raise OSError(f"{path} is beyond a symbolic link")
        try:
            if full.is_symlink() or full.is_file():
                full.unlink()
        except FileNotFoundError:
            pass
        self._prune_empty(full.parent)
        if path in self.index:
            self.index.remove(path)

    def write(self, path: str, entry: Entry) -> None:
        """Make the file and its index entry hold `entry`, replacing the file atomically."""
        full = self.root / path
        if self._beyond_symlink(path):
            raise OSError(f"{path} is beyond a symbolic link")
        full.parent.mkdir(parents=True, exist_ok=True)
        if entry.mode == GITLINK:
            full.mkdir(exist_ok=True)
            self.index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=entry.oid), entry.mode))
            return
        blob = self.repo[entry.oid]
        filters = self.repo.load_filter_list(path, pygit2.enums.FilterMode.TO_WORKTREE) \
            if entry.mode != LINK else None
        data = filters.apply_to_blob(blob) if filters is not None else blob.data
        fd, temp = tempfile.mkstemp(dir=full.parent, prefix=".lanes-")
        try:
            if entry.mode == LINK:
                os.close(fd)
                os.unlink(temp)
                os.symlink(os.fsdecode(data), temp)
            else:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.chmod(temp, 0o755 if entry.mode == EXECUTABLE else 0o644)
            os.replace(temp, full)
        except BaseException:
            if os.path.lexists(temp):
                os.unlink(temp)
            raise
        # Adding by path records the file's stat data, so git sees it as clean without rehashing.
        self.index.add(path)

    def track(self, path: str) -> None:
        """Record the file as it is in the index (with its stat data), or drop the entry when it is gone."""
        if os.path.lexists(self.root / path):
            self.index.add(path)
        elif path in self.index:
            self.index.remove(path)

    def stage(self, path: str, entry: Entry | None) -> None:
        """Point the index at `entry` without touching the file. The entry carries no stat data, so git
        compares contents and `git diff` shows the file against `entry`."""
        if entry is None:
            if path in self.index:
                self.index.remove(path)
        else:
            self.index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=entry.oid), entry.mode))

    def save_index(self) -> None:
        if "index" in self.__dict__:
            self.index.write()

    def _prune_empty(self, directory: Path) -> None:
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    # -- private records -------------------------------------------------------------------------------
    def read_record(self, name: str) -> dict | None:
        try:
            return json.loads((self.git_dir / name).read_text())
        except FileNotFoundError:
            return None

    def write_record(self, name: str, record: dict | None) -> None:
        """Replace (or with None, remove) a JSON record in the worktree's private git dir, atomically."""
        target = self.git_dir / name
        if record is None:
            target.unlink(missing_ok=True)
            return
        fd, temp = tempfile.mkstemp(dir=self.git_dir, prefix=f".{name}-")
        with os.fdopen(fd, "w") as handle:
            json.dump(record, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
