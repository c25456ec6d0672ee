"""`git lanes lane …`: create, list, show, locate and delete lanes."""

from __future__ import annotations

import click

from git_lanes.cli.output import json_option, open_api, run, short, table


@click.group()
def lane() -> None:
    """Create, list, inspect and delete lanes.

    A lane is a named line of accepted states with its own workspace, a real git worktree under
    .lanes/workspaces/<lane>.

    \b
    Example:
      git lanes lane create feature/auth --from main
      git lanes lane list
    """


@lane.command()
@click.argument("name")
@click.option("--from", "source", metavar="LANE|REV", help="Start from this lane's head or revision "
              "(default: the trunk).")
@json_option
def create(name: str, source: str | None, as_json: bool) -> None:
    """Create lane NAME and its workspace; print the workspace's path.

    For a lane that exists without a workspace here (after a clone, say), only the workspace is made.

    \b
    Example:
      git lanes lane create feature/auth --from main
    """
    run(lambda: open_api().lane_create(name, source), as_json, lambda r: r["workspace"])


@lane.command(name="list")
@json_option
def list_(as_json: bool) -> None:
    """List lanes with their heads and workspaces.

    \b
    Example:
      git lanes lane list --json
    """
    def render(rows: list[dict]) -> str:
        return table([[("* " if r["trunk"] else "  ") + r["name"], short(r["head"]), r["workspace"] or "-"]
                      for r in rows])

    run(lambda: open_api().lane_list(), as_json, render)


@lane.command()
@click.argument("name")
@json_option
def show(name: str, as_json: bool) -> None:
    """Show a lane: head, workspace, unsnapshotted edits, pending proposals, recent transitions.

    \b
    Example:
      git lanes lane show feature/auth
    """
    def render(r: dict) -> str:
        lines = [f"lane {r['name']}{' (trunk)' if r['trunk'] else ''}", f"head       {r['head']}",
                 f"workspace  {r['workspace'] or '-'}"]
        if r["dirty"]:
            lines.append("unsnapshotted:")
            lines += [f"  {kind:9} {path}" for path, kind in sorted(r["dirty"].items())]
        if r["unpromoted"]:
            lines.append("has work not promoted into any other lane")
        for t in r["proposals"]:
            lines.append(f"proposal   {short(t['id'])} {t['intent']['agent_id']}: {t['intent']['prompt'].splitlines()[0]}")
        for t in r["recent"]:
            lines.append(f"  {short(t['id'])} {t['status']:9} {t['intent']['agent_id']}: "
                         f"{t['intent']['prompt'].splitlines()[0]}")
        return "\n".join(lines)

    run(lambda: open_api().lane_show(name), as_json, render)


@lane.command()
@click.argument("name")
@json_option
def path(name: str, as_json: bool) -> None:
    """Print the path of lane NAME's workspace.

    \b
    Example:
      cd "$(git lanes lane path feature/auth)"
    """
    run(lambda: {"lane": name, "workspace": open_api().lane_path(name)}, as_json, lambda r: r["workspace"])


@lane.command()
@click.argument("name")
@click.option("--force", is_flag=True, help="Delete even with unsnapshotted edits (kept in a backup ref) or "
              "work not promoted anywhere.")
@json_option
def delete(name: str, force: bool, as_json: bool) -> None:
    """Delete lane NAME and remove its workspace.

    Refuses while the workspace has unsnapshotted edits or the lane has work not promoted into any other
    lane. The last head stays reachable from refs/lanes/deleted/NAME and its reflog.

    \b
    Example:
      git lanes lane delete feature/auth
    """
    def render(r: dict) -> str:
        text = f"deleted lane {r['lane']} (was {short(r['head'])}; kept at {r['kept_at']})"
        return text + (f"\nunsnapshotted edits kept at {r['backup']}" if r["backup"] else "")

    run(lambda: open_api().lane_delete(name, force=force), as_json, render)
