"""The agent CLIs' settings files, edited the way a careful person would: merge our entries without touching
anything else (other hooks, other keys), idempotently, and remove exactly what we added.

`merge_entries` / `remove_entries` work on any JSON settings document (three levels: event -> matcher group
-> handlers), so other features (MCP server entries) reuse `load`, `save` and the same discipline."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from git_lanes.errors import UserError
from git_lanes.model.frozen import Frozen
from git_lanes.store.gitfiles import discover

SCOPES = ("project", "user")
# A handler is ours when its command runs `git lanes hook <cli> <event>` (however git-lanes was invoked).
OURS = re.compile(r"(git-lanes['\"]?|git lanes|-m git_lanes)\s+hook\s+(claude|codex|gemini)\s+(\w+)\s*$")
# Claude Code's event names the Gemini hook also takes (git_lanes/hooks/gemini.py ALIASES, which the hook path
# keeps free of this module's imports).
GEMINI_ALIASES = {"PreToolUse": "BeforeTool", "PostToolUse": "AfterTool", "UserPromptSubmit": "BeforeAgent",
                  "Stop": "AfterAgent", "PreCompact": "PreCompress"}
EVERY_TOOL = (None, "", "*", ".*")  # a matcher group that matches every tool (or every source, reason…)


class Spec(Frozen):
    """One CLI's settings: where they live, which events we hook, and a handler's shape."""

    cli: str
    project_file: str
    user_file: str
    events: tuple[str, ...]
    timeout: Callable[[str], int]
    extra: Callable[[str], dict]


SPECS = {
    "claude": Spec("claude", ".claude/settings.json", ".claude/settings.json",
                   ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
                    "PreCompact", "Stop", "SubagentStop", "SessionEnd"),
                   # seconds; a Stop may run the trunk's gates when [stop] snapshot = "accept"
                   lambda event: 600 if event == "Stop" else 60, lambda event: {}),
    "codex": Spec("codex", ".codex/hooks.json", ".codex/hooks.json",
                  ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop",
                   "SubagentStop", "SessionEnd"),
                  lambda event: 3 if event == "SessionEnd" else 600 if event == "Stop" else 60,  # SessionEnd: at most 3 s
                  lambda event: {"statusMessage": f"git-lanes {event}"}),
    "gemini": Spec("gemini", ".gemini/settings.json", ".gemini/settings.json",
                   ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "PreCompress", "AfterAgent",
                    "SessionEnd"),
                   lambda event: (600 if event == "AfterAgent" else 60) * 1000,  # milliseconds
                   lambda event: {"name": f"git-lanes-{event}", "description": "git-lanes control plane"}),
}


def spec(cli: str) -> Spec:
    if cli not in SPECS:
        raise UserError(f"unknown agent CLI {cli!r}; one of {', '.join(SPECS)}", code="unknown_cli")
    return SPECS[cli]


def project_root(directory: Path) -> Path:
    """The root of the worktree holding `directory`: where an agent started there finds project settings."""
    return Path(discover(directory).worktree)


def settings_path(cli: str, scope: str, project_root: Path, home: Path, codex_home: Path | None = None) -> Path:
    s = spec(cli)
    if scope == "project":
        return project_root / s.project_file
    if scope == "user":
        if cli == "codex" and codex_home is not None:
            return codex_home / "hooks.json"
        return home / s.user_file
    raise UserError(f"unknown scope {scope!r}; one of {', '.join(SCOPES)}", code="invalid_scope")


def handlers(cli: str, prefix: str) -> dict[str, dict[str, Any]]:
    """event -> the handler we install for it."""
    s = spec(cli)
    return {event: {"type": "command", "command": f"{prefix} hook {cli} {event}", "timeout": s.timeout(event),
                    **s.extra(event)} for event in s.events}


def is_ours(handler: Any) -> bool:
    return isinstance(handler, dict) and isinstance(handler.get("command"), str) and \
        OURS.search(handler["command"]) is not None


def check_prefix(prefix: str) -> str:
    """A command prefix that starts git-lanes, so the hooks made with it are recognised as ours. Any other
    (`git lane`, a blank) would install hooks that fail open (the CLIs run the tool when a hook's command
    is not found or exits 1), that doctor reports as missing and that uninstall cannot find."""
    if not is_ours({"command": f"{prefix} hook claude PreToolUse"}) or not prefix.strip():
        from git_lanes.model.text import quoted

        raise UserError(f"the command {quoted(prefix)} does not start git-lanes", code="invalid_command",
                        hint="end it with `git lanes`, a path to `git-lanes`, or `python -m git_lanes`")
    return prefix


# -- documents ------------------------------------------------------------------------------------------
def settings_text(path: Path) -> str | None:
    """An agent CLI's settings file (JSON here, TOML for Codex: mcp_settings.py); None when it does not
    exist. One we cannot read is refused, so that it is never overwritten."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:  # a folder in its place, no permission, not UTF-8
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UserError(f"cannot read {path} ({reason}); nothing was changed", code="invalid_settings",
                        hint="fix or move it by hand, then run the command again") from None


