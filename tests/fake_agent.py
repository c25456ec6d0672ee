"""A fake agent CLI that behaves like Claude Code in `-p` mode, for the spawn and pipeline tests: never a
real model. `fake_agent.py SCRIPT PROMPT`:

- it reads the hooks installed in its working directory (`.claude/settings.local.json`, as Claude Code
  does) and runs each handler command with the documented JSON payload on stdin, around every simulated
  tool call: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse / PostToolUseFailure, Stop (again while
  a Stop hook blocks, with `stop_hook_active`), SessionEnd;
- it picks its actions from SCRIPT (JSON) by the `Stage: NAME` line of its prompt (`NAME@LEAF` first, LEAF
  being the last part of its lane's name; `default` otherwise; a fix stage takes the list for its attempt),
  edits files, runs commands, writes a transcript with usage;
- it appends what it did and what the hooks answered to the journal named in SCRIPT, one JSON per line.

Actions: {"write": PATH, "content": TEXT} (`{lane_leaf}` in PATH: the last part of the lane's name),
{"read": PATH}, {"bash": COMMAND}, {"todo": [STEP, ...]}, {"usage": {"input": N, "output": N}},
{"wait_for_message": SECONDS}, {"await_file": PATH}, {"rendezvous": {"file": PATH, "count": N, "timeout":
SECONDS}}, {"hang": {"ignore_term": BOOL, "child": BOOL, "escape": BOOL}}, {"exit": CODE}.
`escape` leaves two processes that left the agent's process group: a child in a session of its own
(`setsid`), and a daemon (double fork, `setsid`, an empty environment) whose parent has exited.
A resumed stage (`Stage: NAME (resumed)`) plays `NAME_resumed` when the script has it."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

CWD = Path.cwd()
RUN = os.environ.get("GIT_LANES_RUN", "")
SESSION = str(uuid.uuid4())
counter = {"tool": 0, "message": 0}


def whole_lines(path: Path) -> list[str]:
    """The lines of a file the agents append to under an exclusive lock, read under a shared one: read
    without it, a line another agent was writing could come half (a write crossing a page boundary)."""
    with open(path) as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        return handle.read().splitlines()


def load_hooks() -> dict[str, list[str]]:
    commands: dict[str, list[str]] = {}
    for name in (".claude/settings.json", ".claude/settings.local.json"):
        path = CWD / name
        if not path.exists():
            continue
        for event, groups in json.loads(path.read_text()).get("hooks", {}).items():
            for group in groups:
                for handler in group.get("hooks", []):
                    if handler.get("type") == "command" and handler["command"] not in commands.get(event, []):
                        commands.setdefault(event, []).append(handler["command"])
    return commands


class Agent:
    def __init__(self, script: dict, prompt: str) -> None:
        self.script, self.prompt = script, prompt
        self.hooks = load_hooks()
        match = re.search(r"^Stage: (\w+)( \(resumed\))?", prompt, re.M)
        self.stage = match.group(1) if match else "default"
        self.resumed = bool(match and match.group(2))
        attempt = re.search(r"Fix attempt (\d+)", prompt)
        self.attempt = int(attempt.group(1)) if attempt else 0
        self.transcript = Path(script["transcripts"]) / f"{SESSION}.jsonl"
        self.transcript.parent.mkdir(parents=True, exist_ok=True)
        self.transcript.touch()

    def journal(self, event: str, **data) -> None:
        line = json.dumps({"run": RUN, "stage": self.stage, "attempt": self.attempt, "event": event, **data})
        with open(self.script["journal"], "a") as out:
            fcntl.flock(out, fcntl.LOCK_EX)
            out.write(line + "\n")

    def hook(self, event: str, **fields) -> dict:
        payload = {"session_id": SESSION, "transcript_path": str(self.transcript), "cwd": str(CWD),
                   "permission_mode": "acceptEdits", "hook_event_name": event, **fields}
        merged: dict = {}
        for command in self.hooks.get(event, []):
            proc = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True,
                                  cwd=CWD)
            if proc.returncode == 2:
                merged = {"decision": "block", "reason": proc.stderr.strip()}
            elif proc.stdout.strip().startswith("{"):
                merged |= json.loads(proc.stdout)
        return merged

    def context(self, answer: dict) -> str | None:
        return (answer.get("hookSpecificOutput") or {}).get("additionalContext")

    def tool(self, name: str, tool_input: dict, act) -> None:
        counter["tool"] += 1
        tool_id = f"toolu_{counter['tool']:03d}_{SESSION[:6]}"
        answer = self.hook("PreToolUse", tool_name=name, tool_input=tool_input, tool_use_id=tool_id)
        specific = answer.get("hookSpecificOutput") or {}
        told = self.context(answer)
        if told and "git lanes tell" in told:
            self.journal("told", via="PreToolUse", text=told)
        if specific.get("permissionDecision") == "deny":
            self.journal("denied", tool=name, input=tool_input, reason=specific.get("permissionDecisionReason"))
            return
        self.journal("tool", tool=name, input=tool_input, context=told)
        error = act()
        if error:
            self.hook("PostToolUseFailure", tool_name=name, tool_input=tool_input, tool_use_id=tool_id, error=error)
        else:
            after = self.hook("PostToolUse", tool_name=name, tool_input=tool_input, tool_use_id=tool_id,
                              tool_response={"success": True})
            if self.context(after) and "git lanes tell" in self.context(after):
                self.journal("told", via="PostToolUse", text=self.context(after))

    def usage(self, amounts: dict) -> None:
        counter["message"] += 1
        message = {"id": f"msg_{SESSION[:8]}_{counter['message']}", "type": "message", "role": "assistant",
                   "model": amounts.get("model", "claude-sonnet-5"), "content": [{"type": "text", "text": "…"}],
                   "usage": {"input_tokens": amounts.get("input", 0), "output_tokens": amounts.get("output", 0),
                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        with self.transcript.open("a") as out:
            out.write(json.dumps({"type": "assistant", "requestId": f"req_{counter['message']}",
                                  "uuid": str(uuid.uuid4()), "message": message}) + "\n")

    def actions(self) -> list:
        stages = self.script.get("stages", {})
        leaf = os.environ.get("GIT_LANES_LANE", "").rsplit("/", 1)[-1]
        chosen = stages.get(f"{self.stage}@{leaf}", stages.get(self.stage, stages.get("default", [])))
        if self.resumed and f"{self.stage}_resumed" in stages:
            chosen = stages[f"{self.stage}_resumed"]
        if self.stage == "fix" and chosen and isinstance(chosen[0], list):
            chosen = chosen[min(self.attempt, len(chosen)) - 1]
        return chosen

    def act(self, action: dict) -> int | None:
        if "write" in action:
            leaf = os.environ.get("GIT_LANES_LANE", "").rsplit("/", 1)[-1]
            path = CWD / action["write"].replace("{lane_leaf}", leaf)

            def write() -> None:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(action.get("content", ""))
            self.tool("Write", {"file_path": str(path), "content": action.get("content", "")}, write)
        elif "read" in action:
            self.tool("Read", {"file_path": str(CWD / action["read"])}, lambda: None)
        elif "bash" in action:
            def bash() -> str | None:
                proc = subprocess.run(action["bash"], shell=True, cwd=CWD, capture_output=True, text=True)
                return None if proc.returncode == 0 else f"Exit code {proc.returncode}\n{proc.stderr}"
            self.tool("Bash", {"command": action["bash"], "description": "run it"}, bash)
        elif "todo" in action:
            todos = [{"content": step, "status": "pending", "activeForm": step} for step in action["todo"]]
            self.tool("TodoWrite", {"todos": todos}, lambda: None)
        elif "usage" in action:
            self.usage(action["usage"])
        elif "wait_for_message" in action:
            self.wait_for_message(float(action["wait_for_message"]))
        elif "rendezvous" in action:
            self.rendezvous(action["rendezvous"])
        elif "hang" in action:
            self.hang(action["hang"])
        elif "await_file" in action:
            self.journal("awaiting", file=action["await_file"])
            deadline = time.monotonic() + 120  # a safeguard only
            while not Path(action["await_file"]).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        elif "exit" in action:
            return int(action["exit"])
        return None

    def wait_for_message(self, seconds: float) -> None:
        """Poll with cheap reads until a told message arrives through the hooks (a safeguard limit only)."""
        self.journal("waiting")
        deadline = time.monotonic() + seconds
        before = self.count_told()
        while time.monotonic() < deadline and self.count_told() == before:
            self.tool("Read", {"file_path": str(CWD / "README.md")}, lambda: None)
            time.sleep(0.1)

    def count_told(self) -> int:
        lines = whole_lines(Path(self.script["journal"]))
        return sum(1 for line in lines if json.loads(line)["event"] == "told" and json.loads(line)["run"] == RUN)

    def rendezvous(self, spec: dict) -> None:
        """Say we run, then wait until `count` agents said so (bounded by `timeout`, a safeguard)."""
        path = Path(spec["file"])
        with open(path, "a") as out:
            fcntl.flock(out, fcntl.LOCK_EX)
            out.write(f"start {RUN}\n")
        deadline = time.monotonic() + float(spec.get("timeout", 60))
        while time.monotonic() < deadline and sum(line.startswith("start ") for line in whole_lines(path)) < int(spec["count"]):
            time.sleep(0.05)
        self.end_marker = path

    def hang(self, spec: dict) -> None:
        if spec.get("child"):
            subprocess.Popen(["sleep", "1000"])  # a child in our process group, left running
        escaped = self.escape() if spec.get("escape") else {}
        if spec.get("ignore_term"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        self.journal("hanging", pid=os.getpid(), **escaped)
        while True:
            time.sleep(1)

    def escape(self) -> dict:
        """Leave processes outside our process group, as a server an agent starts with `setsid` or `nohup
        setsid` does: `git lanes stop` must end them all the same."""
        setsid = subprocess.Popen(["sleep", "1000"], start_new_session=True)
        daemon = subprocess.run(
            [sys.executable, "-c", "import os, sys, time\n"
             "os.setsid()\n"
             "if os.fork():\n    os._exit(0)\n"  # the parent goes: the daemon is an orphan
             "sys.stdout.write(str(os.getpid()) + '\\n'); sys.stdout.flush(); os.close(1)\n"
             "while True:\n    time.sleep(1)\n"],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, stdout=subprocess.PIPE, text=True, check=True)
        return {"setsid": setsid.pid, "daemon": int(daemon.stdout.strip())}

    def main(self) -> int:
        self.end_marker: Path | None = None
        self.mark("start")
        print(f"fake agent: run {RUN[:8]} stage {self.stage}{' (resumed)' if self.resumed else ''}", flush=True)
        started = self.hook("SessionStart", source="startup", model="claude-sonnet-5")
        env = {k: os.environ.get(k) for k in ("GIT_LANES_AGENT", "GIT_LANES_RUN", "GIT_LANES_LANE", "PORT")}
        self.journal("session_start", prompt=self.prompt, context=self.context(started), env=env, cwd=str(CWD))
        submitted = self.hook("UserPromptSubmit", prompt=self.prompt)
        if self.context(submitted):
            self.journal("told", via="UserPromptSubmit", text=self.context(submitted))
        code = 0
        for action in self.actions():
            result = self.act(action)
            if result is not None:
                code = result
                break
        active = False
        for _ in range(4):
            answer = self.hook("Stop", stop_hook_active=active, last_assistant_message="done")
            if answer.get("decision") != "block":
                break
            self.journal("told", via="Stop", text=answer.get("reason"))
            self.usage({"input": 1, "output": 1})
            active = True
        self.hook("SessionEnd", reason="other")
        if self.end_marker is not None:
            with open(self.end_marker, "a") as out:
                fcntl.flock(out, fcntl.LOCK_EX)
                out.write(f"end {RUN}\n")
        self.journal("exit", code=code)
        self.mark("end")
        return code

    def mark(self, what: str) -> None:
        """With `sessions` in SCRIPT: one line per session start and end, in order, to count how many ran at once."""
        if self.script.get("sessions"):
            with open(self.script["sessions"], "a") as out:
                fcntl.flock(out, fcntl.LOCK_EX)
                out.write(f"{what} {RUN}\n")


if __name__ == "__main__":
    sys.exit(Agent(json.loads(Path(sys.argv[1]).read_text()), sys.argv[2]).main())
