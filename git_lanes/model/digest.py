"""SHA-1 for object ids and derived ids, from the interpreter's builtin module when it has one: `hashlib`
loads OpenSSL first (a few milliseconds), a cost every agent-hook call would pay."""

from __future__ import annotations

try:
    from _sha1 import sha1
except ImportError:  # pragma: no cover - an interpreter built without its builtin hashes
    from hashlib import sha1

__all__ = ["sha1"]
