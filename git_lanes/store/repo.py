"""The repository: refs moved only by compare-and-swap, objects, and the local writers' lock; notes in
notes.py (NoteOps), records in records.py (RecordOps)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import cast

import pygit2

from git_lanes.errors import Ambiguous, NotARepository, NotFound, UserError, WriteFailed
from git_lanes.store import clock, lock, setup, trees
from git_lanes.model import refs
from git_lanes.model.entries import Change, Entry
from git_lanes.model.text import git_quoted, quoted
from git_lanes.store.notes import NoteOps
from git_lanes.store.records import RecordOps
from git_lanes.store.ref_moves import IDENTITY_REUSE_SECONDS, RefMoves
from git_lanes.store.rereading import OPEN, reloaded, rereading
from git_lanes.store.values import CommitInfo, CorruptObject
from git_lanes.store.workspace import WorkspaceOps

FALLBACK_NAME = "git-lanes"
FALLBACK_EMAIL = "git-lanes@localhost"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_lanes.store.append_queue import AppendQueue
    from git_lanes.store.identity import Identity
    from git_lanes.store.object_cache import ObjectCache
    from git_lanes.store.watched_index import WatchedIndex


def open_store(path: str | os.PathLike[str] | None = None) -> Store:
    start = Path(path or os.getcwd())
    try:
        git_dir = pygit2.discover_repository(str(start))
    except pygit2.GitError:
        git_dir = None
    if not git_dir:
        raise NotARepository(f"not a git repository: {start}", hint="run `git lanes init` first")
    try:
        repo = pygit2.Repository(_common_dir(Path(git_dir)))
    except pygit2.InvalidError as exc:  # libgit2, and the ledger's own object writer, read SHA-1 only
        if "object format" not in str(exc):
            raise
        raise UserError(f"{exc}: git-lanes works in SHA-1 repositories only", code="unsupported_object_format",
                        hint="use a repository made by `git init` without --object-format=sha256") from None
    return Store(repo, Path(git_dir))


def _common_dir(git_dir: Path) -> str:
    commondir_file = git_dir / "commondir"
    if commondir_file.exists():
        return str((git_dir / commondir_file.read_text().strip()).resolve())
    return str(git_dir)


class Store(RecordOps, RefMoves, NoteOps, WorkspaceOps):
    """One repository's object database and refs, seen from its common git dir."""

    def __init__(self, repo: pygit2.Repository, discovered_git_dir: Path | None = None) -> None:
        self.repo = repo
        self.common_dir = Path(repo.path).resolve()
        # What a repository cannot be without (git replaces HEAD by rename: never absent while it is there); the
        # three, since a removal under way takes the repository's files in no particular order.
        self._essentials = tuple(str(self.common_dir / name) for name in ("HEAD", "objects", "refs"))
        if repo.is_bare or not repo.workdir:
            raise UserError("git-lanes needs a repository with a working tree", code="bare_repository")
        self.root = Path(repo.workdir).resolve()
        self.discovered_git_dir = (discovered_git_dir or self.common_dir).resolve()
        places = (str(self.root), str(self.common_dir), str(self.discovered_git_dir))
        if not all(place.isascii() for place in places):  # the rule's module loads only when it may apply
            from git_lanes.store.gitfiles import require_utf8_place

            require_utf8_place(*places)
        self._workspace_repos: dict[Path, pygit2.Repository] = {}
        self._warm_indexes: set[Path] = set()
        self._watched_indexes: dict[Path, WatchedIndex] = {}
        self._record_cache: ObjectCache | None = None
        self._logs_always: bool | None = None  # core.logAllRefUpdates=always, read on the first ref move
        self._lock_path = str(self.common_dir / "lanes.lock")  # taken on every append: built once
        self._ledger_file = os.path.join(self.common_dir, refs.LEDGER)  # read on every append
        self._identity_read: tuple[pygit2.Signature | None, float] = (None, -IDENTITY_REUSE_SECONDS)
        self._identity: Identity | None = None  # git's identity, read through on the first commit or ref move
        self._queue: AppendQueue | None = None  # the append queue, made on the first append
        self._walking = 0  # revision walks under way (libgit2 reads in them with the GIL let go)
        OPEN.add(self)

    def present(self, *, entirely: bool = False) -> bool:
        """Whether the repository opened is still there, not removed or moved away: its HEAD, one stat, or
        with `entirely` its objects and refs too, which a removal under way may have taken first. (Not
        whether it is the same directory: inode numbers, which would tell, change under overlay file systems.)"""
        return all(os.path.exists(path) for path in (self._essentials if entirely else self._essentials[:1]))

    # -- locking ---------------------------------------------------------------------------------------
    # lock.py's own context managers, handed out as they are: a generator wrapped around each was one more
    # enter and exit on every append.
    def locked(self) -> AbstractContextManager[None]:
        return lock.exclusive(self._lock_path)

    def locked_if_free(self) -> AbstractContextManager[bool]:
        """The writers' lock for the body if nobody holds it now (True); else nothing is held (False)."""
        return lock.exclusive_if_free(self._lock_path)

    def append_queue(self) -> AppendQueue:
        if self._queue is None:
            from git_lanes.store.append_queue import AppendQueue  # loaded by the first append, not by readers

            self._queue = AppendQueue(self.common_dir)
        return self._queue

    # -- config ----------------------------------------------------------------------------------------
    def config_get(self, key: str) -> str | None:
        try:
            return self.repo.config[key]
        except KeyError:
            return None

    def config_set(self, key: str, value: str) -> None:
        self.repo.config[key] = value
        self._logs_always = None  # libgit2 forgets its cached reading of core.* keys here too

    def config_add(self, key: str, value: str) -> bool:
        return setup.ensure_multivar(self.repo, key, value)

    def exclude(self, pattern: str) -> bool:
        return setup.ensure_excluded(self.common_dir, pattern)

    def head_branch(self) -> str | None:
        return setup.head_branch(self.repo)

    def point_head(self, branch: str) -> None:
        setup.point_head(self.repo, branch)

    def branch_from_remote(self, remote: str, branch: str) -> bool:
        return setup.branch_from_remote(self.root, self.repo, remote, branch)

    def remotes_with_branch(self, branch: str) -> list[str]:
        return setup.remotes_with_branch(self.repo, branch)

    def remote_branches(self, remote: str) -> list[str]:
        return setup.remote_branches(self.repo, remote)

    def signature(self, name: str | None = None, email: str | None = None) -> pygit2.Signature:
        default = self.configured_identity()
        try:
            base_name, base_email = (default.name, default.email) if default is not None \
                else (FALLBACK_NAME, FALLBACK_EMAIL)
        except UnicodeDecodeError:  # git writes such bytes as they are; our records are UTF-8 text
            raise UserError("user.name or user.email in git config is not UTF-8",
                            hint='set it again in UTF-8: git config user.name "Your Name"') from None
        when, offset = clock.now()
        return pygit2.Signature(name or base_name, email or base_email, when, offset)

    # -- refs: reading and moving them in store/ref_moves.py (RefMoves) -------------------------------
    def resolve(self, rev: str) -> str:
        """A commit id for any revision expression git understands."""
        try:
            obj = self.repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except pygit2.AmbiguousError:
            # Not "unknown": it names several objects, as git says ("short object ID … is ambiguous").
            raise Ambiguous(f"revision {quoted(rev)} is ambiguous: an id prefix of several objects",
                            hint="give more characters of the id (`git rev-parse --disambiguate=PREFIX` lists "
                                 "them)") from None
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise NotFound(f"unknown revision {quoted(rev)}") from None
        return str(commit.id)

    # -- objects ---------------------------------------------------------------------------------------
    def object_kind(self, oid: str) -> str | None:
        """"commit", "tree", "blob" or "tag" for object `oid`; None when it is not here. Reads only its
        header, so a huge blob costs nothing."""
        try:
            kind = self._header_kind(oid)
        except (KeyError, ValueError, pygit2.GitError):
            return None
        return _OBJECT_KINDS.get(kind)

    def object_present(self, oid: str) -> bool:
        """Whether object `oid`'s file is here, readable or not (a damaged one is, a lost one is not)."""
        try:
            return pygit2.Oid(hex=oid) in self.repo.odb
        except (ValueError, pygit2.GitError):
            return False

    @rereading
    def _header_kind(self, oid: str) -> int:
        kind, _ = self.repo.odb.read_header(pygit2.Oid(hex=oid))
        return int(kind)

    def write_blob(self, data: bytes) -> str:
        return self._write_object(pygit2.GIT_OBJECT_BLOB, b"blob", data)

    @rereading
    def read_blob(self, oid: str) -> bytes:
        return cast(pygit2.Blob, self.repo[oid]).data

    def write_commit(self, tree: str, parents: list[str], message: str, *, author_name: str | None = None,
                     author_email: str | None = None) -> str:
        committer = self.signature()
        author = committer if author_name is None and author_email is None else \
            pygit2.Signature(author_name or committer.name, author_email or committer.email, committer.time,
                             committer.offset)
        # Not `create_commit`: libgit2 1.9 answers it with an id even where writing the object failed (its
        # commit.c drops git_odb_write's error), and a ref moved to that id names nothing (`git fsck`: "invalid
        # sha1 pointer"). The text is made as `create_commit` makes it, checking the tree and parents exist.
        text = cast(str, self.repo.create_commit_string(  # a str: pygit2's stub says Oid
            author, committer, message, pygit2.Oid(hex=tree), [pygit2.Oid(hex=p) for p in parents]))
        return self._write_object(pygit2.GIT_OBJECT_COMMIT, b"commit", text.encode())

    def _write_object(self, kind: int, name: bytes, data: bytes) -> str:
        try:
            return str(self.repo.odb.write(kind, data))
        except (OSError, pygit2.GitError):
            # libgit2's error carries no errno, and for a full disk not even a reason ("no error"): our own
            # writer writes it, or says what the file system refused (errors.WriteFailed)
            return self._records.write_now(name, data)

    def _refused(self, exc: Exception) -> Exception:
        """What to raise for a write libgit2 failed that we cannot repeat with our own writer (a tree its
        TreeBuilder made): the file system's reason, learnt by writing the smallest object ourselves, where
        that fails too; else libgit2's error."""
        try:
            self._records.write_now(b"tree", b"")
        except WriteFailed as found:
            return found
        return exc

    def commit_info(self, oid: str) -> CommitInfo:
        try:
            commit = self.repo[oid].peel(pygit2.Commit)
        except (KeyError, OSError, pygit2.GitError) as exc:
            found = self._records.commit_anyway(oid)  # a pack libgit2's multi-pack-index named went away
            if found is None:
                if isinstance(exc, pygit2.GitError) and self.object_kind(oid) in (None, "commit") and \
                        self.object_present(oid):  # not another kind, nor lost: damaged
                    raise CorruptObject(f"object {oid} cannot be read: {exc}") from exc
                raise
            return found
        return CommitInfo(str(commit.id), str(commit.tree_id), tuple(str(p) for p in commit.parent_ids),
                          commit.message, f"{commit.author.name} <{commit.author.email}>", commit.commit_time)

    @rereading
    def tree_of(self, commit: str) -> str:
        return str(self.repo[commit].peel(pygit2.Commit).tree_id)

    def empty_tree(self) -> str:
        try:
            return str(self.repo.TreeBuilder().write())
        except (OSError, pygit2.GitError):
            return self._records.write_now(b"tree", b"")  # as `_write_object`

    def edit_tree(self, base: str | None, edits: dict[str, Entry | None]) -> str:
        try:
            return trees.edit_tree(self.repo, base, edits)
        except (OSError, pygit2.GitError) as exc:
            raise self._refused(exc) from exc

    @rereading
    def diff_trees(self, old: str | None, new: str | None) -> list[Change]:
        return trees.diff_trees(self.repo, old, new)

    @rereading
    def entry_at(self, tree: str, path: str) -> Entry | None:
        return trees.entry_at(self.repo, tree, path)

    @rereading
    def read_path(self, tree: str, path: str) -> bytes | None:
        entry = trees.entry_at(self.repo, tree, path)
        return None if entry is None else cast(pygit2.Blob, self.repo[entry.oid]).data

    def list_tree(self, tree: str, path: str = "") -> dict[str, Entry]:
        """The direct entries of the directory `path` in `tree` (empty when it is missing)."""
        try:
            node = self.repo[tree] if not path else cast(pygit2.Tree, self.repo[tree])[path]
        except KeyError:
            if not reloaded(self):  # `path` is not in `tree`, or `tree` is not here
                return {}
            return self.list_tree(tree, path)
        if node.type != pygit2.GIT_OBJECT_TREE:
            return {}
        folder = cast(pygit2.Tree, self.repo[node.id])
        return {cast(str, item.name): Entry(str(item.id), item.filemode) for item in folder}

    @rereading
    def patch(self, old_tree: str, new_tree: str, *, paths: list[str] | None = None) -> str:
        diff = cast(pygit2.Tree, self.repo[old_tree]).diff_to_tree(cast(pygit2.Tree, self.repo[new_tree]))
        return diff.patch or ""

    @rereading
    def diff_stat(self, old_tree: str, new_tree: str) -> tuple[str, int, int, int]:
        diff = cast(pygit2.Tree, self.repo[old_tree]).diff_to_tree(cast(pygit2.Tree, self.repo[new_tree]))
        stats = diff.stats
        text = _quoting_names(stats.format(pygit2.enums.DiffStatsFormat.FULL, 80), diff)
        return text, stats.files_changed, stats.insertions, stats.deletions

    # -- ancestry --------------------------------------------------------------------------------------
    @rereading
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        return self.repo.descendant_of(pygit2.Oid(hex=descendant), pygit2.Oid(hex=ancestor))

    @rereading
    def merge_base(self, a: str, b: str) -> str | None:
        base = self.repo.merge_base(pygit2.Oid(hex=a), pygit2.Oid(hex=b))
        return str(base) if base else None

    @rereading
    def ahead_behind(self, a: str, b: str) -> tuple[int, int]:
        """(commits reachable from `a` and not `b`, commits reachable from `b` and not `a`)."""
        ahead, behind = self.repo.ahead_behind(pygit2.Oid(hex=a), pygit2.Oid(hex=b))
        return ahead, behind

    @rereading
    def count_between(self, ancestor: str | None, head: str) -> int:
        """How many commits `head` has that `ancestor` (None: nothing) has not."""
        walker = self.repo.walk(pygit2.Oid(hex=head), pygit2.enums.SortMode.NONE)
        if ancestor is not None:
            walker.hide(pygit2.Oid(hex=ancestor))
        self._walking += 1
        try:
            return sum(1 for _ in walker)
        finally:
            self._walking -= 1

    def walk(self, head: str, limit: int | None = None) -> Iterator[CommitInfo]:
        walked = 0
        self._walking += 1
        try:
            while True:
                try:
                    walker = self.repo.walk(pygit2.Oid(hex=head), pygit2.enums.SortMode.TOPOLOGICAL)
                    for commit in itertools.islice(walker, walked, limit):  # read again: on from where it failed
                        info = self.commit_info(str(commit.id))
                        walked += 1
                        yield info
                    return
                except (KeyError, pygit2.GitError):  # as `rereading`
                    if not reloaded(self):
                        raise
        finally:
            self._walking -= 1


