"""Reading the board: every face reads the same number of recent posts by default."""

from __future__ import annotations

import pytest
from conftest import run_cli
from http_helpers import Server
from ledger_helpers import Clock

from git_lanes.api import Lanes
from git_lanes.domain import BOARD_LIMIT


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


def notes(lanes: Lanes, count: int, agent: str = "coder-1") -> None:
    for n in range(count):
        lanes.board_post(f"note {n}", agent)


def test_every_face_reads_the_same_number_of_recent_posts_by_default(lanes, repo):
    from git_lanes.cli import board as board_cli

    assert board_cli.BOARD_LIMIT == BOARD_LIMIT  # spelled there: a command module loads no domain code
    notes(lanes, BOARD_LIMIT + 5)
    cli = run_cli("board", "read", "--json", cwd=repo)
    assert cli.code == 0, cli.err
    assert len(cli.json["posts"]) == BOARD_LIMIT
    assert len(lanes.board_read()["posts"]) == BOARD_LIMIT
    with Server(repo) as server:
        assert len(server.get("/api/v1/board").json["posts"]) == BOARD_LIMIT
        read = server.post("/api/v1/board/read", {"agent": "coder-2"})
        assert read.status == 200 and len(read.json["posts"]) == BOARD_LIMIT
