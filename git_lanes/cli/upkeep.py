"""`git lanes gc`: prune what has served its time, and let git free the space."""

from __future__ import annotations

import click

from git_lanes.cli import Command
from git_lanes.cli.options import ACTING, agent_option
from git_lanes.cli.output import json_option, open_api, run, short


def _size(count: int | None) -> str:
    if count is None:
        return "?"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return str(count)


@click.command(cls=Command)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--older-than", "older_than", default="30d", show_default=True, metavar="AGE",
              help="Prune only what is older than this: 30d, 12h, 90m, 2w, 45s; 0 for everything eligible.")
@agent_option(required=False, help_text=ACTING)
@json_option
def gc(dry_run: bool, older_than: str, agent: str | None, as_json: bool) -> None:
    """Remove rejected states, superseded proposals, backups, the logs and agent output of ended runs and of
    spawned runs whose agent was stopped, exited or died, and workspaces of deleted lanes older than AGE,
    then run `git gc`; report what went and the bytes freed.

    Lane heads, pending proposals, deletion markers and open tasks' lanes, and everything they reach, stay;
    so does a run while anything of it runs here, and a spawned run whose agent or supervisor is recorded on
    another machine and has not ended there.
    Pruned refs that travel (rejected states, run logs) leave a tombstone in the ledger, so the next sync
    deletes them on the remote too instead of bringing them back. A workspace holding edits no state holds is
    kept and listed. `--older-than 0` prunes unreferenced objects at once: do not run it while agents write.
    gc also removes what killed processes left in the ledger's append queue (.git/lanes-queue), by the
    queue's own rules whatever AGE says: entries of writers that are gone, outcomes nobody came for and
    half-written files after 10 minutes; a dead holder's round journal is settled first. The ledger itself
    is never shortened: every op stays in `refs/lanes/ledger`'s history (git packs it; reads cost the same
    at any length).

    \b
    Example:
      git lanes gc --dry-run
      git lanes gc --older-than 7d --json
    """
    def render(r: dict) -> str:
        removed = r["removed"]
        verb = "would remove" if r["dry_run"] else "removed"
        lines = [f"{verb} {len(removed[kind])} {kind.replace('_', ' ')}" + (
            ": " + ", ".join(short(e.get("transition") or e.get("run")) if kind in ("rejected", "superseded", "runs")
                             else e.get("ref") or e.get("lane") for e in removed[kind][:8])
            + (" …" if len(removed[kind]) > 8 else "") if removed[kind] else "")
            for kind in ("rejected", "superseded", "backups", "runs", "workspaces")]
        lines += [f"kept {k['path']}: {k['reason']} ({k['hint']})" for k in r["kept"]]
        queue = r["queue"]
        left = queue["dead_entries"] + queue["stale_files"]
        if left:
            lines.append(f"{verb} {len(left)} append queue leftovers: " + ", ".join(left[:8])
                         + (" …" if len(left) > 8 else ""))
        if queue["journal"]:
            lines.append(("would settle" if r["dry_run"] else "settled") + " the round journal of a holder that died")
        if not r["dry_run"]:
            lines.append(f"freed {_size(r['bytes_freed'])} ({_size(r['bytes_before'])} -> {_size(r['bytes_after'])})")
        return "\n".join(lines)

    run(lambda: open_api().gc(older_than=older_than, dry_run=dry_run, actor=agent), as_json, render)
