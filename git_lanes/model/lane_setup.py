"""The lane setup manifest: `[setup]` in `.lanes.toml` at the trunk's committed head, what makes a new lane's
workspace ready to work in the moment it exists.

    [setup]
    copy = [".env", "config/local.yml"]   # ignored files copied from the main worktree, if present
    run = "npm ci"                         # run in the new workspace (or an argv list); output kept
    timeout = 600                          # seconds; the command's whole process group is killed after it
    ports = 3                              # ports reserved per lane in the ledger ...
    port_range = "20000-29999"             # ... from this range
    env = { PORT = "{port0}", DATABASE_URL = "postgres://localhost/app_{lane_slug}" }

Values in `env` may name `{port0}` … `{portN-1}`, `{lane}`, `{lane_slug}` (the lane name in lowercase letters,
digits and `_`), `{workspace}`, `{root}` (the main worktree) and `{trunk}`; `{{` and `}}` are literal braces."""

from __future__ import annotations

import re
import string
from typing import Any

from git_lanes.errors import MalformedRecord, UserError, command
from git_lanes.model import config
from git_lanes.model.config import CONFIG
from git_lanes.model.frozen import Frozen, field
from git_lanes.model.names import normalize_repo_path

KEYS = ("copy", "run", "timeout", "ports", "port_range", "env")
DEFAULT_TIMEOUT = 600.0
DEFAULT_RANGE = (20000, 29999)
MAX_PORTS = 100
NAMES = ("lane", "lane_slug", "workspace", "root", "trunk")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PORT_NAME = re.compile(r"port(0|[1-9][0-9]*)")


class PortsHeld(Frozen):
    """A lane's reserved ports as the ledger holds them (`ports/<lane>.json`, domain/ports.py)."""

    lane: str
    ports: tuple[int, ...]

    @classmethod
    def decode(cls, data: Any, what: str, hint: str | None = None) -> PortsHeld:
        """The record, or a MalformedRecord naming it (`what`) when a peer wrote something else there."""
        if not isinstance(data, dict):
            problem = f"not a JSON object but {type(data).__name__}"
        elif not isinstance(data.get("lane"), str) or not data["lane"]:
            problem = f"its lane is {data.get('lane')!r}, not a lane's name"
        elif not isinstance(data.get("ports"), list) or len(data["ports"]) > MAX_PORTS \
                or not all(type(port) is int and 0 < port <= 65535 for port in data["ports"]):
            problem = f"its ports are not a list of at most {MAX_PORTS} port numbers"
        else:
            return cls(data["lane"], tuple(data["ports"]))
        raise MalformedRecord(f"{what} is malformed: {problem}", hint=hint)


def invalid(message: str) -> UserError:
    return UserError(message, code="invalid_setup",
                     hint=f"fix [setup] in {CONFIG} on the trunk; {command('lane create', 'LANE', no_setup=True)} "
                          "skips it")


def lane_slug(lane: str) -> str:
    """The lane's name as a database or host name likes it: lowercase letters, digits and `_`."""
    return re.sub(r"[^a-z0-9]+", "_", lane.lower()).strip("_") or "lane"


