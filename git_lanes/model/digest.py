"""SHA-1 for object ids and derived ids, from the interpreter's builtin module when it has one: `hashlib`
loads OpenSSL first (a few milliseconds), a cost every agent-hook call would pay."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import …`: the agent-hook path never loads typing
if TYPE_CHECKING:
    from hashlib import sha1
else:
    try:
        from _sha1 import sha1
    except ImportError:  # pragma: no cover - an interpreter built without its builtin hashes
        from hashlib import sha1

__all__ = ["sha1"]
