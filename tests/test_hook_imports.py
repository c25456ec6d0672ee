"""The hook path runs on every agent tool call: it must load neither pygit2 nor click, and the shell parser
only when a shell line arrives (DESIGN.md §5, §6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hook_helpers import bash, claude, lane, write


def imported(args: list[str], payload: dict, cwd) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "git_lanes", *args], input=json.dumps(payload),
                          capture_output=True, text=True, cwd=cwd, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    names = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "git_lanes.hooks" in names, "the probe saw no import at all"
    return names


@pytest.mark.parametrize("cli,event,payload", [
    ("claude", "PreToolUse", lambda ws: write(ws, ws / "a.py")),
    ("claude", "PreToolUse", lambda ws: bash(ws, "git status | head")),
    ("claude", "PostToolUse", lambda ws: claude("PostToolUse", ws, tool_name="Read", tool_use_id="t",
                                                tool_input={"file_path": str(ws / "a")}, tool_response={})),
    ("claude", "UserPromptSubmit", lambda ws: claude("UserPromptSubmit", ws, prompt="hi")),
    ("gemini", "BeforeTool", lambda ws: {"session_id": "g", "cwd": str(ws), "hook_event_name": "BeforeTool",
                                         "tool_name": "read_file", "tool_input": {"file_path": "a"}}),
])
def test_the_hook_path_loads_neither_pygit2_nor_click(repo, cli, event, payload):
    ws = lane(repo)
    names = imported(["hook", cli, event], payload(ws), ws)
    heavy = sorted(n for n in names if n.split(".")[0] in ("pygit2", "click", "dulwich")
                   or n.startswith(("git_lanes.api", "git_lanes.cli", "git_lanes.store.repo", "git_lanes.ledger")))
    assert heavy == []


def test_the_shell_parser_loads_only_for_shell_lines(repo):
    ws = lane(repo)
    assert "tree_sitter" not in imported(["hook", "claude", "PreToolUse"], write(ws, ws / "a.py"), ws)
    assert "tree_sitter" in imported(["hook", "claude", "PreToolUse"], bash(ws, "ls"), ws)
