"""`git lanes lane …`: create, list, show, locate, reset and delete lanes."""

from __future__ import annotations

import click

from git_lanes.cli import SuggestingGroup
from git_lanes.cli.options import ACTING, agent_option
from git_lanes.cli.output import ATTENTION_HINT, json_option, nested_left, open_api, run, short, shown, shown_path, table


@click.group(cls=SuggestingGroup)
def lane() -> None:
    """Create, list, inspect, reset and delete lanes.

    A lane is a named line of accepted states with its own workspace, a real git worktree under
    .lanes/workspaces/<lane>.

    \b
    Example:
      git lanes lane create feature/auth --from main
      git lanes lane list
    """


@lane.command()
@click.argument("name")
@click.option("--from", "source", metavar="LANE|ID|REV", help="Start from this lane's head, transition's "
              "state or revision (default: the trunk).")
@click.option("--no-setup", is_flag=True, help="Skip the trunk's [setup]: no ports, copied files or command.")
@agent_option(required=False, help_text=ACTING)
@json_option
def create(name: str, source: str | None, no_setup: bool, agent: str | None, as_json: bool) -> None:
    """Create lane NAME and its workspace; print the workspace's path.

    For a lane that exists without a workspace here (after a clone, say), only the workspace is made. Then
    the [setup] of .lanes.toml at the trunk's head is applied (outside the writers' lock): ports reserved in
    the ledger, ignored files copied from the main worktree (stderr names each `copy` entry not copied, and
    why), its command run in the workspace with a timeout. A failing setup command is reported on stderr (`setup.status: failed` in --json) and the lane
    is kept, ready to use; `git lanes lane setup NAME` runs it again.

    \b
    Example:
      git lanes lane create feature/auth --from main
      cd "$(git lanes lane create feature/b --no-setup)"
    """
    def render(r: dict) -> str:
        report_setup(r.get("setup"))
        return r["workspace"]

    run(lambda: open_api().lane_create(name, source, setup=not no_setup, actor=agent), as_json, render)


def report_setup(report: dict | None) -> None:
    """Tell the person on stderr what setting the lane up did: stdout stays the workspace's path."""
    if not report or report["status"] == "none":
        return
    lines = []
    if report["ports"]:
        lines.append(f"ports {' '.join(map(str, report['ports']))} reserved for {report['lane']}")
    if report["copied"]:
        lines.append(f"copied {', '.join(report['copied'])} from the main worktree")
    if report["absent"]:
        lines.append(f"not copied, not in the main worktree: {', '.join(report['absent'])}")
    tracked = report.get("tracked") or []
    kept = [path for path in report["present"] if path not in tracked]
    if kept:
        lines.append(f"not copied, already in the workspace (left as it is): {', '.join(kept)}")
    if tracked:
        lines.append(f"warning: [setup] copy names files git tracks, which the lane has in its own version and "
                     f"which are never copied: {', '.join(tracked)}")
    if report["run"] and report["run"]["passed"]:
        lines.append(f"setup command passed ({report['run']['duration']:.1f}s; output in {report['run']['log']})")
    if report["status"] == "failed":
        lines.append(f"warning: setup of lane {report['lane']} failed: {report['message']}")
        tail = (report["run"] or {}).get("output_tail", "").strip().splitlines()[-5:]
        lines += [f"  {line}" for line in tail]
        lines.append(f"the lane is ready otherwise; run the setup again with `git lanes lane setup {report['lane']}`")
    click.echo(shown("\n".join(lines)), err=True)


@lane.command(name="setup")
@click.argument("name")
@json_option
def setup_(name: str, as_json: bool) -> None:
    """Apply the trunk's [setup] to lane NAME's workspace again.

    Reserves the ports it asks for (keeping those the lane holds), copies the ignored files it names that
    the workspace lacks, and runs its command. Exit 0 even when the command fails: the report says so.

    \b
    Example:
      git lanes lane setup feature/auth
    """
    def render(r: dict) -> str:
        report_setup(r)
        return f"setup of {r['lane']}: {r['status']}"

    run(lambda: open_api().lane_setup(name), as_json, render)


@lane.command(name="env")
@click.argument("name")
@click.option("--shell", is_flag=True, help="Print `export NAME='value'` lines for eval.")
@json_option
def env(name: str, shell: bool, as_json: bool) -> None:
    """Print lane NAME's variables: the trunk's [setup] env with its ports filled in.

    \b
    Example:
      eval "$(git lanes lane env feature/auth --shell)"
      git lanes lane env feature/auth --json
    """
    import shlex

    def render(r: dict) -> str:
        if shell:
            return "\n".join(f"export {key}={shlex.quote(value)}" for key, value in sorted(r["env"].items()))
        return "\n".join(f"{key}={value}" for key, value in sorted(r["env"].items()))

    run(lambda: open_api().lane_env(name), as_json, render)


