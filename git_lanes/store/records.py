"""The ledger's records: small blobs by id in trees of their own, read and written through a cache of
their objects (object_cache.py), and the commits that hold them, signed once per op."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2

BLOB_MODE = 0o100644
TREE_MODE = 0o040000

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_lanes.store.object_cache import ObjectCache

Signatures = tuple[pygit2.Signature, pygit2.Signature]  # (author, committer)


class RecordOps:
    """Mixed into Store: the ledger's records and the commits that hold them."""

    repo: pygit2.Repository
    root: Path
    common_dir: Path
    _record_cache: ObjectCache | None
    signature: Callable[[], pygit2.Signature]  # Store's: git's identity, now

    @property
    def _records(self) -> ObjectCache:
        """Made when the ledger is first read: commands that never read it do not load it."""
        if self._record_cache is None:
            from git_lanes.store.object_cache import ObjectCache

            self._record_cache = ObjectCache(self.repo, str(self.common_dir / "objects"))
        return self._record_cache

    def _released_packs(self) -> None:  # RefMoves' hook, after each move (so RecordOps comes first in Store)
        if self._record_cache is not None:
            self._record_cache.release_packs()

    def record_tree(self, commit: str) -> str:
        """`tree_of`, remembered: a commit's tree never changes."""
        return self._records.tree_of(commit)

    def read_record(self, tree: str, path: str) -> bytes | None:
        """The blob at `path` in `tree` (None when there is none), from memory when it was read before."""
        entry = self._records.entry(tree, path)
        if entry is None or entry[0] == TREE_MODE:
            return None
        return self._records.blob(entry[1])

    def record_names(self, tree: str, path: str = "") -> dict[str, bool]:
        """The names directly in folder `path` of `tree`, each with whether it is a folder (empty when the
        folder is missing)."""
        entries = self._records.folder(tree, path)
        return {} if entries is None else {name: item[0] == TREE_MODE for name, item in entries.items()}

    def signatures(self, author_name: str | None = None, author_email: str | None = None) -> Signatures:
        """(author, committer) of a commit made now: git's identity, the author's name and email where given.
        Reading the identity costs a look at three config files; the ledger does it before it takes the
        writers' lock, where every other writer waits, and the reflog line of its ref move names the same one."""
        committer = self.signature()
        return pygit2.Signature(author_name or committer.name, author_email or committer.email, committer.time,
                                committer.offset), committer

    @staticmethod
    def exported_signatures(signed: Signatures) -> list[list[Any]]:
        """`signed` as JSON: [name, email, time, offset] for the author, then the committer."""
        return [[s.name, s.email, s.time, s.offset] for s in signed]

    @staticmethod
    def imported_signatures(data: Any) -> Signatures:
        """`exported_signatures`' answer back (ValueError when `data` is not one)."""
        try:
            author, committer = (pygit2.Signature(str(n), str(e), int(t), int(o)) for n, e, t, o in data)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not signatures: {exc}") from None
        return author, committer

    def write_records(self, base: str | None, records: dict[str, bytes | None], parents: list[str],
                      message: str, *, author_name: str | None = None, author_email: str | None = None,
                      signed: Signatures | None = None) -> str:
        """A commit on `parents` whose tree is `base` with each path set to its bytes (None deletes it),
        writing only the blobs and folders that changed (no records: `base` itself, nothing but the commit
        written). `signed`: (author, committer) from `signatures`, else made now from `author_name` and
        `author_email`."""
        author, committer = signed or self.signatures(author_name, author_email)
        with self._records.batched():  # a checkpoint's fifty-odd objects become one pack
            tree = base if base is not None and not records else self.write_record_tree(base, records)
            return self._records.write_commit(tree, parents, author, committer, message)

    def upkeep(self, *, gc: bool = True, background: bool = True) -> None:
        """What git's own upkeep would do after writes, asking git only when something is due
        (`pack_write.upkeep_due`): merge the small packs record writes leave (`pack_write.roll_up`, in the
        background unless told not to), then `git gc --auto` (when `gc`), which packs loose objects in the
        background. Nothing where `gc.auto` is 0. libgit2 never runs either on its own."""
        from git_lanes.store.gitcli import run_git
        from git_lanes.store.object_settings import config_int
        from git_lanes.store.pack_write import roll_up, upkeep_due

        config = self.repo.config
        roll, collect = upkeep_due(str(self.common_dir / "objects"), config_int(config, "gc.auto", 6700),
                                   config_int(config, "gc.autoPackLimit", 50))
        if roll:
            roll_up(str(self.root), str(self.common_dir / "lanes-roll-up.lock"), background=background)
        if gc and collect:
            run_git(["gc", "--auto", "--quiet"], cwd=self.root, check=False, timeout=600)

    def write_record_tree(self, base: str | None, records: dict[str, bytes | None]) -> str:
        """The tree `base` with each path set to its bytes (None deletes it), writing only the blobs and folders
        that changed."""
        with self._records.batched():
            edits = {path: None if data is None else (BLOB_MODE, self._records.write_blob(data))
                     for path, data in records.items()}
            return self._records.edit(base, edits)
