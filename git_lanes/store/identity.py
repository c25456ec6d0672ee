"""git's configured identity (user.name, user.email) as libgit2 reads it now, without the copy of the whole
configuration that `Repository.default_signature` makes for it.

`git_signature_default` snapshots the repository's configuration (every entry of every file duplicated) to
look two keys up: about 50,000 instructions, 4% of a held-open ledger append. libgit2's live configuration
answers the same two keys: each look-up refreshes every file of it first (a stat of the file and of each
file it includes, and a reparse of one whose stamp changed), as the snapshot does, so a change another
process makes to any of them is seen at the next look-up, as before. Anything out of the ordinary (a value
that is not UTF-8, a key without a value, an error other than "not set") goes to `default_signature`
itself, so what comes out is always what it gives."""

from __future__ import annotations

from typing import Any

import pygit2

try:  # libgit2's configuration look-up itself, without pygit2's wrapper objects around each value
    from pygit2.ffi import C, ffi
except ImportError:  # a pygit2 without its cffi module: default_signature every time
    C = ffi = None

_KEYS = (b"user.name", b"user.email")


class _Unusual(Exception):
    """What only `default_signature` can answer as it does."""


class Identity:
    """The configured identity of one repository, read afresh at each `read`."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._config: Any = None  # the repository's pygit2.Config, taken on first use

    def read(self) -> pygit2.Signature | None:
        """The name and email `repo.default_signature` gives now, None where it raises (unset, empty, with
        angle brackets: libgit2 refuses such a signature). Its time means nothing: a commit or reflog line takes
        its own from clock.py."""
        try:
            values = self._values()
        except _Unusual:
            return self._default()
        if values is None:
            return None
        name, email = values
        try:
            # git_signature_new checks name and email as git_signature_now (which default_signature calls)
            # does, without its clock: the callers take the time from clock.py, and libgit2's `mktime` stats
            # the zone file on every call.
            return pygit2.Signature(name.decode(), email.decode(), 0, 0)
        except UnicodeDecodeError:
            return self._default()
        except (KeyError, pygit2.GitError):  # what git_signature_now refuses, as default_signature does
            return None

    def _default(self) -> pygit2.Signature | None:
        try:
            who: pygit2.Signature = self.repo.default_signature
        except (KeyError, pygit2.GitError):
            return None
        return who

    def _values(self) -> tuple[bytes, bytes] | None:
        """(user.name, user.email) as bytes; None when either is not set."""
        if C is None:
            raise _Unusual
        if self._config is None:
            # The repository's own configuration, held: libgit2 keeps one per repository and refreshes it from
            # its files at each look-up, so it stays current even once the repository lets go of it (`free`).
            self._config = self.repo.config
        config = self._config
        entry = ffi.new("git_config_entry **")  # per call: libgit2 runs with the GIL let go, threads may share us
        found = []
        for key in _KEYS:
            error = C.git_config_get_entry(entry, config._c_config, key)
            if error == C.GIT_ENOTFOUND:
                return None
            if error < 0:
                raise _Unusual
            try:
                if entry[0].value == ffi.NULL:  # `[user] name` with no `=`: libgit2's to judge
                    raise _Unusual
                found.append(ffi.string(entry[0].value))
            finally:
                C.git_config_entry_free(entry[0])
        return found[0], found[1]
