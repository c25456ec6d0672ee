"""What people look for in history: `history --grep --tag --since --model`, and `trace STATE`, the chain of
transitions, promotions and resets that led to a state, across lanes, with prompts and cost."""

from __future__ import annotations

from conftest import git, run_cli, workspace


def commit(ws, message: str, *extra: str) -> str:
    result = run_cli("commit", "-m", message, "--agent-id", "a1", "--auto-accept", "--json", *extra, cwd=ws)
    assert result.code == 0, result.err
    return result.json["id"]


def test_history_filters_by_text_tag_date_and_model(repo):
    assert run_cli("lane", "create", "feature", cwd=repo).code == 0
    ws = workspace(repo, "feature")
    (ws / "login.py").write_text("login\n")
    login = commit(ws, "Add the login form", "--tag", "auth", "--model", "claude-sonnet-5")
    (ws / "session.py").write_text("session\n")
    session = commit(ws, "Keep the session", "--tag", "auth", "--model", "gpt-5-codex")
    (ws / "docs.md").write_text("docs\n")
    docs = commit(ws, "Document it", "--tag", "docs", "--model", "claude-opus-5")

    def ids(*args: str) -> list[str]:
        result = run_cli("history", "--lane", "feature", "--json", *args, cwd=repo)
        assert result.code == 0, result.err
        return [t["id"] for t in result.json["transitions"]]

    assert ids("--grep", "LOGIN|session") == [session, login]
    assert ids("--tag", "auth") == [session, login]
    assert ids("--model", "claude") == [docs, login]
    assert ids("--tag", "auth", "--model", "SONNET") == [login]
    assert ids("--since", "1d") == [docs, session, login]
    assert ids("--since", "2999-01-01") == []
    totals = run_cli("history", "--tag", "auth", "--json", cwd=repo).json["totals"]
    assert totals["count"] == 2
    for bad in (["--since", "yesterday-ish"], ["--grep", "("]):
        result = run_cli("history", *bad, "--json", cwd=repo)
        assert result.code == 1 and "Traceback" not in result.err and result.json["error"]


def test_history_refuses_an_empty_since_and_one_before_1970(repo):
    """`--since ""` was passed over as if not given, and `--since 99999999999d` (a typo) listed everything:
    each is one line and exit 1, as `gc --older-than` refuses the same."""
    for given, reason in [("", "invalid date ''"), ("  ", "invalid date '  '"),
                          ("99999999999d", "invalid date '99999999999d': it reaches back before 1970"),
                          ("1" * 400 + "d", "it reaches back before 1970")]:
        result = run_cli("history", "--since", given, "--json", cwd=repo)
        assert result.code == 1 and result.json["error"] == "invalid_date", (given, result.out)
        assert reason in result.json["message"], result.json
        plain = run_cli("history", "--since", given, cwd=repo)
        assert plain.code == 1 and plain.out == "" and "Traceback" not in plain.err, plain.err


def test_trace_follows_the_chain_across_lanes_through_promotions_and_resets(repo):
    for name in ("feature", "retry"):
        assert run_cli("lane", "create", name, cwd=repo).code == 0
    ws = workspace(repo, "feature")
    (ws / "login.py").write_text("login\n")
    first = commit(ws, "Add the login form", "--cost-usd", "0.25")
    (ws / "login.py").write_text("login v2\n")
    second = commit(ws, "Validate the form", "--cost-usd", "0.5")
    promoted = run_cli("promote", "feature", "--auto-accept", "-m", "Ship login", "--agent-id", "lead", "--json",
                       cwd=repo)
    assert promoted.code == 0, promoted.err
    # lane retry, with work of its own, is reset onto the trunk's new head: the reset is part of the chain
    other = workspace(repo, "retry")
    (other / "idea.py").write_text("idea\n")
    commit(other, "An idea that goes nowhere")
    assert run_cli("lane", "reset", "retry", "--onto", "main", "--force", cwd=repo).code == 0

    result = run_cli("trace", "retry", "--json", cwd=repo)
    assert result.code == 0, result.err
    steps = result.json["steps"]
    kinds = [(s["kind"], s.get("lane")) for s in steps if s["kind"] != "git"]
    assert kinds[:4] == [("reset", "retry"), ("promote", "main"), ("commit", "feature"), ("commit", "feature")]
    assert steps[1]["from_lane"] == "feature" and steps[1]["prompt"] == "Ship login"
    assert [s["id"] for s in steps if s["kind"] == "commit"][:2] == [second, first]
    assert steps[2]["prompt"] == "Validate the form" and steps[2]["cost"]["cost_usd"] == 0.5
    assert result.json["totals"]["cost_usd"] == 0.75 and set(result.json["lanes"]) >= {"main", "feature", "retry"}
    assert "An idea that goes nowhere" not in [s["prompt"] for s in steps]  # not an ancestor: not in the chain
    text = run_cli("trace", "main", "-n", "3", cwd=repo)
    assert text.code == 0 and "main <- feature" in text.out and "Ship login" in text.out
    assert run_cli("trace", "no-such-state", cwd=repo).code == 1


def test_trace_lists_transition_ids_that_show_and_history_take(repo):
    """`trace` printed each step's state commit in its first column, while `history`, `status` and `show`
    speak of transition ids: an id copied from `trace` into `git lanes show` was "no transition matches".
    A step with a transition now shows its id; a plain git commit, which has none, shows the commit."""
    (repo / "plain.txt").write_text("by hand\n")
    git("add", "plain.txt", cwd=repo)
    git("commit", "-qm", "A plain commit", cwd=repo)
    assert run_cli("lane", "create", "feature", cwd=repo).code == 0
    ws = workspace(repo, "feature")
    (ws / "login.py").write_text("login\n")
    made = commit(ws, "Add the login form")
    lines = run_cli("trace", "feature", cwd=repo).out.splitlines()
    step = next(line for line in lines if "Add the login form" in line)
    assert step.split()[0] == made[:8], lines
    assert run_cli("show", step.split()[0], cwd=repo).code == 0
    plain = next(line for line in lines if "A plain commit" in line)
    assert plain.split()[:2] == [git("rev-parse", "--short=8", "main", cwd=repo).strip(), "git"], lines
