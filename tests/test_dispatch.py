"""Foundation-first dispatch with enforced ownership, in real processes: a plan becomes a ticket, tasks with
dependencies and exclusive claims in one ledger op (or nothing, when two tasks own one path); feature lanes
start from the foundation's accepted head once it is done; a foreign change to an owned path is refused at
commit and promote (exit 3, naming path and owner) and denied by the agent hooks before it happens."""

from __future__ import annotations

import json

from conftest import git, run_cli, workspace
from ledger_helpers import ledger_record
from hook_helpers import decision, hook, write
from promotion_fixtures import edit, head

PLAN = '''name = "login"
ticket = "Login flow"

[foundation]
title = "Session store"
owns = ["src/session/**", "src/types.py"]
agent = "coder-1"

[[feature]]
name = "api"
title = "Login endpoint"
owns = ["src/api/login.py"]
agent = "coder-2"

[[feature]]
name = "ui"
title = "Login form"
owns = ["web/**"]
depends = ["api"]
'''


def dispatched(repo, plan: str = PLAN) -> dict:
    (repo.parent / "plan.toml").write_text(plan)
    result = run_cli("dispatch", str(repo.parent / "plan.toml"), "--json", cwd=repo)
    assert result.code == 0, result.err
    return result.json


def refs_and_ledger(repo) -> str:
    return git("for-each-ref", "--format=%(refname) %(objectname)", cwd=repo)


def by_key(result: dict) -> dict:
    return {t["key"]: t for t in result["tasks"]}


def test_the_example_plan_is_valid_and_a_dry_run_creates_nothing(repo, tmp_path):
    example = run_cli("dispatch", "--example", cwd=repo)
    assert example.code == 0 and "[foundation]" in example.out and "[[feature]]" in example.out
    (tmp_path / "login.toml").write_text(example.out)
    before = refs_and_ledger(repo)
    checked = run_cli("dispatch", str(tmp_path / "login.toml"), "--dry-run", "--json", cwd=repo)
    assert checked.code == 0, checked.err
    assert [t["lane"] for t in checked.json["tasks"]] == ["login/foundation", "login/api", "login/ui"]
    flags_first = run_cli("dispatch", "--cli", "codex", "--dry-run", "--json", str(tmp_path / "login.toml"),
                          cwd=repo)
    assert flags_first.code == 0 and flags_first.json == checked.json, flags_first.err
    assert refs_and_ledger(repo) == before


def test_dispatch_creates_the_ticket_tasks_claims_and_the_foundation_lane(repo):
    result = dispatched(repo)
    tasks = by_key(result)
    assert [made["lane"] for made in result["lanes_created"]] == ["login/foundation"]
    assert workspace(repo, "login/foundation").is_dir() and not workspace(repo, "login/api").exists()
    api_task = run_cli("task", "show", tasks["api"]["task"][:8], "--json", cwd=repo).json
    assert api_task["depends"] == [tasks["foundation"]["task"]] and api_task["owner"] == "coder-2"
    assert api_task["ticket"] == result["ticket"] and api_task["exclusive"] and api_task["lane"] == "login/api"
    ui_task = run_cli("task", "show", tasks["ui"]["task"][:8], "--json", cwd=repo).json
    assert set(ui_task["depends"]) == {tasks["foundation"]["task"], tasks["api"]["task"]}
    ticket = run_cli("ticket", "show", result["ticket"][:8], "--json", cwd=repo).json
    assert ticket["title"] == "Login flow" and len(ticket["tasks"]) == 3
    record = ledger_record(repo, f"exclusive/{tasks['api']['task']}.json")
    assert record["globs"] == ["src/api/login.py"] and record["lane"] == "login/api"
    listed = run_cli("claim", "list", "--json", cwd=repo).json
    assert sorted((c["glob"], c["agent"], c["lane"]) for c in listed if c["exclusive"]) == [
        ("src/api/login.py", "coder-2", "login/api"), ("src/session/**", "coder-1", "login/foundation"),
        ("src/types.py", "coder-1", "login/foundation"), ("web/**", None, "login/ui")]
    status = run_cli("dispatch", "status", "login", "--json", cwd=repo).json
    assert [(t["key"], t["status"], t["head"] is not None) for t in status["tasks"]] == [
        ("foundation", "claimed", True), ("api", "claimed", False), ("ui", "open", False)]
    again = run_cli("dispatch", str(repo.parent / "plan.toml"), "--json", cwd=repo)
    assert again.code == 0 and again.json["already"] and again.json["lanes_created"] == []


