"""`git lanes sync` runs no git process beyond the transport's (issue 15): one `git fetch`, and one `git push`
only when something here is ahead; no rev-parse or for-each-ref beside them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import git, run_cli
from gitserver import clone, make_origin, server  # noqa: F401  (server is a fixture)

from git_lanes.api import Lanes


def git_commands_run_by(tmp_path: Path, *args: str, cwd: Path) -> list[str]:
    """The git subcommands the CLI itself starts (not those git starts for itself), in order."""
    log = tmp_path / "git-commands.log"
    log.write_text("")
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    # the subcommand is the first argument that is no option (`-C DIR`, `-c NAME=VALUE` and flags before it)
    (shim / "git").write_text(f"""#!/bin/sh
subcommand() {{ while [ $# -gt 0 ]; do case "$1" in -c|-C) shift 2;; -*) shift;; *) echo "$1"; return;; esac; done; }}
case "$(cat /proc/$PPID/comm)" in python*) subcommand "$@" >> {log};; esac
exec {shutil.which("git")} "$@"
""")
    (shim / "git").chmod(0o755)
    result = run_cli(*args, cwd=cwd, env={"PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"})
    assert result.code == 0, result.err
    return log.read_text().split()


def test_sync_runs_one_fetch_and_pushes_only_what_is_ahead(tmp_path: Path, server) -> None:  # noqa: F811
    url = server.bare("project")
    origin = make_origin(tmp_path, url)
    api = Lanes(origin)
    api.board_post("first", "setup")
    api.sync()
    other = clone(tmp_path, url, "machine-b")
    Lanes.open_for_sync(other)
    for number in range(3):
        api.board_post(f"remote post {number}", "agent-a")
    api.sync()

    assert git_commands_run_by(tmp_path, "sync", "--json", cwd=other) == ["fetch"]
    ledger = git("rev-parse", "refs/lanes/ledger", cwd=origin)
    assert git("rev-parse", "refs/lanes/ledger", cwd=other) == ledger  # the remote's posts came in
    Lanes(other).board_post("local post", "agent-b")
    assert git_commands_run_by(tmp_path, "sync", "--json", cwd=other) == ["fetch", "push"]
    pushed = git("ls-remote", "origin", "refs/lanes/ledger", cwd=other).split()[0]
    assert pushed == git("rev-parse", "refs/lanes/ledger", cwd=other).strip() != ledger.strip()
