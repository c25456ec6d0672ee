"""A machine's agent in its own process: runs ledger actions and syncs against one clone, printing one JSON
line per action. Used by the sync race tests (real processes, no mocks)."""

from __future__ import annotations

import json
import sys

from git_lanes.api import Lanes
from git_lanes.errors import LanesError


def act(api: Lanes, action: str) -> dict:
    verb, _, rest = action.partition(":")
    if verb == "sync":
        return api.sync()
    if verb == "claim":
        task, agent = rest.split(":")
        return api.task_claim(task, agent)
    if verb == "post":
        text, agent = rest.rsplit(":", 1)
        return api.board_post(text, agent)
    if verb == "heartbeat":
        return api.agent_heartbeat(rest)
    if verb == "lane":  # lane:NAME:FILE:TEXT — write FILE in lane NAME's workspace and accept it
        lane, path, text = rest.split(":", 2)
        if lane not in {row["name"] for row in api.lane_list()} or api.lane_show(lane)["workspace"] is None:
            api.lane_create(lane)
        (api.root / ".lanes" / "workspaces" / lane / path).write_text(text)
        return api.commit(f"write {path}", f"agent-{lane.replace('/', '-')}", lane=lane, auto_accept=True)
    raise SystemExit(f"unknown action {action!r}")


def _jsonable(value: object) -> object:
    """Records print as the JSON `--json` shows; anything else as its text."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else str(value)


def main() -> None:
    api = Lanes(sys.argv[1])
    for action in sys.argv[2:]:
        try:
            record = {"action": action, "ok": True, "result": act(api, action)}
        except LanesError as exc:
            record = {"action": action, "ok": False, "error": exc.to_dict()}
        print(json.dumps(record, default=_jsonable), flush=True)


if __name__ == "__main__":
    main()
