"""The time a ledger commit and its reflog line carry (store/clock.py): the zone read once, as git reads it, and
again when the process changes it (`TZ`, then `time.tzset()`); never libgit2's clock, whose `mktime` stats
the zone file on every signature (two stats per append in a held-open process)."""

from __future__ import annotations

import time

import pygit2
import pytest
from conftest import git

REF = "refs/lanes/ledger"


def _offsets(repo) -> tuple[str, str]:
    """The UTC offset of the ledger head's committer line and of the ledger's last reflog line."""
    committer = next(line for line in git("cat-file", "-p", REF, cwd=repo).splitlines()
                     if line.startswith("committer "))
    reflog = (repo / ".git" / "logs" / REF).read_text().splitlines()[-1]
    return committer.rsplit(" ", 1)[1], reflog.partition("\t")[0].rsplit(" ", 1)[1]


@pytest.fixture
def zone(monkeypatch):
    """Change the process's zone as a Python program does (POSIX zone strings: no zone files needed); back to
    UTC after."""
    def change(value: str) -> None:
        monkeypatch.setenv("TZ", value)
        time.tzset()

    yield change
    change("UTC")


def test_a_held_open_process_follows_its_tz_in_commits_and_reflog_lines_alike(api, repo, zone):
    api.board_post("in UTC", "lead")
    assert _offsets(repo) == ("+0000", "+0000")
    zone("IST-5:30")
    api.board_post("in India", "lead")
    assert _offsets(repo) == ("+0530", "+0530")
    zone("BRT3")
    api.board_post("in Brazil", "lead")
    assert _offsets(repo) == ("-0300", "-0300")
    assert git("log", "-1", "--format=%ci", REF, cwd=repo).strip().endswith("-0300")


def test_an_append_never_asks_libgit2_for_the_time(api, repo, monkeypatch):
    """`pygit2.Signature` without a time is libgit2's `git_signature_now`: a stat of /etc/localtime each."""
    api.board_post("warm", "lead")
    real = pygit2.Signature
    asked: list[tuple[object, ...]] = []

    def spy(*args, **kwargs):
        if len(args) < 3 and "time" not in kwargs:
            asked.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(pygit2, "Signature", spy)
    before = git("rev-parse", REF, cwd=repo).strip()
    for i in range(3):
        api.board_post(f"post {i}", "lead")
    assert git("rev-list", "--count", f"{before}..{REF}", cwd=repo).strip() == "3"  # the appends did happen
    assert asked == []
