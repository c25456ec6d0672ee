"""Publishing a ticket: its integration lane pushed as an ordinary branch for people to review as one pull
request, under a per-ticket lock in the ledger so two publishers never race; and noticing when that branch
reached the base however it was merged (merge, fast-forward, rebase or squash), to close the ticket.

The `[publish]` table of `.lanes.toml` at the trunk's head configures it:

    [publish]
    pr_command = "gh pr create --fill --head {branch} --base {base}"   # or an argv list
    update_command = "gh pr comment {branch} --body 'updated'"        # optional, run on a re-publish
    timeout = 300                                                      # seconds, for either command
    lock_ttl = 300                                                     # seconds a publish lock holds

Placeholders `{branch}`, `{base}`, `{remote}`, `{ticket}` and `{title}` are filled in each argument after the
command is split into words, so a title never becomes shell syntax."""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass

from git_lanes.domain import integration, lanes, tickets
from git_lanes.domain.agents import SYSTEM, Reader
from git_lanes.domain.board import add_post
from git_lanes.domain.claims import claims_path
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, LanesError, NotFound, Refused, StaleState, UserError, command, option
from git_lanes.ledger import Op, Tx
from git_lanes.model import config
from git_lanes.model.names import validate_lane_name
from git_lanes.store import branches

BRANCH_PREFIX = "lanes/ticket/"
DEFAULT_TTL = 300.0
MAX_TTL = 24 * 3600.0
DEFAULT_TIMEOUT = 300.0
# `branch_published`: the branch is on the remote for review and no pull request was opened (no command set).
POST_KINDS = ("pr_opened", "pr_updated", "branch_published", "pr_merged", "branch_merged")
NEW_PR = "new"
MERGE_CHECKS = ("ancestry", "tree", "patch_id")
_KEYS = {"pr_command", "update_command", "timeout", "lock_ttl"}
_URL = re.compile(r"https?://[^\s<>\"']+")


@dataclass(frozen=True)
class Settings:
    pr_command: tuple[str, ...] | None = None
    update_command: tuple[str, ...] | None = None
    timeout: float = DEFAULT_TIMEOUT
    lock_ttl: float = DEFAULT_TTL


def settings(ctx: Context) -> Settings:
    """The trunk's `[publish]` settings, validated (a typo is refused by name rather than ignored)."""
    head = lanes.lane_head(ctx, ctx.trunk)
    text = ctx.store.read_path(ctx.store.tree_of(head), config.CONFIG)
    table = config.table(config.parse(text, invalid), "publish", _KEYS, invalid) if text is not None else {}
    return Settings(_command(table, "pr_command"), _command(table, "update_command"),
                    _seconds(table, "timeout", DEFAULT_TIMEOUT), _seconds(table, "lock_ttl", DEFAULT_TTL))


def _command(table: dict, key: str) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip():
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise invalid(f"{config.CONFIG}: [publish] {key}: {exc}") from None
    if isinstance(value, list) and value and all(isinstance(word, str) for word in value):
        return tuple(value)
    raise invalid(f"{config.CONFIG}: [publish] {key} must be a command line or an argv list")


