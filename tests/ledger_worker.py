"""One agent in its own process for the ledger concurrency tests (real processes, no mocks).

    ledger_worker.py REPO claim AGENT     claim each task id read from stdin; one JSON line per claim
    ledger_worker.py REPO post AGENT N    post N messages "AGENT i"; one JSON line per acknowledged post

Every ledger append here but the first ever (which creates the ref) moves it by the store's own `.lock`
writer (store/loose_ref.py), never by libgit2's transaction: the tests prove that writer under real
concurrency.
"""

from __future__ import annotations

import json
import sys

from git_lanes.api import Lanes
from git_lanes.errors import LanesError
from git_lanes.model.refs import LEDGER
from git_lanes.store.repo import Store

_transact = Store._transact


def _not_the_ledger(self, updates):
    assert all(update.name != LEDGER or update.old is None for update in updates), \
        "the ledger moved through libgit2's transaction"
    return _transact(self, updates)


def claim(api: Lanes, agent: str) -> None:
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        task, version = line.split()
        try:
            result = api.task_claim(task, agent, version=int(version))
            record = {"won": True, "version": result["version"]}
        except LanesError as exc:
            record = {"won": False, "code": exc.code, "exit": exc.exit_code}
        print(json.dumps(record), flush=True)


def post(api: Lanes, agent: str, count: int) -> None:
    print(json.dumps({"ready": True}), flush=True)
    for i in range(count):
        result = api.board_post(f"{agent} {i}", agent)
        print(json.dumps({"op": result["op"], "post": result["post"]}), flush=True)


def main() -> None:
    repo, mode, agent, *rest = sys.argv[1:]
    Store._transact = _not_the_ledger  # type: ignore[method-assign]
    api = Lanes(repo)
    if mode == "claim":
        claim(api, agent)
    else:
        post(api, agent, int(rest[0]))


if __name__ == "__main__":
    main()
