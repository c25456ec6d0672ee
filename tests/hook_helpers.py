"""Driving the agent hooks as the agent CLIs do: a real `git lanes hook CLI EVENT` process per call, the
payload shaped as each CLI's documentation shows it, on stdin."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import Result, git, run_cli, workspace


def hook(cli: str, event: str, payload: dict | str | bytes, *, env: dict | None = None, timeout: float = 120) \
        -> Result:
    data = payload if isinstance(payload, bytes) else (payload if isinstance(payload, str) else json.dumps(payload)).encode()
    proc = subprocess.run([sys.executable, "-m", "git_lanes", "hook", cli, event], input=data, capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def hook_in_process(cli: str, event: str, payload: dict | str | bytes, *, env: dict | None = None) -> Result:
    """What `hook` answers, from the function the hook process runs (`git_lanes.hooks.respond`) called in this
    process: for tests that send dozens of calls, where a process each costs seconds on a busy machine. Such
    a test sends its first call through `hook` too, so the process path is proven alongside."""
    from git_lanes.hooks import CLIS, respond

    raw = payload if isinstance(payload, bytes) else (payload if isinstance(payload, str) else json.dumps(payload)).encode()
    answer = respond(importlib.import_module(CLIS[cli]), event, raw, {**os.environ, **(env or {})}, time.time())
    return Result(answer.code, answer.stdout + "\n" if answer.stdout else "", answer.stderr)


def claude(event: str, cwd: Path, session: str = "sess-1", **fields) -> dict:
    """A Claude Code payload as its hooks reference shows it."""
    return {"session_id": session, "transcript_path": str(cwd / "transcript.jsonl"), "cwd": str(cwd),
            "permission_mode": "default", "hook_event_name": event, **fields}


def bash(cwd: Path, command: str, tool_use_id: str = "toolu_01ABC123", session: str = "sess-1") -> dict:
    return claude("PreToolUse", cwd, session, tool_name="Bash",
                  tool_input={"command": command, "description": "run it", "timeout": 120000,
                              "run_in_background": False}, tool_use_id=tool_use_id)


def write(cwd: Path, path: Path, tool_use_id: str = "toolu_01WRITE", session: str = "sess-1") -> dict:
    return claude("PreToolUse", cwd, session, tool_name="Write",
                  tool_input={"file_path": str(path), "content": "file content"}, tool_use_id=tool_use_id)


def decision(result: Result) -> tuple[str, str | None]:
    """('allow' | 'deny', reason) from a Claude/Codex PreToolUse answer; asserts the protocol was kept."""
    assert result.code == 0, result.err
    if not result.out.strip():
        return "allow", None
    out = json.loads(result.out)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    return out.get("permissionDecision", "allow"), out.get("permissionDecisionReason")


def lane(repo: Path, name: str = "feature") -> Path:
    assert run_cli("lane", "create", name, cwd=repo).code == 0
    return workspace(repo, name)


def set_policy(repo: Path, text: str) -> None:
    """Commit `.lanes.toml` on the trunk (the policy is read from the trunk's committed head)."""
    (repo / ".lanes.toml").write_text(text)
    git("add", ".lanes.toml", cwd=repo)
    git("commit", "-qm", "policy", cwd=repo)


def run_id(cwd: Path) -> str:
    rows = run_cli("run", "list", "--json", cwd=cwd).json
    assert len(rows) == 1, rows
    return rows[0]["id"]
