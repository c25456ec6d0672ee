"""The lane setup manifest: `[setup]` at the trunk's head makes a new lane's workspace ready (ignored files
copied, a command run outside the writers' lock with a timeout, ports reserved in the ledger so no two live
lanes share one, variables for a shell), and a failing setup leaves the lane usable and says so."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import git, run_cli, workspace
from ledger_helpers import ledger_record
from promotion_fixtures import edit
from test_gates import declare

from git_lanes.errors import UserError
from git_lanes.model.lane_setup import Setup, lane_slug

PY = json.dumps(sys.executable)


def test_setup_copies_ignored_files_runs_its_command_and_fills_in_the_variables(api, repo):
    edit(repo, {".gitignore": ".env\nlocal/\n", ".env": "SECRET=1\n", "local/a.yml": "a\n", "local/b.yml": "b\n"})
    declare(api, repo, '[setup]\ncopy = [".env", "local/*.yml", "absent.txt", "README.md"]\n'
                       f'run = [{PY}, "-c", "import os; open(\'ran.txt\', \'w\').write(os.environ[\'PORT\'])"]\n'
                       'ports = 2\nport_range = "31000-31999"\n'
                       'env = { PORT = "{port1}", DB = "postgres://localhost/app_{lane_slug}", AT = "{workspace}" }\n')
    edit(repo, {"README.md": "unsaved edit in the main worktree\n"})
    result = run_cli("lane", "create", "feature/Auth-2", "--json", cwd=repo)
    assert result.code == 0, result.err
    report = result.json["setup"]
    ws = workspace(repo, "feature/Auth-2")
    assert report["status"] == "ok" and report["ports"] == [31000, 31001]
    assert report["copied"] == [".env", "local/a.yml", "local/b.yml"] and report["absent"] == ["absent.txt"]
    assert report["present"] == ["README.md"]  # tracked: the checkout's version, not the main worktree's edit
    assert report["tracked"] == ["README.md"]
    assert (ws / ".env").read_text() == "SECRET=1\n" and (ws / "README.md").read_text() == "# project\n"
    assert (ws / "ran.txt").read_text() == "31001"
    assert report["env"] == {"PORT": "31001", "DB": "postgres://localhost/app_feature_auth_2", "AT": str(ws)}
    shell = run_cli("lane", "env", "feature/Auth-2", "--shell", cwd=repo)
    assert shell.code == 0, shell.err
    echoed = subprocess.run(["bash", "-c", shell.out + '\necho "$PORT $DB"'], capture_output=True, text=True)
    assert echoed.stdout.strip() == "31001 postgres://localhost/app_feature_auth_2"
    plain = run_cli("lane", "env", "feature/Auth-2", cwd=repo)
    assert "PORT=31001" in plain.out.splitlines()
    assert run_cli("lane", "env", "feature/Auth-2", "--json", cwd=repo).json["ports"] == [31000, 31001]


def test_setup_says_which_copy_entries_it_did_not_copy_and_why(api, repo):
    """`lane create` said only what it copied: a `copy` entry matching nothing in the main worktree (a typo
    like `.evn`), one naming a tracked file (never copied: the lane has its own version) and one already in
    the workspace on a re-run were skipped without a word. stdout stays the workspace's path."""
    edit(repo, {".gitignore": ".env\n", ".env": "SECRET=1\n"})
    declare(api, repo, '[setup]\ncopy = [".env", ".evn", "README.md"]\n')
    made = run_cli("lane", "create", "a", cwd=repo)
    assert made.code == 0, made.err
    assert made.out.strip() == str(workspace(repo, "a"))
    assert made.err.splitlines() == [
        "copied .env from the main worktree",
        "not copied, not in the main worktree: .evn",
        "warning: [setup] copy names files git tracks, which the lane has in its own version and which are never "
        "copied: README.md"]
    again = run_cli("lane", "setup", "a", cwd=repo)
    assert again.code == 0, again.err
    assert "not copied, already in the workspace (left as it is): .env" in again.err.splitlines()


def test_two_lanes_created_at_once_get_disjoint_ports(api, repo):
    declare(api, repo, '[setup]\nports = 3\nport_range = "32000-32999"\nenv = { PORT = "{port0}" }\n')
    procs = [subprocess.Popen([sys.executable, "-m", "git_lanes", "lane", "create", name, "--json"], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("a", "b", "c")]
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in results]
    held = [set(json.loads(out)["setup"]["ports"]) for out, _ in results]
    assert all(len(ports) == 3 for ports in held)
    assert held[0].isdisjoint(held[1]) and held[0].isdisjoint(held[2]) and held[1].isdisjoint(held[2])
    ledger = ledger_record(repo, "ports/a.json")
    assert set(ledger["ports"]) == held[0]