def _seconds(table: dict, key: str, default: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TTL:
        raise invalid(f"{config.CONFIG}: [publish] {key} must be a number of seconds up to {MAX_TTL:.0f}")
    return float(value)


def invalid(message: str) -> UserError:
    return UserError(message, code="invalid_publish", hint=f"fix [publish] in {config.CONFIG} on the trunk (commit "
                                                          "it there)")


def default_branch(ticket_id: str) -> str:
    return BRANCH_PREFIX + ticket_id[:integration.SHORT]


def require_base(ctx: Context, remote: str, base: str) -> None:
    """Refuse a base the remote lacks (a typo, a branch not pushed yet) before anything is pushed: no pull
    request could merge into it, and `publish sync` would call the ticket "not merged yet" for good."""
    if branches.remote_head(ctx.store, remote, base) is None:
        raise UserError(f"{remote} has no branch {base!r} for the pull request to merge into", code="unknown_base",
                        hint=f"name a base branch {remote} has ({option('base', 'BRANCH')}), or push {base} there "
                             f"first ({command('sync')} pushes the trunk)")


def validate_branch(name: str) -> str:
    """A branch name git accepts (the lane-name rules are git's ref-name rules). A full ref name
    `refs/heads/NAME` is the branch NAME, as git takes it; any other ref (a tag, say) is no branch, where a
    push would make a branch literally named `refs/...`."""
    if name.startswith("refs/heads/"):
        name = name[len("refs/heads/"):]
    elif name.startswith("refs/"):
        raise UserError(f"invalid branch name {name!r}: a full ref name that is not under refs/heads/",
                        code="invalid_branch", hint="name a branch, e.g. feature/login")
    try:
        return validate_lane_name(name)
    except UserError as exc:
        raise UserError(f"invalid branch name {name!r}: {exc.message}", code="invalid_branch") from None


def command_line(command: tuple[str, ...], values: dict[str, str]) -> list[str]:
    words = []
    for word in command:
        for key, value in values.items():
            word = word.replace("{" + key + "}", value)
        words.append(word)
    return words


def url_in(output: str) -> str | None:
    """The pull request's address: the last URL the command printed (gh prints it last)."""
    found = _URL.findall(output)
    return found[-1].rstrip(".,;)") if found else None


def compare_hint(url: str, branch: str, base: str) -> str:
    """Where a person opens the pull request by hand when no command is configured."""
    match = re.match(r"(?:https://|git@|ssh://git@)(github\.com|gitlab\.com)[:/](.+?)(?:\.git)?/?$", url)
    if match and match.group(1) == "github.com":
        return (f"open the pull request from {branch} into {base} at "
                f"https://github.com/{match.group(2)}/compare/{base}...{branch}?expand=1{_OR_SET}")
    if match:
        return (f"open the merge request from {branch} into {base} at https://gitlab.com/{match.group(2)}/-/"
                f"merge_requests/new?merge_request[source_branch]={branch}&merge_request[target_branch]={base}"
                f"{_OR_SET}")
    return f"open a pull request from {branch} into {base}{_OR_SET}"


_OR_SET = f", or set [publish] pr_command in {config.CONFIG} on the trunk and publish again to have it opened"


# -- merged? ----------------------------------------------------------------------------------------------
def merged_how(ctx: Context, published: str, base_head: str) -> str | None:
    """How the published head reached the base, or None when it has not: `ancestry` (a merge commit or a
    fast-forward), `tree` (every path the published work changed holds its version on the base: a rebase or
    a squash), or `patch_id` (one commit of the base carries exactly the published change, though the base
    changed some of those paths again since)."""
    store = ctx.store
    if store.is_ancestor(published, base_head):
        return "ancestry"
    fork = store.merge_base(published, base_head)
    if fork is None:
        return None
    published_tree = store.tree_of(published)
    changes = store.diff_trees(store.tree_of(fork), published_tree)
    if not changes:
        return None
    base_tree = store.tree_of(base_head)
    if all(store.entry_at(base_tree, c.path) == store.entry_at(published_tree, c.path) for c in changes):
        return "tree"
    wanted = branches.patch_id(store, fork, published)
    if wanted is not None and wanted in branches.patch_ids_since(store, fork, base_head):
        return "patch_id"
    return None


# -- the ledger: locks, publications, closing -----------------------------------------------------------
def lock_path(ticket_id: str) -> str:
    return f"publish/locks/{ticket_id}.json"


def current_lock(state: Reader, ticket_id: str, now: float) -> dict | None:
    record = state.get(lock_path(ticket_id))
    return record if record is not None and float(record.get("until") or 0) >= now else None


def lock(tx: Tx, op: Op) -> dict:
    """`publish.lock`: hold the ticket's publish lock until op time + ttl. A live lock of another holder is a
    conflict (exit 3) naming it, unless the caller saw that holder's process is gone (`takeover` = its
    token); a lapsed one is simply taken."""
    ticket = tickets.get_ticket(tx, op.args.get("ticket"))
    token = op.args.get("token")
    ttl = op.args.get("ttl")
    if not isinstance(token, str) or not token:
        raise UserError("a publish lock needs a token", code="invalid_lock")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl <= MAX_TTL:
        raise UserError(f"the lock's ttl must be between 0 and {MAX_TTL:.0f} seconds", code="invalid_ttl")
    held = current_lock(tx, ticket["id"], op.time)
    if held is not None and held["token"] not in (token, op.args.get("takeover")):
        until = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(held["until"]))
        raise Conflict(f"ticket {ticket['id'][:8]} is being published by {held['holder']} (lock held until "
                       f"{until}, process {held.get('pid')} on {held.get('host')})",
                       code="publish_locked", details={"ticket": ticket["id"], "holder": held["holder"],
                                                       "until": held["until"], "host": held.get("host"),
                                                       "pid": held.get("pid")},
                       hint=f"wait for it to finish ({command('publish status')}); a lock whose holder died "
                            "lapses")
    previous = tx.get(lock_path(ticket["id"]))
    record = {"ticket": ticket["id"], "holder": op.actor, "token": token, "acquired": op.time,
              "until": op.time + ttl, "host": op.args.get("host"), "pid": op.args.get("pid")}
    tx.put(lock_path(ticket["id"]), record)
    took_over = previous["holder"] if previous is not None and previous["token"] != token else None
    return {"ticket": ticket["id"], "holder": op.actor, "token": token, "until": record["until"],
            "took_over": took_over}


