"""The moments `--since` takes (git_lanes/model/moments.py), read against a pinned clock: git's forms, each
exact, and anything else refused in one line naming them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from conftest import run_cli
from ledger_helpers import Clock

from git_lanes.api import Lanes
from git_lanes.errors import UserError
from git_lanes.model.moments import FORMS, parse_moment


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


NOW = at("2026-12-02T16:41:34+00:00")
HOUR, DAY = 3600, 86400


@pytest.mark.parametrize("text, expected", [
    ("now", NOW), ("2.hours.ago", NOW - 2 * HOUR), ("2 hours ago", NOW - 2 * HOUR), ("2 hours", NOW - 2 * HOUR),
    ("1 week ago", NOW - 7 * DAY), ("last week", NOW - 7 * DAY), ("two weeks ago", NOW - 14 * DAY),
    ("an hour ago", NOW - HOUR), ("1.5h", NOW - 1.5 * HOUR), ("2.5.hours.ago", NOW - 2.5 * HOUR),
    ("3d", NOW - 3 * DAY), ("12h", NOW - 12 * HOUR), ("30m", NOW - 1800), ("2w", NOW - 14 * DAY),
    ("45 SECONDS AGO", NOW - 45), ("1 month ago", NOW - 30 * DAY), ("1 year ago", NOW - 365 * DAY),
    ("yesterday", NOW - DAY), ("today", at("2026-12-02T00:00:00+00:00")), ("midnight", at("2026-12-02T00:00+00:00")),
    ("noon", at("2026-12-02T12:00+00:00")), ("@1700000000", 1700000000.0),
    ("2026-12-01", at("2026-12-01T00:00+00:00")), ("2026-12-01 13:00", at("2026-12-01T13:00+00:00")),
    ("2026-12-01T13:00:05", at("2026-12-01T13:00:05+00:00")), ("2026-12-01T13:00Z", at("2026-12-01T13:00+00:00")),
    ("2026-12-01T13:00+01:00", at("2026-12-01T12:00+00:00")), ("2026-12-01 13:00 +0100", at("2026-12-01T12:00+00:00")),
    ("2026-12-01t13:00:05.5-05", at("2026-12-01T18:00:05.500000+00:00")),
    ("Tue Dec 1 13:00:00 2026 +0100", at("2026-12-01T12:00+00:00")),
    ("Tue, 1 Dec 2026 13:00:00 +0100", at("2026-12-01T12:00+00:00")),
])
def test_the_forms_git_takes_name_the_moment_git_names(text: str, expected: float):
    assert parse_moment(text, NOW) == expected


def test_noon_before_noon_is_yesterdays_as_in_git():
    assert parse_moment("noon", at("2026-12-02T09:00+00:00")) == at("2026-12-01T12:00+00:00")


@pytest.mark.parametrize("text, reason", [
    ("garbage", ""), ("", ""), ("  ", ""), ("3 days ago 5pm", ""), ("1700000000", ""), ("-3d", ""),
    ("2026-13-01", ""), ("2026-12-01T13:00+25:00", ""), ("ago", ""), ("3 fortnights ago", ""),
    ("99999999999d", ": it reaches back before 1970"), ("1" * 400 + "d", ": it reaches back before 1970"),
    ("@" + "9" * 400, ": it is after the year 9999"),
])
def test_anything_else_is_refused_in_one_line_naming_the_forms(text: str, reason: str):
    """git's approxidate reads `garbage` as now and `3d` as a day of the month: a typo would filter quietly."""
    with pytest.raises(UserError) as refused:
        parse_moment(text, NOW)
    assert refused.value.code == "invalid_date" and refused.value.hint == FORMS
    assert refused.value.message.endswith(reason) and "\n" not in refused.value.message


def test_history_and_run_stats_read_since_as_git_does(repo):
    """Both took only a date (`run stats` only YYYY-MM-DD): `--since 2.hours.ago`, `yesterday` or an ISO
    moment with its offset were refused."""
    clock = Clock(NOW - 5 * HOUR)
    api = Lanes(repo, clock=clock)
    api.lane_create("feat")
    (repo / ".lanes" / "workspaces" / "feat" / "old.txt").write_text("old\n")
    old = api.commit("old work", "coder-1", lane="feat")["id"]
    clock.advance(4 * HOUR)
    (repo / ".lanes" / "workspaces" / "feat" / "new.txt").write_text("new\n")
    new = api.commit("new work", "coder-1", lane="feat")["id"]
    assert [t.id for t in api.history(lane="feat", since="2.hours.ago").transitions] == [new]
    assert [t.id for t in api.history(lane="feat", since="yesterday").transitions] == [new, old]
    assert api.run_stats(since="yesterday")["since"] == "2026-12-01"
    assert api.run_stats(since="2026-12-01T01:00+02:00")["since"] == "2026-11-30"
    # the CLI, with moments that name the same instant whenever the test runs
    stats = run_cli("run", "stats", "--since", "@1700000000", "--json", cwd=repo)
    assert stats.code == 0 and stats.json["since"] == "2023-11-14", stats.err
    refused = run_cli("run", "stats", "--since", "next tuesday", cwd=repo)
    assert refused.code == 1 and refused.out == ""
    assert refused.err.splitlines() == ["git-lanes: error: invalid date 'next tuesday'", f"hint: {FORMS}"]
