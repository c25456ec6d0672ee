"""The hook path runs on every agent tool call: it must load neither pygit2 nor click (nor `dataclasses`, which
loads `inspect`: its records are `Frozen`), and the shell parser only when a shell line arrives (DESIGN.md §5,
§6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hook_helpers import bash, claude, lane, set_policy, write


# Runs `python -m git_lanes ARGS` and lists every module loaded when the process exits: sys.modules, not
# `-X importtime`, which misses a module loaded other than by an import statement (the shell parser's binding).
PROBE = """import atexit, runpy, sys
atexit.register(lambda: sys.stderr.write("\\nloaded: " + " ".join(sorted(sys.modules)) + "\\n"))
sys.argv[0] = "git_lanes"
runpy.run_module("git_lanes", run_name="__main__", alter_sys=True)
"""


def imported(args: list[str], payload: dict, cwd) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], input=json.dumps(payload),
                          capture_output=True, text=True, cwd=cwd, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    line = [line for line in proc.stderr.splitlines() if line.startswith("loaded: ")]
    names = set(line[-1].split()[1:]) if line else set()
    assert "git_lanes.hooks" in names, "the probe saw no import at all"
    return names


def packages(names: set[str]) -> set[str]:
    return {name.split(".")[0] for name in names}


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
    heavy = sorted(n for n in names if n.split(".")[0] in ("pygit2", "click", "dulwich", "dataclasses", "inspect")
                   or n.startswith(("git_lanes.api", "git_lanes.cli", "git_lanes.store.repo", "git_lanes.ledger")))
    assert heavy == []


def test_the_shell_parser_loads_only_for_shell_lines(repo):
    ws = lane(repo)
    assert "tree_sitter" not in packages(imported(["hook", "claude", "PreToolUse"], write(ws, ws / "a.py"), ws))
    assert "tree_sitter" in packages(imported(["hook", "claude", "PreToolUse"], bash(ws, "ls"), ws))


def test_the_hook_path_leaves_out_what_a_call_does_not_need(repo):
    """Loaded by earlier versions on every call: threading (for the deadline's timer), hashlib (OpenSSL, for
    one SHA-1), importlib.resources (tree-sitter-bash's queries, never used), typing (annotations only) and
    tomli (the policy is parsed once per version of it, then read as JSON)."""
    ws = lane(repo)
    set_policy(repo, '[commands]\ndeny = ["curl *"]\n')
    first = imported(["hook", "claude", "PreToolUse"], bash(ws, "ls", "t1"), ws)
    assert {"tomli", "tomllib"} & first  # the probe sees the parser where the policy is parsed
    later = imported(["hook", "claude", "PreToolUse"], bash(ws, "git status | head", "t2"), ws)
    assert {"threading", "hashlib", "importlib.resources", "typing", "tomllib", "tomli"} & later == set()