def unlock(tx: Tx, op: Op) -> dict:
    """`publish.unlock`: let go of the lock `token` holds. A lock another token holds (one that lapsed and
    was taken, or a wrong token) is a conflict naming its holder, so the refused release writes nothing."""
    ticket_id = op.args.get("ticket")
    record = tx.get(lock_path(ticket_id)) if isinstance(ticket_id, str) else None
    if record is not None and record["token"] != op.args.get("token"):
        raise Conflict(f"ticket {ticket_id[:8]}'s publish lock is held by {record['holder']} under another "
                       f"token; nothing was released", code="publish_locked",
                       details={"ticket": ticket_id, "holder": record["holder"], "until": record["until"],
                                "host": record.get("host"), "pid": record.get("pid")},
                       hint="give the token that acquiring it returned, or no token to clear it by hand")
    if record is not None:
        tx.delete(lock_path(ticket_id))
    return {"ticket": ticket_id, "released": record is not None}


def intent_path(ticket_id: str) -> str:
    return f"publish/intents/{ticket_id}.json"


def pending_intent(state: Reader, ticket_id: str) -> dict | None:
    """The publish that announced it would run the pull request command and has not said how that went."""
    return state.get(intent_path(ticket_id))


def shares_ledger(ctx: Context, remote: str) -> bool:
    """Whether this ledger syncs through `remote` (it has been synced with it): then other machines publish
    the same tickets, and their publishes take turns on the remote's ledger."""
    from git_lanes.model import refs
    from git_lanes.store import remote as transport

    try:
        transport.check_remote(ctx.store, remote)
    except (UserError, NotFound):  # no such remote (yet): nothing shared, and publish says so if it needs one
        return False
    return ctx.store.read_ref(transport.tracking_ref(remote, refs.LEDGER)) is not None


def validate_pr(value: str) -> str:
    """`--pr`: the address of a pull request already open (recorded, the command not run), or `new`."""
    if value == NEW_PR or (_URL.fullmatch(value) and len(value) <= 2000):
        return value
    raise UserError(f"--pr takes the pull request's address (https://...) or `{NEW_PR}`, not {value!r}",
                    code="invalid_pr", hint="give the address the forge shows for the pull request")


def interrupted(record: dict) -> Conflict:
    """The refusal to run the pull request command while another publish may have opened the pull request
    already: a forge refuses a second one for the same branch for good, so a person says which it is."""
    ticket, branch = record["ticket"], record["branch"]
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(record["time"]))
    where = f"process {record.get('pid')} on {record.get('host')}"
    return Conflict(f"ticket {ticket[:8]}: {record['by']} ({where}) ran the pull request command for {branch} "
                    f"on {record['remote']} at {since} and has not recorded a pull request: it is still at it, or "
                    "it stopped after the command may have opened one", code="publish_interrupted",
                    details={"ticket": ticket, "branch": branch, "remote": record["remote"], "by": record["by"],
                             "time": record["time"], "host": record.get("host"), "pid": record.get("pid")},
                    hint=f"look for a pull request from {branch} on the forge: if there is one, record it with "
                         f"{command('publish', ticket[:8], pr='URL')}; if there is none, "
                         f"{command('publish', ticket[:8], pr=NEW_PR)} runs the command again")


