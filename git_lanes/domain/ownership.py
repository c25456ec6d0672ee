"""Exclusive file claims: the one decision every face shares (commit, propose and promote through the API,
the agent hooks on their light path, MCP and the SDK through the API). A path an exclusive claim covers may be
changed only from the lane of the task holding the claim; anyone else is refused (a plain claim only warns).
Pure and light: it imports nothing but glob matching, so the hook path can call it before a write happens."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from git_lanes.model.frozen import Frozen
from git_lanes.model.globs import glob_matches


class Exclusive(Frozen):
    """Task `task` ("title") owns `globs`, to be changed only from lane `lane`."""

    task: str
    title: str
    lane: str
    globs: tuple[str, ...]
    plan: str | None = None
    owner: str | None = None  # the agent holding the task now, if any

    def covering(self, path: str) -> str | None:
        return next((glob for glob in self.globs if glob_matches(glob, path)), None)

    def describe(self) -> str:
        who = f", agent {self.owner}" if self.owner else ""
        return f"task {self.task[:8]} \"{self.title}\" (lane {self.lane}{who})"


class Violation(Frozen):
    path: str
    claim: Exclusive
    glob: str

    def to_dict(self) -> dict:
        return {"path": self.path, "task": self.claim.task, "title": self.claim.title, "lane": self.claim.lane,
                "owner": self.claim.owner, "glob": self.glob}


def foreign(claims: Iterable[Exclusive], lane: str | None, paths: Iterable[str],
            exempt: Callable[[str, Exclusive], bool] | None = None) -> list[Violation]:
    """The paths a change from `lane` may not touch: covered by an exclusive claim of a task in another lane
    (and not `exempt`, e.g. a promotion carrying the owner's own version)."""
    claims = [c for c in claims if c.lane != lane]
    found = []
    for path in paths:
        for claim in claims:
            glob = claim.covering(path)
            if glob is not None and not (exempt and exempt(path, claim)):
                found.append(Violation(path, claim, glob))
                break
    return found


def message(violations: list[Violation], doing: str) -> str:
    first = violations[0]
    more = f" (and {len(violations) - 1} more path{'s' if len(violations) > 2 else ''})" if len(violations) > 1 else ""
    return f"{doing} changes {first.path}, which {first.claim.describe()} owns exclusively ({first.glob}){more}"
