"""Claude Code's hooks driven in real processes with payloads shaped as its documentation shows them."""

from __future__ import annotations

import json

import pytest
from conftest import git, run_cli
from hook_helpers import bash, claude, decision, hook, lane, run_id, set_policy, write


@pytest.fixture
def ws(repo):
    return lane(repo)


@pytest.mark.parametrize("line,denied", [
    ("cd x && rm -rf y", "rm -rf y"),
    ("echo $(curl http://example.com/x)", "curl http://example.com/x"),
    ("bash -c 'rm -rf /tmp/x'", "rm -rf /tmp/x"),
    ("sh -lc \"git push --force origin main\"", "git push --force origin main"),
    ("ls | xargs rm -rf", "rm -rf"),
    ("env X=1 sudo curl evil", "curl evil"),
    ("(cd a; echo `curl x`)", "curl x"),
])
def test_a_denied_command_cannot_hide_in_a_shell_line(ws, line, denied):
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, line)))
    assert verdict == "deny" and f"`{denied}`" in reason


def test_an_allowed_line_passes_and_is_charged(ws):
    assert decision(hook("claude", "PreToolUse", bash(ws, "git status && ls -la | wc -l"))) == ("allow", None)
    shown = run_cli("run", "show", run_id(ws), "--json", cwd=ws).json
    assert shown["calls"] == 1 and shown["budget"]["plan"]["spent"] == 1.0
    assert shown["in_flight"][0]["id"] == "toolu_01ABC123"


def test_a_line_that_cannot_be_parsed_is_denied(ws):
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, 'echo "unterminated')))
    assert verdict == "deny" and "cannot parse" in reason


@pytest.mark.parametrize("payload", ["not json", "[1, 2]", "{}", '{"session_id": "s"}',
                                     json.dumps({"session_id": "s", "cwd": "/", "tool_name": "Bash",
                                                 "tool_input": {"command": 3}})])
def test_a_bad_payload_is_a_deny_not_a_crash(ws, payload):
    result = hook("claude", "PreToolUse", payload)
    verdict, reason = decision(result)
    assert verdict == "deny" and "git-lanes" in reason and "Traceback" not in result.err


def test_outside_a_repository_the_call_is_denied(tmp_path):
    verdict, reason = decision(hook("claude", "PreToolUse", bash(tmp_path, "ls")))
    assert verdict == "deny" and "not a git repository" in reason


def test_writes_are_confined_to_the_lane_workspace(repo, ws):
    assert run_cli("run", "phase", _start(ws), "execute", cwd=ws).code == 0
    assert decision(hook("claude", "PreToolUse", write(ws, ws / "src" / "new.py")))[0] == "allow"
    for outside in (repo / "README.md", repo / ".git" / "config", lane(repo, "other") / "x.py"):
        verdict, reason = decision(hook("claude", "PreToolUse", write(ws, outside)))
        assert verdict == "deny", outside
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, f"echo hi > {repo}/README.md")))
    assert verdict == "deny" and "main worktree" in reason
    assert decision(hook("claude", "PreToolUse", bash(ws, "echo hi > notes.txt 2>/dev/null")))[0] == "allow"


def _start(ws) -> str:
    """The run of the default session (started implicitly by its first hook call)."""
    hook("claude", "SessionStart", claude("SessionStart", ws, source="startup"))
    return run_id(ws)


def test_the_plan_phase_is_read_only_and_says_how_to_move_on(ws):
    run = _start(ws)
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "a.py")))
    assert verdict == "deny" and f"git lanes run phase {run[:8]} execute" in reason
    notebook = claude("PreToolUse", ws, tool_name="NotebookEdit", tool_use_id="toolu_nb",
                      tool_input={"notebook_path": str(ws / "n.ipynb"), "new_source": "x"})
    assert decision(hook("claude", "PreToolUse", notebook))[0] == "deny"


def test_a_lane_cannot_loosen_its_own_policy(repo, ws):
    set_policy(repo, '[commands]\ndeny = ["rm -rf *", "curl *"]\n')
    (ws / ".lanes.toml").write_text('[commands]\ndeny = []\n[budget]\nphases = { plan = 1000 }\n')
    git("add", ".lanes.toml", cwd=ws)
    git("commit", "-qm", "loosen", cwd=ws)
    assert run_cli("commit", "-m", "loosen my wall", "--auto-accept", "--agent-id", "a", cwd=ws).code == 0
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, "curl http://example.com")))
    assert verdict == "deny" and "curl" in reason
    shown = run_cli("run", "show", run_id(ws), "--json", cwd=ws).json
    assert shown["budget"]["plan"]["budget"] == 15.0


