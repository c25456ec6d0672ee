"""A dispatch plan (`git lanes dispatch PLAN.toml`): flow's foundation-first decomposition with the ownership
made real. One ticket; a foundation task that owns the shared paths and runs first; feature tasks that each
own their paths, depend on the foundation (and on other features they name) and start, each in its own lane,
from the foundation's accepted head once it is done. The shapes are checked here; ownership (globs, overlaps)
is the domain's (git_lanes/domain/plans.py)."""

from __future__ import annotations

import re
from typing import Any

from git_lanes.errors import MalformedRecord, UserError, command
from git_lanes.model import config
from git_lanes.model.frozen import Frozen
from git_lanes.model.names import validate_lane_name

FOUNDATION = "foundation"
_KEY = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")
TOP = ("name", "ticket", "lane_prefix", "from", "foundation", "feature")
TASK = ("title", "owns", "lane", "agent", "description", "depends", "name")
MAX_FEATURES = 50

EXAMPLE = '''# A dispatch plan: `git lanes dispatch login.toml` (`--dry-run` first to check it).
# One ticket; a foundation task that owns the shared paths and goes first; feature tasks that each own
# their paths and start from the foundation's accepted head once its task is done. No two tasks may own
# the same path (globs are compared: "src/**" and "src/api/*.py" overlap), and a commit, propose or promote
# that changes a path another task owns is refused while the plan runs.

name = "login"                      # how `git lanes dispatch status login` finds it (default: the ticket)
ticket = "Login flow"               # the ticket every task is linked to
lane_prefix = "login"               # each task works in lane <lane_prefix>/<task name> (default: name)
# from = "main"                     # where the foundation's lane starts (default: the trunk)

[foundation]
title = "Session store and shared types"
owns = ["src/session/**", "src/types.py"]
description = "The types and the store every feature builds on."
# agent = "coder-1"                 # claim the task for this agent at once (it is woken as usual)

[[feature]]
name = "api"                        # lane login/api
title = "Login endpoint"
owns = ["src/api/login.py", "tests/test_login.py"]
agent = "coder-2"

[[feature]]
name = "ui"
title = "Login form"
owns = ["web/login/**"]
depends = ["api"]                   # besides the foundation, which every feature depends on
'''


class DispatchedPlan(Frozen):
    """A dispatched plan as the ledger holds it (`plans/<id>.json`, domain/plans.py): its id, name, ticket and
    foundation task, and each task's entry (the plan's task and the ledger task made for it)."""

    record: dict[str, Any]

    @classmethod
    def decode(cls, data: Any, what: str, hint: str | None = None) -> DispatchedPlan:
        """The record, or a MalformedRecord naming it (`what`): every reader of a plan looks up its foundation
        among its tasks and each task's ledger id, lane and globs."""
        try:
            if not isinstance(data, dict):
                raise TypeError(f"not a JSON object but {type(data).__name__}")
            for name in ("id", "name", "ticket", "foundation"):
                if not isinstance(data.get(name), str):
                    raise TypeError(f"its {name} is {data.get(name)!r}, not text")
            tasks = data.get("tasks")
            if not isinstance(tasks, list) or not all(isinstance(entry, dict) for entry in tasks):
                raise TypeError("its tasks are not a list of JSON objects")
            for entry in tasks:
                if not isinstance(entry.get("owns"), list):
                    raise TypeError(f"task {entry.get('key')!r} owns no list of globs")
                PlanTask.from_dict(entry)
                if not isinstance(entry.get("task"), str) or not all(
                        isinstance(value, str) for value in (entry["key"], entry["title"], entry["lane"],
                                                             *entry["owns"], *(entry.get("depends") or ()))):
                    raise TypeError(f"task {entry.get('key')!r} holds a value that is not text")
            if not any(entry["task"] == data["foundation"] for entry in tasks):
                raise ValueError("its foundation is none of its tasks")
        except (TypeError, ValueError, KeyError) as exc:
            reason = f"it lacks {exc}" if isinstance(exc, KeyError) else str(exc)
            raise MalformedRecord(f"{what} is malformed: {reason}", hint=hint) from None
        return cls(data)


def invalid(message: str) -> UserError:
    return UserError(message, code="invalid_plan", hint=f"{command('dispatch', example=True)} prints a commented plan")


def _in_plan(message: str) -> UserError:
    """`invalid` for a message from the shared .lanes.toml reader, which names that file: the plan is another."""
    return invalid(message.replace(config.CONFIG, "the plan"))


class PlanTask(Frozen):
    key: str
    title: str
    owns: tuple[str, ...]
    lane: str
    depends: tuple[str, ...] = ()
    agent: str | None = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "owns": list(self.owns), "lane": self.lane,
                "depends": list(self.depends), "agent": self.agent, "description": self.description}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanTask:
        return cls(data["key"], data["title"], tuple(data["owns"]), data["lane"], tuple(data.get("depends") or ()),
                   data.get("agent"), data.get("description") or "")


