"""The one surface every face calls. Methods take plain values and return plain records (dicts).

Each capability contributes a mixin in its own module; `Lanes` unites them."""

from __future__ import annotations

from git_lanes.api.core import CoreApi


class Lanes(CoreApi):
    """A repository opened for lanes: the CLI, MCP server, SDK, hooks and HTTP faces all call this."""


__all__ = ["Lanes"]
