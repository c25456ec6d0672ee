"""Names users type: lane names (git ref-name rules), ids with unique-prefix lookup, repository paths."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from git_lanes.errors import Ambiguous, NotFound, UserError

_FORBIDDEN_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
RESERVED_LANE_NAMES = {"HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "@"}


def validate_lane_name(name: str) -> str:
    """Return `name` if git accepts it as the tail of a ref (git check-ref-format rules), else raise."""
    problem = _lane_name_problem(name)
    if problem:
        raise UserError(f"invalid lane name {name!r}: {problem}", code="invalid_lane_name",
                        hint="lane names follow git branch-name rules, e.g. feature/auth")
    return name


def _lane_name_problem(name: str) -> str | None:
    if not name:
        return "empty"
    if name in RESERVED_LANE_NAMES:
        return "reserved by git"
    if name.startswith("-"):
        return "starts with '-'"
    if _FORBIDDEN_CHARS.search(name):
        return "contains a space, control character or one of ~ ^ : ? * [ \\"
    if ".." in name or "@{" in name:
        return "contains '..' or '@{'"
    if name.endswith("/") or name.startswith("/") or "//" in name:
        return "has an empty path component"
    if name.endswith("."):
        return "ends with '.'"
    for component in name.split("/"):
        if component.startswith("."):
            return "a component starts with '.'"
        if component.endswith(".lock"):
            return "a component ends with '.lock'"
    return None


def resolve_prefix(prefix: str, candidates: Iterable[str], what: str,
                   hint: str = "list them with `git lanes history`", code: str | None = None) -> str:
    """Resolve a unique prefix among `candidates`, as git does for abbreviated ids; `hint` and `code` say
    where to find them when none matches."""
    prefix = prefix.strip()
    if not prefix:
        raise UserError(f"empty {what} id", code="invalid_id")
    matches = sorted({c for c in candidates if c.startswith(prefix)})
    if not matches:
        raise NotFound(f"no {what} matches {prefix!r}", hint=hint, code=code)
    if len(matches) > 1:
        shown = ", ".join(m[:12] for m in matches[:10])
        raise Ambiguous(f"{what} id {prefix!r} is ambiguous: {shown}",
                        details={"candidates": matches}, hint="give more characters of the id")
    return matches[0]


def normalize_repo_path(path: str) -> str:
    """A path relative to the repository root, '/'-separated, with no '..' escaping the root."""
    if not path or "\x00" in path:
        raise UserError(f"invalid path {path!r}", code="invalid_path")
    if path.startswith("/"):
        raise UserError(f"path {path!r} must be relative to the repository", code="invalid_path")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise UserError(f"path {path!r} is outside the repository", code="path_outside")
    return "" if normal == "." else normal


def short_id(full: str, length: int = 8) -> str:
    return full[:length]