_OBJECT_KINDS = {pygit2.GIT_OBJECT_COMMIT: "commit", pygit2.GIT_OBJECT_TREE: "tree",
                 pygit2.GIT_OBJECT_BLOB: "blob", pygit2.GIT_OBJECT_TAG: "tag"}


def _quoting_names(text: str, diff: pygit2.Diff) -> str:
    """libgit2's diffstat with each file name quoted as git quotes it (`"a\\033[2Jb.txt" | 1 +`): libgit2 writes
    names raw, so a name holding an escape sequence was run by the terminal and a line break split its row.
    Its rows come in the diff's order, one a file, the name padded to the widest before ` | `; if the text is
    not laid out so, it is left as libgit2 wrote it."""
    raws = [delta.new_file.raw_path for delta in diff.deltas]
    if any(delta.old_file.raw_path != delta.new_file.raw_path for delta in diff.deltas):
        return text  # `old => new` rows: no rename is looked for between two trees, so none is expected
    if all(git_quoted(os.fsdecode(raw)) == raw.decode("utf-8", "replace") for raw in raws):
        return text
    rows, position = [], 0
    for raw in raws:
        written = " " + raw.decode("utf-8", "replace")  # as libgit2's text came through pygit2
        bar = text.find("|", position + len(written)) if text.startswith(written, position) else -1
        end = text.find("\n", bar) if bar >= 0 else -1
        if end < 0 or text[position + len(written):bar].strip(" "):
            return text
        rows.append((git_quoted(os.fsdecode(raw)), text[bar:end]))
        position = end + 1
    width = max(len(name) for name, _ in rows)
    return "".join(f" {name:<{width}} {rest}\n" for name, rest in rows) + text[position:]
