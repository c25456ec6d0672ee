"""Usage errors and set-up details a `--json` caller or a plain-git user meets first."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import git


def test_a_usage_error_answers_json_callers_in_json_and_exits_2(repo, cli):
    result = cli("lane", "create", "--json", cwd=repo)
    assert result.code == 2
    assert json.loads(result.out) == {"error": "usage", "message": "Missing argument 'NAME'."}
    assert "Missing argument 'NAME'" in result.err and "Traceback" not in result.err


def test_a_usage_error_without_json_prints_only_usage(repo, cli):
    result = cli("no-such-command", cwd=repo)
    assert result.code == 2 and result.out == ""
    assert "No such command 'no-such-command'" in result.err


def test_version_and_help_exit_0(repo, cli):
    assert cli("--version", cwd=repo).code == 0
    assert cli("lane", "create", "--help", cwd=repo).code == 0


def test_help_prints_what_help_prints(tmp_path, cli):
    """`git lanes help [COMMAND…]` answers as `--help` does (git has `git help`); it said "No such command"."""
    for words in [(), ("commit",), ("lane", "create"), ("help",)]:
        asked, shown = cli("help", *words, cwd=tmp_path), cli(*words, "--help", cwd=tmp_path)
        assert (asked.code, asked.out, asked.err) == (0, shown.out, ""), words
    assert json.loads(cli("help", "commit", "--json", cwd=tmp_path).out) == \
        {"command": "git lanes commit", "help": cli("commit", "--help", cwd=tmp_path).out}
    for words, named in [(("comit",), "No such command 'comit'. Did you mean 'commit'?"),
                         (("lane", "nope"), "No such command 'nope'"),
                         (("commit", "x"), "git lanes commit has no subcommands")]:
        missed = cli("help", *words, cwd=tmp_path)
        assert missed.code == 2 and missed.out == "" and named in missed.err and "Traceback" not in missed.err


def test_init_on_a_repository_with_history_leaves_git_log_quiet(tmp_path, cli):
    root = tmp_path / "old"
    root.mkdir()
    git("init", "-q", "-b", "master", cwd=root)
    (root / "f.txt").write_text("x\n")
    git("add", "f.txt", cwd=root)
    git("commit", "-qm", "first", cwd=root)
    assert cli("init", cwd=root).code == 0
    log = subprocess.run(["git", "log", "-1"], cwd=root, capture_output=True, text=True)
    assert log.returncode == 0 and log.stderr == ""
    assert git("rev-parse", "--verify", "refs/notes/lanes", cwd=root).strip()
    assert cli("init", "--json", cwd=root).json["already_initialized"] is True


def test_an_empty_tag_is_refused_and_writes_nothing(repo, cli):
    before = git("for-each-ref", cwd=repo)
    (repo / "README.md").write_text("changed\n")
    result = cli("commit", "-m", "x", "--agent-id", "a", "--tag", " ", cwd=repo)
    assert result.code == 1 and "tag" in result.err and "Traceback" not in result.err
    assert git("for-each-ref", cwd=repo) == before


def test_diff_stat_of_equal_states_prints_nothing_like_git(repo, cli):
    result = cli("diff", "main", "main", "--stat", cwd=repo)
    assert result.code == 0 and result.out == ""


@pytest.mark.parametrize("typed, meant", [("statu", "status"), ("comit", "commit"), ("lane craete", "create"),
                                          ("task lsit", "list"), ("promte", "promote")])
def test_a_mistyped_command_suggests_the_nearest_as_git_does(repo, cli, typed, meant):
    result = cli(*typed.split(), cwd=repo)
    suggestion = result.err.partition("Did you mean ")[2]
    assert result.code == 2 and f"'{meant}'" in suggestion, result.err
    as_json = cli(*typed.split(), "--json", cwd=repo)
    assert as_json.code == 2 and f"'{meant}'" in as_json.json["message"].partition("Did you mean ")[2]


def test_a_command_far_from_any_gets_no_suggestion(repo, cli):
    result = cli("xyzzy", cwd=repo)
    assert result.code == 2 and "No such command 'xyzzy'." in result.err and "Did you mean" not in result.err


@pytest.mark.parametrize("word", ["zzzz", "release-1", "91c0"])
def test_publish_refuses_a_ticket_that_matches_nothing_as_ticket_show_does(repo, cli, word):
    """`publish TICKET` once sent a word that is not hex to click as a subcommand: "No such command", exit 2.
    An id that matches no ticket is the same bad input whatever its letters: one line, exit 1, as `ticket
    show` says it."""
    shown = cli("ticket", "show", word, cwd=repo)
    for args in (("publish", word), ("publish", word, "--json")):
        result = cli(*args, cwd=repo)
        assert (result.code, result.err.splitlines()[0]) == (1, f"git-lanes: error: no ticket matches '{word}'")
        assert result.err.splitlines()[0] == shown.err.splitlines()[0] and "Traceback" not in result.err
    assert cli("publish", word, "--json", cwd=repo).json["error"] == "unknown_ticket"
    typo = cli("publish", "stauts", cwd=repo)  # a mistyped subcommand is still a usage error, with advice
    assert typo.code == 2 and "Did you mean 'status'?" in typo.err


def test_publish_help_and_man_page_show_the_ticket_form_and_its_options(repo, cli):
    """`git lanes publish TICKET [--remote] [--branch] [--base]` is the command issue 13 names, but its
    options lived on a hidden `ticket` subcommand: `publish --help` and the man page listed none of them, and
    a usage error told the user to try `git lanes publish ticket --help`, a command they never typed."""
    from git_lanes.cli.manpage import generate

    shown = cli("publish", "--help", cwd=repo)
    assert shown.code == 0
    assert "Usage: git lanes publish [OPTIONS] TICKET | status | sync" in shown.out
    for option in ("--remote REMOTE", "--branch NAME", "--base BRANCH", "--agent ID", "--json"):
        assert option in shown.out, option
    section = generate().partition('.SS "git lanes publish"')[2].partition(".SS ")[0]
    for option in ("\\-\\-remote REMOTE", "\\-\\-branch NAME", "\\-\\-base BRANCH", "\\-\\-json"):
        assert option in section, option
    for args in (("publish", "91c0", "--bogus"), ("publish", "--json")):
        result = cli(*args, cwd=repo)
        assert result.code == 2 and "publish ticket" not in result.err + result.out, result.err
        assert "Try 'git lanes publish --help' for help." in result.err
    assert "Missing argument 'TICKET'" in cli("publish", "--json", cwd=repo).json["message"]
    # an option of the ticket form is not silently dropped before a subcommand
    misplaced = cli("publish", "--remote", "origin", "sync", cwd=repo)
    assert misplaced.code == 2 and "--remote" in misplaced.err


def test_a_file_name_holding_control_characters_is_quoted_in_text_output_as_git_quotes_it(repo, cli):
    """An agent can name a file `\\x1b]0;…\\x07` or with a newline: `status`, `lane show`, `show` and `diff
    --name-only` printed it raw, so the terminal ran the escape sequence and one name read as two lines.
    git quotes such a name (`"a\\033[31mb"`); so does every path listing here. --json keeps it exact."""
    import os

    assert cli("lane", "create", "f", cwd=repo).code == 0
    ws = repo / ".lanes" / "workspaces" / "f"
    names = {"a\x1b[2Jb.txt": '"a\\033[2Jb.txt"', "new\nline.txt": '"new\\nline.txt"',
             "caf\udce9.txt": '"caf\\351.txt"'}
    for name in names:
        with open(os.fsencode(ws) + b"/" + os.fsencode(name), "w") as handle:
            handle.write("x")
    outputs = [cli("status", cwd=repo).out, cli("lane", "show", "f", cwd=repo).out]
    made = cli("commit", "-w", "f", "-m", "odd names", "--agent", "a", "--auto-accept", "--json", cwd=repo)
    assert made.code == 0, made.err
    outputs += [cli("show", made.json["id"], cwd=repo).out, cli("diff", "main", "f", "--name-only", cwd=repo).out]
    for out in outputs:
        assert "\x1b" not in out and "new\nline" not in out, out
        for shown in names.values():
            assert shown in out, (shown, out)
    assert {c["path"] for c in cli("diff", "main", "f", "--json", cwd=repo).json["changes"]} == set(names)
    # --stat printed them raw too; git quotes them there, each name on a line of its own, the bars aligned
    stat = cli("diff", "main", "f", "--stat", cwd=repo).out
    assert "\x1b" not in stat and "new\nline" not in stat, stat
    rows = stat.splitlines()
    assert len(rows) == 4 and rows[-1] == " 3 files changed, 3 insertions(+)", stat
    width = max(len(shown) for shown in names.values())
    assert sorted(rows[:3]) == sorted(f" {shown:<{width}} | 1 +" for shown in names.values()), stat


def _to_a_closed_pipe(*args: str, cwd) -> subprocess.CompletedProcess:
    """Run git-lanes with its stdout a pipe whose reader is already gone (`git lanes … | head` after head
    exited): its first write fails, deterministically, whatever the machine's speed."""
    import os
    import sys

    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run([sys.executable, "-m", "git_lanes", *args], cwd=cwd, stdout=writer,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(writer)


def test_a_reader_that_goes_away_ends_the_demo_quietly_as_any_other_command(repo, tmp_path):
    """`git lanes demo | head` (the README's first command, paged): the demo prints as it plays, so its
    reader can go away mid-way. That is no bug of ours: it ends quietly with the code every other command
    gets when its output is closed, not as an internal error (6) with a BrokenPipeError line."""
    listing = _to_a_closed_pipe("lane", "list", cwd=repo)
    demo = _to_a_closed_pipe("demo", "--directory", str(tmp_path / "demo"), cwd=tmp_path)
    assert listing.returncode not in (0, 6) and listing.stderr == ""
    assert (demo.returncode, demo.stderr) == (listing.returncode, "")