def test_overlapping_ownership_is_refused_and_creates_nothing(repo, tmp_path):
    before = refs_and_ledger(repo)
    overlapping = PLAN.replace('owns = ["web/**"]', 'owns = ["src/**/*.py"]')
    (tmp_path / "plan.toml").write_text(overlapping)
    result = run_cli("dispatch", str(tmp_path / "plan.toml"), cwd=repo)
    assert result.code == 1
    assert "would be owned by both 'foundation' (src/session/**) and task 'ui' (src/**/*.py)" in result.err
    assert "nothing was created" in result.err
    assert refs_and_ledger(repo) == before
    assert not (repo / ".lanes" / "workspaces").exists() or not any((repo / ".lanes" / "workspaces").iterdir())
    dry = run_cli("dispatch", str(tmp_path / "plan.toml"), "--dry-run", "--json", cwd=repo)
    assert dry.code == 1 and dry.json["error"] == "ownership_overlap" and dry.json["tasks"] == ["foundation", "ui"]


def test_a_plan_overlapping_an_unfinished_plan_is_refused(repo, tmp_path):
    dispatched(repo)
    second = 'name = "other"\nticket = "Other"\n[foundation]\ntitle = "x"\nowns = ["src/session/store.py"]\n'
    (tmp_path / "other.toml").write_text(second)
    result = run_cli("dispatch", str(tmp_path / "other.toml"), cwd=repo)
    assert result.code == 1 and "src/session/store.py would be owned by both" in result.err


def test_feature_lanes_start_from_the_foundations_accepted_head_when_it_is_done(repo):
    tasks = by_key(dispatched(repo))
    foundation = workspace(repo, "login/foundation")
    edit(foundation, {"src/types.py": "Session = dict\n", "src/session/store.py": "STORE = {}\n"})
    committed = run_cli("commit", "-m", "foundation", "--auto-accept", cwd=foundation,
                        env={"GIT_LANES_AGENT": "coder-1"})
    assert committed.code == 0, committed.err
    accepted = head(repo, "refs/lanes/heads/login/foundation")
    done = run_cli("task", "done", tasks["foundation"]["task"][:8], "--agent", "coder-1", "--json", cwd=repo)
    assert done.code == 0, done.err
    assert [made["lane"] for made in done.json["lanes_created"]] == ["login/api"]  # ui still waits for api
    assert head(repo, "refs/lanes/heads/login/api") == accepted
    assert (workspace(repo, "login/api") / "src/types.py").read_text() == "Session = dict\n"
    woken = run_cli("wait", "--agent", "coder-2", "--timeout", "0", "--json", cwd=repo).json
    assert woken["reason"] == "task_ready"
    assert woken["wakes"][0]["task"] == tasks["api"]["task"] and woken["wakes"][0]["lane"] == "login/api"


def test_a_foreign_write_to_an_exclusive_path_is_refused_at_commit_naming_path_and_owner(repo):
    tasks = by_key(dispatched(repo))
    run_cli("task", "done", tasks["foundation"]["task"][:8], cwd=repo)
    api = workspace(repo, "login/api")
    edit(api, {"src/types.py": "Session = list  # mine now\n", "src/api/login.py": "def login(): ...\n"})
    result = run_cli("commit", "-m", "login", "--auto-accept", "--json", cwd=api, env={"GIT_LANES_AGENT": "coder-2"})
    assert result.code == 3
    assert result.json["error"] == "exclusive_claim"
    assert "changes src/types.py, which task" in result.err and "(lane login/foundation, agent coder-1)" in result.err
    assert result.json["violations"][0]["owner"] == "coder-1"
    propose = run_cli("propose", "-m", "login", cwd=api, env={"GIT_LANES_AGENT": "coder-2"})
    assert propose.code == 3 and "src/types.py" in propose.err
    git("restore", "-SW", "--source=HEAD", "--", "src/types.py", cwd=api)  # as the hint says
    own = run_cli("commit", "-m", "login", "--auto-accept", cwd=api, env={"GIT_LANES_AGENT": "coder-2"})
    assert own.code == 0, own.err  # its own path, and the foundation's files as the foundation left them
    promoted = run_cli("promote", "login/api", "--auto-accept", "--json", cwd=repo, env={"GIT_LANES_AGENT": "lead"})
    assert promoted.code == 0, promoted.err
    edit(repo, {"src/api/login.py": "changed on the trunk\n"})
    on_trunk = run_cli("commit", "-m", "hotfix", "--auto-accept", cwd=repo, env={"GIT_LANES_AGENT": "lead"})
    assert on_trunk.code == 3 and "src/api/login.py" in on_trunk.err


