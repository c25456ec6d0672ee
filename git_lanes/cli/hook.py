"""`git lanes hook`, `install`, `uninstall`: the agent CLIs' side of the control plane. The hook itself is
normally reached without click (`git_lanes.__main__` routes it first); this command documents it and runs
it the same way when click is in the path anyway."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click

from git_lanes.cli import Command
from git_lanes.cli.output import json_option, run

CLI_CHOICE = click.Choice(["claude", "codex", "gemini"])


@click.command(cls=Command, context_settings={"ignore_unknown_options": True})
@click.argument("agent_cli", metavar="CLI", type=CLI_CHOICE)
@click.argument("event", metavar="EVENT")
@json_option
def hook(agent_cli: str, event: str, as_json: bool) -> None:
    """Answer one hook call of an agent CLI (claude, codex or gemini): its JSON payload on stdin, the
    answer in that CLI's protocol on stdout. Installed by `git lanes install`; not typed by people.

    Events: Claude Code and Codex use SessionStart, UserPromptSubmit, PreToolUse, PostToolUse,
    PostToolUseFailure (Claude only), PreCompact, Stop, SubagentStop, SessionEnd; Gemini CLI uses
    SessionStart, BeforeAgent, BeforeTool, AfterTool, PreCompress, AfterAgent, SessionEnd. A pre-tool
    event that cannot be evaluated is denied, with the reason. The output is always the agent CLI's own
    JSON, so --json changes nothing.

    \b
    Example:
      echo '{"session_id":"s1","cwd":"'$PWD'","hook_event_name":"PreToolUse",
             "tool_name":"Bash","tool_input":{"command":"rm -rf build"}}' | git lanes hook claude PreToolUse
    """
    from git_lanes.hooks import main as hook_main

    sys.exit(hook_main([agent_cli, event]))


def command_prefix() -> str:
    """How the installed hooks start git-lanes: this very program, by absolute path, so the hooks do not
    depend on the agent's PATH (a hook command that is not found fails open)."""
    program = Path(sys.argv[0])
    if program.name == "git-lanes" and program.is_file():
        return shlex.quote(str(program.resolve()))
    return f"{shlex.quote(str(Path(sys.executable).absolute()))} -m git_lanes"


def _target(agent_cli: str, scope: str) -> Path:
    from git_lanes.domain import hook_settings

    root = hook_settings.project_root(Path.cwd()) if scope == "project" else Path.cwd()
    codex_home = os.environ.get("CODEX_HOME")
    return hook_settings.settings_path(agent_cli, scope, root, Path.home(), Path(codex_home) if codex_home else None)


def _mcp_target(agent_cli: str, scope: str) -> Path:
    from git_lanes.domain import hook_settings, mcp_settings

    root = hook_settings.project_root(Path.cwd()) if scope == "project" else Path.cwd()
    codex_home = os.environ.get("CODEX_HOME")
    return mcp_settings.settings_path(agent_cli, scope, root, Path.home(), Path(codex_home) if codex_home else None)


def _render(result: dict) -> str:
    lines = [f"{_verb(result)} {result['settings']}"
             + (f" ({', '.join(result.get('added') or result.get('removed') or [])})"
                if result.get("added") or result.get("removed") else "")]
    mcp = result.get("mcp")
    if mcp:
        lines.append(f"{_verb(mcp)} {mcp['settings']} (MCP server {mcp['server']})")
        if mcp.get("kept_foreign"):
            lines.append(f"note: {mcp['settings']} already has an MCP server named {mcp['server']} that is not "
                         "git-lanes'; it was left as it is")
    return "\n".join(lines)


def _verb(result: dict) -> str:
    return "would change" if result["dry_run"] and result["changed"] else "changed" if result["changed"] else \
        "already up to date:"


scope_option = click.option("--scope", type=click.Choice(["project", "user"]), default="project", show_default=True,
                            help="project: the settings file in this worktree's root; user: in your home.")
dry_run_option = click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")


no_mcp_option = click.option("--no-mcp", is_flag=True, help="Leave the MCP server entry alone (hooks only).")


@click.command(cls=Command)
@click.argument("agent_cli", metavar="CLI", type=CLI_CHOICE)
@scope_option
@dry_run_option
@click.option("--command", "prefix", metavar="PREFIX",
              help="How the hooks start git-lanes (default: this program's absolute path), e.g. 'git lanes'.")
