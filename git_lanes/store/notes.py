"""Notes trees, walked in one place: where the note for an object sits whatever fanout git wrote (`ab/cdef…`
or flat), every note of a tree, and a tree with some notes set; and Store's notes methods (NoteOps), which
read a notes ref's head and write its next commit. The notes refs are pushed and pulled as they are, so a
note may hold any bytes: text that is not UTF-8 reads with replacement characters (and so as no record),
never as a crash."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import cast

import pygit2

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.entries import Entry
from git_lanes.store.rereading import rereading
from git_lanes.store.trees import edit_tree
from git_lanes.store.values import RefUpdate

OID_LENGTH = 40


def note_path(repo: pygit2.Repository, tree: str | None, target: str) -> str | None:
    """Where the note for `target` sits in notes tree `tree` (None when it has none)."""
    if tree is None:
        return None
    node = repo[tree].peel(pygit2.Tree)
    prefix, rest = "", target
    while rest:
        if rest in node:
            return prefix + rest
        head = rest[:2]
        if head not in node or node[head].filemode != pygit2.GIT_FILEMODE_TREE:
            return None
        node = repo[node[head].id].peel(pygit2.Tree)
        prefix, rest = prefix + head + "/", rest[2:]
    return None


def read_note(repo: pygit2.Repository, tree: str | None, target: str) -> str | None:
    """The text of the note for `target` in notes tree `tree`, if it has one."""
    path = note_path(repo, tree, target)
    if path is None or tree is None:
        return None
    return _text(repo, repo[tree].peel(pygit2.Tree)[path])


def walk(repo: pygit2.Repository, tree: str) -> Iterator[tuple[str, str]]:
    """(annotated object id, note text) for every note in notes tree `tree`."""
    yield from _walk(repo, repo[tree].peel(pygit2.Tree), "")


def _walk(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, str]]:
    for item in tree:
        name = prefix + (item.name or "")
        if item.filemode == pygit2.GIT_FILEMODE_TREE:
            yield from _walk(repo, repo[item.id].peel(pygit2.Tree), name)
        elif len(name) == OID_LENGTH:
            yield name, _text(repo, item)


def with_notes(repo: pygit2.Repository, base: str | None, notes: Mapping[str, str | None]) -> str:
    """Notes tree `base` (None: empty) with the note of each target in `notes` set (None removes it), each
    where it already sits or, for a new one, under git's two-character fanout."""
    edits: dict[str, Entry | None] = {}
    for target, text in notes.items():
        existing = note_path(repo, base, target)
        if text is None:
            if existing:
                edits[existing] = None
            continue
        path = existing or f"{target[:2]}/{target[2:]}"
        edits[path] = Entry(str(repo.create_blob(text.encode())), pygit2.GIT_FILEMODE_BLOB)
    return edit_tree(repo, base, edits)


def _text(repo: pygit2.Repository, entry: pygit2.Object) -> str:
    """A note's text; an entry that is no file (a gitlink a remote pushed, say) reads as no record."""
    if entry.filemode not in (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE):
        return ""
    return repo[entry.id].peel(pygit2.Blob).data.decode(errors="replace")


class NoteOps:
    """Mixed into Store: the notes under a notes ref, read and written."""

    repo: pygit2.Repository
    read_ref: Callable[[str], str | None]  # RefMoves'
    tree_of: Callable[[str], str]  # Store's
    write_commit: Callable[..., str]
    _refused: Callable[[Exception], Exception]

    @rereading
    def read_note_at(self, tree: str | None, target: str) -> str | None:
        """The note for `target` in notes tree `tree`, whatever its fanout."""
        return read_note(self.repo, tree, target)

    def _head_tree(self, notes_ref: str) -> str | None:
        return self._head(notes_ref)[1]

    def _head(self, notes_ref: str) -> tuple[str | None, str | None]:
        """`notes_ref`'s head and its notes tree (None, None without one); refused clearly when the ref was
        set by hand to an object that is no commit, where libgit2 raises InvalidSpecError, or names one the
        repository lost, where it raises a bare KeyError."""
        head = self.read_ref(notes_ref)
        if head is None:
            return None, None
        try:
            return head, self.tree_of(head)
        except ValueError:
            raise UnsupportedFormat(f"{notes_ref} points at {head[:12]}, which is not a commit", code="not_a_commit",
                                    hint=f"it was set by hand; `git reflog {notes_ref}` lists its earlier "
                                         "values") from None
        except KeyError:  # tree_of read it again already, should a repack have moved it
            raise UnsupportedFormat(f"{notes_ref} points at {head[:12]}, which is not in the repository",
                                    code="missing_object",
                                    hint=f"run `git fsck`; `git reflog {notes_ref}` lists its earlier values, "
                                         "one of which may still be here") from None

    @rereading
    def read_note(self, notes_ref: str, target: str) -> str | None:
        tree = self._head_tree(notes_ref)
        return read_note(self.repo, tree, target) if tree else None

    def iter_notes(self, notes_ref: str) -> Iterator[tuple[str, str]]:
        """(annotated object id, note text) for every note, in any fanout git may have written."""
        tree = self._head_tree(notes_ref)
        if tree is not None:
            yield from self._notes_in(tree)

    @rereading
    def _notes_in(self, tree: str) -> list[tuple[str, str]]:
        return list(walk(self.repo, tree))  # whole, so that a read again starts from the first

    @rereading
    def note_blob(self, notes_ref: str, target: str) -> str | None:
        """The blob holding `target`'s note (None when it has none): what the operation log keeps."""
        tree = self._head_tree(notes_ref)
        path = note_path(self.repo, tree, target)
        return str(cast(pygit2.Tree, self.repo[tree])[path].id) if path and tree else None

    def write_notes(self, notes_ref: str, texts: dict[str, str | None], message: str) -> RefUpdate:
        """Write a notes commit with `texts` (target -> note; None removes a note) set, returning the ref move
        for the caller to apply."""
        head, base = self._head(notes_ref)
        try:
            tree = with_notes(self.repo, base, texts)
        except (OSError, pygit2.GitError) as exc:
            raise self._refused(exc) from exc
        commit = self.write_commit(tree, [head] if head else [], message + "\n")
        return RefUpdate(notes_ref, commit, head, message)
