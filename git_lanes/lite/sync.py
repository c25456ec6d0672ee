"""`git lanes sync [REMOTE] [--json]` without click or pygit2 when nothing needs replaying (issue 15): the
light API does the sync; its report is printed exactly as the click command prints it (the rendering below
is that command's). Any other arguments, or a sync the light path cannot do, return None: `__main__` then
runs the click CLI, and nothing has moved."""

from __future__ import annotations

import sys

# A first pull can move thousands of refs; the text report lists this many each way, --json all of them.
LISTED = 30


def main(args: list[str]) -> int | None:
    """The exit code, or None to hand the command to the click CLI."""
    as_json = "--json" in args
    positional = [arg for arg in args if arg != "--json"]
    if args.count("--json") > 1 or len(positional) > 1 or any(arg.startswith("-") for arg in positional):
        return None
    import os

    from git_lanes.api.sync_light import LightSync

    try:
        api = LightSync()
        # as the click command's --agent reads it: an empty variable names no agent
        report = api.report(positional[0] if positional else None, os.environ.get("GIT_LANES_AGENT") or None)
        if report is None:
            return None
        result = report | {"initialized": False, "trunk": api.trunk}
    except (Exception, KeyboardInterrupt) as exc:
        from git_lanes.cli.output import run  # the click face's own error reporting, exit codes included

        def again() -> None:
            raise exc

        run(again, as_json, render)
        return 1
    if as_json:
        import json  # indented output is json's own encoder (in Python): loaded for --json alone

        text = json.dumps(result, indent=2, sort_keys=True, default=str)
    else:
        from git_lanes.model.text import shown_text  # the click face's `shown`: ref names are what a peer chose

        text = shown_text(render(result))
    sys.stdout.write(text + "\n")
    found = result.get("problem")
    return found["exit_code"] if found else 0


def short(oid: str | None) -> str:
    return oid[:8] if oid else "-"


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
    invalid = report.get("invalid", ())
    for item in invalid[:LISTED]:  # a remote can hold any number of them
        where = "here" if item["side"] == "local" else f"on {report['remote']}"
        lines.append(f"  refused {item['ref']} {where}: {item['reason']}")
        lines.append(f"    {item['hint']}")
    if len(invalid) > LISTED:
        lines.append(f"  refused ... and {len(invalid) - LISTED} more refs (see --json)")
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
    # a trunk whose worktree's edits kept it from moving did not come in: not "up to date"
    blocked = any(item["status"] == "blocked" for item in report["workspaces"])
    if not came and not went and not report["diverged"] and not report["held_back"] and not report.get("invalid") \
            and not blocked:
        return f"{verb} {report['remote']}: already up to date"
    tries = f" ({report['attempts']} attempts)" if report["attempts"] > 1 else ""
    return f"{verb} {report['remote']}: {came} refs came in, {went} went out{tries}"
