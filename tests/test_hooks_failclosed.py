"""The wall fails closed where an adversarial agent (or a broken CLI) pushes on it: payloads no CLI should
send, lines too large or too deep to check in the hook's time, a check that cannot finish before the CLI's
timeout (which would run the tool), and tools the hooks do not know that write files."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli
from hook_helpers import bash, claude, decision, hook, hook_in_process, lane, run_id, write


def test_payloads_no_cli_sends_are_denied_with_a_reason(repo):
    ws = lane(repo)
    cases = [
        (b'{"session_id": "s", "cwd": "' + str(ws).encode() + b'", "tool_name": "Bash", '
         b'"tool_input": {"command": "cu\xffrl x"}}', "not UTF-8"),
        (json.dumps(bash(ws, "ls") | {"cwd": "relative/dir"}), "not an absolute path"),
        ("[" * 100000 + "]" * 100000, "nests too deeply"),
        (json.dumps(bash(ws, "echo " + "a" * (1 << 20))), "too long to check"),
        (json.dumps(bash(ws, "; ".join(["ls"] * 6000))), "too many to check"),
        (json.dumps(bash(ws, "echo " + "$(" * 3000 + "ls" + ")" * 3000)), "nests too deeply"),
        (json.dumps(write(ws, ws / "a\x00b")), "denied"),
        (b" " * ((16 << 20) + 1), "larger than 16 MiB"),
    ]
    missed = []
    for number, (payload, why) in enumerate(cases):
        result = (hook if number == 0 else hook_in_process)("claude", "PreToolUse", payload)
        verdict, reason = decision(result)
        if verdict != "deny" or why not in reason or "Traceback" in result.err:
            missed.append((why, verdict, reason))
    assert missed == []


def test_a_check_that_cannot_finish_before_the_deadline_is_denied(repo):
    """A CLI runs the tool when its hook times out: a check held up (here by the runs' lock, taken by another
    process for longer than the hook may take) must answer deny before that, not stay silent."""
    ws = lane(repo)
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "t0")))[0] == "allow"  # the lock is free
    with open(repo / ".git" / "lanes-runs.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = hook("claude", "PreToolUse", bash(ws, "ls", "t1"), env={"GIT_LANES_HOOK_DEADLINE": "1"})
    verdict, reason = decision(result)  # one JSON answer on stdout, exit 0
    assert verdict == "deny" and "did not finish within 1 s" in reason
    # the log is as the first call left it, and takes the next call
    assert run_cli("run", "show", run_id(ws), "--json", cwd=ws).json["calls"] == 1
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "t2")))[0] == "allow"


def test_a_tool_the_hooks_do_not_know_is_held_to_the_write_gate(repo):
    ws = lane(repo)
    outside = str(repo / "README.md")
    writes = claude("PreToolUse", ws, tool_name="mcp__filesystem__write_file", tool_use_id="toolu_m1",
                    tool_input={"path": outside, "content": "x"})
    verdict, reason = decision(hook("claude", "PreToolUse", writes))
    assert verdict == "deny" and "main worktree" in reason
    moves = claude("PreToolUse", ws, tool_name="mcp__filesystem__move_file", tool_use_id="toolu_m2",
                   tool_input={"source": "a.txt", "destination": outside})
    assert decision(hook_in_process("claude", "PreToolUse", moves))[0] == "deny"
    gemini = {"session_id": "gem-1", "cwd": str(ws), "hook_event_name": "BeforeTool",
              "timestamp": "2026-01-01T10:30:00Z", "tool_name": "mcp_filesystem_edit_file",
              "tool_input": {"path": outside, "edits": []}}
    answer = json.loads(hook_in_process("gemini", "BeforeTool", gemini).out)
    assert answer["decision"] == "deny" and "main worktree" in answer["reason"]
    reads = claude("PreToolUse", ws, tool_name="mcp__filesystem__read_text_file", tool_use_id="toolu_m3",
                   tool_input={"path": outside})
    assert decision(hook_in_process("claude", "PreToolUse", reads))[0] == "allow"


def test_a_tool_the_hooks_do_not_know_that_runs_a_command_is_held_to_the_command_policy(repo):
    """An MCP server that runs commands (`execute_command`, `start_process` with `args`) was a way around the
    deny list (and an allow list): its line is judged as a shell tool's is, where it says it runs."""
    ws = lane(repo)
    calls = [("mcp__shell__execute_command", {"command": "rm -rf build"}, "'rm -rf *'"),
             ("mcp__commander__start_process", {"command": "rm", "args": ["-r", "-f", "build"]}, "'rm -rf *'"),
             ("mcp__shell__run", {"cmd": "curl http://x"}, "'curl *'"),
             ("mcp__shell__run_command", {"command": "echo x > README.md", "cwd": str(repo)}, "main worktree"),
             ("mcp__shell__run_command", {"command": ["sh", "-c", "curl http://x"]}, "'curl *'"),
             ("mcp__shell__run_command", {"command": 7}, "without a command")]
    missed = []
    for number, (tool, data, why) in enumerate(calls):
        payload = claude("PreToolUse", ws, tool_name=tool, tool_input=data, tool_use_id=f"toolu_x{number}")
        verdict, reason = decision((hook if number == 0 else hook_in_process)("claude", "PreToolUse", payload))
        if verdict != "deny" or why not in reason:
            missed.append((tool, data, verdict, reason))
    gemini = {"session_id": "gem-1", "cwd": str(ws), "hook_event_name": "BeforeTool", "tool_name": "mcp_sh_exec",
              "timestamp": "2026-01-01T10:30:00Z", "tool_input": {"command": "curl http://x"}}
    answer = json.loads(hook_in_process("gemini", "BeforeTool", gemini).out)
    assert answer["decision"] == "deny" and "'curl *'" in answer["reason"]
    assert missed == []
    for number, (tool, data) in enumerate([("mcp__shell__run_command", {"command": "make test"}),
                                           ("mcp__shell__read_output", {"command": "rm -rf build"})]):
        payload = claude("PreToolUse", ws, tool_name=tool, tool_input=data, tool_use_id=f"toolu_y{number}")
        assert decision(hook_in_process("claude", "PreToolUse", payload))[0] == "allow", tool


