"""A name people tell apart by eye (a lane, an actor, a tag, an agent type or model) refuses the characters
that make it read as another ("Trojan Source", CVE-2021-42574): "main\\u00a0" and "main\\u200b" look like
"main", "feat/\\u202elive" like "feat/evil". Free text (titles, posts, prompts) keeps them; text output shows
them escaped (tests/test_shown_text.py)."""

from __future__ import annotations

import unicodedata

import pytest
from conftest import git, run_cli

from git_lanes.errors import UserError
from git_lanes.model.ids import Actor, LaneName
from git_lanes.model.text import name_problem

# A character of each kind: a bidi override, embedding, isolate and mark, the Arabic letter mark, a no-break
# space, an ideographic space, a zero-width space and joiner, a word joiner, a BOM, a soft hyphen, a Hangul
# filler, a variation selector, a tag character, a C1 control (CSI to some terminals).
UNSEEN = ["\u202e", "\u202b", "\u2067", "\u200f", "\u061c", "\u00a0", "\u3000", "\u200b", "\u200d", "\u2060",
          "\ufeff", "\u00ad", "\u3164", "\ufe0f", "\U000e0041", "\u009b"]


def test_the_list_holds_every_control_format_character_and_space_of_this_pythons_unicode():
    """The list is written out (every machine refuses the same names, whatever its Python's Unicode); this
    checks it against the character database here. Of the characters `str.isprintable` passes, exactly the
    ones that show nothing are refused: letters, marks, digits and symbols of every script are names."""
    refused_printable = set()
    for code in range(0x110000):
        char = chr(code)
        category = unicodedata.category(char)
        refused = name_problem(f"a{char}b") is not None
        if category in ("Cc", "Cf", "Cs", "Zs", "Zl", "Zp") and char != " ":
            assert refused, (hex(code), category)
        elif char.isprintable() and refused:
            refused_printable.add(code)
    assert refused_printable == {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x3164,
                                 0xFFA0, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}


@pytest.mark.parametrize("char", UNSEEN, ids=[f"U+{ord(c):04X}" for c in UNSEEN])
def test_lane_names_and_actors_refuse_it(char):
    with pytest.raises(UserError) as refused:
        LaneName(f"main{char}")
    assert refused.value.code == "invalid_lane_name" and f"U+{ord(char):04X}" in refused.value.message
    with pytest.raises(UserError) as refused:
        Actor(f"Jane{char}Doe")
    assert refused.value.code == "invalid_actor"


def test_names_of_every_script_stay_names():
    for name in ("feature/auth", "José", "Łukasz-Müller", "日本語/機能", "ميزة", "fix-🚀", "é-composed"):
        assert name_problem(name) is None
        assert LaneName(name) == name and Actor(name) == name


def test_the_cli_refuses_such_a_lane_name_in_one_line_and_makes_nothing(repo):
    for char in ("\u202e", "\u00a0", "\u200b"):
        name = f"feat/{char}live"
        text = run_cli("lane", "create", name, cwd=repo)
        assert text.code == 1 and text.out == "" and "Traceback" not in text.err, text.err
        assert text.err.splitlines()[0].startswith("git-lanes: error: invalid lane name ")
        assert f"U+{ord(char):04X}" in text.err and char not in text.err
        refused = run_cli("lane", "create", name, "--json", cwd=repo)
        assert refused.code == 1 and refused.json["error"] == "invalid_lane_name"
    assert not git("for-each-ref", "refs/lanes/heads/", cwd=repo).strip()
    assert not (repo / ".lanes" / "workspaces" / "feat").exists()


def test_a_tag_an_agent_type_or_a_model_with_one_is_refused_and_nothing_is_committed(repo):
    (repo / "f.txt").write_text("f\n")
    head = git("rev-parse", "main", cwd=repo)
    for option, code in (("--tag", "invalid_tag"), ("--agent-type", "invalid_intent"), ("--model", "invalid_intent")):
        text = run_cli("commit", "-m", "work", "--agent", "coder-1", option, "auth\u202e", "--json", cwd=repo)
        assert text.code == 1 and text.json["error"] == code, (option, text.out, text.err)
        assert "U+202E" in text.json["message"]
    assert git("rev-parse", "main", cwd=repo) == head


def test_a_person_whose_git_name_holds_one_is_told_in_one_line(repo):
    git("config", "user.name", "Jane\u202eeoD", cwd=repo)
    text = run_cli("task", "create", "Write the parser", "--json", cwd=repo)
    assert text.code == 1 and text.json["error"] == "invalid_actor", (text.out, text.err)
    assert "U+202E" in text.json["message"] and "\u202e" not in text.err
    assert run_cli("task", "list", "--json", cwd=repo).json == []


def test_a_lane_ref_plain_git_made_with_such_a_name_is_no_lane_and_can_be_deleted(repo):
    """Older git-lanes took such names, and plain git still does: the ref is not listed as a lane (as with any
    name `lane create` refuses), and `lane delete` keeps its head in a backup ref."""
    head = git("rev-parse", "main", cwd=repo).strip()
    name = "main\u00a0"
    git("update-ref", f"refs/lanes/heads/{name}", head, cwd=repo)
    listed = run_cli("lane", "list", "--json", cwd=repo)
    assert listed.code == 0 and [lane["name"] for lane in listed.json] == ["main"]
    deleted = run_cli("lane", "delete", name, "--json", cwd=repo)
    assert deleted.code == 0, deleted.err
    assert not git("for-each-ref", "refs/lanes/heads/", cwd=repo).strip()
    assert git("for-each-ref", "--format=%(objectname)", "refs/lanes/backups/", cwd=repo).split() == [head]

