"""Names users type: lane names (git ref-name rules), ids with unique-prefix lookup, repository paths."""

from __future__ import annotations

import posixpath

from git_lanes.errors import Ambiguous, NotFound, UserError
from git_lanes.model.ids import RESERVED_LANE_NAMES, LaneName, validate_lane_name
from git_lanes.model.text import is_text, quoted

TYPE_CHECKING = False  # collections.abc for annotations only: collections costs a light sync ~1 ms
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["RESERVED_LANE_NAMES", "LaneName", "id_text", "normalize_repo_path", "resolve_prefix", "shown_id",
           "validate_lane_name"]


def shown_id(given: str) -> str:
    """An id as an error message repeats it: quoted, and bounded (an agent may send a megabyte of one)."""
    return quoted(given)


def id_text(given: object, what: str) -> str:
    """An id as a caller gave it, refused unless it is a string: a Python caller (the SDK, `Lanes`) may hand
    in None, a number or bytes, which would otherwise fail deep inside as an AttributeError."""
    if not isinstance(given, str):
        raise UserError(f"invalid {what} id {quoted(given)}: is not text but {type(given).__name__}",
                        code="invalid_id")
    return given


def resolve_prefix(prefix: str, candidates: Iterable[str], what: str,
                   hint: str | None = None, code: str | None = None) -> str:
    """Resolve a unique prefix among `candidates`, as git does for abbreviated ids; `hint` and `code` say
    where to find them when none matches."""
    prefix = id_text(prefix, what).strip()
    if not prefix:
        raise UserError(f"empty {what} id", code="invalid_id")
    matches = sorted({c for c in candidates if c.startswith(prefix)})
    if not matches:
        raise NotFound(f"no {what} matches {shown_id(prefix)}", hint=hint, code=code)
    if len(matches) > 1:
        shown = ", ".join(m[:12] for m in matches[:10])
        raise Ambiguous(f"{what} id {shown_id(prefix)} is ambiguous: {shown}",
                        details={"candidates": matches}, hint="give more characters of the id")
    return matches[0]


def normalize_repo_path(path: str) -> str:
    """A path relative to the repository root, '/'-separated, with no '..' escaping the root."""
    if not path or not is_text(path):
        raise UserError(f"invalid path {quoted(path)}", code="invalid_path",
                        hint="a path is valid UTF-8 without NUL" if path else None)
    if path.startswith("/"):
        raise UserError(f"path {path!r} must be relative to the repository", code="invalid_path")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise UserError(f"path {path!r} is outside the repository", code="path_outside")
    return "" if normal == "." else normal
