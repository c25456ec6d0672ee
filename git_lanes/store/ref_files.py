"""Refs (loose and packed) read and moved with the standard library, as git's own files: a move is a
compare-and-swap under git's `.lock` + rename protocol. The agent hooks' run logs and the light store move
refs so (DESIGN.md §6); the pygit2 store honours the same protocol (`loose_ref.py`), so they exclude each other
on a ref: whoever creates `<ref>.lock` first writes, the other waits or fails."""

from __future__ import annotations

import os

from git_lanes.errors import Conflict, UnsupportedFormat
from git_lanes.store.gitfiles import config_int, read_config, read_config_levels, read_text

TYPE_CHECKING = False  # not `from typing import …`: neither the hook path nor the light sync loads typing
if TYPE_CHECKING:
    from git_lanes.store.gitfiles import StrPath

ZERO = "0" * 40


def read_ref(common_dir: StrPath, name: str) -> str | None:
    """The object id `name` points to (following symbolic refs), or None."""
    for _ in range(5):
        try:
            text = read_text(os.path.join(common_dir, name)).strip()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return packed_refs(common_dir).get(name)
        if text.startswith("ref:"):
            name = text[4:].strip()
            continue
        if len(text) != 40:
            raise UnsupportedFormat(f"ref {name} holds {text[:60]!r}, not an object id",
                                    hint="see `git for-each-ref`; the ref file may be damaged")
        return text
    return None


def packed_refs(common_dir: StrPath) -> dict[str, str]:
    try:
        text = read_text(os.path.join(common_dir, "packed-refs"))
    except FileNotFoundError:
        return {}
    found = {}
    for line in text.splitlines():
        if line and line[0] not in "#^":
            oid, _, name = line.partition(" ")
            found[name.strip()] = oid
    return found


def list_refs(common_dir: StrPath, prefix: str) -> dict[str, str]:
    """Every ref under `prefix` (ending in '/'), loose ones winning over packed ones."""
    found = {name: oid for name, oid in packed_refs(common_dir).items() if name.startswith(prefix)}
    for directory, _, files in os.walk(os.path.join(common_dir, prefix)):
        for file in files:
            if file.endswith(".lock"):
                continue
            name = _ref_name(common_dir, directory, file)
            try:
                oid = read_text(os.path.join(common_dir, name)).strip()
            except OSError:
                continue
            found[name] = oid  # a damaged ref is listed too: reading it then says what is wrong
    return found


def _ref_name(common_dir: StrPath, directory: str, file: str) -> str:
    """The ref name of `file` in `directory`, a folder os.walk found beneath `common_dir`."""
    return os.path.relpath(os.path.join(directory, file), common_dir)


def refs_touched_since(common_dir: StrPath, prefix: str, since: float) -> dict[str, str]:
    """The refs under `prefix` that may have moved at or after `since` (a Unix time): loose refs whose file
    changed since, and all packed ones if packed-refs did. A cheap filter before reading many refs."""
    found = {}
    try:
        packed_recently = os.stat(os.path.join(common_dir, "packed-refs")).st_mtime >= since
    except FileNotFoundError:
        packed_recently = False
    if packed_recently:
        found = {name: oid for name, oid in packed_refs(common_dir).items() if name.startswith(prefix)}
    for directory, _, files in os.walk(os.path.join(common_dir, prefix)):
        for file in files:
            path = os.path.join(directory, file)
            try:
                if file.endswith(".lock") or os.stat(path).st_mtime < since:
                    continue
                found[_ref_name(common_dir, directory, file)] = read_text(path).strip()
            except OSError:
                continue
    return found


def update_ref(common_dir: StrPath, name: str, new: str, old: str | None, message: str, identity: str,
               when: float) -> None:
    """Move `name` from `old` (None: must not exist) to `new`, as git does: take `<ref>.lock` (waiting a
    moment for a live holder), check the current value under it, log, rename into place. Conflict when the
    ref is not at `old` or the lock stays taken."""
    path = os.path.join(common_dir, name)
    lock = path + ".lock"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle = take_lock(lock, common_dir)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(new + "\n")
        current = read_ref(common_dir, name)
        if current != old:
            raise Conflict(f"{name} moved: expected {(old or 'nothing')[:8]}, found {(current or 'nothing')[:8]}",
                           code="stale_ref", hint="another writer got there first; re-read and retry")
        if _logs_all(common_dir) or os.path.exists(os.path.join(common_dir, "logs", name)):
            _append_reflog(common_dir, name, old or ZERO, new, identity, when, message)
        os.replace(lock, path)
    except BaseException:
        try:
            os.unlink(lock)
        except FileNotFoundError:
            pass
        raise


def take_lock(lock: StrPath, common_dir: StrPath) -> int:
    """Create `lock` exclusively (git's `.lock` protocol), waiting for a live holder as git and the ledger's
    ref moves wait for a ref's lock (core.filesRefLockTimeout, 100 ms unless set, 0 no wait, -1 for ever, with
    git's backoff: store/loose_ref.py), then clearing one a killed process left; Conflict when it stays taken.
    The setting is read only once the lock is found taken: an uncontended call reads no config."""
    try:
        return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        pass
    from git_lanes.store.loose_ref import REF_LOCK_TIMEOUT_MS, Backoff

    timeout = config_int(read_config_levels(common_dir).get("core.filesreflocktimeout"))
    backoff = Backoff(REF_LOCK_TIMEOUT_MS if timeout is None else timeout)
    cleared = False
    while True:
        if backoff.again():
            pass
        elif not cleared:
            # Our refs are written only by git-lanes under its locks: a lock nobody holds open was left by a
            # killed process (store/stale.py decides, as for every other lanes-owned ref).
            from git_lanes.store.stale import clear_if_stale

            cleared = True
            if not clear_if_stale(lock):
                raise Conflict(f"{lock} is held by another process", code="locked",
                               hint=f"retry; if no git process is running, delete {lock}")
        else:
            raise Conflict(f"{lock} is held by another process", code="locked",
                           hint=f"retry; if no git process is running, delete {lock}")
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue


def _logs_all(common_dir: StrPath) -> bool:
    return read_config(common_dir).get("core.logallrefupdates", "").lower() == "always"


def _append_reflog(common_dir: StrPath, name: str, old: str, new: str, identity: str, when: float,
                   message: str) -> None:
    log = os.path.join(common_dir, "logs", name)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    line = f"{old} {new} {identity} {int(when)} +0000\t{' '.join(message.split())}\n"
    with open(log, "a") as out:
        out.write(line)