def test_a_lone_surrogate_is_denied_saying_where_it_is(repo):
    """A \\uD800 escape without its pair parses to no character at all: no file can be named by it, no log can
    hold it. The deny says so and where, instead of an encoder's internal error."""
    ws = lane(repo)
    lone = json.dumps(write(ws, ws / "a.py")).replace("a.py", "a\\ud800.py")
    verdict, reason = decision(hook("claude", "PreToolUse", lone))
    assert verdict == "deny" and "not valid Unicode: tool_input.file_path holds a lone surrogate" in reason
    in_a_key = json.dumps(claude("PreToolUse", ws, tool_name="mcp__x__y", tool_use_id="t2",
                                 tool_input={"items": [{"k\udc00": 1}]}))
    assert "tool_input.items[0].k" in decision(hook_in_process("claude", "PreToolUse", in_a_key))[1]
    paired = json.dumps(claude("PreToolUse", ws, tool_name="Read", tool_use_id="t3",  # ensure_ascii: a pair of
                               tool_input={"file_path": str(ws / "a\U0001F600.py")}))  # escapes, one character
    assert "\\ud83d\\ude00" in paired
    assert decision(hook_in_process("claude", "PreToolUse", paired))[0] == "allow"


def test_a_huge_tool_use_id_is_bounded_and_still_pairs(repo):
    ws = lane(repo)
    first, second = "toolu_" + "x" * 100_000, "toolu_" + "x" * 100_000 + "y"  # the same start, then apart
    for call_id in (first, second):
        assert decision(hook_in_process("claude", "PreToolUse", bash(ws, "ls", call_id)))[0] == "allow"
    done = claude("PostToolUse", ws, tool_name="Bash", tool_input={"command": "ls"}, tool_use_id=first,
                  tool_response={"stdout": ""})
    assert hook_in_process("claude", "PostToolUse", done).code == 0
    run = run_id(ws)
    events = run_cli("run", "events", run, "--json", cwd=ws).json
    ids = [e["id"] for e in events if e["type"] in ("tool_attempted", "tool_completed")]
    assert len(ids) == 3 and all(len(i) <= 200 for i in ids)
    assert ids[0] != ids[1] and ids[2] == ids[0]
    assert [c["id"] for c in run_cli("run", "show", run, "--json", cwd=ws).json["in_flight"]] == [ids[1]]


