"""Arguments of the wrong shape (a missing one, two where one goes, options that do not go together) are
usage errors: exit 2 with click's usage line, as a missing argument is, never 1 (man page, EXIT STATUS).
What the values say (no lane of that name, a spent budget) stays a user error, exit 1."""

from __future__ import annotations

import pytest
from conftest import run_cli


@pytest.mark.parametrize("args, said", [
    (("budget", "set", "--usd", "1"), "name exactly one of --lane, --task and --ticket"),
    (("budget", "set", "--lane", "main", "--task", "x", "--usd", "1"), "name exactly one of --lane, --task and --ticket"),
    (("budget", "set", "--lane", "main"), "give --usd or --tokens (or both)"),
    (("budget", "clear",), "name exactly one of --lane, --task and --ticket"),
    (("budget", "show", "--lane", "main", "--ticket", "x"), "name exactly one of --lane, --task and --ticket"),
    (("spawn",), "say what the agent is to do: a TASK or --prompt TEXT"),
    (("spawn", "--pipeline", "--prompt", "fix it"), "--pipeline drives a task: name the TASK"),
])
def test_an_argument_of_the_wrong_shape_is_a_usage_error(repo, args, said):
    result = run_cli(*args, cwd=repo)
    assert result.code == 2, (result.code, result.err)
    command = " ".join(arg for arg in args[:2] if not arg.startswith("-"))
    assert result.err.startswith(f"Usage: git lanes {command} [OPTIONS]"), result.err
    assert f"Error: {said}" in result.err and "Traceback" not in result.err
    as_json = run_cli(*args, "--json", cwd=repo)
    assert as_json.code == 2 and as_json.json == {"error": "usage", "message": said}


def test_a_value_that_names_nothing_is_still_a_user_error(repo):
    result = run_cli("budget", "set", "--lane", "nowhere", "--usd", "1", "--json", cwd=repo)
    assert (result.code, result.json["error"]) == (1, "unknown_lane")