def _workspace(r: dict) -> str:
    """A lane's workspace as the listings show it: its path, why it is broken, or "-" for a lane with none."""
    return r["workspace"] or (f"BROKEN: {r['broken']}" if r.get("broken") else "-")


@lane.command(name="list")
@json_option
def list_(as_json: bool) -> None:
    """List lanes with their heads and workspaces.

    \b
    Example:
      git lanes lane list --json
    """
    def render(rows: list[dict]) -> str:
        return table([[("* " if r["trunk"] else "  ") + r["name"], short(r["head"]),
                       _workspace(r)] for r in rows])

    run(lambda: open_api().lane_list(), as_json, render)


@lane.command()
@click.argument("name")
@json_option
def show(name: str, as_json: bool) -> None:
    """Show a lane: head, workspace, unsnapshotted edits, files a promotion left needing attention, pending
    proposals, recent transitions.

    \b
    Example:
      git lanes lane show feature/auth
    """
    def render(r: dict) -> str:
        lines = [f"lane {r['name']}{' (trunk)' if r['trunk'] else ''}", f"head       {r['head']}",
                 f"workspace  {_workspace(r)}"]
        if r["dirty"]:
            lines.append("unsnapshotted:")
            lines += [f"  {kind:9} {shown_path(path)}" for path, kind in sorted(r["dirty"].items())]
        if r["attention"]:
            lines.append(f"needing attention after a promotion {ATTENTION_HINT}:")
            lines += [f"  {shown_path(path)}" for path in r["attention"]]
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
@click.option("--force", is_flag=True, help="Delete even with unsnapshotted edits (kept in a backup ref), "
              "work not promoted anywhere, or pending proposals (rejected and kept).")
@agent_option(required=False, help_text=ACTING)
@json_option
def delete(name: str, force: bool, agent: str | None, as_json: bool) -> None:
    """Delete lane NAME and remove its workspace.

    Refuses while the workspace has unsnapshotted edits, the lane has work not promoted into any other
    lane, or proposals on it await a decision. The last head stays reachable from refs/lanes/deleted/NAME
    (a '/' in NAME written as %2F) and its reflog.

    Refuses, even with --force, while the workspace holds a git repository of its own (a cloned
    dependency, a submodule) or its private git dir holds a submodule's repository (kept there once the
    submodule's files are moved out, deleted or deinitialised): no backup ref can hold their history, so
    keep what you need of them and remove them yourself first, as `git worktree remove` asks.

    \b
    Example:
      git lanes lane delete feature/auth
    """
    def render(r: dict) -> str:
        text = f"deleted lane {r['lane']} (was {short(r['head'])}; kept at {r['kept_at']})"
        text += f"\nunsnapshotted edits kept at {r['backup']}" if r["backup"] else ""
        rejected = ", ".join(short(t) for t in r["rejected_proposals"])
        return text + (f"\nrejected its pending proposals {rejected}" if rejected else "")

    run(lambda: open_api().lane_delete(name, force=force, actor=agent), as_json, render)


@lane.command()
@click.argument("name")
@click.option("--onto", metavar="TARGET", help="The lane whose head to start from (default: the trunk).")
@click.option("--reason", metavar="TEXT", help="Why the old attempt is set aside; kept with it as signal.")
@click.option("--force", is_flag=True,
              help="Reset even over unsnapshotted edits or ignored files it overwrites (kept in a backup ref); "
                   "a nested git repository is left in place.")
@agent_option(required=False, help_text="Who resets it, recorded on the kept attempt (default: git-lanes).")
@json_option
def reset(name: str, onto: str | None, reason: str | None, force: bool, agent: str | None, as_json: bool) -> None:
    """Move lane NAME and its workspace to TARGET's head, to rerun the work from there.

    The old head, when it holds work TARGET lacks, is kept as a rejected state (a transition of kind
    "reset" with the reason) under refs/lanes/rejected/, so the attempt stays signal. Refuses while the
    workspace has unsnapshotted edits, unless --force.

    \b
    Example:
      git lanes lane reset feature/auth --onto main --reason "auth.py changed on main"
    """
    def render(r: dict) -> str:
        text = f"reset {r['lane']} onto {r['onto']}: {short(r['from'])} -> {short(r['to'])}"
        if r["kept_at"]:
            text += f"\nthe old head is kept as a rejected state at {r['kept_at']}"
        return text + (f"\nunsnapshotted edits kept at {r['backup']}" if r["backup"] else "") + nested_left(r)

    run(lambda: open_api().lane_reset(name, onto, force=force, reason=reason, agent_id=agent), as_json, render)
