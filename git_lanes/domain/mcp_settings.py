"""The `lanes` MCP server entry in each agent CLI's settings, which `git lanes install` writes beside the hooks:
Claude Code's `.mcp.json` (user scope: `~/.claude.json`), Codex's `config.toml`, Gemini CLI's `settings.json`.
Written with hook_settings' discipline: nothing else in the file changes, running it twice changes nothing,
uninstall removes exactly our entry, an entry of that name that is not ours is left alone, and a file that
cannot be read is never overwritten.

Codex's file is TOML, which the standard library reads but does not write: our entry is appended as a table
of its own and removed as exactly that text, and the result must parse before it is written."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from git_lanes.domain import hook_settings
from git_lanes.errors import UserError
from git_lanes.model.config import tomllib  # tomli: TOML 1.1, as .lanes.toml is read

SERVER = "lanes"
# How a server entry of ours starts: git-lanes (however it was invoked) with `mcp` as its last argument.
OURS = re.compile(r"(git-lanes['\"]?|git lanes|-m git_lanes)$")


def settings_path(cli: str, scope: str, project_root: Path, home: Path, codex_home: Path | None = None) -> Path:
    """Where `cli` reads MCP servers from, for `scope` (project or user)."""
    hook_settings.spec(cli)
    if scope not in hook_settings.SCOPES:
        raise UserError(f"unknown scope {scope!r}; one of {', '.join(hook_settings.SCOPES)}", code="invalid_scope")
    project = scope == "project"
    if cli == "claude":
        return project_root / ".mcp.json" if project else home / ".claude.json"
    if cli == "codex":
        return project_root / ".codex" / "config.toml" if project else (codex_home or home / ".codex") / "config.toml"
    return project_root / ".gemini" / "settings.json" if project else home / ".gemini" / "settings.json"


def entry(cli: str, prefix: str) -> dict[str, Any]:
    """The server entry: `PREFIX mcp` (PREFIX as the hooks start git-lanes), acting as $GIT_LANES_AGENT."""
    command, *args = shlex.split(prefix)
    server: dict[str, Any] = {"command": command, "args": [*args, "mcp"]}
    if cli == "claude":  # Claude Code expands ${VAR:-default} in .mcp.json
        return {"type": "stdio", **server, "env": {"GIT_LANES_AGENT": "${GIT_LANES_AGENT:-claude}"}}
    if cli == "codex":  # Codex passes MCP servers only the variables named here; tool calls wait up to 60 s
        return {**server, "env_vars": ["GIT_LANES_AGENT"], "startup_timeout_sec": 30, "tool_timeout_sec": 600}
    return {**server, "timeout": 600_000}  # Gemini CLI passes its environment on; milliseconds


def is_ours(server: Any) -> bool:
    if not isinstance(server, dict) or not isinstance(server.get("command"), str):
        return False
    args = server.get("args") if isinstance(server.get("args"), list) else []
    if not args or args[-1] != "mcp" or not all(isinstance(a, str) for a in args):
        return False
    return OURS.search(" ".join([server["command"], *args[:-1]])) is not None


def install_all(hooks: Path, servers: Path | None, cli: str, prefix: str, *, dry_run: bool = False) -> dict[str, Any]:
    """`git lanes install`: the hooks into `hooks`, and our server entry into `servers` (None: hooks only).
    Both files are read and checked before either is written, so a file that cannot be read (and is never
    overwritten) leaves the other as it was too: never hooks without the server, nor a half install."""
    hook_settings.install(hooks, cli, prefix, dry_run=True)
    if servers is not None:
        install(servers, cli, prefix, dry_run=True)
    result = hook_settings.install(hooks, cli, prefix, dry_run=dry_run)
    if servers is not None:
        result["mcp"] = install(servers, cli, prefix, dry_run=dry_run)
    return result


def uninstall_all(hooks: Path, servers: Path | None, cli: str, *, dry_run: bool = False) -> dict[str, Any]:
    """`git lanes uninstall`, with `install_all`'s discipline: both files checked before either is written."""
    hook_settings.uninstall(hooks, cli, dry_run=True)
    if servers is not None:
        uninstall(servers, cli, dry_run=True)
    result = hook_settings.uninstall(hooks, cli, dry_run=dry_run)
    if servers is not None:
        result["mcp"] = uninstall(servers, cli, dry_run=dry_run)
    return result