def intend(tx: Tx, op: Op) -> dict:
    """`publish.intent`: a publisher is about to run the pull request command for `branch` on `remote`.
    Written before the command runs, so a publish killed after the forge opened the pull request and before
    `ticket.publish` recorded it leaves this behind, and no later publish opens a second one blindly: one
    announced and not settled (by `ticket.publish` or `publish.failed`) refuses another unless it names it as
    the one it `replaces` (a person said none was opened). Replayed by sync on another machine's ledger, it
    also refuses a pull request the other machine opened for the branch meanwhile (`already_published`)."""
    ticket = tickets.get_ticket(tx, op.args.get("ticket"))
    token = op.args.get("token")
    if not isinstance(token, str) or not token:
        raise UserError("a publish intent needs a token", code="invalid_intent")
    remote, branch = op.args.get("remote"), op.args.get("branch")
    pending = pending_intent(tx, ticket["id"])
    if pending is not None and pending["token"] not in (token, op.args.get("replaces")):
        raise interrupted(pending)
    previous = ticket.get("publication") or {}
    if not op.args.get("update") and updates(previous, remote, branch) and not merged_since(op, previous):
        raise Conflict(f"ticket {ticket['id'][:8]}: {previous.get('by')} opened the pull request from {branch} "
                       "already" + (f": {previous['url']}" if previous.get("url") else ""),
                       code="already_published", details={"ticket": ticket["id"], "publication": previous},
                       hint=f"{command('publish', ticket['id'][:8])} updates it")
    record = {"ticket": ticket["id"], "token": token, "remote": remote, "branch": branch,
              "base": op.args.get("base"), "head": op.args.get("head"), "update": bool(op.args.get("update")),
              "by": op.actor, "time": op.time, "host": op.args.get("host"), "pid": op.args.get("pid")}
    tx.put(intent_path(ticket["id"]), record)
    return {"ticket": ticket["id"], "token": token, "branch": branch, "replaced": pending["token"]
            if pending is not None and pending["token"] != token else None}


def failed(tx: Tx, op: Op) -> dict:
    """`publish.failed`: the pull request command announced under `token` failed (or never ran), so it
    opened nothing and the next publish may run it again."""
    ticket_id = op.args.get("ticket")
    record = tx.get(intent_path(ticket_id)) if isinstance(ticket_id, str) else None
    settled = record is not None and record["token"] == op.args.get("token")
    if settled:
        tx.delete(intent_path(str(ticket_id)))
    return {"ticket": ticket_id, "settled": settled}


def updates(previous: dict, remote: str | None, branch: str | None) -> bool:
    """Whether publishing `branch` to `remote` updates the pull request the ticket's `previous` publication
    opened. A pull request belongs to its branch: another branch, or another remote, opens one of its own
    (the way on when someone pushed to the first branch); another base only retargets it. A branch pushed
    with no pull request opened has none to update."""
    return has_pull_request(previous) and (previous.get("remote"), previous.get("branch")) == (remote, branch)


def has_pull_request(publication: dict) -> bool:
    """Whether the ticket's `publication` has a pull request: one its command opened, or one recorded with its
    address. A publication recorded before pushes without one were told apart was recorded as one."""
    return bool(publication) and publication.get("pull_request", True) is not False


def merged_since(op: Op, previous: dict) -> bool:
    """Whether the publisher saw `previous`'s pull request merged (`merged`: the head it pushed) and so
    opens a new one: a merged pull request is not updated. Another publication recorded meanwhile is not
    the one it saw."""
    return bool(op.args.get("merged")) and op.args.get("merged") == previous.get("head")


def publish(tx: Tx, op: Op) -> dict:
    """`ticket.publish`: the integration lane was pushed as `branch`; the ticket is published, and a
    `pr_opened` post (`pr_updated` on a re-publish of the same branch) records it with the pull request's
    address. With no pull request opened (`opened` false: no command configured, no address given) and none
    to update, a `branch_published` post says the branch is there for review and no pull request was
    opened. An op from before `opened` was recorded counts as one that opened its pull request."""
    ticket = tickets.get_ticket(tx, op.args.get("ticket"))
    if ticket["status"] == "closed":
        raise StaleState(f"ticket {ticket['id'][:8]} is closed", code="ticket_closed")
    previous = ticket.get("publication") or {}
    if merged_since(op, previous):
        previous = {}
    update = updates(previous, op.args.get("remote"), op.args.get("branch"))
    url = op.args.get("url") or (previous.get("url") if update else None)
    opened = op.args.get("opened", True) is not False
    kind = "pr_updated" if update else "pr_opened" if opened else "branch_published"
    publication = {key: op.args.get(key) for key in ("remote", "branch", "base", "head")}
    publication.update(url=url, pull_request=update or opened, published_at=previous.get("published_at", op.time),
                       updated_at=op.time, by=op.actor, times=int(previous.get("times", 0)) + 1)
    ticket.update(status="published", publication=publication)
    tx.put(tickets.ticket_path(ticket["id"]), ticket)
    pending = pending_intent(tx, ticket["id"])
    if pending is not None and (pending["token"] == op.args.get("token") or
                                (pending["remote"], pending["branch"]) == (publication["remote"], publication["branch"])):
        tx.delete(intent_path(ticket["id"]))  # the pull request it announced is the one recorded now
    where = f"from {publication['branch']} into {publication['base']} at {str(publication['head'])[:8]}"
    text = f"ticket {ticket['id'][:8]} \"{ticket['title']}\": " + (
        f"pull request {'updated' if update else 'opened'} {where}" + (f": {url}" if url else "") if update or opened
        else f"branch {publication['branch']} on {publication['remote']} at {str(publication['head'])[:8]}, for "
             f"review into {publication['base']}; no pull request opened (no [publish] pr_command is set)")
    post = add_post(tx, op, SYSTEM, kind, text, None)
    return {"ticket": ticket["id"], "kind": kind, "url": url, "post": post, "publication": publication}


