""".lanes.toml: the one reader every part of git-lanes shares. The file is read from the trunk's committed
head (never a workspace), parsed once here, and each part (`[[gate]]`, `[setup]`, the control plane's tables)
validates its own tables with `table` below, refusing unknown keys so a typo never silently loosens a rule.
Light: the standard library and tomli, so the agent-hook path can use it too."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from typing import Any

# tomli, not the standard library's tomllib: before Python 3.15 tomllib reads TOML 1.0, where an inline table
# must fit on one line, and policies are written as the documented one is, its table of tool weights over two
# lines (TOML 1.1); read as 1.0 it made every agent tool call a deny. tomli 2.4 reads 1.1 and 1.0 alike.
try:
    import tomli as tomllib
except ImportError:  # an editable install made before tomli was a dependency: TOML 1.0 until reinstalled
    if sys.version_info >= (3, 11):
        import tomllib  # type: ignore[no-redef]
    else:  # no tomllib to fall back on
        raise

from git_lanes.errors import LanesError

CONFIG = ".lanes.toml"

Invalid = Callable[[str], LanesError]


def parse(text: str | bytes, invalid: Invalid) -> dict[str, Any]:
    """The parsed document; `invalid(message)` is the error a part raises for a file it cannot read."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise invalid(f"{CONFIG} is not UTF-8: {exc}") from None
    try:
        document: dict[str, Any] = tomllib.loads(text)
        return document
    except tomllib.TOMLDecodeError as exc:
        raise invalid(f"{CONFIG} is not valid TOML: {exc}") from None


def table(data: dict[str, Any], name: str, keys: Collection[str], invalid: Invalid) -> dict[str, Any]:
    """Table `[name]` of the document (empty when absent), refusing a non-table or an unknown key."""
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise invalid(f"{CONFIG}: [{name}] must be a table")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise invalid(f"{CONFIG}: [{name}] has unknown key(s) {', '.join(unknown)}")
    return value


def string_list(value: Any, where: str, invalid: Invalid) -> tuple[str, ...]:
    """A list of non-empty strings (`where` names it in the error)."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise invalid(f"{CONFIG}: {where} must be a list of non-empty strings")
    return tuple(value)
