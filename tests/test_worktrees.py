"""Agents and their workspaces through the API (shared by the MCP and SDK faces): assigning a lane creates or
reuses it, one live agent per lane, release refuses to lose work, orphans of lapsed agents are reclaimed, and
a call from an agent extends its lease at most once a minute."""

from __future__ import annotations

import pytest

from git_lanes.api import Lanes
from git_lanes.domain.agents import LEASE_SECONDS
from git_lanes.errors import Conflict, NotFound, Refused, UserError


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def lanes(repo, clock):
    return Lanes(repo, clock=clock)


def test_assign_creates_then_reuses_and_names_a_default_lane(lanes, repo):
    first = lanes.assign_worktree("coder-1")
    assert (first["lane"], first["created"], first["workspace_created"]) == ("agent/coder-1", True, True)
    assert first["workspace"] == str(repo / ".lanes" / "workspaces" / "agent" / "coder-1")
    again = lanes.assign_worktree("coder-1")
    assert (again["created"], again["workspace_created"], again["previous_lane"]) == (False, False, "agent/coder-1")
    assert lanes.agent_lane("coder-1") == "agent/coder-1"
    moved = lanes.assign_worktree("coder-1", "feature/x", base="main")
    assert moved["lane"] == "feature/x" and moved["previous_lane"] == "agent/coder-1"
    assert lanes.agent_lane("coder-1") == "feature/x"


def test_a_lane_is_one_live_agents_until_its_lease_lapses(lanes, clock):
    lanes.assign_worktree("a", "shared")
    with pytest.raises(Conflict) as taken:
        lanes.assign_worktree("b", "shared")
    assert taken.value.code == "lane_assigned" and taken.value.details["holders"] == ["a"]
    assert "`git lanes task handoff`" in taken.value.hint  # a command, not one face's tool name
    clock.now += LEASE_SECONDS + 1
    assert lanes.assign_worktree("b", "shared")["lane"] == "shared"


def test_a_lane_deleted_by_hand_gets_its_workspace_back(lanes, repo):
    path = lanes.assign_worktree("a")["workspace"]
    lanes.release_worktree("a")
    assert not (repo / path).exists()
    assert lanes.assign_worktree("a")["workspace_created"] is True


def test_release_refuses_unsaved_work_and_keeps_the_lane(lanes, repo):
    path = lanes.assign_worktree("a")["workspace"]
    (repo / path / "draft.txt").write_text("not yet committed\n")
    with pytest.raises(Refused) as refused:
        lanes.release_worktree("a")
    assert refused.value.code == "dirty_workspace"
    assert lanes.agent_lane("a") == "agent/a" and (repo / path / "draft.txt").exists()
    kept = lanes.release_worktree("a", keep_workspace=True)
    assert kept["workspace_removed"] is None and (repo / path / "draft.txt").exists()
    with pytest.raises(UserError) as no_lane:
        lanes.agent_lane("a")
    assert no_lane.value.code == "no_lane"


def test_reclaim_removes_clean_orphans_and_keeps_unsaved_ones(lanes, repo, clock):
    clean = lanes.assign_worktree("gone-clean")["workspace"]
    dirty = lanes.assign_worktree("gone-dirty")["workspace"]
    alive = lanes.assign_worktree("alive")["workspace"]
    (repo / dirty / "notes.txt").write_text("work in progress\n")
    clock.now += LEASE_SECONDS + 1
    lanes.touch_agent("alive")
    preview = lanes.reclaim_orphan_worktrees(dry_run=True)
    assert [r["agent"] for r in preview["reclaimed"]] == ["gone-clean"]
    assert (repo / clean).exists()
    report = lanes.reclaim_orphan_worktrees()
    assert report["reclaimed"] == [{"agent": "gone-clean", "lane": "agent/gone-clean", "workspace": clean}]
    assert [(k["agent"], k["reason"]) for k in report["kept"]] == [("gone-dirty", "dirty_workspace")]
    assert not (repo / clean).exists() and (repo / dirty / "notes.txt").exists() and (repo / alive).exists()
    assert lanes.lane_show("agent/gone-clean")["name"] == "agent/gone-clean"  # the lane and its states stay


def test_touch_extends_the_lease_at_most_once_a_minute(lanes, clock):
    assert lanes.touch_agent("a")["lease_until"] == clock.now + LEASE_SECONDS
    clock.now += 30
    assert lanes.touch_agent("a") is None
    clock.now += 31
    assert lanes.touch_agent("a")["lease_until"] == clock.now + LEASE_SECONDS


def test_unknown_agents_and_bad_names(lanes):
    with pytest.raises(UserError) as nothing:
        lanes.release_worktree("nobody")
    assert nothing.value.code == "no_lane"
    with pytest.raises(NotFound) as raised:
        lanes.assign_worktree("a", base="no-such-state")
    assert raised.value.code == "not_found"
    with pytest.raises(UserError) as invalid:
        lanes.assign_worktree("a", "bad..name")
    assert invalid.value.code == "invalid_lane_name"
