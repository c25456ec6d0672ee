"""`git lanes dispatch PLAN.toml`, `dispatch status PLAN`, `dispatch --example`: foundation-first plans."""

from __future__ import annotations

import click

from git_lanes.cli import OperandGroup
from git_lanes.cli.options import ACTING, agent_option
from git_lanes.cli.output import json_option, open_api, run, short, table

PLAN_KEY = "lanes_plan"


class PlanGroup(OperandGroup):
    """`dispatch PLAN.toml` runs a plan; `dispatch status PLAN` is a subcommand. The first word that is neither
    an option of the group (nor an option's value) nor a subcommand is the plan file, so options may come
    before or after it: `dispatch --dry-run PLAN.toml` and `dispatch PLAN.toml --dry-run` are the same."""

    operand_key = PLAN_KEY


@click.group(cls=PlanGroup, invoke_without_command=True, subcommand_metavar="PLAN.toml | status PLAN")
@click.option("--dry-run", is_flag=True, help="Check the plan (ownership overlaps, lanes) and show it; create nothing.")
@click.option("--example", is_flag=True, help="Print a commented example plan.")
@click.option("--spawn", "spawn_agents", is_flag=True,
              help="Run the plan with agents: the foundation's pipeline now, each feature's once its "
                   "dependencies are done (see `git lanes spawn --pipeline`).")
@click.option("--cli", "agent_cli", type=click.Choice(["claude", "codex", "gemini", "custom"]),
              help="With --spawn: which agent CLI ([agent] cli; default claude).")
@agent_option(required=False, help_text=ACTING)
@json_option
@click.pass_context
def dispatch(ctx: click.Context, dry_run: bool, example: bool, spawn_agents: bool, agent_cli: str | None,
             agent: str | None, as_json: bool) -> None:
    """Dispatch a foundation-first plan: a ticket, a foundation task and feature tasks, each owning its paths.

    One ledger op creates the ticket, the tasks (features depend on the foundation and on the features they
    name) and an exclusive file claim per task; then the foundation's lane is created (with the trunk's
    [setup]). Two tasks owning the same path, glob overlap included, or a path an unfinished plan's task owns,
    refuse the plan before anything is created (exit 1, naming the path). When the foundation's task is done
    (`git lanes task done`), each feature's lane is created from the foundation's accepted head and the
    feature's owner is woken. While the plan runs, a commit, propose or promote that changes a path another
    task owns is refused (exit 3, naming the path and its owner), and the agent hooks deny such a write.
    Running the same plan again creates only what is missing.

    With --spawn, agents run the plan: the foundation's task gets a pipelined agent (`spawn TASK
    --pipeline`) at once; when it is done, each feature whose dependencies are done gets one in its lane
    made from the foundation's accepted head, in parallel, queued for `[agent] max_parallel` and refused past
    the spend gate. Again with --spawn, a dispatched plan gets agents for its ready tasks that have none.

    \b
    Example:
      git lanes dispatch --example > login.toml
      git lanes dispatch login.toml --dry-run
      git lanes dispatch login.toml
      git lanes dispatch login.toml --spawn
      git lanes dispatch status login
    """
    if ctx.invoked_subcommand is not None:
        return
    plan = ctx.meta.get(PLAN_KEY)
    if example:
        from git_lanes.model.plan import EXAMPLE

        run(lambda: {"example": EXAMPLE}, as_json, lambda r: r["example"].rstrip("\n"))
        return
    if plan is None:
        raise click.UsageError("give a plan file (git lanes dispatch PLAN.toml), `status PLAN`, or --example")

    def action() -> dict:
        from git_lanes.errors import UserError

        try:
            with open(plan, "rb") as handle:
                text = handle.read()
        except OSError as exc:
            raise UserError(f"cannot read plan {plan}: {exc.strerror}", code="no_plan",
                            hint="`git lanes dispatch --example > plan.toml` writes one to start from") from None
        api = open_api()
        result = api.dispatch(text, source=plan, dry_run=dry_run, actor=agent)
        if spawn_agents and not dry_run:
            from git_lanes.cli import supervise
            from git_lanes.cli.spawn import hook_prefix

            result = result | {"spawned": api.dispatch_spawn(result["plan"], cli=agent_cli, hook_prefix=hook_prefix(),
                                                             supervisor=supervise.argv)}
        return result

    run(action, as_json, render_dispatch)


def render_dispatch(r: dict) -> str:
    if r.get("dry_run") and not r.get("already"):
        lines = [f"dry run: plan {r['name']} (ticket \"{r['ticket']}\") would create {len(r['tasks'])} tasks, "
                 f"the foundation's lane from {short(r['start']) if len(r['start']) == 40 else r['start']}:"]
        lines += [f"  {t['key']:12} lane {t['lane']:24} owns {', '.join(t['owns'])}"
                  + (f"  (after {', '.join(t['depends'])})" if t["depends"] else "") for t in r["tasks"]]
        return "\n".join(lines)
    if r.get("already"):
        lines = [f"{'dry run: ' if r.get('dry_run') else ''}plan {r['name']} was dispatched already (ticket "
                 f"{short(r['ticket'])}); {r['done']} of {r['total']} tasks done"]
    else:
        lines = [f"dispatched plan {r['name']}: ticket {short(r['ticket'])}, {len(r['tasks'])} tasks"]
        lines += [f"  {t['key']:12} task {short(t['task'])}  lane {t['lane']:24} owns {', '.join(t['owns'])}"
                  for t in r["tasks"]]
    for made in r.get("lanes_created", []):
        lines.append(f"lane {made['lane']} created at {made['workspace']}" if "workspace" in made
                     else f"lane {made['lane']} not created: {made['message']}")
    for agent in r.get("spawned", []):
        lines.append(f"spawned run {agent['run'][:8]} for {agent['key']} in lane {agent['lane']} ({agent['state']})"
                     if "run" in agent else f"no agent for {agent['key']}: {agent['message']}")
    if r.get("spawned") == []:
        lines.append("no agents spawned: no ready task of the plan is without one")
    return "\n".join(lines)


@dispatch.command()
@click.argument("plan", metavar="PLAN")
@json_option
def status(plan: str, as_json: bool) -> None:
    """Show a dispatched plan's progress: each task's status, owner and lane. PLAN is the plan's name, a
    prefix of its id (its ticket's id), or its plan file.

    \b
    Example:
      git lanes dispatch status login
      git lanes dispatch status login.toml --json
    """
    def action() -> dict:
        import os

        name = plan
        if os.path.isfile(plan):
            from git_lanes.model.plan import DispatchPlan

            with open(plan, "rb") as handle:
                name = DispatchPlan.parse(handle.read()).name
        return open_api().dispatch_status(name)

    def render(r: dict) -> str:
        head = f"plan {r['name']} (ticket {short(r['ticket'])}): {r['done']} of {r['total']} tasks done" + \
            ("; ownership enforced" if r["exclusive"] else "; ownership released")
        rows = [[t["key"], short(t["task"]), t["status"] + (" (ready)" if t["ready"] and t["status"] == "open" else ""),
                 t["owner"] or "-", t["lane"], f"+{t['ahead_of_trunk']}" if t["head"] else "no lane yet"]
                for t in r["tasks"]]
        return head + "\n" + table(rows)

    run(action, as_json, render)
