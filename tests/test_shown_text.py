"""Text an agent wrote reaches a person's terminal as text: a bidirectional override (U+202E makes "exe.txt"
read "txt.exe"), a carriage return (it rewrites the line) or an escape sequence in a title, a post or a
prompt is printed as its escape ("\\u202e", "\\x0d", "\\x1b"), in every command's text output, while
--json keeps the text exactly. The model accepts such text as before (old ops replay as they did); a name
(a lane's, an actor's) refuses it (tests/test_names_unseen.py)."""

from __future__ import annotations

import json
import sys

from conftest import run_cli, workspace

from git_lanes.model.text import shown_text

RLO = "\u202e"
TITLE = f"fix {RLO}txt.exe"
POST = f"done\rEVERYTHING IS FINE {RLO}gnp.exe"  # a post may hold a carriage return (it is multiline)
LANE = "feat/login"
PROMPT = f"Add login {RLO}ti kool\nsecond line\r!"


def terminal_safe(text: str) -> bool:
    return not any(char in text for char in (RLO, "\r", "\x1b"))


def seeded(api, repo) -> dict:
    task = api.task_create(TITLE).task
    ticket = api.ticket_open(TITLE).ticket
    api.task_claim(task, "coder-1")
    api.board_post(POST, "coder-1")
    api.lane_create(LANE)
    (workspace(repo, LANE) / "f.txt").write_text("f\n")
    transition = api.commit(PROMPT, "coder-1", lane=LANE).id
    return {"task": task, "ticket": ticket, "transition": transition}


def test_text_output_escapes_what_a_terminal_would_act_on_and_json_keeps_it(api, repo):
    ids = seeded(api, repo)
    commands = {
        ("task", "list"): TITLE, ("task", "show", ids["task"][:8]): TITLE, ("ticket", "list"): TITLE,
        ("ticket", "show", ids["ticket"][:8]): TITLE, ("board", "read", "--all"): POST,
        ("history",): PROMPT,
        ("show", ids["transition"][:8]): PROMPT,
    }
    for args, written in commands.items():
        text = run_cli(*args, cwd=repo)
        assert text.code == 0, (args, text.err)
        assert terminal_safe(text.out) and terminal_safe(text.err), (args, text.out)
        assert shown_text(written.splitlines()[0]) in text.out, (args, text.out)
        exact = run_cli(*args, "--json", cwd=repo)
        assert exact.code == 0 and written.splitlines()[0] in json.dumps(exact.json, ensure_ascii=False), args


def test_an_error_naming_such_text_is_escaped_too(api, repo):
    refused = run_cli("lane", "show", f"no{RLO}pe", cwd=repo)
    assert refused.code == 1 and terminal_safe(refused.err) and "\\u202e" in refused.err


def test_the_escape_is_the_same_as_the_dashboard_shows():
    assert shown_text(f"a{RLO}b\rc\x1bd\te\nf\u200dg") == "a\\u202eb\\x0dc\\x1bd\te\nf\u200dg"


# What a terminal would act on if an agent printed it: clear the screen, set the window title, write the
# clipboard (OSC 52), a link (OSC 8), a C1 CSI, a bell.
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x9b2J done"


def test_a_spawned_agents_output_reaches_the_terminal_escaped_followed_or_not(repo):
    from hook_helpers import set_policy
    from spawn_helpers import PATIENCE

    agent = f"import sys; sys.stdout.write({HOSTILE!r} + chr(10))"
    set_policy(repo, f"[agent.custom]\ncommand = {json.dumps([sys.executable, '-c', agent])}\n")
    started = run_cli("spawn", "--prompt", "Say hi", "--cli", "custom", "--wait", "--json", cwd=repo, timeout=PATIENCE)
    assert started.code == 0, started.err
    run = started.json["run"]
    exact = run_cli("logs", run[:8], "--json", cwd=repo)
    assert exact.code == 0 and HOSTILE in exact.json["log"]  # the precondition: the agent's bytes are held
    for args in (["logs", run[:8]], ["logs", run[:8], "--follow"]):
        text = run_cli(*args, cwd=repo, timeout=PATIENCE)
        assert text.code == 0, (args, text.err)
        assert not any(char in text.out for char in "\x1b\x07\x9b"), (args, text.out)
        assert "\\x1b[2J\\x1b]0;pwned\\x07" in text.out and "\\x9b2J done" in text.out, (args, text.out)


def test_what_the_hooks_recorded_of_an_agents_calls_reaches_the_terminal_escaped(repo):
    """A run's events hold what the agent CLI sent: the command, a failed call's error (a tool's own
    colours, or an escape sequence the agent wrote to be printed). `run events` (followed or not) and
    `run show` print them escaped; --json keeps them, escaped by JSON itself."""
    from hook_helpers import bash, claude, hook, lane, run_id

    ws = lane(repo)
    assert hook("claude", "PreToolUse", bash(ws, f"printf '{HOSTILE}'", "toolu_A")).code == 0
    failed = claude("PostToolUseFailure", ws, tool_name="Bash", tool_input={"command": f"printf '{HOSTILE}'"},
                    tool_use_id="toolu_A", error=HOSTILE, is_interrupt=False, duration_ms=4)
    assert hook("claude", "PostToolUseFailure", failed).code == 0
    run = run_id(ws)
    exact = run_cli("run", "events", run, "--json", cwd=repo)
    assert exact.code == 0 and HOSTILE in [e.get("error") for e in exact.json]  # the precondition
    assert "\x1b" not in exact.out and "\\u001b" in exact.out
    assert run_cli("run", "end", run, cwd=repo).code == 0
    for args in (["run", "events", run], ["run", "events", run, "--follow"], ["run", "show", run]):
        text = run_cli(*args, cwd=repo)
        assert text.code == 0, (args, text.err)
        assert not any(char in text.out + text.err for char in "\x1b\x07\x9b"), (args, text.out)
    assert "\\x1b[2J" in run_cli("run", "events", run, cwd=repo).out
