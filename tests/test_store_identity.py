"""git's identity as a held-open store reads it (store/identity.py): what libgit2's `default_signature` gives,
read without copying the whole configuration each time, and still current when another process changes the
configuration, an included file of it, or unsets it."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from conftest import git

from git_lanes.store import open_store
from git_lanes.store.identity import Identity
from git_lanes.store.repo import FALLBACK_NAME


@pytest.fixture
def snapshots(monkeypatch):
    """How many times libgit2's `default_signature` (a copy of the whole configuration) was read."""
    calls: list[int] = []
    original = pygit2.Repository.default_signature

    def spy(self):
        calls.append(1)
        return original.__get__(self)

    monkeypatch.setattr(pygit2.Repository, "default_signature", property(spy))
    return calls


def _both(repo: Path) -> tuple[object, object]:
    """(ours, libgit2's) for a repository opened afresh, as (name, email) or the exception's type."""
    handle = pygit2.Repository(str(repo))
    ours = Identity(handle).read()
    try:
        theirs = handle.default_signature
    except (KeyError, pygit2.GitError):
        theirs = None
    return [(s.raw_name, s.raw_email) if s is not None else None for s in (ours, theirs)]  # type: ignore[return-value]


def test_a_held_open_store_sees_another_process_change_the_identity_without_copying_the_config(repo, snapshots):
    store = open_store(repo)
    git("config", "user.name", "First", cwd=repo)
    git("config", "user.email", "first@example.com", cwd=repo)
    assert (store.signature().name, store.signature().email) == ("First", "first@example.com")
    git("config", "user.name", "Second Name", cwd=repo)  # another process, another length
    assert store.signature().name == "Second Name"
    git("config", "user.name", "Third", cwd=repo)
    git("config", "user.email", "third@example.com", cwd=repo)
    assert (store.signature().name, store.signature().email) == ("Third", "third@example.com")
    assert snapshots == []  # libgit2's live configuration answered every read


def test_a_change_in_an_included_file_is_seen(repo, tmp_path):
    store = open_store(repo)
    included = tmp_path / "identity.inc"
    included.write_text("[user]\n\tname = Included\n\temail = inc@example.com\n")
    git("config", "include.path", str(included), cwd=repo)
    assert store.signature().name == "Included"
    included.write_text("[user]\n\tname = Included Again\n\temail = inc@example.com\n")
    assert store.signature().name == "Included Again"


def test_an_identity_unset_by_another_process_falls_back(repo):
    git("config", "user.name", "Someone", cwd=repo)
    git("config", "user.email", "someone@example.com", cwd=repo)
    # the global config names one too: take it away from what libgit2 reads here
    levels = [pygit2.enums.ConfigLevel.GLOBAL, pygit2.enums.ConfigLevel.XDG, pygit2.enums.ConfigLevel.SYSTEM]
    saved = [pygit2.settings.search_path[level] for level in levels]
    empty = repo.parent / "empty-home"
    empty.mkdir()
    try:
        for level in levels:
            pygit2.settings.search_path[level] = str(empty)
        store = open_store(repo)
        assert store.signature().name == "Someone"
        git("config", "--unset", "user.name", cwd=repo)
        assert store.configured_identity() is None
        assert store.signature().name == FALLBACK_NAME
    finally:
        for level, path in zip(levels, saved):
            pygit2.settings.search_path[level] = path


@pytest.mark.parametrize("name, email", [
    ("Plain", "plain@example.com"),
    ("  Ann O'Nym. ", " ann@ex.com"),  # libgit2 trims
    ("", "empty@example.com"),  # refused: no identity
    ("A <b>", "angle@example.com"),  # refused: no identity
    ("Zoë", "zoe@example.com"),
])
def test_the_identity_is_the_one_libgit2_gives(repo, name, email):
    git("config", "user.name", name, cwd=repo)
    git("config", "user.email", email, cwd=repo)
    ours, theirs = _both(repo)
    assert ours == theirs


def test_a_name_that_is_not_utf8_or_has_no_value_is_libgit2s_to_read(repo):
    config = repo / ".git" / "config"
    original = config.read_bytes()
    config.write_bytes(original + b"[user]\n\tname = Caf\xe9\n\temail = cafe@example.com\n")
    ours, theirs = _both(repo)
    assert ours == theirs and ours is not None and ours[0] == b"Caf\xe9"  # type: ignore[index]
    config.write_bytes(original + b"[user]\n\tname\n\temail = novalue@example.com\n")
    ours, theirs = _both(repo)
    assert ours == theirs


def test_threads_sharing_one_store_read_the_identity_each_their_own(repo):
    """libgit2 looks the keys up with the GIL let go: threads sharing one store (a server's) each get the
    identity whole, never another thread's half of a look-up."""
    import threading

    git("config", "user.name", "Shared", cwd=repo)
    git("config", "user.email", "shared@example.com", cwd=repo)
    identity = Identity(pygit2.Repository(str(repo)))
    seen: list[tuple[str, str]] = []

    def read() -> None:
        for _ in range(300):
            who = identity.read()
            seen.append((who.name, who.email) if who is not None else ("", ""))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 1200 and set(seen) == {("Shared", "shared@example.com")}
