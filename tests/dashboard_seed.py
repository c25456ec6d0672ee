"""A small project in motion for the dashboard: lanes ahead and behind, overlapping edits, pending
proposals, a rejected attempt, agents, a task graph, an open question, and spending over time."""

from __future__ import annotations

from pathlib import Path

from git_lanes.model.records import Cost


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def seed(api, repo: Path, clock=None) -> dict:
    """Fill the repository opened by `api`; `clock.advance(s)` (if given) spreads the events over time."""
    def later(seconds: float) -> None:
        if clock is not None:
            clock.advance(seconds)

    ws = repo / ".lanes" / "workspaces"
    for lane, agent in (("feature/auth", "coder-1"), ("feature/cache", "coder-2"), ("docs", "writer")):
        api.lane_create(lane)
        api.agent_register(agent, kind="claude", lane=lane)
    write(ws / "feature/auth", {"src/auth.py": "def login():\n    return True\n", "src/app.py": "import auth\n"})
    api.commit("Add login", "coder-1", lane="feature/auth", auto_accept=True,
               cost=Cost(tokens_in=42_000, tokens_out=9_000, api_calls=12, cost_usd=0.61))
    later(600)
    write(ws / "feature/cache", {"src/cache.py": "CACHE = {}\n", "src/app.py": "import cache\n"})
    api.commit("Add a session cache", "coder-2", lane="feature/cache", auto_accept=True,
               cost=Cost(tokens_in=30_000, tokens_out=7_000, api_calls=9, cost_usd=0.44))
    later(420)
    write(ws / "feature/cache", {"src/cache.py": "CACHE = {}  # LRU soon\n"})
    rejected = api.commit("Try an unbounded cache", "coder-2", lane="feature/cache",
                          cost=Cost(tokens_in=18_000, tokens_out=3_000, cost_usd=0.22))
    api.reject(rejected["id"], "unbounded memory")
    api.restore("feature/cache", lane="feature/cache", force=True)
    later(300)
    write(ws / "docs", {"README.md": "# project\n\nHow to log in.\n"})
    api.commit("Document login", "writer", lane="docs", auto_accept=True,
               cost=Cost(tokens_in=8_000, tokens_out=2_500, cost_usd=0.09))
    later(240)
    write(repo, {"README.md": "# project (trunk)\n"})
    api.commit("Retitle the README", "lead", cwd=repo, auto_accept=True)
    later(180)
    write(ws / "feature/auth", {"src/auth.py": "def login(user):\n    return user.ok\n"})
    pending = api.commit("Check the user on login", "coder-1", lane="feature/auth",
                         cost=Cost(tokens_in=12_000, tokens_out=4_000, cost_usd=0.18))
    write(ws / "feature/auth", {"src/session.py": "# draft\n"})  # unsnapshotted
    schema = api.task_create("Design the session schema", actor="lead")
    login = api.task_create("Implement login", actor="lead", depends=(schema["task"],))
    cache = api.task_create("Cache sessions", actor="lead", depends=(schema["task"],))
    api.task_create("Ship it", actor="lead", depends=(login["task"], cache["task"]))
    api.task_claim(schema["task"], "coder-1")
    api.task_done(schema["task"], "coder-1")
    api.task_claim(login["task"], "coder-1")
    api.task_claim(cache["task"], "coder-2")
    api.task_block(cache["task"], "waiting for an answer on eviction", "coder-2")
    api.board_post("Login lands after the schema; coder-2 takes the cache.", "lead")
    question = api.board_post("Should the cache evict by size or by age?", "coder-2", kind="question")
    return {"pending": pending, "rejected": rejected, "question": question["post"]}