def test_a_failing_setup_command_leaves_the_lane_usable_and_says_so(api, repo):
    declare(api, repo, f'[setup]\nrun = [{PY}, "-c", "print(\'npm ERR! missing\'); raise SystemExit(3)"]\n')
    result = run_cli("lane", "create", "a", cwd=repo)
    assert result.code == 0, result.err
    assert result.out.strip() == str(workspace(repo, "a"))
    assert "warning: setup of lane a failed: the setup command exited 3" in result.err
    assert "npm ERR! missing" in result.err and "git lanes lane setup a" in result.err
    edit(workspace(repo, "a"), {"work.txt": "done\n"})
    committed = run_cli("commit", "-m", "work", "--auto-accept", cwd=workspace(repo, "a"),
                        env={"GIT_LANES_AGENT": "coder"})
    assert committed.code == 0, committed.err
    again = run_cli("lane", "setup", "a", "--json", cwd=repo)
    assert again.code == 0 and again.json["status"] == "failed" and again.json["run"]["exit_code"] == 3
    log = again.json["run"]["log"]
    assert "npm ERR! missing" in open(log).read()


def test_a_setup_command_past_its_timeout_is_killed_and_reported(api, repo):
    declare(api, repo, f'[setup]\nrun = [{PY}, "-c", "import time; time.sleep(60)"]\ntimeout = 0.5\n')
    result = run_cli("lane", "create", "a", "--json", cwd=repo)
    assert result.code == 0, result.err
    report = result.json["setup"]
    assert report["status"] == "failed" and report["run"]["timed_out"] and report["run"]["exit_code"] is None
    assert "timed out after 0.5s" in report["message"]
    assert (workspace(repo, "a") / "README.md").exists()


def test_the_setup_command_runs_outside_the_writers_lock(api, repo):
    """A setup command that itself writes (creates a lane) would wait forever if the lock were held."""
    create = f"import subprocess, sys; sys.exit(subprocess.run([{PY}, '-m', 'git_lanes', 'lane', 'create', " \
             f"'from-setup', '--no-setup'], cwd={json.dumps(str(repo))}).returncode)"
    declare(api, repo, f'[setup]\nrun = [{PY}, "-c", {json.dumps(create)}]\ntimeout = 60\n')
    result = run_cli("lane", "create", "a", "--json", cwd=repo)
    assert result.code == 0 and result.json["setup"]["status"] == "ok", result.out
    assert git("rev-parse", "refs/lanes/heads/from-setup", cwd=repo).strip()


def test_no_setup_skips_it_and_ports_come_back_when_a_lane_is_deleted(api, repo):
    edit(repo, {".gitignore": ".env\n", ".env": "x\n"})
    declare(api, repo, '[setup]\ncopy = [".env"]\nports = 2\nport_range = "33000-33003"\nenv = { P = "{port0}" }\n')
    bare = run_cli("lane", "create", "bare", "--no-setup", "--json", cwd=repo)
    assert bare.code == 0 and "setup" not in bare.json
    assert not (workspace(repo, "bare") / ".env").exists()
    no_ports = run_cli("lane", "env", "bare", cwd=repo)
    assert no_ports.code == 1 and "holds 0 port(s)" in no_ports.err and "git lanes lane setup bare" in no_ports.err
    assert api.lane_create("a")["setup"]["ports"] == [33000, 33001]
    assert api.lane_create("b")["setup"]["ports"] == [33002, 33003]
    full = api.lane_create("c")["setup"]
    assert full["status"] == "failed" and "no 2 free ports left in 33000-33003" in full["message"]
    assert (workspace(repo, "c") / ".env").exists() is False and workspace(repo, "c").is_dir()
    deleted = run_cli("lane", "delete", "a", "--json", cwd=repo)
    assert deleted.code == 0 and deleted.json["released_ports"] == [33000, 33001]
    assert run_cli("lane", "setup", "c", "--json", cwd=repo).json["ports"] == [33000, 33001]


def test_ports_of_a_lane_gone_without_lane_delete_are_reclaimed(api, repo):
    declare(api, repo, '[setup]\nports = 1\nport_range = "34000-34000"\n')
    assert api.lane_create("a")["setup"]["ports"] == [34000]
    api.lane_delete("a", force=True)
    api.lane_create("b")
    git("update-ref", "-d", "refs/lanes/heads/b", cwd=repo)  # gone behind git-lanes' back (a sync, say)
    assert api.lane_create("c")["setup"]["ports"] == [34000]


