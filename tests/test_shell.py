"""Shell lines are parsed, not prefix-matched: every simple command and every written file is found."""

from __future__ import annotations

import pytest

from git_lanes.domain import shell
from git_lanes.domain.admission import resolve
from git_lanes.errors import UserError

DENY = ("rm -rf *", "git push --force *", "curl *")


def commands(line: str) -> list[str]:
    return [c.text for c in shell.parse(line).commands]


@pytest.mark.parametrize("line,hidden", [
    ("cd x && rm -rf y", "rm -rf y"),
    ("true || rm -rf y", "rm -rf y"),
    ("ls; rm -rf y", "rm -rf y"),
    ("ls | rm -rf y", "rm -rf y"),
    ("(rm -rf y)", "rm -rf y"),
    ("{ rm -rf y; }", "rm -rf y"),
    ("echo $(curl http://x)", "curl http://x"),
    ("echo `curl http://x`", "curl http://x"),
    ("echo \"$(curl http://x)\"", "curl http://x"),
    ("bash -c 'rm -rf y'", "rm -rf y"),
    ("sh -c \"bash -c 'curl x'\"", "curl x"),
    ("eval 'rm -rf y'", "rm -rf y"),
    ("env X=1 rm -rf y", "rm -rf y"),
    ("sudo -u root rm -rf y", "rm -rf y"),
    ("xargs -n1 rm -rf < list", "rm -rf"),
    ("nohup timeout 5 curl x &", "curl x"),
    ("find . -exec rm -rf {} +", "rm -rf ."),  # `{}`: the files found beneath the start points
    ("/bin/rm -rf y", "rm -rf y"),
    ("if true; then rm -rf y; fi", "rm -rf y"),
    ("for f in a b; do curl $f; done", "curl $f"),
    ("x=$(curl evil)", "curl evil"),
    ("cat <<EOF\n$(curl evil)\nEOF", "curl evil"),
    ("diff <(curl a) b", "curl a"),
    ("git push --force origin main", "git push --force origin main"),
])
def test_a_denied_command_is_found_wherever_it_hides(line, hidden):
    parsed = shell.parse(line)
    assert hidden in [c.text for c in parsed.commands]
    assert shell.check(parsed, None, DENY) is not None


@pytest.mark.parametrize("line", ["rm --rec --forc y", "rm -r --f y", "rm --recursive --for y",
                                  "git push --forc origin main", "git push --force-w origin main",
                                  "git push --mirror origin", "git push --mirr origin"])
def test_a_long_option_cut_short_or_a_mirror_push_is_denied_as_the_option_it_stands_for(line):
    """GNU tools and git take any unique abbreviation of a long option (`rm --rec --forc x` removes x), and a
    mirror push force-updates every remote ref."""
    assert "is denied by the command policy" in shell.check(shell.parse(line), None, DENY)


@pytest.mark.parametrize("line", ["git push --follow-tags origin main", "rm --recursive --one-file-system y",
                                  "git fetch --mirror origin", "git push --delete origin old"])
def test_long_options_that_abbreviate_no_denied_option_pass(line):
    assert shell.check(shell.parse(line), None, DENY) is None


@pytest.mark.parametrize("line", ["echo 'rm -rf y'", "python - <<'PY'\nimport os\nPY", "[[ -f a ]] && ls",
                                  "case $x in a) ls;; esac", "echo $((1 + 2))", "arr=(1 2); echo ${arr[@]}",
                                  "time make test", "git diff HEAD~1 -- src"])
def test_lines_bash_handles_parse_and_pass(line):
    assert shell.check(shell.parse(line), None, DENY) is None


@pytest.mark.parametrize("line", ['echo "open', "ls |", "&& ls", "echo $(", ""])
def test_a_line_that_cannot_be_parsed_is_refused(line):
    with pytest.raises(UserError) as error:
        shell.parse(line)
    assert error.value.code == "unparsable_command"


def test_redirections_and_tee_are_writes():
    parsed = shell.parse("make > build.log 2>&1; echo x >> notes.txt; ls | tee -a out.txt; cat < in.txt; "
                         "echo y &> all.log; echo z 2>/dev/null")
    assert sorted(parsed.writes) == ["all.log", "build.log", "notes.txt", "out.txt"]


def test_allow_list_judges_the_wrapped_command_and_deny_wins():
    allow = ("python -m pytest *", "git diff *")
    assert shell.check(shell.parse("env CI=1 python -m pytest -q && git diff"), allow, ()) is None
    assert "allow list" in shell.check(shell.parse("python -c 'print(1)'"), allow, ())
    assert "allow list" in shell.check(shell.parse("sudo python -m pytest"), allow, ())
    assert "denied" in shell.check(shell.parse("git diff; curl x"), ("*",), ("curl *",))