@no_mcp_option
@json_option
def install(agent_cli: str, scope: str, dry_run: bool, prefix: str | None, no_mcp: bool, as_json: bool) -> None:
    """Install the git-lanes hooks into an agent CLI's settings (.claude/settings.json, .codex/hooks.json,
    .gemini/settings.json): every event the control plane needs, merged without touching anything else in
    the file. Running it twice changes nothing; `git lanes uninstall` removes exactly what it added.

    Also adds the `lanes` MCP server (`git lanes mcp`, acting as $GIT_LANES_AGENT) to the CLI's MCP servers
    (.mcp.json or ~/.claude.json, .codex/config.toml, .gemini/settings.json), unless --no-mcp; an entry
    named `lanes` that is not git-lanes' is left alone.

    Project scope writes the file in this worktree's root: commit it on the trunk so every lane's workspace
    carries it, or use --scope user.

    \b
    Example:
      git lanes install claude
      git lanes install codex --scope user --dry-run
    """
    from git_lanes.domain import mcp_settings

    def action() -> dict:
        return mcp_settings.install_all(_target(agent_cli, scope), None if no_mcp else _mcp_target(agent_cli, scope),
                                        agent_cli, command_prefix() if prefix is None else prefix, dry_run=dry_run)

    run(action, as_json, _render)


@click.command(cls=Command)
@click.argument("agent_cli", metavar="CLI", type=CLI_CHOICE)
@scope_option
@dry_run_option
@no_mcp_option
@json_option
def uninstall(agent_cli: str, scope: str, dry_run: bool, no_mcp: bool, as_json: bool) -> None:
    """Remove the git-lanes hooks (and, unless --no-mcp, the `lanes` MCP server entry) from an agent CLI's
    settings, and nothing else.

    \b
    Example:
      git lanes uninstall claude
    """
    from git_lanes.domain import mcp_settings

    def action() -> dict:
        return mcp_settings.uninstall_all(_target(agent_cli, scope), None if no_mcp else _mcp_target(agent_cli, scope),
                                          agent_cli, dry_run=dry_run)

    run(action, as_json, _render)


@click.command(cls=Command)
@click.option("--check", "only", multiple=True, metavar="NAME",
              help="Run only this check (or group, e.g. hooks); repeatable.")
@click.option("--fix", is_flag=True, help="Repair what is safe to repair; list what is left for a person.")
@json_option
def doctor(only: tuple[str, ...], fix: bool, as_json: bool) -> None:
    """Check the setup: refs, notes, the ledger, its append queue and its ref's spare files, the operation
    log undo reads (every entry there and readable), workspaces (missing, moved, orphaned, locked), each
    agent CLI's hooks (installed, complete, runnable), the trunk's policy, and that every run log replays to
    its state. With --fix, repair what is safe (abandoned lock files, decisions a killed
    process left half made, what killed processes left in the append queue, notes of states that are gone,
    an operation log broken by a lost commit, ended where it breaks, workspaces deleted or moved by hand,
    clean workspaces of deleted lanes) and say what is left for a person. Exits 1 when a check fails.

    \b
    Example:
      git lanes doctor
      git lanes doctor --fix
      git lanes doctor --check hooks.claude --json
      git lanes doctor --check oplog --fix
    """
    from git_lanes.cli.output import open_api

    result: dict = {}

    def action() -> dict:
        from git_lanes.api.doctor import Where

        codex_home = os.environ.get("CODEX_HOME")
        result.update(open_api().doctor(Where(Path.home(), Path(codex_home) if codex_home else None), only, fix=fix))
        return result

    def render(r: dict) -> str:
        marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "fixed": "fix "}
        lines = [f"{marks[c['status']]}  {c['check']}: {c['message']}"
                 + (" (--fix repairs it)" if c.get("fixable") else "")
                 + (f"\n      hint: {c['hint']}" if c.get("hint") and c["status"] != "fixed" else "") for c in r["checks"]]
        if r["fix"]:
            lines.append(f"fixed {r['fixed']}; left for a person: {r['left']}")
        return "\n".join(lines)

    run(action, as_json, render)
    if not result.get("ok", True):
        sys.exit(1)
