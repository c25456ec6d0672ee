"""Protected paths: what the gates' own judgement rests on, which no transition may change unseen.

A gate reads its rules (`.lanes.toml`) from the trunk, but runs the scripts and tests of the candidate tree:
a lane that replaces `ci/check.sh` by `exit 0` would pass that gate from then on. So the trunk names those
paths, and a transition that changes one is never accepted automatically (`commit --auto-accept`,
`promote --auto-accept`): it stays proposed, saying why, until a person accepts it with `git lanes accept`.

    [policy]
    protected = ["ci/**", "tests/**", "conftest.py"]   # globs as for file claims; .lanes.toml always

A glob without wildcards protects that path and everything beneath it."""

from __future__ import annotations

from git_lanes.domain import lanes
from git_lanes.domain.claims import glob_matches, validate_glob
from git_lanes.domain.context import Context
from git_lanes.domain.wording import some
from git_lanes.errors import LanesError, UserError, command
from git_lanes.model import config
from git_lanes.model.config import CONFIG
from git_lanes.model.records import Transition

ALWAYS = (CONFIG,)


def _invalid(message: str) -> UserError:
    return UserError(message, code="invalid_policy",
                     hint=f"fix [policy] in {CONFIG} on the trunk; until then nothing is accepted automatically")


def parse(data: dict) -> tuple[str, ...]:
    """The protected globs of a parsed `.lanes.toml` (`.lanes.toml` itself first, always)."""
    policy = config.table(data, "policy", {"protected"}, _invalid)
    globs = config.string_list(policy.get("protected", []), "[policy] protected", _invalid)
    try:
        return tuple(dict.fromkeys([*ALWAYS, *(validate_glob(glob) for glob in globs)]))
    except LanesError as exc:
        raise _invalid(f"{CONFIG}: [policy] protected: {exc.message}") from None


def load(ctx: Context) -> tuple[str, ...]:
    """The globs the trunk's committed `.lanes.toml` protects."""
    text = ctx.store.read_path(ctx.store.tree_of(lanes.lane_head(ctx, ctx.trunk)), CONFIG)
    return parse(config.parse(text, _invalid)) if text is not None else ALWAYS


def touched(ctx: Context, record: Transition) -> list[str]:
    """The protected paths `record` changes on its lane (against the state it was proposed on)."""
    globs = load(ctx)
    base = ctx.store.tree_of(record.base) if record.base else None
    return [change.path for change in ctx.store.diff_trees(base, record.tree)
            if any(glob_matches(glob, change.path) for glob in globs)]


def hold(paths: list[str]) -> dict:
    """What a held transition records (in its note's `extra`) and says."""
    return {"reason": f"it changes protected paths ({some(paths)}), which a person accepts with "
                      f"{command('accept')}; the trunk's {CONFIG} protects itself and what its [policy] protected "
                      "names",
            "paths": paths}