def load(path: Path) -> dict[str, Any]:
    """A settings document; {} when the file does not exist. A file we cannot read is never overwritten."""
    text = settings_text(path)
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{path} is not valid JSON ({exc}); nothing was changed", code="invalid_settings",
                        hint="fix the file by hand, then run the command again") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} does not hold a JSON object; nothing was changed", code="invalid_settings")
    return data


def save(path: Path, data: dict[str, Any]) -> None:
    """Write a settings document atomically (see `save_text`)."""
    save_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def save_text(path: Path, text: str) -> None:
    """Write atomically (a temporary file renamed over the old one), keeping the file's mode. A symbolic link
    (a settings file kept in a dotfiles repository) is written through, as git writes a linked config file:
    renaming over the link itself would leave a plain file where the link was."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    if path.exists():
        os.chmod(temporary, path.stat().st_mode & 0o7777)
    os.replace(temporary, path)


def save_or_remove(path: Path, data: dict[str, Any]) -> None:
    """After removing our entries: write what is left, or remove the file when nothing is (see
    `save_text_or_remove`)."""
    if data or path.is_symlink():  # a link stays, and what it points at loses our entries
        save(path, data)
    else:
        remove_emptied(path)


def save_text_or_remove(path: Path, text: str) -> None:
    if text.strip() or path.is_symlink():
        save_text(path, text)
    else:
        remove_emptied(path)


def remove_emptied(path: Path) -> None:
    """Remove a settings file our removal left empty, and its folder if that is empty now: install made them
    (or they held nothing), and a `{}` left behind is an untracked file the person never had."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    try:
        path.parent.rmdir()  # only ever an empty folder (`.claude/`, `.codex/`): a project or home holds more
    except OSError:
        pass


def merge_entries(data: dict[str, Any], wanted: dict[str, dict[str, Any]], same: Callable[[dict], bool] | None = None,
                  key: str = "hooks") -> tuple[dict[str, Any], list[str]]:
    """`data` with each event's handler present (in a matcher group of its own, matching every tool), and
    the events where one was added. A handler already there (same command) is left as it is; `same` also
    recognises an older handler of ours to be replaced."""
    merged = json.loads(json.dumps(data))
    hooks = merged.get(key)
    if hooks is None:
        hooks = merged[key] = {}
    if not isinstance(hooks, dict):
        raise UserError(f"`{key}` in the settings is not an object; nothing was changed", code="invalid_settings")
    added = []
    for event, handler in wanted.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UserError(f"`{key}.{event}` in the settings is not a list; nothing was changed",
                            code="invalid_settings")
        if not all(isinstance(g, dict) and isinstance(g.get("hooks", []), list) for g in groups):
            # the agent CLI may drop a settings file it cannot read, with our hooks in it: the wall would
            # be gone while install said it was up
            raise UserError(f"`{key}.{event}` in the settings holds a matcher group that is not an object with "
                            f"a `hooks` list; nothing was changed", code="invalid_settings",
                            hint="fix the file by hand, then run the command again")
        present = [h for g in groups for h in g.get("hooks") or [] if isinstance(h, dict)]
        if any(h.get("command") == handler["command"] for h in present):
            continue
        if same is not None and any(same(h) for h in present):
            groups[:] = _without(groups, same)
        groups.append({"hooks": [handler]})
        added.append(event)
    return merged, added


