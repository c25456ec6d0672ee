"""Scene: the wall around an agent. An agent's tool calls pass through `git lanes hook claude PreToolUse` as
Claude Code would send them: a denied command hidden in a shell line is blocked, a write in the read-only
plan phase is blocked, the step budget runs out and says what to do, and a session killed mid-write is
resumed from a briefing that names the call in flight and the file it left changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from git_lanes.demo.session import DemoSession

LANE = "demo/wall"
POLICY = """[budget]
phases = { plan = 3, execute = 4 }
"""


def play(s: DemoSession) -> None:
    s.heading("The wall around every agent: hooks admit, meter and record each tool call")
    config = s.root / ".lanes.toml"
    s.write(config, (config.read_text() + "\n" if config.exists() else "") + POLICY)
    held = s.lanes("commit", "-m", "Agent policy: small budgets for the demo", "--auto-accept", agent="lead")
    s.lanes("accept", held["id"])  # .lanes.toml is protected: only an explicit accept lands it
    s.say("  policy committed on the trunk (.lanes.toml): plan 3 step units, execute 4, Bash weighs 1, Write 2")
    s.lanes("lane", "create", LANE)
    workspace = s.root / ".lanes" / "workspaces" / LANE
    run = s.lanes("run", "start", "--agent", "coder-wall", "--goal", "Add a greeting", cwd=workspace)["id"]
    env = {"GIT_LANES_RUN": run}
    s.say(f"$ export GIT_LANES_RUN=$(git lanes run start --agent coder-wall --goal 'Add a greeting')  # {run[:8]}")

    s.heading("A denied command hidden in a shell line is blocked")
    _call(s, workspace, env, "Bash", {"command": "cd build && rm -rf ./*"}, "toolu_1")
    s.heading("The plan phase is read-only")
    _call(s, workspace, env, "Write", {"file_path": str(workspace / "greet.py"), "content": "x"}, "toolu_2")

    s.heading("The budget runs out, and the block says what to do")
    for number in range(3, 7):
        _call(s, workspace, env, "Bash", {"command": "git status"}, f"toolu_{number}")
    _call(s, workspace, env, "Bash", {"command": f"git lanes run phase {run[:8]} execute"}, "toolu_7")
    s.show("run", "phase", run[:8], "execute")

    s.heading("The session is killed in the middle of a write; a new one starts from a briefing")
    target = workspace / "greet.py"
    _call(s, workspace, env, "Write", {"file_path": str(target), "content": "print('hello')\n"}, "toolu_8",
          completes=False)
    s.write(target, "print('hello')\n")
    s.say("  (the file landed on disk; the session died before PostToolUse)")
    answer = _hook(s, workspace, env, "SessionStart", {"source": "resume"}, session="demo-session-2")
    briefing = json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    for line in briefing.splitlines():
        s.say(f"  | {line}")
    s.show("run", "show", run[:8])
    s.say(f"$ git log --oneline refs/lanes/runs/{run[:8]}… | head -5")
    for line in s.git("log", "--oneline", f"refs/lanes/runs/{run}").splitlines()[:5]:
        s.say(f"  {line}")
    shown = s.lanes("run", "show", run)
    s.results["control"] = {"run": run, "blocked": shown["blocked"], "calls": shown["calls"],
                            "briefed_in_flight": "toolu_8" in briefing}


def _call(s: DemoSession, workspace: Path, env: dict, tool: str, tool_input: dict, tool_use_id: str,
          completes: bool = True) -> None:
    """One tool call as Claude Code makes it: PreToolUse, and PostToolUse once an admitted tool ran."""
    call = {"tool_name": tool, "tool_input": tool_input, "tool_use_id": tool_use_id}
    answer = _hook(s, workspace, env, "PreToolUse", call)
    admitted = '"deny"' not in answer
    if admitted and completes:
        _hook(s, workspace, env, "PostToolUse", {**call, "tool_response": {"success": True}, "duration_ms": 40})
    shown = tool_input.get("command") or tool_input.get("file_path", "").replace(str(s.root) + "/", "")
    if not answer.strip():
        s.say(f"  {tool} {shown}: allowed")
        return
    output = json.loads(answer)["hookSpecificOutput"]
    if output.get("permissionDecision") == "deny":
        s.say(f"  {tool} {shown}: DENY — {output['permissionDecisionReason']}")
    else:
        s.say(f"  {tool} {shown}: allowed (the model is told: {output.get('additionalContext')})")


def _hook(s: DemoSession, workspace: Path, env: dict, event: str, fields: dict, session: str = "demo-session-1") -> str:
    payload = {"session_id": session, "transcript_path": str(s.root / "transcript.jsonl"), "cwd": str(workspace),
               "permission_mode": "default", "hook_event_name": event, **fields}
    proc = subprocess.run(s.command("hook", "claude", event), input=json.dumps(payload), capture_output=True,
                          text=True, cwd=workspace, env={**s.env, **env})
    if proc.returncode != 0:
        raise RuntimeError(f"demo hook failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout
