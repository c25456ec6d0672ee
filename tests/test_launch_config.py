"""Pure rules behind spawn and the pipeline: the `[agent]`/`[pipeline]` tables, filling in a command, and the
pipeline's next step from the stage its log folds to. No git, no processes."""

from __future__ import annotations

import pytest

from git_lanes.domain import pipeline
from git_lanes.errors import UserError
from git_lanes.model.launch import DEFAULT_COMMANDS, Launch, render
from git_lanes.model.policy import Policy
from git_lanes.model.runs import RunState


def test_the_agent_tables_override_the_defaults_and_refuse_typos():
    launch = Launch.from_toml({"agent": {"max_parallel": 2, "cli": "codex", "stop_grace": 0.5,
                                        "custom": {"command": ["my-agent", "{prompt_file}"], "env": {"A": "1"}}},
                               "pipeline": {"fix_attempts": 0}})
    assert (launch.max_parallel, launch.cli, launch.stop_grace, launch.fix_attempts) == (2, "codex", 0.5, 0)
    assert launch.command("custom") == ("my-agent", "{prompt_file}") and launch.env == {"custom": {"A": "1"}}
    assert launch.command("claude") == DEFAULT_COMMANDS["claude"]
    assert Launch().max_parallel == 4 and Launch().fix_attempts == 2
    with pytest.raises(UserError, match="no command"):
        Launch().command("custom")
    for bad, words in [({"agent": {"max_paralel": 2}}, "unknown key"), ({"agent": {"max_parallel": 0}}, "at least 1"),
                       ({"agent": {"claude": {"command": []}}}, "must not be empty"),
                       ({"agent": {"claude": {"command": "claude -p"}}}, "list of non-empty strings"),
                       ({"agent": {"cli": "cursor"}}, "one of"), ({"pipeline": {"fix_attempts": -1}}, "at least 0"),
                       ({"agent": {"codex": {"env": {"A": 1}}}}, "env")]:
        with pytest.raises(UserError, match=words):
            Launch.from_toml(bad)


def test_a_command_is_filled_in_one_pass_one_argument_per_element():
    argv = render(("claude", "-p", "{prompt}", "--add-dir={workspace}", "{json}"),
                  {"prompt": "fix it\nin {lane}", "workspace": "/w", "lane": "L"})
    assert argv == ["claude", "-p", "fix it\nin {lane}", "--add-dir=/w", "{json}"]


def state(**pipeline_state) -> RunState:
    return RunState(id="ab12cd34", agent="a", phase="plan", created_at=0.0, pipeline=pipeline_state)


@pytest.mark.parametrize("stage,status,fixes,expected", [
    (None, None, 0, ("agent", "plan", False)),
    ("plan", "done", 0, ("agent", "execute", False)),
    ("plan", "started", 0, ("agent", "plan", True)),
    ("execute", "stopped", 0, ("agent", "execute", True)),
    ("execute", "done", 0, ("verify", "verify", False)),
    ("verify", "failed", 0, ("agent", "fix", False)),
    ("verify", "failed", 1, ("agent", "fix", False)),
    ("verify", "failed", 2, ("blocked", "verify", False)),
    ("verify", "blocked", 2, ("verify", "verify", False)),
    ("verify", "started", 0, ("verify", "verify", False)),
    ("fix", "error", 1, ("agent", "fix", True)),
    ("fix", "done", 1, ("verify", "verify", False)),
    ("verify", "passed", 1, ("ship", "ship", False)),
    ("ship", "started", 0, ("ship", "ship", False)),
    ("ship", "done", 0, ("finished", "ship", False)),
])
def test_the_pipeline_goes_on_from_the_stage_its_log_folds_to(stage, status, fixes, expected):
    step = pipeline.next_step(state(stage=stage, status=status, fixes=fixes), fix_attempts=2)
    assert (step.kind, step.stage, step.resume) == expected


def test_a_fix_runs_in_the_fix_phase_when_the_policy_has_one():
    assert pipeline.phase_for("fix", Policy()) == "execute"
    assert pipeline.phase_for("fix", Policy(phases=(("plan", 5), ("execute", 5), ("fix", 5)))) == "fix"
    assert pipeline.phase_for("verify", Policy(phases=(("plan", 5), ("execute", 5)))) is None