def remove_entries(data: dict[str, Any], ours: Callable[[dict], bool], key: str = "hooks") \
        -> tuple[dict[str, Any], list[str]]:
    """`data` without our handlers (and without the groups, events and table they leave empty), and the
    events they were removed from."""
    merged = json.loads(json.dumps(data))
    hooks = merged.get(key)
    if not isinstance(hooks, dict):
        return merged, []
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = _without(groups, ours)
        if kept != groups:
            removed.append(event)
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if not hooks and removed:
        del merged[key]
    return merged, removed


def _without(groups: list, ours: Callable[[dict], bool]) -> list:
    kept = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        remaining = [h for h in group["hooks"] if not ours(h)]
        if len(remaining) == len(group["hooks"]):
            kept.append(group)
        elif remaining:
            kept.append({**group, "hooks": remaining})
    return kept


# -- install, uninstall, inspect ----------------------------------------------------------------------------
def install(path: Path, cli: str, prefix: str, *, dry_run: bool = False) -> dict[str, Any]:
    check_prefix(prefix)
    before = load(path)
    after, added = merge_entries(before, handlers(cli, prefix), same=is_ours)
    if added and not dry_run:
        save(path, after)
    return {"cli": cli, "settings": str(path), "added": added, "changed": bool(added), "dry_run": dry_run,
            "command": f"{prefix} hook {cli} EVENT"}


def uninstall(path: Path, cli: str, *, dry_run: bool = False) -> dict[str, Any]:
    before = load(path)
    after, removed = remove_entries(before, is_ours)
    if removed and not dry_run:
        save_or_remove(path, after)
    return {"cli": cli, "settings": str(path), "removed": removed, "changed": bool(removed), "dry_run": dry_run}


def inspect(path: Path, cli: str) -> dict[str, Any]:
    """Which of our events a settings file hooks, which are missing, the commands it runs for them, and what
    makes a hook that is there not hold: a handler that runs another event or CLI than the one it sits under
    (`misplaced`), a matcher that lets some tools past it (`narrowed`), or hooks switched off (`disabled`)."""
    data = load(path)
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    found: dict[str, list[str]] = {}
    misplaced: list[str] = []
    narrowed: list[str] = []
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            for handler in (group.get("hooks") or []) if isinstance(group, dict) else []:
                match = OURS.search(handler["command"]) if is_ours(handler) else None
                if match is None:
                    continue
                runs_cli, runs_event = match.group(2), match.group(3)
                if runs_cli != cli or event not in (runs_event, GEMINI_ALIASES.get(runs_event) if cli == "gemini"
                                                    else None):
                    misplaced.append(f"{event} runs `hook {runs_cli} {runs_event}`")
                    continue
                found.setdefault(event, []).append(handler["command"])
                if group.get("matcher") not in EVERY_TOOL:
                    narrowed.append(f"{event} (matcher {group.get('matcher')!r})")
    expected = spec(cli).events
    return {"cli": cli, "settings": str(path), "exists": path.exists(), "hooked": sorted(found),
            "missing": [e for e in expected if e not in found], "commands": found, "misplaced": misplaced,
            "narrowed": narrowed, "disabled": _disabled(cli, data)}


def _disabled(cli: str, data: dict[str, Any]) -> str | None:
    """The setting that switches every hook of this file's CLI off, if it is set."""
    if cli == "claude" and data.get("disableAllHooks") is True:
        return "disableAllHooks is true"
    config = data.get("hooksConfig")
    if cli == "gemini" and isinstance(config, dict) and config.get("enabled") is False:
        return "hooksConfig.enabled is false"
    return None