def not_closable(ticket: dict) -> LanesError | None:
    """Why `ticket` (a viewed record, with `done` and `total`) cannot be closed on its branch's merge, or None.
    Only a published ticket is: one a task joined after it was published (open again, or ready with that
    task done) holds work its merged branch lacks, and closing it would end that work unreviewed (and `publish
    sync` would delete its integration lane). Every face's closing goes through this rule."""
    short = ticket["id"][:8]
    if ticket["status"] == "closed":
        return StaleState(f"ticket {short} is already closed", code="ticket_closed")
    if ticket["status"] == "published":
        return None
    if not ticket.get("publication"):
        return Refused(f"ticket {short} was never published", code="not_published",
                       hint=f"{command('publish', short)}")
    return Refused(f"ticket {short} is {ticket['status']} ({ticket['done']} of {ticket['total']} tasks done): a task "
                   "joined it after it was published, and its published branch lacks that work", code="ticket_reopened",
                   details={"ticket": ticket["id"], "status": ticket["status"]},
                   hint=f"finish its tasks, then {command('publish', short)} opens a pull request for what followed")


def close(tx: Tx, op: Op) -> dict:
    """`ticket.close`: the published branch reached the base; a `pr_merged` post says how it was seen
    (`branch_merged` for a branch published with no pull request). Refused for a ticket that is not published
    (`not_closable`)."""
    ticket = tickets.get_ticket(tx, op.args.get("ticket"))
    how = op.args.get("how")
    if how not in MERGE_CHECKS:
        raise UserError(f"unknown merge check {how!r}", code="invalid_merge")
    refusal = not_closable(tickets.view(tx, ticket))
    if refusal is not None:
        raise refusal
    publication = dict(ticket.get("publication") or {})
    publication.update(merged_at=op.time, merged_by=how, merged_into=op.args.get("base_head"))
    ticket.update(status="closed", publication=publication, closed_at=op.time)
    tx.put(tickets.ticket_path(ticket["id"]), ticket)
    text = (f"ticket {ticket['id'][:8]} \"{ticket['title']}\": {publication.get('branch')} reached "
            f"{publication.get('base')} (seen by {how.replace('_', ' ')}); ticket closed"
            + (f": {publication['url']}" if publication.get("url") else ""))
    # A branch published with no pull request merged as it is (by hand, or a pull request nobody recorded).
    kind = "pr_merged" if has_pull_request(publication) else "branch_merged"
    post = add_post(tx, op, SYSTEM, kind, text, None)
    return {"ticket": ticket["id"], "status": "closed", "how": how, "post": post, "kind": kind,
            "url": publication.get("url")}


def release_claims(tx: Tx, op: Op) -> dict:
    """`ticket.release_claims`: every file claim made for one of the ticket's tasks goes."""
    ticket = tickets.get_ticket(tx, op.args.get("ticket"))
    mine = set(ticket["tasks"])
    released = []
    for name in tx.names("claims"):
        record = tx.get(f"claims/{name}")
        if record is None:
            continue
        gone = [c["glob"] for c in record["globs"] if c.get("task") in mine]
        if not gone:
            continue
        record["globs"] = [c for c in record["globs"] if c.get("task") not in mine]
        path = claims_path(record["agent"])
        if record["globs"]:
            tx.put(path, record)
        else:
            tx.delete(path)
        released.append({"agent": record["agent"], "globs": gone})
    return {"ticket": ticket["id"], "released": released}


def claims_of(state: Reader, ticket: dict) -> list[dict]:
    mine = set(ticket["tasks"])
    found = []
    for name in state.names("claims"):
        record = state.get(f"claims/{name}") or {}
        globs = [c["glob"] for c in record.get("globs", []) if c.get("task") in mine]
        if globs:
            found.append({"agent": record.get("agent"), "globs": globs})
    return found
