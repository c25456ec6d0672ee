"""Unread counts against the posts themselves: random interleavings of posts (to everyone and directed),
answers, reads (whole, partial, by `wait`), heartbeats, undos and redos of posts by three agents, on one
machine and on two that sync. Every agent's count and `board read --unread` listing must match a count taken
from the posts, whatever the read positions' bookkeeping (`own`, `own_before`, inboxes) holds."""

from __future__ import annotations

import random

import pytest
from conftest import git
from gitserver import clone, make_origin
from ledger_helpers import Clock

from git_lanes.api import Lanes
from git_lanes.domain import board
from git_lanes.domain.board_index import AGENT_KINDS, current_seq, get_post
from git_lanes.errors import Conflict, NotFound, Refused

AGENTS = ("a", "b", "c")


def from_the_posts(lanes: Lanes, agent: str) -> set[int]:
    """The posts unread for `agent` by brute force: its inbox, and every post to everyone of a kind that wakes
    from another agent after its cursor, none of them retracted."""
    state = lanes._state()
    reader = board.reader_of(state, agent)
    found = set(reader["inbox"])
    if reader["cursor"] is not None:
        for seq in range(reader["cursor"] + 1, current_seq(state) + 1):
            post = get_post(state, seq)
            if post and post["to"] is None and post["from"] != agent and post["kind"] in AGENT_KINDS:
                found.add(seq)
    return {seq for seq in found if not (get_post(state, seq) or {}).get("retracted")}


def agree(lanes: Lanes, model: dict[str, set[int]] | None = None) -> None:
    state = lanes._state()
    for agent in AGENTS:
        expected = from_the_posts(lanes, agent)
        if model is not None:  # the model knows what was posted and read; the posts say what was retracted
            assert expected == {seq for seq in model[agent] if not get_post(state, seq).get("retracted")}, agent
        assert board.unread_count(state, agent) == len(expected), (agent, board.reader_of(state, agent))
        assert {p["seq"] for p in board.unread(state, agent)} == expected, agent


class Session:
    """One machine's agents acting at random; `model` (on one machine) is what each agent has not read."""

    def __init__(self, rng: random.Random, lanes: Lanes, agents: tuple[str, ...], model: dict | None) -> None:
        self.rng, self.lanes, self.agents, self.model = rng, lanes, agents, model
        self.posts: list[tuple[int, str]] = []  # (seq, op id)
        self.undone: list[tuple[int, str]] = []  # (seq, the undo's ledger op id)
        self.questions: list[int] = []

    def unread(self, agent: str, *seqs: int) -> None:
        if self.model is not None:
            self.model[agent].update(seqs)

    def read(self, agent: str, through: int | None) -> None:
        if self.model is not None and through is not None:
            self.model[agent] = {seq for seq in self.model[agent] if seq > through}

    def step(self, n: int) -> None:
        rng, lanes = self.rng, self.lanes
        agent = rng.choice(self.agents)
        others = [a for a in AGENTS if a != agent]
        roll = rng.random()
        if agent == "c" and 0.5 <= roll < 0.8 and rng.random() < 0.9:
            roll = 0.0  # c reports and seldom reads: its own broadcasts pile up past OWN_LISTED
        if roll < 0.45:
            to = rng.choice(others) if rng.random() < 0.25 else None
            kind = rng.choice(AGENT_KINDS)
            posted = lanes.board_post(f"{agent} {n}", agent, kind=kind, to=to)
            self.posts.append((posted["post"], posted["op"]))
            if kind == "question" and to is None:
                self.questions.append(posted["post"])
            self.unread(to, posted["post"]) if to else [self.unread(o, posted["post"]) for o in others]
        elif roll < 0.5 and self.questions:
            question = self.questions.pop(rng.randrange(len(self.questions)))
            asker = get_post(lanes._state(), question)["from"]
            try:
                answered = lanes.board_answer(question, f"answer {n}", agent)
            except Conflict:
                return  # resolved, or retracted, since
            except Refused as exc:
                # A sync renumbered the posts (two machines only): the number is another post's now, and only
                # a question is answered.
                assert exc.code == "not_a_question" and self.model is None, exc
                return
            self.posts.append((answered["post"], answered["op"]))
            for other in ([asker] if asker != agent else others):
                self.unread(other, answered["post"])
        elif roll < 0.6:
            mode = rng.choice(["all", "unread", "everything"])
            read = lanes.board_read(agent, unread_only=mode == "unread", everything=mode == "everything")
            assert read["unread"] == len([p for p in read["posts"] if p["unread"]])
            self.read(agent, read["marked_through"])
        elif roll < 0.67:
            through = rng.randrange(0, current_seq(lanes._state()) + 2)
            lanes._append("board.read", agent, {"agent": agent, "through": through})
            self.read(agent, through)
        elif roll < 0.74:
            seen = [p["seq"] for p in lanes.wait(agent, timeout=0)["posts"]]
            self.read(agent, max(seen, default=None))
        elif roll < 0.8:
            assert lanes.agent_heartbeat(agent)["unread"] == len(from_the_posts(lanes, agent))
        elif roll < 0.86 and self.posts:
            seq, op = rng.choice(self.posts)
            try:
                undo = lanes.undo(op)
            except (Conflict, Refused):
                return  # answered since, or already undone
            self.undone.append((seq, undo["ledger"][0]))
        elif roll < 0.9 and self.undone:
            seq, undo_op = self.undone.pop(rng.randrange(len(self.undone)))
            try:
                lanes.undo(undo_op)  # a redo: the post is back, and unread again for whoever had not read past it
            except (Conflict, Refused, NotFound):
                return  # changed since, or a sync refused the undo (it is recorded as refused, under another id)


@pytest.mark.parametrize("seed", range(3))
def test_counts_and_listings_match_the_posts_on_one_machine(repo, seed):
    lanes = Lanes(repo, clock=Clock())
    model: dict[str, set[int]] = {agent: set() for agent in AGENTS}
    for agent in AGENTS:
        lanes.agent_register(agent)
    session = Session(random.Random(seed), lanes, AGENTS, model)
    counted = 0
    for n in range(180):
        session.step(n)
        agree(lanes, model)
        counted = max(counted, int(board.reader_of(lanes._state(), "c").get("own_before") or 0))
    assert counted > 0  # the path under test: own broadcasts counted, not listed


@pytest.mark.parametrize("seed", range(2))
def test_counts_and_listings_match_the_posts_on_two_machines_that_sync(tmp_path, seed):
    rng = random.Random(100 + seed)
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    one = make_origin(tmp_path, bare.as_uri())
    Lanes(one).sync()
    two = clone(tmp_path, bare.as_uri(), "two")
    Lanes.open_for_sync(two)[0].pull()
    machines = [Lanes(one), Lanes(two)]
    sessions = [Session(rng, machines[0], ("a", "c"), None), Session(rng, machines[1], ("b", "c"), None)]
    for agent in AGENTS:
        for index in ([0, 1] if agent == "c" else [AGENTS.index(agent)]):
            machines[index].agent_register(agent)
    for n in range(150):
        index = rng.randrange(2)
        if rng.random() < 0.15:
            machines[index].sync()
        else:
            sessions[index].step(n)
        agree(machines[index])
    for _ in range(2):
        for lanes in machines:
            lanes.sync()
            agree(lanes)