def test_promoting_a_lane_that_changed_anothers_path_is_refused(repo):
    tasks = by_key(dispatched(repo))
    run_cli("task", "done", tasks["foundation"]["task"][:8], cwd=repo)
    api = workspace(repo, "login/api")
    edit(api, {"src/session/store.py": "hacked\n"})
    git("add", "-A", cwd=api)
    git("commit", "-qm", "behind the lanes' back", cwd=api)  # plain git in the workspace: no lanes check
    git("update-ref", "refs/lanes/heads/login/api", "HEAD", cwd=api)
    result = run_cli("promote", "login/api", "--auto-accept", cwd=repo, env={"GIT_LANES_AGENT": "lead"})
    assert result.code == 3 and "src/session/store.py" in result.err and "promoting login/api" in result.err


def test_the_agent_hook_denies_a_write_into_an_exclusive_path(repo):
    tasks = by_key(dispatched(repo))
    run_cli("task", "done", tasks["foundation"]["task"][:8], cwd=repo)
    api = workspace(repo, "login/api")
    started = run_cli("run", "start", "--agent", "coder-2", "--phase", "execute", cwd=api)
    env = {"GIT_LANES_RUN": started.out.strip()}
    verdict, reason = decision(hook("claude", "PreToolUse", write(api, api / "src" / "types.py"), env=env))
    assert verdict == "deny" and "src/types.py" in reason and "coder-1" in reason
    mine = decision(hook("claude", "PreToolUse", write(api, api / "src" / "api" / "login.py", "t2"), env=env))
    assert mine[0] == "allow"


def test_ownership_ends_when_every_task_of_the_plan_is_done(repo):
    tasks = by_key(dispatched(repo))
    for key in ("foundation", "api", "ui"):
        assert run_cli("task", "done", tasks[key]["task"][:8], cwd=repo).code == 0
    status = run_cli("dispatch", "status", "login", "--json", cwd=repo).json
    assert status["complete"] and not status["exclusive"]
    edit(repo, {"src/types.py": "free again\n"})
    assert run_cli("commit", "-m", "after the plan", "--auto-accept", cwd=repo,
                   env={"GIT_LANES_AGENT": "lead"}).code == 0


def test_a_dispatch_is_undone_as_one_operation(repo):
    result = dispatched(repo)
    undone = run_cli("undo", "--json", cwd=repo)
    assert undone.code == 0, undone.err
    assert not workspace(repo, "login/foundation").exists()
    assert run_cli("task", "list", "--json", cwd=repo).json == []
    assert run_cli("dispatch", "status", "login", cwd=repo).code == 1
    assert run_cli("ticket", "show", result["ticket"][:8], cwd=repo).code == 1