class Setup(Frozen):
    copy: tuple[str, ...] = ()
    run: str | tuple[str, ...] | None = None
    timeout: float = DEFAULT_TIMEOUT
    ports: int = 0
    port_range: tuple[int, int] = DEFAULT_RANGE
    env: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.copy or self.run or self.ports or self.env)

    def render_env(self, *, lane: str, ports: tuple[int, ...], workspace: str, root: str, trunk: str) -> dict[str, str]:
        """The lane's variables, placeholders filled in. Raises when the lane holds fewer ports than named."""
        values: dict[str, Any] = {"lane": lane, "lane_slug": lane_slug(lane), "workspace": workspace, "root": root,
                                  "trunk": trunk}
        values.update({f"port{i}": port for i, port in enumerate(ports)})
        missing = sorted({name for template in self.env.values() for name in placeholders(template)} - set(values))
        if missing:
            raise UserError(f"lane {lane!r} holds {len(ports)} port(s); [setup] env names {', '.join(missing)}",
                            code="no_ports", hint=f"reserve them with {command('lane setup', lane)}")
        return {name: template.format_map(values) for name, template in self.env.items()}

    def to_dict(self) -> dict[str, Any]:
        return {"copy": list(self.copy), "run": self.run if not isinstance(self.run, tuple) else list(self.run),
                "timeout": self.timeout, "ports": self.ports, "port_range": list(self.port_range),
                "env": dict(self.env)}

    @classmethod
    def from_config(cls, data: dict[str, Any]) -> Setup:
        """The `[setup]` table of a parsed `.lanes.toml` (the empty setup when it has none)."""
        table = config.table(data, "setup", KEYS, invalid)
        copy = tuple(_copy_path(p) for p in config.string_list(table.get("copy", []), "[setup] copy", invalid))
        ports = table.get("ports", 0)
        if isinstance(ports, bool) or not isinstance(ports, int) or not 0 <= ports <= MAX_PORTS:
            raise invalid(f"{CONFIG}: [setup] ports must be a whole number from 0 to {MAX_PORTS}")
        timeout = table.get("timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise invalid(f"{CONFIG}: [setup] timeout must be a positive number of seconds")
        port_range = _port_range(table.get("port_range"))
        if ports > port_range[1] - port_range[0] + 1:
            raise invalid(f"{CONFIG}: [setup] port_range {port_range[0]}-{port_range[1]} holds fewer than {ports} ports")
        setup = cls(copy, _command(table.get("run")), float(timeout), ports, port_range, _env(table.get("env", {})))
        for name, template in setup.env.items():
            for placeholder in placeholders(template):
                number = _PORT_NAME.fullmatch(placeholder)
                if placeholder not in NAMES and not (number and int(number.group(1)) < ports):
                    known = ", ".join([*NAMES, *(f"port{i}" for i in range(ports))])
                    raise invalid(f"{CONFIG}: [setup] env {name} names {{{placeholder}}}; known: {known}")
        return setup


def placeholders(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def _copy_path(path: str) -> str:
    try:
        normal = normalize_repo_path(path)
    except UserError as exc:
        raise invalid(f"{CONFIG}: [setup] copy: {exc.message}") from None
    if not normal or normal.split("/")[0] in (".git", ".lanes"):
        raise invalid(f"{CONFIG}: [setup] copy: {path!r} is not a file of the project")
    return normal


def _command(value: Any) -> str | tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, list) and value and all(isinstance(a, str) for a in value):
        return tuple(value)
    if isinstance(value, str) and value.strip():
        return value
    raise invalid(f"{CONFIG}: [setup] run must be a shell string or an argv list")


def _port_range(value: Any) -> tuple[int, int]:
    if value is None:
        return DEFAULT_RANGE
    match = re.fullmatch(r"\s*(\d{1,5})\s*-\s*(\d{1,5})\s*", value) if isinstance(value, str) else None
    low, high = (int(match.group(1)), int(match.group(2))) if match else (0, -1)
    if not 1024 <= low <= high <= 65535:
        raise invalid(f"{CONFIG}: [setup] port_range must look like \"20000-29999\", within 1024-65535")
    return low, high


def _env(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise invalid(f"{CONFIG}: [setup] env must be a table of NAME = \"value\"")
    for name, template in value.items():
        if not _ENV_NAME.fullmatch(name):
            raise invalid(f"{CONFIG}: [setup] env: {name!r} is not a variable name")
        if not isinstance(template, str):
            raise invalid(f"{CONFIG}: [setup] env {name} must be a string")
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise invalid(f"{CONFIG}: [setup] env {name}: {exc} (write {{{{ and }}}} for braces)") from None
        if any(spec or conversion for _, field_name, spec, conversion in parsed if field_name is not None):
            raise invalid(f"{CONFIG}: [setup] env {name}: placeholders take no format spec or conversion")
    return dict(value)


class SetupRun(Frozen):
    """How the setup command went: its exit code (None when it could not start or timed out), the tail of its
    output and where the whole output is kept."""

    command: str | tuple[str, ...]
    exit_code: int | None
    duration: float
    timed_out: bool
    log: str
    output_tail: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command if isinstance(self.command, str) else list(self.command),
                "exit_code": self.exit_code, "duration": self.duration, "timed_out": self.timed_out,
                "log": self.log, "output_tail": self.output_tail, "passed": self.passed}


class SetupReport(Frozen):
    """What setting a lane up did. `status`: "ok", "failed" (the lane is kept and usable; `message` says
    what failed) or "none" (the trunk declares no [setup])."""

    lane: str
    status: str
    ports: tuple[int, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    copied: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    present: tuple[str, ...] = ()
    run: SetupRun | None = None
    message: str | None = None
    tracked: tuple[str, ...] = ()  # those of `present` that git tracks in the lane: not files to copy

    def to_dict(self) -> dict[str, Any]:
        return {"lane": self.lane, "status": self.status, "ports": list(self.ports), "env": dict(self.env),
                "copied": list(self.copied), "absent": list(self.absent), "present": list(self.present),
                "tracked": list(self.tracked), "run": self.run.to_dict() if self.run else None,
                "message": self.message}