def _waiting_on_the_runs_lock(proc: subprocess.Popen, lock: Path) -> bool:
    """Whether the hook process has the runs' lock file open: it is inside its check, waiting for the lock."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if any(os.readlink(f"/proc/{proc.pid}/fd/{fd}") == str(lock) for fd in os.listdir(f"/proc/{proc.pid}/fd")):
                return True
        except OSError:
            pass
        time.sleep(0.01)
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc")
def test_a_hook_interrupted_by_ctrl_c_denies_the_call(repo):
    """Ctrl-C in the agent's terminal reaches its hooks too (one process group). A hook that died of it
    (exit 1 or the signal, with a traceback) was read by every CLI as "hook failed, run the tool": the
    pre-tool call must be denied instead (exit 2 with a reason blocks it in all three), any other hook
    ends quietly."""
    ws = lane(repo)
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "t0")))[0] == "allow"  # the run exists
    lock = repo / ".git" / "lanes-runs.lock"
    calls = [("claude", "PreToolUse", bash(ws, "rm -f a.txt", "t1"), 2),
             ("gemini", "BeforeTool", {"session_id": "gem-1", "cwd": str(ws), "hook_event_name": "BeforeTool",
                                       "tool_name": "run_shell_command", "tool_input": {"command": "ls"}}, 2),
             ("claude", "PostToolUse", claude("PostToolUse", ws, tool_name="Bash", tool_use_id="t0",
                                              tool_input={"command": "ls"}, tool_response={}), 130)]
    for cli, event, payload, code in calls:
        with open(lock, "a+") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            proc = subprocess.Popen([sys.executable, "-m", "git_lanes", "hook", cli, event], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "GIT_LANES_HOOK_DEADLINE": "60"})
            proc.stdin.write(json.dumps(payload))
            proc.stdin.close()
            proc.stdin = None  # sent whole: communicate() reads the answer only
            assert _waiting_on_the_runs_lock(proc, lock), proc.communicate()  # the precondition: mid-check
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out) == (code, ""), (cli, event, proc.returncode, out, err)
        assert "Traceback" not in err
        assert ("interrupted (SIGINT)" in err) == (code == 2), err


def test_a_pre_tool_call_sent_to_a_hook_installed_under_another_event_is_denied(repo):
    """A hand-edited or mistyped hook entry (`hook claude pretooluse`, a Gemini name, the post event) must
    not turn a pre-tool call into "no opinion": the tool would run past the wall."""
    ws = lane(repo)
    call = bash(ws, "ls")
    for cli, event in (("claude", "pretooluse"), ("claude", "PostToolUse"), ("codex", "BeforeTool")):
        verdict, reason = decision((hook if event == "pretooluse" else hook_in_process)(cli, event, call))
        assert verdict == "deny" and repr(event) in reason, (cli, event, reason)
    result = hook_in_process("gemini", "PreTooluse", call | {"hook_event_name": "BeforeTool"})
    assert json.loads(result.out)["decision"] == "deny"
    # another CLI's pre-tool call at this CLI's pre-tool hook (Gemini's shell tool would pass as unknown)
    gemini_call = call | {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command"}
    verdict, reason = decision(hook_in_process("claude", "PreToolUse", gemini_call))
    assert verdict == "deny" and "'BeforeTool' event" in reason
    # the events the hooks do not handle still pass without an opinion
    assert hook_in_process("claude", "Notification", claude("Notification", ws, message="hi")).out == ""


def test_a_deadline_that_is_no_number_of_seconds_falls_back_to_the_default(repo):
    ws = lane(repo)
    for given in ("-1", "nan", "inf"):
        result = hook("claude", "PreToolUse", bash(ws, "rm -rf x", f"t{given}"), env={"GIT_LANES_HOOK_DEADLINE": given})
        verdict, reason = decision(result)
        assert verdict == "deny" and "command policy" in reason and result.err == "", (given, result.err)


def test_a_transcript_that_cannot_be_read_denies_the_call_naming_it(repo, tmp_path):
    """Usage cannot be metered from a transcript path that is a directory or a FIFO (whose open would block
    the call past the CLI's timeout), so the call is denied, saying which path and why, never an internal
    error; a transcript not written yet meters nothing and stops nothing."""
    ws = lane(repo)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    cases = [(tmp_path, "it is a directory"), (fifo, "it is not a regular file"),
             (tmp_path / "file" / "t.jsonl", "Not a directory")]
    (tmp_path / "file").write_text("a file where the payload names a directory\n")
    missed = []
    for number, (path, why) in enumerate(cases):
        payload = bash(ws, "ls", f"t{number}") | {"transcript_path": str(path)}
        result = (hook if number == 0 else hook_in_process)("claude", "PreToolUse", payload)
        verdict, reason = decision(result)
        said = f"cannot read the transcript {path} the hook payload names: {why}"
        if verdict != "deny" or said not in (reason or "") or "internal error" in (reason or ""):
            missed.append((str(path), verdict, reason))
    assert missed == []
    assert decision(hook_in_process("claude", "PreToolUse", bash(ws, "ls", "t9") | {
        "transcript_path": str(tmp_path / "not-yet.jsonl")}))[0] == "allow"


def _strict(text: str):
    def refuse(constant: str):
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_numbers_json_has_not_are_refused_and_never_reach_the_log(repo):
    """NaN and Infinity are no JSON (no CLI can send them: JavaScript writes null, serde and Go refuse), yet
    Python reads them. Taken in, a `duration_ms` of NaN sat in the run's log, so `run events --json` printed
    `NaN` (no JSON reader takes it) and the REST API's run events answered 500 for that run forever."""
    ws = lane(repo)
    nan_input = json.dumps(bash(ws, "ls", "t1")).replace('"timeout": 120000', '"timeout": NaN')
    verdict, reason = decision(hook("claude", "PreToolUse", nan_input))
    assert verdict == "deny" and "NaN" in reason and "not JSON" in reason
    assert decision(hook_in_process("claude", "PreToolUse", bash(ws, "ls", "t2")))[0] == "allow"
    done = claude("PostToolUse", ws, tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="t2",
                  tool_response={"stdout": ""}, duration_ms=7)
    for duration in ("NaN", "Infinity", "-Infinity", "1e400", "-5"):
        sent = json.dumps(done).replace('"duration_ms": 7', f'"duration_ms": {duration}')
        assert f'"duration_ms": {duration}' in sent
        assert hook_in_process("claude", "PostToolUse", sent).code == 0
    events = _strict(run_cli("run", "events", run_id(ws), "--json", cwd=ws).out)
    durations = [e.get("duration") for e in events if e["type"] == "tool_completed"]
    # 1e400 and -5 paired, with the time between the calls instead of a duration no clock gives
    assert len(durations) == 2 and all(d is not None and 0 <= d < 3600 for d in durations), durations