class DispatchPlan(Frozen):
    name: str
    ticket: str
    tasks: tuple[PlanTask, ...]  # the foundation first, then the features in an order their dependencies allow
    start: str | None = None

    @property
    def foundation(self) -> PlanTask:
        return self.tasks[0]

    @property
    def features(self) -> tuple[PlanTask, ...]:
        return self.tasks[1:]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ticket": self.ticket, "from": self.start,
                "tasks": [t.to_dict() for t in self.tasks]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DispatchPlan:
        return cls(data["name"], data["ticket"], tuple(PlanTask.from_dict(t) for t in data["tasks"]), data.get("from"))

    @classmethod
    def parse(cls, text: str | bytes) -> DispatchPlan:
        return cls.from_toml(config.parse(text, _in_plan))

    @classmethod
    def from_toml(cls, data: dict[str, Any]) -> DispatchPlan:
        unknown = sorted(set(data) - set(TOP))
        if unknown:
            raise invalid(f"the plan has unknown key(s) {', '.join(unknown)}")
        ticket = _line(data.get("ticket"), "ticket")
        name = _line(data.get("name", ticket), "name")
        prefix = data.get("lane_prefix", _slug(name))
        start = data.get("from")
        if start is not None and not (isinstance(start, str) and start.strip()):
            raise invalid("the plan's `from` must name a lane or revision")
        if not isinstance(data.get("foundation"), dict):
            raise invalid("the plan needs a [foundation] table: the task that owns the shared paths and goes first")
        features = data.get("feature", [])
        if not isinstance(features, list) or not all(isinstance(f, dict) for f in features):
            raise invalid("features are [[feature]] tables")
        if len(features) > MAX_FEATURES:
            raise invalid(f"a plan has at most {MAX_FEATURES} features")
        foundation = _task(data["foundation"], FOUNDATION, prefix, foundation=True)
        tasks = [_task(f, f.get("name"), prefix, foundation=False) for f in features]
        keys = [t.key for t in tasks]
        duplicate = next((k for k in keys if keys.count(k) > 1), None)
        if duplicate:
            raise invalid(f"two features are named {duplicate!r}")
        lanes = [foundation.lane, *(t.lane for t in tasks)]
        clash = next((a for a in lanes for b in lanes if a != b and b.startswith(a + "/")), None)
        if len(set(lanes)) != len(lanes) or clash:
            raise invalid("two tasks of the plan would share a lane, or one lane would be a folder of another")
        return cls(name, ticket, (foundation, *_ordered(tasks)), start.strip() if start else None)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "plan"


def _line(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\n" in value.strip() or len(value) > 200:
        raise invalid(f"the plan's {what} must be one line of text (at most 200 characters)")
    return value.strip()


def _task(data: dict[str, Any], key: Any, prefix: Any, *, foundation: bool) -> PlanTask:
    where = "[foundation]" if foundation else f"feature {key!r}"
    unknown = sorted(set(data) - set(TASK) - ({"name"} if not foundation else set()))
    if unknown or (foundation and "depends" in data):
        raise invalid(f"{where} has unknown key(s) {', '.join(unknown or ['depends'])}")
    if not foundation and (not isinstance(key, str) or not _KEY.fullmatch(key) or key == FOUNDATION):
        raise invalid(f"each [[feature]] needs a name of lowercase letters, digits, . _ - (not {key!r})")
    title = _line(data.get("title"), f"{where} title")
    owns = config.string_list(data.get("owns", []), f"{where} owns", _in_plan)
    if not owns:
        raise invalid(f"{where} must own at least one path (owns = [\"src/x/**\"])")
    lane = data.get("lane", f"{prefix}/{key}")
    try:
        validate_lane_name(lane)
    except UserError as exc:
        raise invalid(f"{where}: {exc.message}") from None
    depends = config.string_list(data.get("depends", []), f"{where} depends", _in_plan)
    agent = data.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise invalid(f"{where}: agent must be an agent id")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise invalid(f"{where}: description must be text")
    return PlanTask(key, title, owns, lane, tuple(d for d in depends if d != FOUNDATION), agent, description)


def _ordered(tasks: list[PlanTask]) -> list[PlanTask]:
    """Features ordered so each comes after those it depends on; an unknown name or a cycle is refused."""
    by_key = {t.key: t for t in tasks}
    for task in tasks:
        missing = [d for d in task.depends if d not in by_key]
        if missing:
            raise invalid(f"feature {task.key!r} depends on {', '.join(map(repr, missing))}, which the plan lacks")
    ordered: list[PlanTask] = []
    placed: set[str] = set()
    while len(ordered) < len(tasks):
        ready = [t for t in tasks if t.key not in placed and set(t.depends) <= placed]
        if not ready:
            stuck = sorted(t.key for t in tasks if t.key not in placed)
            raise invalid(f"features {', '.join(map(repr, stuck))} depend on each other in a cycle")
        ordered += ready
        placed |= {t.key for t in ready}
    return ordered
