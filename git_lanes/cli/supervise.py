"""The supervisor process `git lanes spawn` starts for each run: `python -m git_lanes.cli.supervise RUN`, in the
repository's main worktree, in a session of its own. Not a command people type: its output goes to the run's
`supervisor.log`. SIGTERM (what `git lanes stop` sends when the agent is gone and it lingers) ends it cleanly:
no agent of its run outlives it."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def argv(run: str) -> list[str]:
    """How to start the supervisor of `run`: this interpreter, so it runs this very git-lanes."""
    return [sys.executable, "-m", "git_lanes.cli.supervise", run]


def _leave(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(args: list[str]) -> int:
    if len(args) != 1:
        sys.stderr.write("usage: python -m git_lanes.cli.supervise RUN\n")
        return 2
    signal.signal(signal.SIGTERM, _leave)
    signal.signal(signal.SIGHUP, _leave)
    from git_lanes.api import Lanes
    from git_lanes.errors import LanesError

    try:
        result = Lanes(os.getcwd()).supervise(args[0], supervisor=argv)
    except LanesError as exc:
        sys.stderr.write(f"git-lanes supervisor: {exc.message}\n")
        return 1
    sys.stderr.write(f"git-lanes supervisor: run {args[0][:8]} {result.get('state')}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