def test_a_broken_setup_refuses_lane_create_before_anything_is_made(api, repo):
    declare(api, repo, '[setup]\nenv = { PORT = "{port0}" }\n')
    result = run_cli("lane", "create", "a", cwd=repo)
    assert result.code == 1 and "[setup] env PORT names {port0}" in result.err and "--no-setup" in result.err
    assert not git("for-each-ref", "refs/lanes/heads/", cwd=repo).strip()
    assert run_cli("lane", "create", "a", "--no-setup", cwd=repo).code == 0


@pytest.mark.parametrize("text, problem", [
    ('[setup]\nrn = "x"\n', "unknown key(s) rn"),
    ('[setup]\nports = -1\n', "ports must be a whole number"),
    ('[setup]\nports = 2\nport_range = "80-81"\n', "within 1024-65535"),
    ('[setup]\nports = 5\nport_range = "20000-20001"\n', "holds fewer than 5 ports"),
    ('[setup]\ncopy = ["../up"]\n', "outside the repository"),
    ('[setup]\ncopy = [".git/config"]\n', "not a file of the project"),
    ('[setup]\nrun = 3\n', "run must be a shell string or an argv list"),
    ('[setup]\nenv = { "1X" = "a" }\n', "is not a variable name"),
    ('[setup]\nenv = { X = "{lane!r}" }\n', "no format spec or conversion"),
    ('[setup]\nenv = { X = "{oops" }\n', "write {{ and }} for braces"),
    ('[setup]\nports = 1\nenv = { X = "{port1}" }\n', "names {port1}; known: lane, lane_slug"),
    ('[setup]\ntimeout = 0\n', "timeout must be a positive number"),
])
def test_bad_manifests_are_one_clear_line(text, problem):
    from git_lanes.model import config

    with pytest.raises(UserError) as info:
        Setup.from_config(config.parse(text, lambda m: UserError(m)))
    assert problem in info.value.message and info.value.code == "invalid_setup"


def test_lane_slug_is_safe_for_databases_and_host_names():
    assert lane_slug("feature/Auth-2") == "feature_auth_2" and lane_slug("--") == "lane"


def test_the_session_start_hook_puts_the_lanes_variables_into_the_agents_environment(api, repo, tmp_path):
    from hook_helpers import claude, hook

    declare(api, repo, '[setup]\nports = 2\nport_range = "36000-36999"\n'
                       'env = { PORT = "{port1}", DB = "app_{lane_slug}" }\n')
    api.lane_create("feature/a")
    ws = workspace(repo, "feature/a")
    env_file = tmp_path / "claude.env"
    result = hook("claude", "SessionStart", claude("SessionStart", ws, source="startup"),
                  env={"CLAUDE_ENV_FILE": str(env_file)})
    assert result.code == 0, result.err
    context = json.loads(result.out)["hookSpecificOutput"]["additionalContext"]
    assert "DB=app_feature_a, PORT=36001" in context and "git lanes lane env feature/a --shell" in context
    assert env_file.read_text() == "export DB=app_feature_a\nexport PORT=36001\n"
    sourced = subprocess.run(["bash", "-c", f"source {env_file}; echo $PORT"], capture_output=True, text=True)
    assert sourced.stdout.strip() == "36001"


def test_the_session_start_hooks_shell_line_works_for_a_lane_name_the_shell_would_split(api, repo, tmp_path):
    """The briefing's `eval "$(git lanes lane env LANE --shell)"` named the lane bare: a lane git allows,
    such as feat/o'q, made a line the shell cannot run."""
    from hook_helpers import claude, hook

    declare(api, repo, '[setup]\nenv = { WHERE = "{lane}" }\n')
    lane = "feat/o'q"
    api.lane_create(lane)
    result = hook("claude", "SessionStart", claude("SessionStart", workspace(repo, lane), source="startup"))
    context = json.loads(result.out)["hookSpecificOutput"]["additionalContext"]
    line = context.split("(`", 1)[1].split("` sets them", 1)[0]
    as_git = f'git() {{ if [ "$1" = lanes ]; then shift; {sys.executable} -m git_lanes "$@"; else command git "$@"; fi; }}'
    shell = subprocess.run(["bash", "-c", f'{as_git}; {line}; echo "$WHERE"'], capture_output=True, text=True,
                           cwd=repo)
    assert shell.stdout.strip() == lane, (line, shell.stderr)
