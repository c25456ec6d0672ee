"""`git lanes publish …`: a ticket's integration lane pushed as a branch for review, the pull request opened,
and merged tickets closed."""

from __future__ import annotations

import click

from git_lanes.cli import OperandGroup
from git_lanes.cli.agent import agent_option
from git_lanes.cli.output import json_option, open_api, run, short, table

HEX = set("0123456789abcdefABCDEF")
TICKET_KEY = "lanes_publish_ticket"


class TicketOrCommand(OperandGroup):
    """`publish TICKET …` publishes; `publish status` and `publish sync` are subcommands. The ticket form's
    options are the group's own, so `publish --help`, the man page and usage errors show the command as it
    is typed. The first word that is neither an option (nor an option's value) nor a subcommand is the ticket,
    so options may come before or after it; a word that is not hex and is near a subcommand's name is left
    to click as a mistyped subcommand (a usage error with advice). Any other word is a ticket id, refused as
    every command refuses one that matches nothing ("no ticket matches", exit 1)."""

    operand_key = TICKET_KEY

    def is_operand(self, ctx: click.Context, word: str) -> bool:
        return word not in self.commands and (set(word) <= HEX or not self._near_a_command(ctx, word))

    def operand_taken(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and TICKET_KEY in ctx.meta:
            return ["--"]  # a ticket and nothing else: not the bare `publish` that shows the help
        return args

    def _near_a_command(self, ctx: click.Context, word: str) -> bool:
        import difflib

        return bool(difflib.get_close_matches(word, self.list_commands(ctx), n=1, cutoff=0.6))


remote_option = click.option("--remote", metavar="REMOTE",
                             help="The remote (default: the ticket's, else lanes.remote, else origin).")


@click.group(cls=TicketOrCommand, invoke_without_command=True, no_args_is_help=True,
             subcommand_metavar="TICKET | status | sync")
@remote_option
@click.option("--branch", metavar="NAME", help="The branch to push (default: lanes/ticket/<short-id>).")
@click.option("--base", metavar="BRANCH", help="The branch the pull request merges into (default: the trunk).")
@click.option("--pr", metavar="URL|new", help="The pull request a publish that stopped opened: recorded as the "
                                               "ticket's, the PR command not run; `new`: none was, run it again.")
@agent_option(required=False, help_text="Who publishes (default: your git user name).")
@json_option
@click.pass_context
def publish(ctx: click.Context, remote: str | None, branch: str | None, base: str | None, pr: str | None,
            agent: str | None, as_json: bool) -> None:
    """Publish a ticket's integration lane for review: `git lanes publish TICKET [--remote origin]
    [--branch NAME] [--base main]`.

    Pushes the integration lane tickets/<short-id> as an ordinary branch (default lanes/ticket/<short-id>)
    with a fast-forward-only push, then runs `[publish] pr_command` from .lanes.toml at the trunk's head
    ({branch}, {base}, {remote}, {ticket}, {title} are filled in) and posts pr_opened with the URL it printed
    (pr_updated on a re-publish of the same branch, which runs `update_command` if set; another --branch, or
    a pull request merged since, opens a pull request of its own). With no command it posts branch_published
    and prints where to open the pull request; publishing again once the command is set opens it. A ticket's
    publishers take turns under a lock in the ledger (TTL `[publish] lock_ttl`, default 300 s): a second one
    exits 3 naming the holder; the lock of a holder that died lapses. The command runs only after the
    ledger says it will: a publish that stopped after running it, before recording the pull request, makes
    the next one exit 3 rather than open a second; `--pr URL` records the one the forge has, `--pr new`
    runs the command again. When the ledger syncs through a remote, publishing settles on that remote's
    ledger first, so publishers on other machines take turns too: one that finds the ticket being published
    elsewhere exits 3, and one that finds its pull request opened already joins it (status unchanged).
    `publish sync` closes tickets whose branch reached the base, merged any way (squash included).

    \b
    Example:
      git lanes publish 91c0
      git lanes publish 91c0 --remote origin --branch feature/login --base main
      git lanes publish 91c0 --pr https://github.com/acme/app/pull/42
      git lanes publish status
      git lanes publish sync
    """
    ticket_id = ctx.meta.get(TICKET_KEY)
    if ctx.invoked_subcommand is not None:
        if ticket_id is not None:
            raise click.UsageError(f"Got unexpected extra argument ({ctx.invoked_subcommand})")
        given = [param.opts[0] for param in ctx.command.params
                 if ctx.get_parameter_source(param.name or "") == click.core.ParameterSource.COMMANDLINE]
        if given:
            # before a subcommand they would be the ticket form's, and dropped without a word
            raise click.UsageError(f"{', '.join(given)} before `{ctx.invoked_subcommand}` belongs to `git lanes "
                                   f"publish TICKET`; put options after the subcommand: `git lanes publish "
                                   f"{ctx.invoked_subcommand} --help` lists them")
        return
    if ticket_id is None:
        raise click.UsageError("Missing argument 'TICKET'.")

    def render(r: dict) -> str:
        if r["status"] == "unchanged":
            return f"{r['branch']} on {r['remote']} is already at {short(r['head'])}" + \
                (f": {r['url']}" if r["url"] else "" if r["pull_request"] else "; no pull request opened") + \
                (f"\n{r['hint']}" if r.get("hint") else "")
        pushed = f"pushed {r['branch']} to {r['remote']} at {short(r['head'])}" if r["pushed"] else \
            f"{r['branch']} on {r['remote']} was already at {short(r['head'])}"
        if not r["pull_request"]:
            lines = [pushed, "no pull request opened: no [publish] pr_command is set"]
        else:
            lines = [pushed, f"{r['status']}: {r['url'] or 'no pull request address printed'}"]
        if r.get("hint"):
            lines.append(r["hint"])
        return "\n".join(lines)

    run(lambda: open_api().publish(ticket_id, remote=remote, branch=branch, base=base, actor=agent, pr=pr),
        as_json, render)


@publish.command()
@json_option
def status(as_json: bool) -> None:
    """Count tickets ready to publish, published and merged; list each with its pull request and lock.

    A ticket whose publish ran the PR command and stopped before recording the pull request says so: the
    next `git lanes publish TICKET` needs `--pr URL` (the forge has one) or `--pr new` (it has none).

    \b
    Example:
      git lanes publish status --json
    """
    def render(r: dict) -> str:
        c = r["counts"]
        lines = [f"{c['ready']} ready, {c['published']} published, {c['merged']} merged, {c['open']} open"]
        rows = []
        for group in ("ready", "published", "merged"):
            for t in r[group]:
                pub = t["publication"] or {}
                lock = t["lock"]
                held = "" if not lock else f"lock of {lock['holder']} lapsed (its process is gone)" \
                    if lock.get("lapsed") else f"locked by {lock['holder']}"
                if t.get("unpublishable"):
                    held = ", ".join(filter(None, [held, "nothing to publish: none of its tasks integrated a change"]))
                if t.get("intent"):
                    held = ", ".join(filter(None, [held, f"PR command of {t['intent']['by']} for "
                                                          f"{t['intent']['branch']} not recorded (--pr)"]))
                pull = pub.get("url") or ("no pull request" if pub.get("pull_request") is False else "-")
                rows.append([short(t["ticket"]), group, pub.get("branch") or "-", pull, held,
                             t["title"]])
        return "\n".join(lines + ([table(rows)] if rows else []))

    run(lambda: open_api().publish_status(), as_json, render)


@publish.command(name="sync")
@remote_option
@agent_option(required=False, help_text="Who closes the merged tickets (default: your git user name).")
@json_option
def sync_(remote: str | None, agent: str | None, as_json: bool) -> None:
    """Close published tickets whose branch reached the base on the remote.

    A branch counts as merged when the base holds it (a merge or fast-forward), when every path it changed
    holds its version on the base (a rebase or squash merge), or when one commit of the base carries its
    patch (by git's patch id). Each merged ticket gets a pr_merged post (branch_merged when it was published
    with no pull request) and is closed; then every closed ticket's integration lane is deleted (the deletion
    travels on sync) and its tasks' claims released.

    \b
    Example:
      git lanes publish sync --remote origin
    """
    def render(r: dict) -> str:
        lines = [f"ticket {short(m['ticket'])} merged ({m['how'].replace('_', ' ')}); closed" for m in r["merged"]]
        lines += [f"ticket {short(w['ticket'])}: {w['branch']} not merged yet" for w in r["waiting"]]
        lines += [f"ticket {short(x['ticket'])}: locked by {x['holder']}, left for later" for x in r["locked"]]
        for t in r["tidied"]:
            parts = (["integration lane deleted"] if t["lane_deleted"] else []) + \
                [f"{len(c['globs'])} claims of {c['agent']} released" for c in t["claims_released"]]
            lines.append(f"ticket {short(t['ticket'])}: {', '.join(parts)}")
        return "\n".join(lines) or "no published tickets"

    run(lambda: open_api().publish_sync(remote, agent), as_json, render)