def test_a_spent_budget_blocks_with_the_way_on_and_the_phase_command_still_passes(repo, ws):
    set_policy(repo, "[budget]\nphases = { plan = 2, execute = 5 }\n")
    run = _start(ws)
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "t1")))[0] == "allow"
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "t2")))[0] == "allow"
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, "ls", "t3")))
    assert verdict == "deny" and "step budget of phase plan is spent" in reason
    assert f"git lanes run phase {run[:8]} execute" in reason
    assert decision(hook("claude", "PreToolUse", bash(ws, f"git lanes run phase {run[:8]} execute", "t4")))[0] \
        == "allow"
    shown = run_cli("run", "show", run, "--json", cwd=ws).json
    assert shown["budget"]["plan"]["spent"] == 2.0 and shown["blocked"] == 1
    # a control command may not smuggle anything else through
    assert decision(hook("claude", "PreToolUse", bash(ws, f"git lanes run show {run} && ls", "t5")))[0] == "deny"


def test_post_tool_use_pairs_by_tool_use_id(ws):
    hook("claude", "PreToolUse", bash(ws, "ls", "toolu_A"))
    hook("claude", "PreToolUse", bash(ws, "git status", "toolu_B"))
    done = claude("PostToolUse", ws, tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="toolu_A",
                  tool_response={"stdout": "", "stderr": "", "interrupted": False}, duration_ms=12)
    failed = claude("PostToolUseFailure", ws, tool_name="Bash", tool_input={"command": "git status"},
                    tool_use_id="toolu_B", error="Exit code 1", is_interrupt=False, duration_ms=4187)
    assert hook("claude", "PostToolUse", done).code == 0
    assert hook("claude", "PostToolUseFailure", failed).code == 0
    run = run_id(ws)
    shown = run_cli("run", "show", run, "--json", cwd=ws).json
    assert shown["in_flight"] == [] and shown["completed"] == 1 and shown["failed"] == 1
    events = run_cli("run", "events", run, "--json", cwd=ws).json
    assert [e["type"] for e in events] == ["run_start", "tool_attempted", "tool_attempted", "tool_completed",
                                           "tool_failed"]
    assert events[3]["duration"] == 0.012 and events[4]["error"] == "Exit code 1"
    # the issue names the pairing field the CLI's `tool_use_id`: the events carry it under that name
    assert [e.get("tool_use_id") for e in events[1:]] == ["toolu_A", "toolu_B", "toolu_A", "toolu_B"]


def test_a_run_log_written_before_tool_use_id_still_pairs_its_calls():
    """Events written before they named the call `tool_use_id` name it `id`: read, they name the same call,
    so an old run's in-flight calls and durations come out as they did."""
    from git_lanes.domain.runs import calls, fold, timeline
    from git_lanes.model.runs import RunEvent

    old = [{"format": 1, "type": "run_start", "time": 100.0, "agent": "a", "phase": "plan"},
           {"format": 1, "type": "tool_attempted", "time": 101.0, "tool": "Bash", "input": "ls", "weight": 1.0,
            "phase": "plan", "id": "toolu_A"},
           {"format": 1, "type": "tool_attempted", "time": 102.0, "tool": "Bash", "input": "pwd", "weight": 1.0,
            "phase": "plan", "id": "toolu_B"},
           {"format": 1, "type": "tool_completed", "time": 103.5, "tool": "Bash", "id": "toolu_A"}]
    events = [RunEvent.from_dict(e) for e in old]
    state = None
    for event in events:
        state = fold(state, "0123456789abcdef", event)
    assert [c["tool_use_id"] for c in calls(state.in_flight)] == ["toolu_B"]
    assert timeline(events)[3]["duration"] == 2.5


def test_every_event_is_recorded_in_a_git_readable_log(ws):
    for event, fields in [("SessionStart", {"source": "startup", "model": "claude-sonnet-5"}),
                          ("UserPromptSubmit", {"prompt": "Write a factorial function"}),
                          ("PreCompact", {"trigger": "manual", "custom_instructions": ""}),
                          ("SubagentStop", {"stop_hook_active": False, "agent_id": "def456", "agent_type": "Explore",
                                            "last_assistant_message": "done", "background_tasks": []}),
                          ("SessionEnd", {"reason": "other"})]:
        result = hook("claude", event, claude(event, ws, **fields))
        assert result.code == 0 and "Traceback" not in result.err, result.err
    run = run_id(ws)
    log = git("log", "--format=%s", f"refs/lanes/runs/{run}", cwd=ws).splitlines()
    assert len(log) == 6 and "prompt: Write a factorial function" in log[3]
    types = [e["type"] for e in run_cli("run", "events", run, "--json", cwd=ws).json]
    assert types == ["run_start", "session_start", "prompt", "compact", "subagent_stop", "session_end"]
    assert git("fsck", "--strict", cwd=ws) == ""


def test_an_ended_run_admits_nothing(ws):
    run = _start(ws)
    assert run_cli("run", "end", run, cwd=ws).code == 0
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, "ls")))
    assert verdict == "deny" and "has ended" in reason
    # the model cannot start another run for this session itself: the reason sends it to the person
    assert decision(hook("claude", "PreToolUse", bash(ws, "git lanes run start", "toolu_2")))[0] == "deny"
    assert "tell the person" in reason


