"""`push`, `pull` and `sync`: all lane state through an ordinary git remote."""

from __future__ import annotations

import click

from git_lanes.cli import Command
from git_lanes.cli.output import json_option, run, short

# A first pull can move thousands of refs; the text report lists this many each way, --json all of them.
LISTED = 30


def _command(mode: str, remote: str | None, trunk: str | None, as_json: bool) -> None:
    def action() -> dict:
        from git_lanes.api import Lanes

        api, initialized = Lanes.open_for_sync(None, trunk, remote)
        report = getattr(api, mode)(remote).to_dict()
        report["initialized"] = initialized is not None
        report["trunk"] = api.trunk
        return report

    run(action, as_json, render)


_remote_argument = click.argument("remote", required=False)
_TRUNK_HELP = "In a clone not yet set up for lanes: the trunk (default: the checked-out branch)."
_trunk_option = click.option("--trunk", metavar="NAME", help=_TRUNK_HELP)


@click.command(cls=Command)
@_remote_argument
@_trunk_option
@json_option
def sync(remote: str | None, trunk: str | None, as_json: bool) -> None:
    """Pull, merge and push all lane state with REMOTE (default: lanes.remote, else origin).

    Lane heads only fast-forward (a diverged lane is reported, nothing is overwritten); transition notes
    merge per record; the ledger's local-only ops are replayed on the remote's head, and an op that no
    longer holds is recorded as refused for its agent. Pushes carry a lease and are retried after a fresh
    merge when another machine pushed first. Exits 3 when a lane diverged or a ref git-lanes would never
    write (a lane named like the trunk, a non-commit head) was refused.

    \b
    Example:
      git lanes sync origin
      git lanes sync --json
    """
    _command("sync", remote, trunk, as_json)


@click.command(cls=Command)
@_remote_argument
@_trunk_option
@json_option
def pull(remote: str | None, trunk: str | None, as_json: bool) -> None:
    """Fetch REMOTE's lane state and merge it here, pushing nothing.

    Works in a plain `git clone` not yet set up for lanes: it is set up first. Exits 3 when a lane diverged
    or a ref was refused.

    \b
    Example:
      git clone https://example.com/project.git && cd project
      git lanes pull
    """
    _command("pull", remote, trunk, as_json)


@click.command(cls=Command)
@_remote_argument
@_trunk_option
@json_option
def push(remote: str | None, trunk: str | None, as_json: bool) -> None:
    """Push the lane state that is strictly ahead of REMOTE, under a lease on each ref.

    Nothing here changes; what would need a merge first (the remote moved too) is held back and listed:
    run `git lanes sync` for it. Exits 3 when a lane diverged or a ref was refused.

    \b
    Example:
      git lanes push origin
    """
    _command("push", remote, trunk, as_json)


def render(report: dict) -> str:
    lines = [_headline(report)]
    if report.get("initialized"):
        # The trunk came from the checked-out branch, i.e. the remote's HEAD: say which, in case it is not.
        lines.insert(0, f"set up this clone for lanes (trunk {report['trunk']})")
    for title, key in (("in", "came_in"), ("out", "went_out")):
        for move in report[key][:LISTED]:
            lines.append(f"  {title:<4}{move['kind']} {move['name']}: {move['how']} "
                         f"{short(move['from'])}..{short(move['to'])}")
        if len(report[key]) > LISTED:
            lines.append(f"  {title:<4}... and {len(report[key]) - LISTED} more (see --json)")
    ledger = report["ledger"]
    if any(ledger.values()):
        lines.append(f"  ledger: {ledger['came_in']} ops came in, {ledger['went_out']} went out, "
                     f"{ledger['replayed']} replayed, {ledger['refused']} refused")
    for actor, ops in sorted(report["refused"].items()):
        for op in ops:
            reason = (op.get("refusal") or {}).get("message", "no longer holds")
            lines.append(f"  refused for {actor}: {op['type']} {op['id'][:8]}: {reason}")
    for conflict in report["notes"]["conflicts"]:
        lines.append(f"  note of {short(conflict['state'])}: {conflict['reason']}")
    for item in report["diverged"]:
        if item.get("clash"):
            where = "here" if item["clash"] == "local" else f"on {report['remote']}"
            lines.append(f"  {item['kind']} {item['name']} not created {where}: a {item['kind']} there is named "
                         f"beneath or above it (a name cannot also be a folder of names)")
            if item["kind"] == "lane":
                lines.append("    to rename one: git lanes lane create NEW --from OLD && git lanes lane delete OLD")
            continue
        lines.append(f"  diverged {item['kind']} {item['name']}: here {short(item['local'])}, remote "
                     f"{short(item['remote'])}; nothing overwritten")
        if item["kind"] == "lane" and item["local"] and item["remote"]:
            # the remote's head as a lane of its own can be promoted in, with promotion's collision rules
            theirs = f"{item['name']}-{report['remote']}"
            lines.append(f"    to merge: git lanes lane create {theirs} --from {item['remote_copy']} && "
                         f"git lanes promote {theirs} --into {item['name']} --auto-accept && "
                         f"git lanes lane delete {theirs}")
    for item in report.get("invalid", ()):
        where = "here" if item["side"] == "local" else f"on {report['remote']}"
        lines.append(f"  refused {item['ref']} {where}: {item['reason']}")
        lines.append(f"    {item['hint']}")
    for item in report["kept"]:
        lines.append(f"  kept lane {item['lane']}: {item['reason']}")
        if item.get("hint"):
            lines.append(f"    {item['hint']}")
    for item in report["held_back"]:
        lines.append(f"  held back {item['kind']} {item['name']} ({item['side']}): run `git lanes sync`")
    for item in report["workspaces"]:
        if item["status"] != "updated":
            lines.append(f"  workspace of {item['lane']} {item['status']}: {item['reason']}")
            if item.get("hint"):
                lines.append(f"    {item['hint']}")
    return "\n".join(lines)


def _headline(report: dict) -> str:
    verb = {"pull": "pulled from", "push": "pushed to", "sync": "synced with"}[report["mode"]]
    came, went = len(report["came_in"]), len(report["went_out"])
    if not came and not went and not report["diverged"] and not report["held_back"] and not report.get("invalid"):
        return f"{verb} {report['remote']}: already up to date"
    tries = f" ({report['attempts']} attempts)" if report["attempts"] > 1 else ""
    return f"{verb} {report['remote']}: {came} refs came in, {went} went out{tries}"
