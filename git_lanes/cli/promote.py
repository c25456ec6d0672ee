"""`promote` and `evaluate`: bringing a lane's work into another lane, judged by the trunk's gates."""

from __future__ import annotations

from typing import Any

import click

from git_lanes.cli import Command
from git_lanes.cli.intent import intent_kwargs, intent_options
from git_lanes.cli.output import held_line, json_option, left_pending_note, open_api, run, short, shown_path, table


def render_evaluations(evaluations: list[dict]) -> list[str]:
    lines = []
    for e in evaluations:
        verdict = "passed" if e["passed"] else "FAILED" if e["required"] else "failed (optional)"
        code = f", exit {e['exit_code']}" if e["exit_code"] not in (None, 0) else ""
        lines.append(f"gate {e['gate']}: {verdict} ({e['duration']:.2f}s{code})")
    return lines


def _paths(count: int) -> str:
    return f"{count} path" + ("" if count == 1 else "s")


def render_promotion(r: dict) -> str:
    note = left_pending_note(r["lane"], r.get("left_pending"))
    return _render_promotion(r) + (f"\n{note}" if note else "")



def _render_promotion(r: dict) -> str:
    lane, target = r["lane"], r["target"]
    if r["status"] == "up_to_date":
        return f"nothing to promote: {target} already holds everything in {lane}"
    if r.get("dry_run"):
        lines = [f"dry run: promoting {lane} into {target} would "
                 + ("stop on collisions" if r["collisions"] else "land cleanly")
                 + f" (fork point {short(r['merge_base'])})"]
        lines += [f"  collision  {shown_path(c['path'])}  (lane {c['lane']}, {target} {c['target']})"
                  for c in r["collisions"]]
        lines += [f"  from lane  {c['kind']:9} {shown_path(c['path'])}" for c in r["lane_only"]]
        lines += [f"  kept       {c['kind']:9} {shown_path(c['path'])}  (changed on {target})"
                  for c in r["target_only"]]
        return "\n".join(lines)
    t = r["transition"]
    verb = {"accepted": "promoted", "proposed": "proposed promoting"}.get(t["status"], t["status"])
    lines = [f"{verb} {lane} into {target} as {short(t['id'])} (merge {short(t['to'])}): "
             f"{_paths(len(r['lane_only']) + len(r['forced']))} from {lane}, {len(r['target_only'])} kept "
             f"from {target}"]
    if r["forced"]:
        lines.append(f"forced on {len(r['forced'])} colliding paths; {target}'s versions kept at {r['backup']}")
    lines += render_evaluations(t["evaluations"])
    held = held_line(t)
    if held:
        lines += held.strip("\n").splitlines()
    elif t["status"] == "proposed":
        lines.append(f"accept it with `git lanes accept {short(t['id'])}`")
    worktree = r.get("worktree")
    if worktree:
        lines.append(f"updated {_paths(len(worktree['updated']))} in {worktree['path']}")
        if worktree.get("left"):
            lines.append(f"not yet written in {worktree['path']}: {worktree['left']['reason']}; the next git lanes "
                         f"command there finishes {_paths(len(worktree['left']['paths']))}")
        if worktree["attention"]:
            lines.append("these files had unsaved edits and were left as they are; they need attention "
                         "(`git diff` shows them against the promoted version):")
            lines += [f"  {shown_path(path)}" for path in worktree["attention"]]
    return "\n".join(lines)


@click.command(cls=Command)
@click.argument("lane")
@click.option("--into", "target", metavar="TARGET", help="The lane to promote into (default: the trunk).")
@click.option("--dry-run", is_flag=True, help="Report collisions and changes; move nothing.")
@click.option("--force", is_flag=True, help="LANE's version wins on colliding paths; TARGET's head is kept "
              "in a backup ref under refs/lanes/backups/.")
@click.option("--auto-accept", is_flag=True, help="Accept at once when every required gate passes.")
@intent_options(required=False)
@json_option
def promote(lane: str, target: str | None, dry_run: bool, force: bool, auto_accept: bool, as_json: bool,
            **params: Any) -> None:
    """Promote LANE's accepted head into TARGET (default: the trunk), path by path.

    A path changed on both sides since they forked (content, mode, type, deletion, or a file against a
    directory) is a collision: nothing moves, the paths are listed with both sides' change kinds, and the
    exit code is 3. Otherwise the result is a merge commit with parents (TARGET, LANE), never a content
    merge, proposed on TARGET and judged by the trunk's gates on the merged tree (exit 4 and rejected when
    a required gate fails). If TARGET is checked out, its worktree is updated for exactly the changed
    paths; files with unsaved edits are left untouched and reported. Promotions into one target take turns.
    -m defaults to "Promote LANE into TARGET"; --agent to $GIT_LANES_AGENT, else your git user name.

    \b
    Example:
      git lanes promote feature/auth --dry-run
      git lanes promote feature/auth --auto-accept -m "Ship login" --agent lead
      git lanes promote feature/auth --into release --force
    """
    def action() -> dict:
        intent = intent_kwargs(params)
        return open_api().promote(lane, target, dry_run=dry_run, force=force, auto_accept=auto_accept, **intent)

    run(action, as_json, render_promotion)


@click.command(cls=Command)
@click.argument("transition_id", metavar="ID")
@json_option
def evaluate(transition_id: str, as_json: bool) -> None:
    """Re-run the trunk's gates on proposal ID and record the results in its note.

    The gates are the `[[gate]]` entries of .lanes.toml in the trunk's committed head; each runs in a
    scratch checkout of the proposed state. Exit 4 when a required gate fails (the proposal stays pending).

    \b
    Example:
      git lanes evaluate 3f9c2a1b
    """
    def render(r: dict) -> str:
        lines = render_evaluations(r["evaluations"]) or ["no gates declared in .lanes.toml on the trunk"]
        return "\n".join([f"evaluated {short(r['id'])} on {r['lane']}", *lines])

    run(lambda: open_api().evaluate(transition_id), as_json, render)


@click.command(cls=Command, name="gates")
@click.option("--lane", metavar="LANE", help="Only the gates that judge accepts on LANE.")
@click.option("--on", "kind", type=click.Choice(["commit", "promote"]),
              help="Only the gates that judge this kind of accept.")
@json_option
def gates_(lane: str | None, kind: str | None, as_json: bool) -> None:
    """List the gates declared in .lanes.toml at the trunk's head and what each guards.

    A gate's `on` says which accepts it judges ("commit": a lane's own states, by commit --auto-accept or
    accept; "promote": promotions), and `into` which lanes', as globs (default: every accept on every lane).
    A gate with `from_trunk` runs with the trunk's copies of those paths, shown after its command.

    \b
    Example:
      git lanes gates
      git lanes gates --lane main --on promote --json
    """
    def render(rows: list[dict]) -> str:
        if not rows:
            return "no gates" + (" guard that" if lane or kind else " declared in .lanes.toml on the trunk")
        return table([[g["name"], "required" if g["required"] else "optional", "on " + ",".join(g["on"]),
                       "into " + ",".join(g["into"]),
                       (g["command"] if isinstance(g["command"], str) else " ".join(g["command"]))
                       + (f"  (trunk's {','.join(g['from_trunk'])})" if g.get("from_trunk") else "")]
                      for g in rows])

    run(lambda: open_api().gates(lane=lane, kind=kind), as_json, render)