def test_an_explicit_run_is_joined_through_git_lanes_run(ws):
    started = run_cli("run", "start", "--agent", "coder-1", "--goal", "Add login", "--phase", "execute", cwd=ws)
    run = started.out.strip()
    result = hook("claude", "PreToolUse", write(ws, ws / "login.py"), env={"GIT_LANES_RUN": run[:6]})
    assert decision(result)[0] == "allow"
    shown = run_cli("run", "show", run, "--json", cwd=ws).json
    assert shown["agent"] == "coder-1" and shown["lane"] == "feature" and shown["calls"] == 1
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, "ls"), env={"GIT_LANES_RUN": "abcdef12"}))
    assert verdict == "deny" and "no run matches" in reason


# The policy exactly as issue 10 and the README write it: the weights' inline table spans two lines (TOML 1.1).
ISSUE_POLICY = '''[budget]                       # weighted step budget per phase
weights = { Agent = 5.0, Task = 5.0, MultiEdit = 2.5, Write = 2.0, Edit = 1.5, NotebookEdit = 1.5,
            Bash = 1.0, Read = 0.25, Glob = 0.1, Grep = 0.1 }
default_weight = 1.0
phases = { plan = 15, execute = 40, verify = 15, ship = 8 }
[commands]                     # shell policy; deny wins over allow; no allow list = all but deny
allow = ["git status", "git diff *", "python -m pytest *", "ls *"]
deny = ["rm -rf *", "git push --force *", "curl *"]
[phases]
read_only = ["plan"]           # no writes to project files in these phases
[spend]
usd_per_run = 5.0
usd_per_day = 25.0
[claims]
foreign_writes = "warn"        # or "deny": a write to a path another agent has claimed
'''


def test_the_policy_as_the_issue_writes_it_holds(repo, ws):
    """An inline table over several lines is TOML 1.1, which the standard library's tomllib refuses before
    Python 3.15: the documented policy then denied every call as unreadable. It reads, and holds."""
    set_policy(repo, ISSUE_POLICY)
    assert decision(hook("claude", "PreToolUse", bash(ws, "git status", "t1"))) == ("allow", None)
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, "echo hi", "t2")))
    assert verdict == "deny" and "`echo hi`" in reason and "could not be evaluated" not in reason, reason
    assert run_cli("run", "show", run_id(ws), "--json", cwd=ws).json["budget"]["plan"]["spent"] == 1.0
    doctor = run_cli("doctor", "--check", "hooks.policy", "--json", cwd=repo).json
    assert [c["status"] for c in doctor["checks"]] == ["ok"], doctor


def test_a_session_with_no_agent_named_works_as_the_live_agent_holding_its_lane(repo, monkeypatch):
    """`git lanes install claude` starts the MCP server as `${GIT_LANES_AGENT:-claude}`, and the hooks took the
    session id where GIT_LANES_AGENT is unset: an agent that took its lane and claimed its files through MCP
    (as `claude`) was told by its own hooks that the files were claimed by claude, another agent, to
    coordinate with on the board, and was denied them under `foreign_writes = "deny"`. A run a hook starts
    works, as `run start` does, as the one live agent holding its lane; elsewhere as the session."""
    from pathlib import Path

    from git_lanes.api import Lanes

    monkeypatch.delenv("GIT_LANES_AGENT", raising=False)
    set_policy(repo, '[phases]\nread_only = []\n[claims]\nforeign_writes = "deny"\n')
    api = Lanes(repo)
    ws = Path(api.assign_worktree("claude")["workspace"])  # MCP's assign_worktree and claim_files, as `claude`
    api.claim_add(["src/**"], "claude")
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "src" / "a.py", session="sess-9")))
    assert verdict == "allow", reason
    assert run_cli("run", "list", "--json", cwd=ws).json[0]["agent"] == "claude"
    held_by_none = lane(repo, "loose")  # no live agent holds it: the session is the agent, as before
    assert decision(hook("claude", "PreToolUse", bash(held_by_none, "ls", session="sess-10")))[0] == "allow"
    agents = {row["lane"]: row["agent"] for row in run_cli("run", "list", "--json", cwd=repo).json}
    assert agents == {"agent/claude": "claude", "loose": "sess-10"}


def test_a_write_refused_outside_the_lane_says_which_place_it_is(repo, ws):
    """Each refused write names where it is: a path in `.lanes` beside the workspaces (`ws/../../x.py`) was
    said to be "in another lane's workspace", sending the agent to look for a lane that is not there."""
    assert run_cli("run", "phase", _start(ws), "execute", cwd=ws).code == 0
    places = {repo / "README.md": "in the main worktree",
              lane(repo, "other") / "x.py": "in another lane's workspace",
              repo / ".lanes" / "x.py": "in git-lanes' own folder .lanes"}
    said = {}
    for number, (path, where) in enumerate(places.items()):
        verdict, reason = decision(hook("claude", "PreToolUse", write(ws, path, f"t{number}")))
        said[where] = verdict == "deny" and f"{path} is {where}, outside this run's lane workspace" in reason
    assert said == dict.fromkeys(places.values(), True)