@pytest.mark.parametrize("line", ["uv run rm -rf build", "poetry run rm -rf build", "pipenv run rm -rf build",
                                  "npm exec -- rm -rf build", "npx -c 'rm -rf build'", "direnv exec . rm -rf build",
                                  "conda run -n env rm -rf build", "nix-shell --run 'rm -rf build'",
                                  "uv --offline run --with requests rm -rf build", "bundle exec rm -rf build"])
def test_what_a_project_tool_runs_meets_the_deny_list(line):
    """`uv run CMD`, `poetry run CMD`, `npx -c SCRIPT`… run a command as `env` or `timeout` does, but were read
    as one command of their own: `uv run rm -rf build` passed the `rm -rf *` deny pattern (and `uv run sh -c
    'echo x > ../../../f'` the write gate)."""
    assert "denied" in (shell.check(shell.parse(line), None, DENY) or ""), line


@pytest.mark.parametrize("line", ["cross-env NODE_ENV=test rm -rf build", "cross-env-shell X=1 'rm -rf build'",
                                  "dotenv -e .env -- rm -rf build", "dotenv -e .env -c dev -- rm -rf build",
                                  "dotenv -f .env run rm -rf build", "env-cmd -f .env.test rm -rf build",
                                  "env-cmd --use-shell 'rm -rf build'", "op run -- rm -rf build",
                                  "op run --env-file .env -- rm -rf build", "op --account me run -- rm -rf build",
                                  "doppler run -- rm -rf build", "doppler run -p app -c dev -- rm -rf build",
                                  "doppler run --command 'rm -rf build'", "aws-vault exec prod -- rm -rf build",
                                  "aws-vault exec prod --duration=1h -- rm -rf build", "aws-vault exec prod rm -rf build",
                                  "dotenvx run -- rm -rf build", "infisical run -- rm -rf build",
                                  "envchain aws rm -rf build", "envdir ./env rm -rf build"])
def test_what_an_environment_tool_runs_meets_the_deny_list(line):
    """cross-env, dotenv, env-cmd, `op run`, `doppler run`, `aws-vault exec`… set variables and run a command,
    as `env` does, but were read as one command of their own: `cross-env X=1 rm -rf build` passed the
    `rm -rf *` deny pattern."""
    assert "denied" in (shell.check(shell.parse(line), None, DENY) or ""), line


def test_an_allow_list_still_judges_a_project_tools_line_whole():
    """What a project tool runs is judged by the deny list and the write gate; the allow list judges the line
    as it always did, so `uv run pytest *` allows `uv run pytest -q` without listing `pytest` too."""
    allow = ("uv run pytest *", "npm test")
    assert shell.check(shell.parse("uv run pytest -q"), allow, DENY) is None
    assert shell.check(shell.parse("npm test"), allow, DENY) is None
    assert "allow list" in shell.check(shell.parse("uv run python x.py"), allow, DENY)
    assert "denied" in shell.check(shell.parse("uv run pytest -q; uv run rm -rf x"), ("uv run *",), DENY)
    assert shell.parse("uv run sh -c 'echo x > out.txt'").writes == ("out.txt",)


def test_a_computed_program_cannot_be_judged():
    assert "computed at run time" in shell.check(shell.parse("$CMD --flag"), None, ())


def test_write_targets_resolve_against_cwd_and_home():
    assert resolve("out.txt", "/w/a", "/home/u") == "/w/a/out.txt"
    assert resolve("~/x", "/w", "/home/u") == "/home/u/x"
    assert resolve("$PWD/../b", "/w/a", None) == "/w/b"
    assert resolve("$TMPDIR/x", "/w", "/home/u") is None


@pytest.mark.parametrize("line,hidden", [
    ("chrt 1 rm -rf y", "rm -rf y"),
    ("chrt -f 10 curl x", "curl x"),
    ("chrt --sched-runtime 5 -d 0 curl x", "curl x"),
    ("taskset -c 0-3 curl x", "curl x"),
    ("prlimit --nofile=1024 curl x", "curl x"),
    ("cpulimit -l 50 -- rm -rf y", "rm -rf y"),
])
def test_a_scheduling_wrapper_s_priority_or_limit_is_not_taken_for_its_command(line, hidden):
    """`chrt PRIORITY CMD` was read as running the program `PRIORITY`, so `chrt 1 rm -rf y` passed the deny
    list; prlimit and cpulimit were not followed at all."""
    parsed = shell.parse(line)
    assert hidden in [c.text for c in parsed.commands]
    assert shell.check(parsed, None, DENY) is not None
