"""A failed `git fetch` read for a cause of this repository's own: the user may not write here, or the disk is
full (lock.UNWRITABLE). Such a failure is raised as one (lock.unwritable), not taken for refs the remote holds
that this machine cannot store, which a sync reports and leaves out. Loaded only when a fetch fails."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_lanes.store.light import LightStore
    from git_lanes.store.repo import Store


def check_writable(store: Store | LightStore, stderr: str, refused: dict[str, str]) -> None:
    """Raise when git could not write into this repository at all: a ref it cannot store for the user's own
    lack of rights (or room) here is not a remote ref to report and remove from the remote."""
    from git_lanes.store import lock

    local = next((why for why in refused.values() if why.startswith(lock.UNWRITABLE)), None)
    if local is None and "couldn't write '" in stderr:  # a full disk: git names the file, not why
        import re

        written = re.findall(r"couldn't write '([^']+)'", stderr)
        local = next((why for why in map(_cannot_write_beside, written) if why is not None), None)
    if local is None and "insufficient permission for adding an object" in stderr:
        local = "insufficient permission for adding an object"
    if local is None:  # "fatal: unable to write loose object file: No space left on device", say
        from git_lanes.errors import write_cause

        local = next((text for text in (line.partition(":")[2].strip() for line in stderr.splitlines()
                                        if line.startswith(("error:", "fatal:")))
                      if ("write" in text or "create" in text) and write_cause(text)), None)
    if local is None:
        import re

        # A ref in a folder not yet made here: git names neither the folder nor why it could not make it.
        folders = re.findall(r"unable to create directory for (.+)", stderr)
        if any(not _can_make(os.path.join(store.root, folder.strip())) for folder in folders):
            local = "Permission denied"
    if local is not None:
        raise lock.unwritable(local, store.common_dir)


def _cannot_write_beside(path: str) -> str | None:
    """The file system's reason a byte cannot be written in a new file beside `path` (git's "couldn't write"
    names the file, not why), when it is one of lock.UNWRITABLE; else None."""
    from git_lanes.store import lock

    probe = f"{path}.{os.getpid()}.probe"
    try:
        handle = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(handle, b"\0")
        finally:
            os.close(handle)
            os.unlink(probe)
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno is not None else ""
        return why if why.startswith(lock.UNWRITABLE) else None
    return None


def _can_make(path: str) -> bool:
    """Whether this process may create `path`'s missing folders: the nearest one that exists is writable."""
    folder = os.path.dirname(path)
    while folder and not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return os.access(folder, os.W_OK | os.X_OK)
