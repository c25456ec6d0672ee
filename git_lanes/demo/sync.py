"""Scene: many machines, one project. The repository's lane state goes to an ordinary bare git remote; a
second machine clones it and pulls every lane, note and ledger op; both machines claim the same task while
apart, and the sync that arrives second finds its claim no longer holds and tells the agent."""

from __future__ import annotations

from git_lanes.demo.session import DemoSession


def play(s: DemoSession) -> None:
    # Kept under the excluded .lanes/ directory so the demo leaves nothing beside its repository.
    place = s.root / ".lanes" / "demo-machines"
    remote = place / "remote.git"
    other = place / "machine-b"
    place.mkdir(parents=True, exist_ok=True)

    s.heading("Many machines: every lane, note and ledger op travels through an ordinary git remote")
    s.git("init", "--quiet", "--bare", "--initial-branch=main", str(remote))
    s.git("remote", "add", "origin", str(remote))
    task = s.lanes("task", "create", "Fix the login timeout", "--agent", "lead")["task"]
    s.show("sync")

    s.heading("A second machine clones the project and pulls the lane state")
    s.git("clone", "--quiet", str(remote), str(other))
    s.say("$ git clone <remote> machine-b && cd machine-b")
    s.show("pull", cwd=other)
    s.show("lane", "list", cwd=other)

    s.heading("Both machines claim the same task while apart; each claim holds locally")
    s.lanes("task", "claim", task[:8], "--agent", "coder-here")
    s.lanes("task", "claim", task[:8], "--agent", "coder-there", cwd=other)
    s.say("  coder-here (this machine) and coder-there (machine-b) both own it, for now")

    s.heading("The first sync wins; the second replays its claim on the remote's ledger and it is refused")
    s.show("sync")
    s.show("sync", cwd=other)
    beat = s.lanes("agent", "heartbeat", "coder-there", cwd=other)
    for notice in beat["refused"]:
        s.say(f"  coder-there's next heartbeat says: {notice['original']['type']} refused: {notice['message']}")
    s.show("sync")
    owner = s.lanes("task", "show", task[:8])["owner"]
    s.say(f"  both machines agree: the task is owned by {owner}")
    s.results["sync"] = {"owner": owner, "loser_told": len(beat["refused"]) == 1}
