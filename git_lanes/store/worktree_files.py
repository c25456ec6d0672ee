"""Path-level work on a checked-out worktree: reading what a file holds as a tree entry, writing one path's
entry into the files and the index, and a small JSON record in the worktree's private git dir. Cost follows
the paths named, never the worktree's size."""

from __future__ import annotations

import json
import os
import stat
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pygit2

from git_lanes.errors import Conflict, UnsupportedFormat
from git_lanes.store import filters
from git_lanes.model.entries import Entry

if TYPE_CHECKING:
    from pygit2.enums import FileMode

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
        # With a filter driver configured, git writes and hashes the files (see filters).
        self.drivers = filters.drivers_configured(repo.config)
        self._smudged: dict[tuple[str, str], bytes] = {}
        self._refresh = False

    @cached_property
    def index(self) -> pygit2.Index:
        index: pygit2.Index = self.repo.index
        index.read(False)
        return index

    # -- reading ---------------------------------------------------------------------------------------
    def file_entry(self, path: str) -> Entry | None:
        """What the file at `path` holds, as the entry a snapshot would record (None when absent). Below a
        symlinked folder or inside a nested repository nothing is this worktree's, as git sees it: that
        reads as something in the way. A nested repository reads as the gitlink `git add` would record."""
        full = self.root / path
        if self.beyond_reach(path):
            return NOT_A_FILE
        try:
            info = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(info.st_mode):
            return Entry(str(pygit2.hash(os.fsencode(os.readlink(full)))), LINK)
        if stat.S_ISDIR(info.st_mode):
            return self._gitlink_entry(path)
        if not stat.S_ISREG(info.st_mode):
            return NOT_A_FILE
        mode = EXECUTABLE if info.st_mode & 0o111 else REGULAR
        if self.drivers:
            cleaned = filters.cleaned_oid(self.root, path)
            return Entry(cleaned, mode) if cleaned else NOT_A_FILE
        try:
            # As git stages it: through the path's filters (eol=crlf, core.autocrlf), else a file checked
            # out with CRLF never equals its LF blob and every promoted path looks edited.
            # The name as bytes: pygit2 encodes a str one strictly, and git takes any bytes as a file name.
            oid = self.repo.hashfile(str(full), as_path=os.fsencode(path))  # type: ignore[arg-type]
        except pygit2.GitError:  # core.safecrlf refusing the conversion: compare the bytes as they are
            oid = pygit2.hashfile(str(full))
        return Entry(str(oid), mode)

    def _gitlink_entry(self, path: str) -> Entry:
        """A folder where an entry is expected: a nested repository reads as its HEAD's gitlink; an empty
        folder where the index has a gitlink is that submodule, not checked out (git says the same)."""
        full = self.root / path
        if os.path.lexists(full / ".git"):
            try:
                nested = pygit2.Repository(str(full))
                if not nested.head_is_unborn:
                    return Entry(str(nested.head.target), GITLINK)
            except (pygit2.GitError, KeyError):
                pass
            return NOT_A_FILE
        staged = self.index_entry(path)
        if staged is not None and staged.mode == GITLINK and not any(full.iterdir()):
            return staged
        return NOT_A_FILE

    def nested_repository(self, path: str) -> str | None:
        """The nested repository (a folder holding `.git`, other than the worktree itself) at or above
        `path`, if any: its files are its own repository's, never this worktree's to write or delete."""
        parts = Path(path).parts
        folder = self.root
        for depth, part in enumerate(parts, start=1):
            folder = folder / part
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    return None
            except (FileNotFoundError, NotADirectoryError):
                return None
            if os.path.lexists(folder / ".git"):
                return "/".join(parts[:depth])
        return None

    def stamp(self, path: str) -> list[int] | None:
        """What changes whenever anything writes the file (None when absent, or out of reach behind a
        symlink: what lies there is not this worktree's file): to tell it was left alone."""
        if self.beyond_reach(path):
            return None
        try:
            info = os.lstat(self.root / path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISDIR(info.st_mode):
            # A folder where a file is to come is no file a person wrote, and its times change as soon as the
            # files beneath it are removed, which would make that file look edited since. What the folder
            # still holds is guarded anyway: a file cannot replace a folder that is not empty.
            return None
        return [info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino]

    def index_entry(self, path: str) -> Entry | None:
        try:
            entry = self.index[path]
        except KeyError:
            return None
        return Entry(str(entry.id), entry.mode)

    def beyond_reach(self, path: str) -> bool:
        """Whether a folder on the way to `path` is a symlink (writing there would land outside the
        worktree) or a nested repository (its files are its own): git refuses such paths too."""
        folder = self.root
        for part in Path(path).parts[:-1]:
            folder = folder / part
            try:
                if stat.S_ISLNK(os.lstat(folder).st_mode) or os.path.lexists(folder / ".git"):
                    return True
            except (FileNotFoundError, NotADirectoryError):
                return False
        return False

    # -- writing ---------------------------------------------------------------------------------------
    def remove(self, path: str) -> None:
        full = self.root / path
        if self.beyond_reach(path):
            raise OSError(f"{path} is beyond a symbolic link or inside a nested repository")
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
        if self.beyond_reach(path):
            raise OSError(f"{path} is beyond a symbolic link or inside a nested repository")
        full.parent.mkdir(parents=True, exist_ok=True)
        if entry.mode == GITLINK:
            full.mkdir(exist_ok=True)
            self.index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=entry.oid), cast("FileMode", entry.mode)))
            return
        data = self._content(path, entry)
        import tempfile  # here, not at the top: reads never write a file, and tempfile loads random

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
        if self.drivers and entry.mode != LINK:
            # Hashing the file here would skip the clean filter: record the blob, and let git take the
            # file's stat data when the index is saved.
            self.stage(path, entry)
            self._refresh = True
        else:
            # Adding by path records the file's stat data, so git sees it as clean without rehashing.
            self.index.add(path)

    def smudge_ahead(self, entries: dict[str, Entry]) -> None:
        """Get the worktree content of many entries from git in one process (only with a filter driver)."""
        if not self.drivers:
            return
        wanted = {path: e.oid for path, e in entries.items()
                  if e.mode not in (LINK, GITLINK) and (path, e.oid) not in self._smudged}
        for path, data in filters.smudged(self.root, wanted).items():
            self._smudged[(path, wanted[path])] = data

    def _content(self, path: str, entry: Entry) -> bytes:
        blob = self.repo[entry.oid].peel(pygit2.Blob)
        if entry.mode == LINK:
            return blob.data
        if self.drivers:
            self.smudge_ahead({path: entry})
            return self._smudged.pop((path, entry.oid))
        # As bytes: pygit2 encodes a str strictly, and a file name git took in another encoding (a Latin-1
        # `café`) reaches us with surrogates (os.fsdecode), which only os.fsencode turns back into its bytes.
        # pygit2 annotates `str`, but hands bytes to libgit2 as they are (utils.encode_string)
        filtered = self.repo.load_filter_list(os.fsencode(path),  # type: ignore[arg-type]
                                              pygit2.enums.FilterMode.TO_WORKTREE)
        return filtered.apply_to_blob(blob) if filtered is not None else blob.data

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
            self.index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=entry.oid), cast("FileMode", entry.mode)))

    def save_index(self) -> None:
        if "index" in self.__dict__:
            try:
                self.index.write()
            except pygit2.GitError as exc:  # another git command took the index lock meanwhile
                raise Conflict(f"could not write the index of {self.root}: {exc}", code="index_locked",
                               hint="let the other git command finish; the next command here completes this") \
                    from None
        if self._refresh:
            filters.refresh_index(self.root)
            self._refresh = False

    def _prune_empty(self, directory: Path) -> None:
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    # -- private records -------------------------------------------------------------------------------
    def read_record(self, name: str) -> Any:
        """The JSON a record holds (None when there is none); UnsupportedFormat when it is not JSON."""
        try:
            return json.loads((self.git_dir / name).read_text())
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise UnsupportedFormat(f"{name} in {self.git_dir} is not JSON: {exc}") from None

    def write_record(self, name: str, record: dict[str, Any] | None) -> None:
        """Replace (or with None, remove) a JSON record in the worktree's private git dir, atomically."""
        target = self.git_dir / name
        if record is None:
            target.unlink(missing_ok=True)
            return
        import tempfile

        fd, temp = tempfile.mkstemp(dir=self.git_dir, prefix=f".{name}-")
        with os.fdopen(fd, "w") as handle:
            json.dump(record, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
