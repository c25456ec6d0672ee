"""Which paths two sides of a promotion both changed since they forked. Pure: it reads two change lists
(each a tree diff against the merge-base) and never the trees themselves, so its cost follows what changed.

A collision is a path changed on both sides (content, mode, type or deletion), or a file on one side where
the other side changed something beneath it as a directory. A path both sides changed to the very same entry
is no collision: taking either side gives the same result, so nothing is guessed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from git_lanes.model.entries import Change


@dataclass(frozen=True)
class Collision:
    """`path` changed as `lane_kind` by the lane and as `target_kind` by the target. For a file/directory
    collision one kind is "beneath" and `beneath` lists the deeper paths that side changed."""

    path: str
    lane_kind: str
    target_kind: str
    beneath: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict:
        record: dict = {"path": self.path, "lane": self.lane_kind, "target": self.target_kind}
        if self.beneath:
            record["beneath"] = [{"path": p, "kind": k} for p, k in self.beneath]
        return record


@dataclass(frozen=True)
class Comparison:
    collisions: tuple[Collision, ...]
    lane_only: tuple[Change, ...]
    target_only: tuple[Change, ...]
    same_on_both: tuple[str, ...] = field(default=())


def compare(lane_changes: list[Change], target_changes: list[Change]) -> Comparison:
    lane = {c.path: c for c in lane_changes}
    target = {c.path: c for c in target_changes}
    collisions: dict[str, Collision] = {}
    same = []
    for path in lane.keys() & target.keys():
        if lane[path].new == target[path].new:
            same.append(path)
        else:
            collisions[path] = Collision(path, lane[path].kind, target[path].kind)
    _file_over_directory(lane, target, collisions, lane_is_file=True)
    _file_over_directory(target, lane, collisions, lane_is_file=False)
    same = [p for p in same if p not in collisions]
    involved = collisions.keys() | {p for c in collisions.values() for p, _ in c.beneath} | set(same)
    return Comparison(
        collisions=tuple(collisions[p] for p in sorted(collisions)),
        lane_only=tuple(lane[p] for p in sorted(lane) if p not in involved),
        target_only=tuple(target[p] for p in sorted(target) if p not in involved),
        same_on_both=tuple(sorted(same)),
    )


def _file_over_directory(files: dict[str, Change], deeper: dict[str, Change], found: dict[str, Collision],
                         *, lane_is_file: bool) -> None:
    """Record each path in `files` beneath which `deeper` changed something: one side treats it as a
    file, the other as a directory, and applying both would silently drop one side's change."""
    parents: dict[str, list[str]] = {}
    for path in deeper:
        probe = path
        while "/" in probe:
            probe = probe.rpartition("/")[0]
            parents.setdefault(probe, []).append(path)
    for path, change in files.items():
        under = parents.get(path)
        if not under:
            continue
        beneath = tuple((p, deeper[p].kind) for p in sorted(under))
        prior = found.get(path)
        if prior is not None:
            beneath = prior.beneath + beneath
            found[path] = Collision(path, prior.lane_kind, prior.target_kind, beneath)
        elif lane_is_file:
            found[path] = Collision(path, change.kind, "beneath", beneath)
        else:
            found[path] = Collision(path, "beneath", change.kind, beneath)