def test_bad_plans_are_one_clear_line(repo, tmp_path):
    cases = {
        'ticket = "x"\n': "needs a [foundation] table",
        'ticket = "x"\n[foundation]\ntitle = "f"\nowns = []\n': "must own at least one path",
        'ticket = "x"\n[foundation]\ntitle = "f"\nowns = ["a"]\n[[feature]]\nname = "b"\ntitle = "b"\nowns = ["b"]\n'
        'depends = ["c"]\n': "depends on 'c', which the plan lacks",
        'ticket = "x"\n[foundation]\ntitle = "f"\nowns = ["../up"]\n': "outside the repository",
        'ticket = "x"\nfoundaton = 1\n': "unknown key(s) foundaton",
        # a string where a list belongs was blamed on .lanes.toml, a file the user never touched
        'ticket = "x"\n[foundation]\ntitle = "f"\nowns = "src/**"\n': "the plan: [foundation] owns must be a list",
        'ticket = "x"\n[foundation]\ntitle = "f"\nowns = ["a"]\n[[feature]]\nname = "b"\ntitle = "b"\nowns = ["b"]\n'
        'depends = "a"\n': "the plan: feature 'b' depends must be a list",
    }
    for text, problem in cases.items():
        (tmp_path / "p.toml").write_text(text)
        result = run_cli("dispatch", str(tmp_path / "p.toml"), cwd=repo)
        assert result.code == 1 and problem in result.err and ".lanes.toml" not in result.err, (text, result.err)
    missing = run_cli("dispatch", str(tmp_path / "none.toml"), cwd=repo)
    assert missing.code == 1 and "cannot read plan" in missing.err
    assert run_cli("dispatch", cwd=repo).code == 2


def test_a_plan_whose_lane_would_be_a_folder_of_an_existing_lane_is_refused_before_anything_exists(repo, tmp_path):
    # Lane `login` is there already: git cannot hold refs/lanes/heads/login beside .../login/foundation.
    assert run_cli("lane", "create", "login", "--no-setup", cwd=repo).code == 0
    assert run_cli("lane", "create", "other/api/v1", "--no-setup", cwd=repo).code == 0
    (tmp_path / "plan.toml").write_text(PLAN)
    before = refs_and_ledger(repo)
    dry = run_cli("dispatch", str(tmp_path / "plan.toml"), "--dry-run", "--json", cwd=repo)
    assert dry.code == 1 and dry.json["error"] == "lane_name_clash", dry.out
    assert "login/foundation" in dry.json["message"] and "'login'" in dry.json["message"]
    real = run_cli("dispatch", str(tmp_path / "plan.toml"), cwd=repo)
    assert real.code == 1 and real.err.startswith("git-lanes: error: lane 'login/foundation' cannot exist beside")
    assert "Traceback" not in real.err
    assert refs_and_ledger(repo) == before
    assert run_cli("task", "list", "--json", cwd=repo).json == []
    # A lane beneath one the plan would make clashes the same way.
    deeper = PLAN.replace('name = "login"', 'name = "other"\nlane_prefix = "other"')
    (tmp_path / "deeper.toml").write_text(deeper)
    below = run_cli("dispatch", str(tmp_path / "deeper.toml"), "--dry-run", "--json", cwd=repo)
    assert below.code == 1 and below.json["error"] == "lane_name_clash", below.out
    assert "'other/api' cannot exist beside lane 'other/api/v1'" in below.json["message"]


def test_a_plan_dispatched_again_is_checked_by_its_dry_run_and_an_edited_one_is_refused(repo, tmp_path):
    """Dispatching the same plan again creates what is missing; its dry run failed instead ("lane
    login/foundation already exists"). A plan edited since (a feature added) was answered "dispatched
    already", exit 0, and the new feature silently never existed."""
    dispatched(repo)
    (tmp_path / "plan.toml").write_text(PLAN)
    dry = run_cli("dispatch", str(tmp_path / "plan.toml"), "--dry-run", "--json", cwd=repo)
    assert dry.code == 0, dry.err
    assert dry.json["already"] and dry.json["dry_run"] and dry.json["name"] == "login"
    text = run_cli("dispatch", str(tmp_path / "plan.toml"), "--dry-run", cwd=repo)
    assert text.code == 0 and text.out.startswith("dry run: plan login was dispatched already"), text.err
    before = refs_and_ledger(repo)
    edited = PLAN + '\n[[feature]]\nname = "docs"\ntitle = "Login docs"\nowns = ["docs/login.md"]\n'
    (tmp_path / "edited.toml").write_text(edited)
    for extra in ((), ("--dry-run",)):
        result = run_cli("dispatch", str(tmp_path / "edited.toml"), *extra, "--json", cwd=repo)
        assert result.code == 1 and result.json["error"] == "plan_changed", result.out
        assert "docs" in result.json["message"]
    assert refs_and_ledger(repo) == before
