"""An ended run takes no more events from its session's hooks, and `run end` racing a Stop hook resolves to
one outcome with nothing lost: the turn wholly recorded before the end, or nothing of it at all."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import git, run_cli
from hook_helpers import claude, decision, hook, lane, write
from spawn_helpers import PATIENCE, wait_for
from test_hooks_turns import assistant_line

from git_lanes.domain import runs
from git_lanes.model.runs import RunEvent


def started(ws: Path) -> str:
    result = run_cli("run", "start", "--agent", "coder-1", "--goal", "Add a greeting", "--phase", "execute", cwd=ws)
    assert result.code == 0, result.err
    return result.out.strip()


def events(repo: Path, run: str) -> list[dict]:
    result = run_cli("run", "events", run, "--json", cwd=repo)
    assert result.code == 0, result.err
    return result.json


def head(repo: Path, run: str) -> str:
    return git("rev-parse", f"refs/lanes/runs/{run}", cwd=repo).strip()


def test_an_ended_run_takes_no_event_from_any_hook_but_what_its_session_spent(repo, tmp_path):
    """Only the Stop of an ended run held back; every other hook event still appended to it. Now none does,
    but the money its session goes on spending is still recorded, once, so the daily limit counts it."""
    ws = lane(repo)
    run = started(ws)
    env = {"GIT_LANES_RUN": run}
    transcript = tmp_path / "transcript.jsonl"

    def payload(event: str, **fields) -> dict:
        return claude(event, ws, transcript_path=str(transcript), **fields)

    transcript.write_text(assistant_line("msg_1", "req_1", 10) + "\n")
    assert hook("claude", "UserPromptSubmit", payload("UserPromptSubmit", prompt="Add a greeting"), env=env).code == 0
    before = run_cli("run", "show", run, "--json", cwd=repo).json
    assert before["tokens"]["output"] == 10, "the hooks read usage from this transcript"
    assert run_cli("run", "end", run, cwd=ws).code == 0
    ended = head(repo, run)
    with transcript.open("a") as out:  # usage the session goes on spending: a hook that records would record it
        out.write(assistant_line("msg_2", "req_2", 500) + "\n")

    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "a.py") | {"transcript_path": str(transcript)},
                                    env=env))
    assert verdict == "deny" and "has ended" in (reason or "")
    assert head(repo, run) == ended, "PreToolUse appended to the ended run"
    call = {"tool_name": "Write", "tool_use_id": "toolu_01WRITE", "tool_input": {"file_path": str(ws / "a.py"),
                                                                                 "content": "x"}}
    for event, fields in [("PostToolUse", call | {"tool_response": {"success": True}}),
                          ("PostToolUseFailure", call | {"error": "failed"}),
                          ("UserPromptSubmit", {"prompt": "One more thing"}), ("PreCompact", {"trigger": "auto"}),
                          ("SubagentStop", {"stop_hook_active": False, "agent_type": "Explore"}),
                          ("Stop", {"stop_hook_active": False}), ("SessionStart", {"source": "resume"}),
                          ("SessionEnd", {"reason": "other"})]:
        result = hook("claude", event, payload(event, **fields), env=env)
        assert result.code == 0, (event, result.err)
        answer = json.loads(result.out) if result.out.strip() else {}
        assert "decision" not in answer and answer.get("continue", True), (event, answer)
    after = events(repo, run)
    end_at = max(i for i, e in enumerate(after) if e["type"] == "run_end")
    assert [e["type"] for e in after[end_at + 1:]] == ["usage"], "only the spend may follow the end"
    assert run_cli("run", "show", run, "--json", cwd=repo).json["tokens"]["output"] == 510, \
        "the session's spend after the end is counted, and once"


def _hold(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def check_one_outcome(repo: Path, run: str, lane_name: str = "feature") -> str:
    """The invariant of a run that `run end` ended while (or before, or after) a Stop hook closed a turn with
    a snapshot: it is ended; nothing but the session's spend (`usage`, which budgets count after the end too)
    follows the event that ended it; and either the turn is wholly recorded
    before that (its usage, its end, the transition its snapshot made) or nothing of the turn is (no turn
    end, no transition). Returns which outcome it was."""
    found = [RunEvent.from_dict({"format": 1, **{k: v for k, v in row.items()
                                                 if k not in ("seq", "elapsed", "delta")}})
             for row in events(repo, run)]
    state = None
    ended_at = None
    for number, event in enumerate(found):
        state = runs.fold(state, run, event)
        if state.status == "ended":
            ended_at = number
            break
    assert state is not None and ended_at is not None, "the run ended"
    after = [e.type for e in found[ended_at + 1:]]
    assert set(after) <= {"usage"}, f"events after the run ended: {after}"  # the spend alone may follow it
    tagged = run_cli("history", "--lane", lane_name, "--tag", f"run:{run[:8]}", "--json", cwd=repo).json["transitions"]
    turn_ends = [e for e in found if e.type == "turn_end"]
    if turn_ends:
        assert [t["id"] for t in tagged] == list(state.transitions) == [turn_ends[0].get("transition")]
        return "turn, then end"
    assert tagged == [] and state.transitions == (), "a snapshot the run does not record"
    return "end, no turn"


def _stop_process(ws: Path, run: str, transcript: Path) -> subprocess.Popen:
    payload = transcript.with_suffix(".stop.json")
    payload.write_text(json.dumps(claude("Stop", ws, transcript_path=str(transcript), stop_hook_active=False)))
    with payload.open("rb") as stdin:
        return subprocess.Popen([sys.executable, "-m", "git_lanes", "hook", "claude", "Stop"], stdin=stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, "GIT_LANES_RUN": run})


def _turn(ws: Path, run: str, transcript: Path, n: int) -> None:
    transcript.write_text(assistant_line(f"msg_{n}", f"req_{n}", 10) + "\n")
    prompt = claude("UserPromptSubmit", ws, transcript_path=str(transcript), prompt=f"Write greeting {n}")
    assert hook("claude", "UserPromptSubmit", prompt, env={"GIT_LANES_RUN": run}).code == 0
    with transcript.open("a") as out:
        out.write(assistant_line(f"msg_{n}b", f"req_{n}b", 20) + "\n")
    (ws / f"greet_{n}.py").write_text(f"print({n})\n")


def test_run_end_while_a_stop_hook_snapshots_the_turn_waits_for_the_turn(repo, tmp_path):
    """`run end` landing between a Stop hook's first record (the turn's usage) and its last (the turn's end,
    naming the snapshot it made) ended the run, and the Stop then appended the turn to the ended run. Here
    the Stop is held at the snapshot by the writers' lock, which the test holds: `run end` comes in exactly
    there, whatever the machine's speed."""
    ws = lane(repo)
    run = started(ws)
    transcript = tmp_path / "transcript.jsonl"
    _turn(ws, run, transcript, 1)
    known = len(events(repo, run))
    fd = _hold(repo / ".git" / "lanes.lock")
    try:
        stop = _stop_process(ws, run, transcript)
        wait_for(lambda: any(e["type"] == "usage" for e in events(repo, run)[known:]),
                 "the Stop hook to record the turn's usage")
        assert stop.poll() is None, "the Stop hook waits for the writers' lock, at its snapshot"
        ended = run_cli("run", "end", run, "--json", cwd=repo)
        assert ended.code == 0, ended.err
        assert (ended.json["status"], ended.json["pending"]) == ("active", True), "it waits for the turn's end"
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    out, err = stop.communicate(timeout=PATIENCE)
    assert stop.returncode == 0, err
    assert check_one_outcome(repo, run) == "turn, then end"
    assert run_cli("run", "show", run, "--json", cwd=repo).json["status"] == "ended"


def test_run_end_racing_stop_hooks_gives_one_outcome_each_time(repo, tmp_path):
    """The same race left to the scheduler: a Stop hook and `run end` started together, several times. Which
    comes first is not asserted; that each run ends in one of the two outcomes, with nothing lost, is."""
    outcomes = []
    for n in range(4):
        ws = lane(repo, f"feature-{n}")
        run = started(ws)
        transcript = tmp_path / f"transcript-{n}.jsonl"
        _turn(ws, run, transcript, n)
        stop = _stop_process(ws, run, transcript)
        end = subprocess.Popen([sys.executable, "-m", "git_lanes", "run", "end", run], cwd=repo,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = end.communicate(timeout=PATIENCE)
        assert end.returncode == 0, err
        _, err = stop.communicate(timeout=PATIENCE)
        assert stop.returncode == 0, err
        outcomes.append(check_one_outcome(repo, run, f"feature-{n}"))
    assert set(outcomes) <= {"turn, then end", "end, no turn"}
