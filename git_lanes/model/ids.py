"""The names and ids of the domain, each a `str` that validates itself when built (as git-revise's `Oid`
refuses a wrong length). One class per concept, one rule per class, used by every layer and every face:

- `LaneName`: a lane, under git's ref-name rules and the file system's name length.
- `AgentId`: an agent (`--agent`, `GIT_LANES_AGENT`); also a file name in the ledger's tree.
- `Actor`: who acted: an `AgentId`, or a person named by git's configured identity ("Jane Doe").
- `TransitionId`: a transition; `LedgerId`: a ledger op, and the task or ticket that op created.

Each class carries `JSON_SCHEMA`, so records holding it describe themselves (MCP, SDK, OpenAPI)."""

from __future__ import annotations

import os

from git_lanes.errors import UserError
from git_lanes.model.text import name_problem, quoted, text_problem

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from typing import Any, ClassVar

# A loose ref is written as `<name>.lock` first, and a deleted lane's marker flattens the whole name into one
# file name ('/' as %2F): both must fit the 255 bytes a file name may have.
MAX_LANE_BYTES = 250
# Characters git's ref names refuse (check-ref-format): controls, space, DEL and ~ ^ : ? * [ \. Sets rather
# than regular expressions here: `re` (with the `enum` it loads) is ~3 ms of a light sync's start, which
# needs nothing else of it.
_LANE_FORBIDDEN = frozenset(map(chr, range(0x21))) | frozenset("\x7f~^:?*[\\")
_ALPHANUMERIC = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_AGENT_CHARACTERS = _ALPHANUMERIC | frozenset("._@+-")
RESERVED_LANE_NAMES = frozenset({"HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "@"})


class ValidatedStr(str):
    """A string checked once, when built; building one from an instance of its own class, or of a subclass,
    checks nothing and gives that instance. So a subclass's rule must be at least as strict as its base's
    (every agent id is a valid actor): an op's actor, made from the agent id a face checked, and checked as an
    agent id again by the fold, is checked once."""

    JSON_SCHEMA: ClassVar[dict[str, Any]] = {"type": "string"}
    # Texts this class found valid, each with the instance made of it (per class: `__init_subclass__`). Whether
    # a text is valid depends on the text alone, and a long-lived process reads the same few agents and actors
    # in record after record (an op's actor, a post's sender, a task's owner), each checked afresh before.
    _known: ClassVar[dict[str, ValidatedStr]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._known = {}

    def __new__(cls, value: object) -> ValidatedStr:
        if isinstance(value, cls):
            return value
        if type(value) is str:
            found = cls._known.get(value)
            if found is not None:
                return found
        problem = cls.problem(value)
        if problem is not None:
            raise cls.error(value, problem)
        made = super().__new__(cls, str(value))
        if type(value) is str:
            known = cls._known
            if len(known) >= _KNOWN_MAX:  # a peer's records may name any number: bounded, the oldest half let go
                for old in list(known)[:_KNOWN_MAX // 2]:
                    known.pop(old, None)
            known[value] = made
        return made

    @classmethod
    def known_texts(cls) -> dict[str, ValidatedStr]:
        """The texts this class found valid, each with its instance (for a caller that looks one up itself)."""
        return cls._known

    @classmethod
    def problem(cls, value: object) -> str | None:  # pragma: no cover - every subclass says
        raise NotImplementedError

    @classmethod
    def error(cls, value: object, problem: str) -> UserError:  # pragma: no cover - every subclass says
        raise NotImplementedError

    @classmethod
    def valid(cls, value: object) -> bool:
        return cls.problem(value) is None


_KNOWN_MAX = 1024


class LaneName(ValidatedStr):
    """A lane name: the tail of a ref under git check-ref-format's rules, short enough for a file name, with
    no character that makes it read as another (`name_problem`: git takes those)."""

    JSON_SCHEMA: ClassVar[dict[str, Any]] = {"type": "string", "minLength": 1, "maxLength": MAX_LANE_BYTES,
                                             "description": "a lane name (git branch-name rules), e.g. feature/auth"}

    @classmethod
    def problem(cls, value: object) -> str | None:
        if not isinstance(value, str):
            return f"is not text but {type(value).__name__}"
        if not value:
            return "empty"
        if text_problem(value) == "is not valid UTF-8":
            return "not valid UTF-8"
        if value in RESERVED_LANE_NAMES:
            return "reserved by git"
        if value.startswith("-"):
            return "starts with '-'"
        if not _LANE_FORBIDDEN.isdisjoint(value):
            return "contains a space, control character or one of ~ ^ : ? * [ \\"
        unseen = name_problem(value)
        if unseen is not None:
            return unseen
        if ".." in value or "@{" in value:
            return "contains '..' or '@{'"
        if value.endswith("/") or value.startswith("/") or "//" in value:
            return "has an empty path component"
        if value.endswith("."):
            return "ends with '.'"
        for component in value.split("/"):
            if component.startswith("."):
                return "a component starts with '.'"
            if component.endswith(".lock"):
                return "a component ends with '.lock'"
        flat = len(value.encode()) + 2 * value.count("/") + 2 * value.count("%")
        if flat > MAX_LANE_BYTES:
            return f"too long: {flat} bytes, at most {MAX_LANE_BYTES} (each '/' and '%' counts 3)"
        return None

    @classmethod
    def error(cls, value: object, problem: str) -> UserError:
        return UserError(f"invalid lane name {quoted(value)}: {problem}", code="invalid_lane_name",
                         hint="lane names follow git branch-name rules, e.g. feature/auth")


class Actor(ValidatedStr):
    """Who acted: an agent id, or a person's name from git's identity. One line of at most 100 characters,
    without < or > (it becomes a commit's author name), nor a character that makes it read as another."""

    MAX = 100
    JSON_SCHEMA: ClassVar[dict[str, Any]] = {"type": "string", "minLength": 1, "maxLength": MAX,
                                             "description": "an agent id, or a person's name"}

    @classmethod
    def problem(cls, value: object) -> str | None:
        problem = text_problem(value)
        if problem is not None:
            return problem
        assert isinstance(value, str)
        if not value.strip() or len(value) > cls.MAX or "<" in value or ">" in value or "\t" in value:
            return f"must be 1-{cls.MAX} characters without < > or tabs"
        return name_problem(value)

    @classmethod
    def error(cls, value: object, problem: str) -> UserError:
        return UserError(f"invalid actor {quoted(value)}: {problem}", code="invalid_actor",
                         hint="name an agent, or set git's user.name")


class AgentId(Actor):
    """An agent's id: 1-64 ASCII letters, digits and . _ @ + -, starting with a letter or digit."""

    PATTERN = r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}"
    JSON_SCHEMA: ClassVar[dict[str, Any]] = {
        "type": "string", "pattern": f"^{PATTERN}$", "maxLength": 64,
        "description": "an agent id: 1-64 letters, digits and . _ @ + -, starting with a letter or digit"}

    @classmethod
    def problem(cls, value: object) -> str | None:
        # PATTERN, matched whole
        if not (isinstance(value, str) and 0 < len(value) <= 64 and value[0] in _ALPHANUMERIC
                and _AGENT_CHARACTERS.issuperset(value)):
            return "must be 1-64 letters, digits and . _ @ + -, starting with a letter or digit"
        if value.endswith(".json"):
            return "must not end with .json"
        return None

    @classmethod
    def error(cls, value: object, problem: str) -> UserError:
        return UserError(f"invalid agent id {quoted(value)}", code="invalid_agent",
                         hint=f"an agent id {problem}")


class HexId(ValidatedStr):
    """A random id in lowercase hex (64 bits, 16 digits, as `secrets.token_hex(8)` makes them)."""

    LENGTH = 16
    WHAT = "id"
    CODE = "invalid_id"
    JSON_SCHEMA: ClassVar[dict[str, Any]] = {"type": "string", "pattern": "^[0-9a-f]{16}$"}

    @classmethod
    def problem(cls, value: object) -> str | None:
        if not isinstance(value, str) or len(value) != cls.LENGTH or value.strip("0123456789abcdef"):
            return f"is not {cls.LENGTH} lowercase hex digits"
        return None

    @classmethod
    def error(cls, value: object, problem: str) -> UserError:
        return UserError(f"{cls.WHAT} {quoted(value)} {problem}", code=cls.CODE)


class TransitionId(HexId):
    WHAT = "transition id"
    JSON_SCHEMA: ClassVar[dict[str, Any]] = {"type": "string", "pattern": "^[0-9a-f]{16}$",
                                             "description": "a transition id (a unique prefix is accepted)"}


class LedgerId(HexId):
    """A ledger op's id; a task or ticket is named by the id of the op that created it."""

    WHAT = "ledger id"
    JSON_SCHEMA: ClassVar[dict[str, Any]] = {"type": "string", "pattern": "^[0-9a-f]{16}$",
                                             "description": "a ledger id (tasks and tickets: a unique prefix "
                                                            "is accepted)"}


def validate_lane_name(name: object) -> LaneName:
    """The lane name `name`, or a UserError (`invalid_lane_name`) saying what is wrong with it."""
    return LaneName(name)


def validate_agent_id(agent: object) -> AgentId:
    """The agent id `agent`, or a UserError (`invalid_agent`)."""
    return AgentId(agent)


def random_hex(nbytes: int) -> str:
    """`nbytes` random bytes from the operating system's CSPRNG, in hex: what `secrets.token_hex` returns,
    without importing secrets (its hmac, hashlib and random cost every command that loads it ~4 ms)."""
    return os.urandom(nbytes).hex()