def install(path: Path, cli: str, prefix: str, *, dry_run: bool = False) -> dict[str, Any]:
    """Add our server entry unless an entry named `lanes` is there already (ours, or someone else's)."""
    wanted = entry(cli, prefix)
    present = _servers(path, cli).get(SERVER)
    changed = present is None or (is_ours(present) and present != wanted)
    if changed and not dry_run:
        _write(path, cli, wanted)
    return {"settings": str(path), "server": SERVER, "changed": changed,
            "kept_foreign": present is not None and not is_ours(present), "dry_run": dry_run}


def uninstall(path: Path, cli: str, *, dry_run: bool = False) -> dict[str, Any]:
    """Remove our server entry; anything else stays, a foreign `lanes` entry included."""
    present = _servers(path, cli).get(SERVER)
    changed = is_ours(present)
    if changed and not dry_run:
        _write(path, cli, None)
    return {"settings": str(path), "server": SERVER, "changed": changed, "dry_run": dry_run}


def _servers(path: Path, cli: str) -> dict[str, Any]:
    if cli == "codex":
        servers = _read_toml(path).get("mcp_servers", {})
    else:
        servers = hook_settings.load(path).get("mcpServers", {})
    if not isinstance(servers, dict):
        raise UserError(f"the MCP servers in {path} are not a table; nothing was changed", code="invalid_settings")
    return servers


def _write(path: Path, cli: str, server: dict[str, Any] | None) -> None:
    if cli == "codex":
        return _write_toml(path, server)
    data = hook_settings.load(path)
    servers = {k: v for k, v in (data.get("mcpServers") or {}).items() if k != SERVER}
    if server is not None:
        servers[SERVER] = server
    if servers:
        data["mcpServers"] = servers
    else:
        data.pop("mcpServers", None)
    hook_settings.save_or_remove(path, data)


# -- Codex: config.toml ------------------------------------------------------------------------------------
def _read_toml(path: Path) -> dict[str, Any]:
    text = hook_settings.settings_text(path)
    try:
        return tomllib.loads(text) if text is not None else {}
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path} is not valid TOML ({exc}); nothing was changed", code="invalid_settings",
                        hint="fix the file by hand, then run the command again") from None


def _toml_table(server: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, str):  # a JSON string is a TOML basic string
            return json.dumps(v)
        return str(v)

    lines = [f"[mcp_servers.{SERVER}]"] + [f"{k} = {value(v)}" for k, v in server.items()]
    return "\n".join(lines) + "\n"


TABLE = re.compile(rf"(?ms)^\[mcp_servers\.{SERVER}\][ \t]*\n.*?(?=^\[|\Z)")


def _write_toml(path: Path, server: dict[str, Any] | None) -> None:
    text = TABLE.sub("", hook_settings.settings_text(path) or "").rstrip("\n")  # an older entry of ours goes; only ours reaches here
    if server is not None:
        text = (text + "\n\n" if text else "") + _toml_table(server)
    elif text:
        text += "\n"
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"adding the MCP server to {path} would not leave valid TOML ({exc}); nothing was "
                        "changed", code="invalid_settings",
                        hint=f"add the [mcp_servers.{SERVER}] table by hand (contrib/mcp/codex.config.toml)") from None
    if server is not None and parsed.get("mcp_servers", {}).get(SERVER) != server:
        raise UserError(f"{path} holds mcp_servers.{SERVER} in a form this command does not edit; nothing was "
                        "changed", code="invalid_settings", hint="edit the entry by hand")
    hook_settings.save_text_or_remove(path, text)
